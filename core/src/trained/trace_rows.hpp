// Resizing a trace's tensors for a forward that keeps the rows before its first changed token
// (gpt_forward.cpp, hf_forward.cpp): the kept rows stay where a fresh forward puts them.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "mhaviz/tensor.hpp"

namespace mhaviz::detail {

// How many ids at the start of ids a trace computed for `kept` shares: the rows a forward into
// that trace may keep (in a causal model the rows before the first changed id cannot change).
inline int shared_prefix(std::span<const int> ids, const std::vector<int>& kept) {
  const std::size_t common = std::min(ids.size(), kept.size());
  std::size_t t = 0;
  while (t < common && kept[t] == ids[t]) ++t;
  return static_cast<int>(t);
}

// (1, rows, cols) row-major: a prefix of the data is kept as it is.
inline void resize_rows(Tensor& t, int rows, int cols) {
  t.shape = {1, rows, cols};
  t.data.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
}

// (1, H, T_old, cols_old) -> (1, H, T, cols): rows < keep of every head keep their first
// min(cols_old, cols) values, everything else is 0 (the weight of a key a kept row cannot
// see). Same shape: left as is, the caller overwrites rows ≥ keep.
inline void resize_heads(Tensor& t, int H, int T, int cols, int keep) {
  const Shape shape{1, H, T, cols};
  if (t.shape == shape) return;
  Tensor out(shape, 0.0f);
  if (keep > 0 && t.rank() == 4) {
    const std::int64_t old_rows = t.shape[2], old_cols = t.shape[3], n = std::min<std::int64_t>(old_cols, cols);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < keep; ++i) {
        const float* src = t.ptr() + (h * old_rows + i) * old_cols;
        std::copy(src, src + n, out.ptr() + (h * T + i) * cols);
      }
  }
  t = std::move(out);
}

}  // namespace mhaviz::detail
