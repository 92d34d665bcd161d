// Layout mappings of the walkthrough (see layout.hpp for the table of steps and shapes).
#include "mhaviz/layout.hpp"

#include <algorithm>
#include <cmath>

namespace mhaviz::layout {

// [SECTION] Axis windows
std::int64_t Axis::slot(std::int64_t i) const {
  if (i < 0 || i >= n) return -1;
  if (!windowed()) return i;
  if (i < limit - 1) return i;
  if (i == n - 1) return limit;
  return -1;
}

std::int64_t Axis::index_at(std::int64_t s) const {
  if (s < 0 || s >= slots()) return -1;
  if (!windowed()) return s;
  if (s < limit - 1) return s;
  if (s == limit) return n - 1;
  return -1;  // the ellipsis
}

// [SECTION] Cells and points
Shape Layout::shape() const {
  if (kind == Kind::Matrix) return {dims[0], dims[2], dims[3]};
  return {dims[0], dims[1], dims[2], dims[3]};
}

// flat (one pane) = ((i0 * n1 + i1) * rows + row) * cols + col = (block * rows + row) * cols + col
Cell cell_of(const Layout& l, std::int64_t flat) {
  Cell c;
  const std::int64_t per = l.pane_numel();
  c.pane = static_cast<int>(flat / per);
  std::int64_t r = flat % per;
  c.col = r % l.dims[3];
  r /= l.dims[3];
  c.row = r % l.dims[2];
  c.block = r / l.dims[2];
  return c;
}

std::int64_t index_of(const Layout& l, const Cell& c) {
  if (c.pane < 0 || c.pane >= l.panes || c.block < 0 || c.block >= l.blocks() || c.row < 0 || c.row >= l.dims[2] ||
      c.col < 0 || c.col >= l.dims[3])
    return -1;
  return c.pane * l.pane_numel() + (c.block * l.dims[2] + c.row) * l.dims[3] + c.col;
}

bool visible(const Layout& l, const Cell& c) {
  return l.block_axis().slot(c.block) >= 0 && l.row_axis().slot(c.row) >= 0 && l.col_axis().slot(c.col) >= 0;
}

namespace {
// Blocks per row of blocks actually used (never more than there are block slots).
std::int64_t used_block_cols(const Layout& l) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(std::max(1, l.block_cols), l.block_axis().slots()));
}
}  // namespace

float pane_width(const Layout& l) {
  const float cols = static_cast<float>(l.col_axis().slots());
  const float bc = static_cast<float>(used_block_cols(l));
  return bc * cols + (bc - 1.0f) * l.block_gap_x;
}

Point slot_point(const Layout& l, int pane, std::int64_t block_slot, std::int64_t row_slot, std::int64_t col_slot) {
  const float rows = static_cast<float>(l.row_axis().slots());
  const float cols = static_cast<float>(l.col_axis().slots());
  const std::int64_t bc = used_block_cols(l);
  const float brow = static_cast<float>(block_slot / bc), bcol = static_cast<float>(block_slot % bc);
  return {static_cast<float>(pane) * (pane_width(l) + l.pane_gap) + bcol * (cols + l.block_gap_x) +
              static_cast<float>(col_slot),
          brow * (rows + l.block_gap) + static_cast<float>(row_slot)};
}

namespace {
// Slot of an index, or of the ellipsis when the index is hidden.
std::int64_t slot_or_ellipsis(const Axis& a, std::int64_t i) {
  const std::int64_t s = a.slot(i);
  return s >= 0 ? s : a.limit - 1;
}
}  // namespace

Point point_of(const Layout& l, const Cell& c) {
  return slot_point(l, c.pane, slot_or_ellipsis(l.block_axis(), c.block), slot_or_ellipsis(l.row_axis(), c.row),
                    slot_or_ellipsis(l.col_axis(), c.col));
}

Point extent(const Layout& l) {
  const float rows = static_cast<float>(l.row_axis().slots());
  const std::int64_t bc = used_block_cols(l);
  const float block_rows = static_cast<float>((l.block_axis().slots() + bc - 1) / bc);
  const float panes = static_cast<float>(l.panes);
  return {panes * pane_width(l) + (panes - 1.0f) * l.pane_gap, block_rows * rows + (block_rows - 1.0f) * l.block_gap};
}

bool cell_at(const Layout& l, Point p, Cell& out) {
  if (p.x < 0.0f || p.y < 0.0f) return false;
  const float rows = static_cast<float>(l.row_axis().slots());
  const float cols = static_cast<float>(l.col_axis().slots());
  const float pw = pane_width(l);
  const std::int64_t bc = used_block_cols(l);
  const auto pane = static_cast<std::int64_t>(std::floor(p.x / (pw + l.pane_gap)));
  const float px = p.x - static_cast<float>(pane) * (pw + l.pane_gap);
  if (pane >= l.panes || px >= pw) return false;
  const auto bcol = static_cast<std::int64_t>(std::floor(px / (cols + l.block_gap_x)));
  const float cx = px - static_cast<float>(bcol) * (cols + l.block_gap_x);
  const auto brow = static_cast<std::int64_t>(std::floor(p.y / (rows + l.block_gap)));
  const float cy = p.y - static_cast<float>(brow) * (rows + l.block_gap);
  if (bcol >= bc || cx >= cols || cy >= rows) return false;
  const std::int64_t block_slot = brow * bc + bcol;
  const std::int64_t block = l.block_axis().index_at(block_slot);
  const std::int64_t row = l.row_axis().index_at(static_cast<std::int64_t>(std::floor(cy)));
  const std::int64_t col = l.col_axis().index_at(static_cast<std::int64_t>(std::floor(cx)));
  if (block < 0 || row < 0 || col < 0) return false;
  out = {static_cast<int>(pane), block, row, col};
  return true;
}

int head_of(const Layout& l, const Cell& c) {
  switch (l.kind) {
    case Kind::Matrix: return l.head_cols > 0 ? static_cast<int>(c.col / l.head_cols) : -1;
    case Kind::TokenBlocks: return static_cast<int>(c.row);
    case Kind::HeadBlocks: return static_cast<int>(c.block % l.dims[1]);
  }
  return -1;
}

int part_of(const Layout& l, const Cell& c) {
  if (l.part_cols <= 0) return -1;
  return static_cast<int>((c.col % (3 * l.part_cols)) / l.part_cols);
}

// [SECTION] Moves
namespace {
struct Idx4 {
  std::int64_t i[4];
};
Idx4 unflatten(const std::array<std::int64_t, 4>& d, std::int64_t f) {
  Idx4 x{};
  for (int a = 3; a >= 0; --a) {
    x.i[a] = f % d[static_cast<std::size_t>(a)];
    f /= d[static_cast<std::size_t>(a)];
  }
  return x;
}
std::int64_t flatten(const std::array<std::int64_t, 4>& d, const Idx4& x) {
  return ((x.i[0] * d[1] + x.i[1]) * d[2] + x.i[2]) * d[3] + x.i[3];
}
}  // namespace

std::int64_t move_index(Move m, const Layout& from, const Layout& to, std::int64_t flat) {
  const std::int64_t per = from.pane_numel();
  const std::int64_t pane = flat / per, f = flat % per;
  switch (m) {
    case Move::None: return -1;
    case Move::Same: return flat;
    case Move::Transpose: {
      Idx4 x = unflatten(from.dims, f);
      std::swap(x.i[1], x.i[2]);
      return pane * to.pane_numel() + flatten(to.dims, x);
    }
    case Move::Chunk: {
      // (b, h, T, 3hd)[.., x] -> pane x / hd of (b, h, T, hd), column x mod hd.
      Idx4 x = unflatten(from.dims, f);
      const std::int64_t hd = to.dims[3];
      const std::int64_t part = x.i[3] / hd;
      x.i[3] %= hd;
      return part * to.pane_numel() + flatten(to.dims, x);
    }
    case Move::TransposeMerge: {
      // (b, h, T, hd)[b, head, t, d] -> (b, 1, T, h*hd)[b, 0, t, head*hd + d]
      const Idx4 x = unflatten(from.dims, f);
      const Idx4 y{{x.i[0], 0, x.i[2], x.i[1] * from.dims[3] + x.i[3]}};
      return pane * to.pane_numel() + flatten(to.dims, y);
    }
  }
  return -1;
}

std::int64_t move_index_inverse(Move m, const Layout& from, const Layout& to, std::int64_t flat) {
  const std::int64_t per = to.pane_numel();
  const std::int64_t pane = flat / per, f = flat % per;
  switch (m) {
    case Move::None: return -1;
    case Move::Same: return flat;
    case Move::Transpose: {
      Idx4 x = unflatten(to.dims, f);
      std::swap(x.i[1], x.i[2]);
      return pane * from.pane_numel() + flatten(from.dims, x);
    }
    case Move::Chunk: {
      Idx4 x = unflatten(to.dims, f);
      x.i[3] += pane * to.dims[3];
      return flatten(from.dims, x);
    }
    case Move::TransposeMerge: {
      const Idx4 y = unflatten(to.dims, f);
      const std::int64_t hd = from.dims[3];
      const Idx4 x{{y.i[0], y.i[3] / hd, y.i[2], y.i[3] % hd}};
      return pane * from.pane_numel() + flatten(from.dims, x);
    }
  }
  return -1;
}

// [SECTION] Animation
float ease(float t) {
  t = std::clamp(t, 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}

Point animate(const Layout& from, const Layout& to, Move m, std::int64_t flat, float t, float stagger) {
  const Point a = point_of(from, cell_of(from, flat));
  const std::int64_t g = move_index(m, from, to, flat);
  if (g < 0) return a;
  const Cell target = cell_of(to, g);
  const Point b = point_of(to, target);
  const float local = progress(to, target, t, stagger);
  if (local <= 0.0f) return a;
  if (local >= 1.0f) return b;
  return {a.x + (b.x - a.x) * local, a.y + (b.y - a.y) * local};
}

float progress(const Layout& to, const Cell& target, float t, float stagger) {
  if (t <= 0.0f) return 0.0f;
  if (t >= 1.0f) return 1.0f;
  stagger = std::clamp(stagger, 0.0f, 0.95f);
  // Later rows of the target start later.
  const Axis ba = to.block_axis(), ra = to.row_axis();
  const float total = static_cast<float>(ba.slots() * ra.slots());
  const float order = static_cast<float>(std::max<std::int64_t>(0, slot_or_ellipsis(ba, target.block)) * ra.slots() +
                                         std::max<std::int64_t>(0, slot_or_ellipsis(ra, target.row)));
  const float delay = total > 1.0f ? stagger * order / (total - 1.0f) : 0.0f;
  return ease((t - delay) / (1.0f - stagger));
}

// [SECTION] Step layouts (the step list and its texts: layout_steps.cpp)
Layout step_layout(Step s, const Dims& d) {
  const bool wrapper = d.variant == Variant::Wrapper, fused = d.variant == Variant::FusedQkv;
  const std::int64_t b = d.b, T = d.T, h = d.h, hd = d.hd, D = d.d_out();
  Layout l;
  l.heads = d.h;
  l.group = d.group();
  if (first_part(s, d) == 1) {
    // gqa: keys | values at the G K/V heads, each its own colour (the queries are query_layout's).
    const std::int64_t G = d.kv();
    l = step_layout(s, Dims{Variant::WeightSplit, d.b, d.T, d.d_in, d.kv(), d.hd});
    l.panes = 2;
    if (s == Step::Project) l.dims = {b, 1, T, G * hd};
    return l;
  }
  switch (s) {
    case Step::Input: l.dims = {b, 1, T, d.d_in}; break;
    case Step::Latent: l.dims = {b, 1, T, d.latent}; break;
    case Step::Project:
      if (wrapper) {
        l.kind = Kind::HeadBlocks;
        l.panes = 3;
        l.dims = {b, h, T, hd};
      } else if (fused) {
        l.dims = {b, 1, T, 3 * D};
        l.head_cols = 3 * d.hd;
        l.part_cols = d.hd;
      } else {
        l.panes = 3;
        l.dims = {b, 1, T, D};
        l.head_cols = d.hd;
      }
      break;
    case Step::View:
      l.kind = Kind::TokenBlocks;
      l.panes = fused ? 1 : 3;
      l.dims = {b, T, h, fused ? 3 * hd : hd};
      l.part_cols = fused ? d.hd : 0;
      break;
    case Step::Transpose:
      l.kind = Kind::HeadBlocks;
      l.panes = fused ? 1 : 3;
      l.dims = {b, h, T, fused ? 3 * hd : hd};
      l.part_cols = fused ? d.hd : 0;
      break;
    case Step::Chunk:
      l.kind = Kind::HeadBlocks;
      l.panes = 3;
      l.dims = {b, h, T, hd};
      break;
    case Step::Scores:
    case Step::Mask:
    case Step::Softmax:
    case Step::Dropout:
      l.kind = Kind::HeadBlocks;
      l.dims = {b, h, T, T};
      break;
    case Step::Context:
      l.kind = Kind::HeadBlocks;
      l.dims = {b, h, T, hd};
      break;
    case Step::Expand:
      l.kind = Kind::HeadBlocks;
      l.panes = 2;
      l.dims = {b, h, T, hd};
      break;
    case Step::QkNorm:
    case Step::Rope:
      l.kind = Kind::HeadBlocks;
      l.dims = {b, h, T, hd};
      break;
    case Step::TransposeBack:
      l.kind = Kind::TokenBlocks;
      l.dims = {b, T, h, hd};
      break;
    case Step::Merge:
    case Step::Concat:
      l.dims = {b, 1, T, D};
      l.head_cols = d.hd;
      break;
    case Step::OutProj: l.dims = {b, 1, T, d.out_width()}; break;
  }
  return l;
}

Layout query_layout(Step s, const Dims& d) {
  Layout l = step_layout(s, Dims{Variant::WeightSplit, d.b, d.T, d.d_in, d.h, d.hd});
  l.panes = 1;
  l.group = d.group();
  return l;
}

Move step_move(Step /*from*/, Step to, bool /*mistaken*/) {
  // Which step a move comes from is fixed by steps_for; with the mistake, Merge follows
  // Context directly and the plain reshape is the same flat index as the correct view.
  switch (to) {
    case Step::View: return Move::Same;
    case Step::Transpose: return Move::Transpose;
    case Step::Chunk: return Move::Chunk;
    case Step::Mask:
    case Step::Softmax:
    case Step::Dropout: return Move::Same;
    case Step::TransposeBack: return Move::Transpose;
    case Step::Merge: return Move::Same;
    case Step::Concat: return Move::TransposeMerge;
    default: return Move::None;
  }
}

std::vector<std::int64_t> follow(const std::vector<Step>& steps, const Dims& d, bool mistaken, int at,
                                 std::int64_t flat) {
  const int n = static_cast<int>(steps.size());
  std::vector<std::int64_t> out(static_cast<std::size_t>(n), -1);
  if (at < 0 || at >= n) return out;
  std::vector<Layout> ls;
  ls.reserve(steps.size());
  for (Step s : steps) ls.push_back(step_layout(s, d));
  out[static_cast<std::size_t>(at)] = flat;
  std::int64_t f = flat;
  for (int i = at + 1; i < n; ++i) {
    const Move m = step_move(steps[static_cast<std::size_t>(i - 1)], steps[static_cast<std::size_t>(i)], mistaken);
    f = move_index(m, ls[static_cast<std::size_t>(i - 1)], ls[static_cast<std::size_t>(i)], f);
    if (f < 0) break;
    out[static_cast<std::size_t>(i)] = f;
  }
  f = flat;
  for (int i = at - 1; i >= 0; --i) {
    const Move m = step_move(steps[static_cast<std::size_t>(i)], steps[static_cast<std::size_t>(i + 1)], mistaken);
    f = move_index_inverse(m, ls[static_cast<std::size_t>(i)], ls[static_cast<std::size_t>(i + 1)], f);
    if (f < 0) break;
    out[static_cast<std::size_t>(i)] = f;
  }
  return out;
}

// [SECTION] Index paths
HeadIndex split_column(std::int64_t b, std::int64_t t, std::int64_t j, std::int64_t hd) {
  return {b, t, j / hd, j % hd};
}

std::int64_t merged_column(const HeadIndex& i, std::int64_t hd) { return i.head * hd + i.d; }

HeadIndex mistaken_source(std::int64_t b, std::int64_t t, std::int64_t j, std::int64_t T, std::int64_t h,
                          std::int64_t hd) {
  const std::int64_t p = t * h * hd + j;
  return {b, (p / hd) % T, p / (T * hd), p % hd};
}

std::string index_string(std::initializer_list<std::int64_t> idx) {
  std::string s = "[";
  bool first = true;
  for (std::int64_t i : idx) {
    if (!first) s += ", ";
    s += std::to_string(i);
    first = false;
  }
  return s + "]";
}

}  // namespace mhaviz::layout
