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

// The same, forcing one path (for the tests); Avx2 needs softmax_wide_available().
enum class SoftmaxPath { Scalar, Sse, Avx2 };
void softmax_row_path(SoftmaxPath path, const float* s, std::int64_t n, float divisor, float* scratch, float* w);
bool softmax_wide_available();

}  // namespace mhaviz::detail
