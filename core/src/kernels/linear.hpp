// nn.Linear's product y = x · Wᵀ + b for both forwards (forward.cpp's attention module and
// gpt_forward.cpp's GPT), in the project's kernel (gemm.hpp) or Eigen on OpenBLAS, and the
// one place that decides how a Linear's weight is held: as `weight` [out, in], as the
// kernel's `packed` panels, or both.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mhaviz/linear.hpp"

namespace mhaviz::detail {

// x: (n, in) row-major; writes x · Wᵀ + bias, (n, out), into y with row stride ld.
// kernel: the caller's backend is not OpenBLAS. BF16 panels, when held, are always used (they
// are the only copy); the float panels when kernel is set, or when they are the only copy
// (weight dropped by pack_linear); else Eigen on `weight`.
// Every element is the same sum in the same order whatever n is, on the kernel's path.
void linear_into(const Linear& l, const float* x, std::int64_t n, float* y, std::int64_t ld, bool kernel);

// Output columns [col, col + cols) of linear_into's product, into y (n, cols; row stride ld),
// with the same bits: a stacked layer's column blocks each written where it is kept (the
// lesson's queries, keys and values) rather than through a scratch. Directly on the panels
// when col is a multiple of their width (kPanel), else through a full-width product into a
// scratch (every column computed: for the few layers whose blocks do not fall on panels).
void linear_columns_into(const Linear& l, const float* x, std::int64_t n, std::int64_t col, std::int64_t cols, float* y,
                         std::int64_t ld, bool kernel);

// Several Linears of the same input x (n, in): ys[i] (n, ls[i]->out, rows of out floats) =
// x · Wᵢᵀ + bᵢ, the same bits as linear_into each. When n is a few rows (an edit) and every one
// runs on its panels, their panels go over the threads as one loop: one hand-over for the lot
// (a layer's q, k and v; its gate and up) instead of one each.
void linears_into(std::span<const Linear* const> ls, const float* x, std::int64_t n, std::span<float* const> ys,
                  bool kernel);

// Fills l.packed from l.weight (no-op when already packed); drop_weight then frees weight,
// so the layer costs its size once. Needs a CPU with a kernel (backend() != OpenBlas).
void pack_linear(Linear& l, bool drop_weight);
// Puts weight back from the packed copy (float or BF16) when it was dropped, and frees the
// packed copies.
void unpack_linear(Linear& l);
// [out, in] row-major, whichever form l holds.
std::vector<float> linear_weight(const Linear& l);

}  // namespace mhaviz::detail
