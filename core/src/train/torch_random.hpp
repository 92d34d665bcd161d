// torch's CPU generator as nn.Embedding's init draws from it: tensor.normal_(mean, std) in
// PyTorch 1.13, reproduced bit for bit.
//
// normal_ on a contiguous float32 tensor of n >= 16 values first fills it with n uniform
// floats (24-bit draws, as torch_uniform), then turns each block of 16 in place into normals by
// Box–Muller over the pairs (j, j + 8): u1 = 1 − x[j], u2 = x[j + 8],
// r = √(−2 log u1), x[j] = r cos(2π u2), x[j + 8] = r sin(2π u2). When 16 does not divide n
// the last 16 values are drawn again and recomputed. On a CPU where torch runs its AVX2
// kernels (this machine, and any with AVX2) log, sin and cos are avx_mathfun's Cephes
// polynomials in float, with the multiply-adds GCC fuses there; that is what this file
// computes (tests/models/train_reference.py checks a million values against torch). Torch
// built or forced without AVX2 (ATEN_CPU_CAPABILITY=default) uses libm's float functions and
// draws other values (1 572 of 4 096 differ for seed 123).
//
// Fewer than 16 values take torch's scalar path: each value one double Box–Muller draw from
// two 53-bit uniforms, the sine half cached in the generator for the next draw.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

namespace mhaviz::train {

struct TorchGenerator {
  // torch.manual_seed(seed): the Mersenne Twister seeded with the low 32 bits, no cached normal.
  explicit TorchGenerator(std::uint64_t seed) : mt(static_cast<std::mt19937::result_type>(seed)) {}
  std::mt19937 mt;
  std::optional<double> next_double_normal;  // torch's next_double_normal_sample
};

// data (n) = tensor.normal_(mean, std) of a contiguous float32 tensor of n values, continuing g.
void torch_normal_(TorchGenerator& g, float* data, std::int64_t n, float mean, float std);

}  // namespace mhaviz::train
