// RMSNorm over the last dimension, as Llama, Qwen and Gemma apply it to the residual stream
// and (QK-norm) to each head's queries and keys:
//   y = x / sqrt(mean(x²) + eps) · w          (Llama, Qwen: weight around 1)
//   y = x / sqrt(mean(x²) + eps) · (1 + w)    (Gemma: weight stored around 0)
// The kernel knows no model; the caller says which form its weights are in.
#pragma once

#include <cstdint>

namespace mhaviz::detail {

enum class RmsWeight { Plain, OnePlus };  // · w, or Gemma's · (1 + w)

// in, out: (rows, dim) row-major (out may be in: in place); weight: (dim). The mean of
// squares in double, the scaled value rounded to float before the weight multiplies it
// (torch's order: x_norm, then · weight). Rows are split over threads when there are
// enough of them.
void rms_norm(const float* in, float* out, std::int64_t rows, int dim, const float* weight, double eps, RmsWeight form);

}  // namespace mhaviz::detail
