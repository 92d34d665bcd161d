// Steps 1-2b and 7-8 of the lesson's forward (forward.cpp), shared with the decoder through a KV cache
// (decode.cpp), which runs them on each step's new rows: one code path, so the rows a cache
// receives are computed exactly as the full forward computes them.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/softmax.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz::detail {

// Steps 1-2: input (b, T, d_in) with b = tr.batch, T = tr.tokens -> queries (b, T, M) and
// q (b, H, T, hd); then keys, values (b, T, G*hd) and k, v (b, G, T, hd), or for mla the
// latent (b, T, L) alone (up_project makes its keys and values); fused_qkv also qkv
// (b, T, 3*d_out). Reshapes what it writes and empties what the variant has not.
void project_inputs(const Model& model, const Tensor& input, Trace& tr, bool kernel);

// mla's step 2: latent (b, T, L) -> keys, values (b, T, M) by W_UK, W_UV, and their heads
// k, v (b, H, T, hd).
void up_project(const Model& model, const Tensor& latent, Tensor& keys, Tensor& values, Tensor& k, Tensor& v,
                bool kernel);

// Steps 2a-2b on x (b, heads, T, hd), whose rows are positions pos0 … pos0 + T - 1: QK-norm
// with `scale` into normed, then RoPE into rotated, each when the config sets it (emptied
// otherwise). Returns the last of x -> normed -> rotated, what the attention reads.
const Tensor& norm_rotate(const Model& model, const Tensor& x, const std::vector<float>& scale, std::int64_t pos0,
                          Tensor& normed, Tensor& rotated);

// Steps 7-8 on R rows: the heads of context (b, H, R, hd) merged into merged (b, R, M), then
// the output projection into output (b, R, d_out); the wrapper has none (output = merged).
void merge_and_project(const Model& model, const Tensor& context, Tensor& merged, Tensor& output, bool kernel);

// How the config's scores are scaled: / sqrt(head_dim) as PyTorch's modules write it, or
// · query_pre_attn_scalar^-0.5 (rounded to float once) as Gemma's does.
inline ScoreScale score_scale(const ModelConfig& c) {
  if (c.query_pre_attn_scalar > 0.0)
    return ScoreScale::multiply(static_cast<float>(1.0 / std::sqrt(c.query_pre_attn_scalar)));
  return ScoreScale::sqrt_head_dim(head_dim(c));
}

// Reuses the buffer's capacity: an unchanged shape costs no allocation or zeroing.
void reshape(Tensor& t, Shape shape);

}  // namespace mhaviz::detail
