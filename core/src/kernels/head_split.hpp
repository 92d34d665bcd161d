// The head split and merge of every attention in the core: (rows, heads · hd) activations
// <-> per-head matrices (b, H, T, hd), as view(b, T, H, hd).transpose(1, 2) and back.
#pragma once

#include <cstdint>

namespace mhaviz::detail {

// src: (b·R rows, row_stride) row-major; head h, feature d of a row at column
// offset + h·head_stride + d. Writes rows [t0, t0 + R) of every (batch, head) of heads
// (b, H, T, hd) and, when flat is not null, the same values as (b·R, H·hd), in one pass over
// src. Rows are split over threads when there are enough of them (the chapter-3 forward's
// from T = 128 on).
void split_heads(const float* src, std::int64_t row_stride, std::int64_t offset, std::int64_t head_stride, int b, int R,
                 int H, int hd, float* heads, int T, int t0, float* flat);

// heads (b, H, T, hd), rows [t0, t0 + R) of each -> dst (b·R, H·hd): transpose(1, 2), then
// view(b, R, H·hd).
void merge_heads(const float* heads, int b, int R, int H, int hd, int T, int t0, float* dst);

}  // namespace mhaviz::detail
