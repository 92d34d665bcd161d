// Rotary position embedding (RoPE) in the split-halves layout of Hugging Face's Llama, Qwen
// and Gemma code and the book's apply_rope: a vector x of head_dim = 2·h values at position p
// becomes, for i < h,
//   y[i]     = x[i]     · cos(p·f[i]) − x[i + h] · sin(p·f[i])
//   y[i + h] = x[i + h] · cos(p·f[i]) + x[i]     · sin(p·f[i])
// (x·cos + cat(−x2, x1)·sin with the angles repeated for both halves). The interleaved
// layout of the original paper pairs (x[2i], x[2i+1]) instead: the two are not
// interchangeable. The kernel knows no model: the caller gives the inverse frequencies f
// (base, Llama 3 or linear scaling already applied: hf_config.hpp's HfRope::inv_freq).
#pragma once

#include <cstdint>
#include <span>

namespace mhaviz::detail {

// Where the vectors of a block are: vector (t, h) starts at x + t·t_stride + h·head_stride.
// (T, heads, head_dim) row-major: t_stride = heads·head_dim, head_stride = head_dim;
// (heads, T, head_dim): t_stride = head_dim, head_stride = T·head_dim.
struct RopeBlock {
  int tokens = 0, heads = 0, head_dim = 0;
  std::int64_t t_stride = 0, head_stride = 0;
  static RopeBlock tokens_major(int T, int heads, int head_dim) {  // (T, heads, head_dim)
    return {T, heads, head_dim, static_cast<std::int64_t>(heads) * head_dim, head_dim};
  }
  static RopeBlock heads_major(int T, int heads, int head_dim) {  // (heads, T, head_dim)
    return {T, heads, head_dim, head_dim, static_cast<std::int64_t>(T) * head_dim};
  }
};

// x: the block b describes, in place; row t is at position pos0 + t. inv_freq: head_dim / 2
// values (head_dim even). Angles, cos and sin in double, rounded to float once per position
// and frequency; the rotation itself in float. Rows are split over threads when there are
// enough of them.
void rope(float* x, const RopeBlock& b, std::int64_t pos0, std::span<const double> inv_freq);

}  // namespace mhaviz::detail
