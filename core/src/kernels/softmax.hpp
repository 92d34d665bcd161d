// One row of softmax with exp computed by the project's own code, one element at a time for
// short rows, in SSE4.1 vectors (the x86-64-v2 baseline) or in AVX2 or AVX-512 (function
// attributes, chosen at run time) for long ones. All paths take the exp and the lane sums by the
// same IEEE operations in the same order on the same lanes, and every weight is the correctly
// rounded quotient (divided, or a corrected product where that is exact), so a result has the
// same bits in every build and on every CPU with FMA; a CPU without it computes the exp's
// multiply-adds in two roundings, on every path alike. Scores holding NaN are the exception:
// which lane's max keeps a NaN depends on each path's order of comparisons.
#pragma once

#include <cmath>
#include <cstdint>

namespace mhaviz::detail {

// How scores are scaled before the softmax, in the form the model's code writes it:
// `scores / d` (PyTorch's modules divide by √head_dim) or `scores * f` (a given factor, such
// as query_pre_attn_scalar^−0.5). The two round differently unless d is a power of two.
struct ScoreScale {
  enum class Op : std::uint8_t { Divide, Multiply };
  Op op = Op::Divide;
  float value = 1.0f;
  static ScoreScale divide(float d) { return {Op::Divide, d}; }
  static ScoreScale multiply(float f) { return {Op::Multiply, f}; }
  // `scores / keys.shape[-1] ** 0.5`: PyTorch rounds √head_dim to float first.
  static ScoreScale sqrt_head_dim(int head_dim) {
    return divide(static_cast<float>(std::sqrt(static_cast<double>(head_dim))));
  }
  double apply(double s) const { return op == Op::Divide ? s / value : s * value; }  // the loop oracles' form
};

// Floats of scratch softmax_row needs for a row of n: n rounded up to a multiple of 8.
inline std::int64_t softmax_scratch(std::int64_t n) { return (n + 7) / 8 * 8; }

// s: (n) scores -> w: (n) = softmax(scale(s)); n >= 1. scratch: softmax_scratch(n) floats
// (any alignment). w may alias s.
void softmax_row(const float* s, std::int64_t n, ScoreScale scale, float* scratch, float* w);
inline void softmax_row(const float* s, std::int64_t n, float divisor, float* scratch, float* w) {
  softmax_row(s, n, ScoreScale::divide(divisor), scratch, w);
}

// s: one head's (T, T) scores, row-major -> in place, row i = softmax(s_i / divisor) over keys
// j <= i and exact zeros after: the bits of softmax_row(s_i, i + 1, …) row by row, in AVX2
// where the CPU has it with no loop whose length depends on the row (a training step's many
// short rows of varying length cost softmax_row more in branches than in arithmetic).
void softmax_causal(float* s, std::int64_t T, float divisor);
// att: (T, T) softmax_causal weights, d: (T, T) ∂loss/∂weights -> in place, ∂loss/∂scores:
// att ⊙ (d − rowsum(att ⊙ d)) / divisor, exact zeros above the diagonal. The row sums in float
// (eight lanes in AVX2, else in order).
void softmax_causal_backward(float* d, const float* att, std::int64_t T, float divisor);

// The same, forcing one path (for the tests); Avx2 needs softmax_wide_available(), Avx512
// softmax_widest_available().
enum class SoftmaxPath { Scalar, Sse, Avx2, Avx512 };
void softmax_row_path(SoftmaxPath path, const float* s, std::int64_t n, ScoreScale scale, float* scratch, float* w);
inline void softmax_row_path(SoftmaxPath path, const float* s, std::int64_t n, float divisor, float* scratch,
                             float* w) {
  softmax_row_path(path, s, n, ScoreScale::divide(divisor), scratch, w);
}
bool softmax_wide_available();    // AVX2 and FMA
bool softmax_widest_available();  // AVX-512F too
bool softmax_fused();             // whether this process's exp fuses its multiply-adds (the CPU has FMA)
// The scalar or SSE path as a CPU without FMA runs it (for the tests).
void softmax_row_unfused(SoftmaxPath path, const float* s, std::int64_t n, ScoreScale scale, float* scratch, float* w);

}  // namespace mhaviz::detail
