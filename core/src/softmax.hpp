// One row of softmax with exp computed by the project's own code, one element at a time for
// short rows, in SSE4.1 vectors (the x86-64-v2 baseline) or in AVX2 (function attributes,
// chosen at run time) for long ones. All paths do the same IEEE operations in the same order
// on the same lanes, so a result has the same bits on every CPU and in every build.
#pragma once

#include <cstdint>

namespace mhaviz::detail {

// Floats of scratch softmax_row needs for a row of n: n rounded up to a multiple of 8.
inline std::int64_t softmax_scratch(std::int64_t n) { return (n + 7) / 8 * 8; }

// s: (n) scores -> w: (n) = softmax(s / divisor); n >= 1. scratch: softmax_scratch(n) floats
// (any alignment). w may alias s.
void softmax_row(const float* s, std::int64_t n, float divisor, float* scratch, float* w);

// s: one head's (T, T) scores, row-major -> in place, row i = softmax(s_i / divisor) over keys
// j <= i and exact zeros after: the bits of softmax_row(s_i, i + 1, …) row by row, in AVX2
// where the CPU has it with no loop whose length depends on the row (a training step's many
// short rows of varying length cost softmax_row more in branches than in arithmetic).
void softmax_causal(float* s, std::int64_t T, float divisor);
// att: (T, T) softmax_causal weights, d: (T, T) ∂loss/∂weights -> in place, ∂loss/∂scores:
// att ⊙ (d − rowsum(att ⊙ d)) / divisor, exact zeros above the diagonal. The row sums in float
// (eight lanes in AVX2, else in order).
void softmax_causal_backward(float* d, const float* att, std::int64_t T, float divisor);

// The same, forcing one path (for the tests); Avx2 needs softmax_wide_available().
enum class SoftmaxPath { Scalar, Sse, Avx2 };
void softmax_row_path(SoftmaxPath path, const float* s, std::int64_t n, float divisor, float* scratch, float* w);
bool softmax_wide_available();

}  // namespace mhaviz::detail
