// The KV cache stepper's figure (kv_figure.hpp).
//   [SECTION] What one step shows: the columns, the blocks, their heatmaps
//   [SECTION] Layout: the largest cells that fit, blocks in as many columns as that needs
//   [SECTION] The figure
#include "figure/kv_figure.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "figure/builder.hpp"
#include "figure/heatmap.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {

using namespace detail;

namespace {

// [SECTION] What one step shows: the columns, the blocks, their heatmaps

// Positions shown as columns: from the first row evicted at this step (or the first held)
// to the newest. Rows evicted at earlier steps are gone and said so in the header.
struct Columns {
  std::int64_t first = 0, end = 0;
  int count() const { return static_cast<int>(end - first); }
};

// One K/V head (mla: the one latent): its cached tensors and the query heads reading it.
struct Block {
  int kv = 0;                // K/V head (index into each cached tensor's heads)
  int head0 = 0, heads = 0;  // query heads [head0, head0 + heads)
  int rows() const { return heads; }
};

std::string thousands_text(std::int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string range_text(std::int64_t begin, std::int64_t end) {
  return end - begin == 1 ? std::to_string(begin) : std::to_string(begin) + "\xE2\x80\x93" + std::to_string(end - 1);
}

// Rows of one block's heatmaps, stacked: each cached tensor's width, then its query heads.
int block_rows(const DecodeTrace& d, const Block& b) {
  int rows = b.rows();
  for (const CachedTensor& t : d.layout.tensors) rows += t.width;
  return rows;
}

// [SECTION] Layout: the largest cells that fit, blocks in as many columns as that needs

struct Plan {
  int columns = 1;
  float cell = 1;
  LabelPlan lp;
  bool two_line_titles = false;  // "K/V head 0" above "read by query head 0"
};

// Room between rows of blocks: the next block's title is not the last one's row of weights.
constexpr float kBlockRowGap = 12.0f;

// A block's title in one line (what, " · ", by whom) or in two.
struct BlockTitle {
  std::string what, by;
};

// The smallest cell the figure draws: a row as tall as a line of the labels' size, so that each
// tensor's name beside its rows ("keys" beside one row where head_dim is 1) and each query head's
// name beside its row of weights are readable and apart. A canvas too short for that (a 1024 ×
// 768 window with a 24-pixel font: four K/V heads' blocks in 280 px, 1-pixel cells under names
// drawn over each other) gets a taller figure, which the app scrolls.
float min_cell(const Typography& ty) { return line_h(ty.label); }

// The size of a name beside `rows_h` pixels of rows ("keys", "weights"): the tiles' where the rows
// are as tall as its line, else the labels', else (cells made narrow by many tokens) as small as
// keeps it within its rows, 7 px at the least.
float side_label_size(const Typography& ty, float rows_h) {
  if (rows_h >= line_h(ty.tile)) return ty.tile;
  if (rows_h >= line_h(ty.label)) return ty.label;
  return std::max(7.0f, std::floor(rows_h / 1.35f));
}

// title_w: the widest title in one line; title_w2: its widest line in two. Blocks side by side
// only where their titles fit side by side too, in one line where they can (a 1024 × 768
// window takes two); one column's title is in two lines where one is wider than the canvas.
// The largest cells that fit W × H; where none reach min_cell, min_cell in the layout that fits
// W with the least height.
Plan plan(const DecodeTrace& d, int blocks, const std::vector<std::string>& names, float W, float H, float left,
          float title_w, float title_w2, float gaps, const Typography& ty) {
  const int rows = block_rows(d, {0, 0, d.trace.heads / blocks}), cols = static_cast<int>(names.size());
  const float smallest = min_cell(ty);
  Plan best, shortest;
  best.cell = shortest.cell = -1;
  float shortest_h = 0;
  for (int nc = 1; nc <= blocks; ++nc)
    for (const bool two : {false, true}) {
      const float tw = two ? title_w2 : title_w;
      if (static_cast<float>(nc) * tw + static_cast<float>(nc - 1) * 24.0f > W && (nc > 1 || !two)) continue;
      const float title_h = (two ? 2.0f : 1.0f) * line_h(ty.tile) + 4.0f;
      const int nr = (blocks + nc - 1) / nc;
      const float block_w =
          (W - static_cast<float>(nc) * left - static_cast<float>(nc - 1) * 24.0f) / static_cast<float>(nc);
      auto cell_for = [&](const LabelPlan& lp) {
        const float top = lp.show ? lp.top : 0.0f;
        return fit_cell(
            block_w,
            (H - static_cast<float>(nr) * (title_h + top + gaps) - static_cast<float>(nr - 1) * kBlockRowGap) /
                static_cast<float>(nr),
            rows, cols);
      };
      LabelPlan lp = plan_labels(names, cell_for(LabelPlan{}), ty.label);
      const float cell = cell_for(lp);
      lp = plan_labels(names, cell, ty.label);
      if (cell > best.cell) best = {nc, cell, lp, two};
      // The same blocks as tall as the smallest cell makes them, as wide as the width allows
      // (many tokens: a wider figure would be cut, never scrolled sideways).
      const float c = std::min(smallest, fit_cell(block_w, 1e9f, rows, cols));
      const LabelPlan small = plan_labels(names, c, ty.label);
      const float h = static_cast<float>(nr) *
                      (title_h + (small.show ? small.top : 0.0f) + gaps + c * static_cast<float>(rows) + kBlockRowGap);
      if (c > shortest.cell || (c == shortest.cell && h < shortest_h)) {
        shortest = {nc, c, small, two};
        shortest_h = h;
      }
    }
  return best.cell >= smallest || shortest.cell <= best.cell ? best : shortest;
}

std::string header_title(const DecodeTrace& d, const CacheStep& st, const std::vector<std::string>& tokens, int step) {
  if (step == 0)
    return "KV cache \xC2\xB7 prefill: rows " + range_text(st.queries.begin, st.queries.end) +
           " at once, their keys and values cached";
  const std::string tok = tokens[static_cast<std::size_t>(st.queries.begin)];
  return "KV cache \xC2\xB7 step " + std::to_string(step) + " of " + std::to_string(d.steps.size() - 1) +
         ": decoding row " + std::to_string(st.queries.begin) + " (\xE2\x80\x9C" + tok +
         "\xE2\x80\x9D), one new row cached";
}

std::string size_line(const DecodeTrace& d, const CacheStep& st) {
  std::string what;
  for (const CachedTensor& t : d.layout.tensors) {
    if (!what.empty()) what += " + ";
    what += t.name == "latent" ? "latent " + std::to_string(t.width)
                               : t.name + " " + std::to_string(t.heads) + "\xC3\x97" + std::to_string(t.width);
  }
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "holds %s %s: %lld %s \xC3\x97 %lld values (%s) \xC3\x97 batch %d = %s elements = %s bytes "
                "(float32)",
                st.held.size() == 1 ? "row" : "rows", range_text(st.held.begin, st.held.end).c_str(),
                static_cast<long long>(st.held.size()), st.held.size() == 1 ? "row" : "rows",
                static_cast<long long>(d.layout.values_per_token()), what.c_str(), d.trace.batch,
                thousands_text(st.elements).c_str(), thousands_text(st.bytes).c_str());
  return buf;
}

// The header: what the step did, the cache's size, the legend, their lines wrapped at `width`
// (a large font ran them past the canvas). Returns the y below it.
float kv_header(Builder& B, const DecodeTrace& d, const CacheStep& st, const Columns& cols,
                const std::vector<std::string>& tokens, int step, float width) {
  float y = kMargin + text_ascent(B.ty.title);
  y = paragraph(B, kMargin, y, width, header_title(d, st, tokens, step), B.ty.title, B.th.text, "title");
  y += line_h(B.ty.small) + 2.0f;
  y = paragraph(B, kMargin, y, width, size_line(d, st), B.ty.small, B.th.text, "kv-size");
  y += 6.0f;
  // The legend's items in a row, the next on a new line where it would run past the canvas (a
  // window's two notes at 24 px ran 350 px past a 600-px canvas).
  float lx = kMargin;
  const auto room_for = [&](float w) {
    if (lx > kMargin && lx + w > kMargin + width) {
      y += line_h(B.ty.small) + 4.0f;
      lx = kMargin;
    }
  };
  const auto hatched = [&](const std::string& text) {
    room_for(22.0f + text_width(text, B.ty.small));
    lx = mask_legend(B, lx, y, text, true);
  };
  if (!st.evicted.empty())
    hatched((st.evicted.size() == 1 ? "row " : "rows ") + range_text(st.evicted.begin, st.evicted.end) +
            (st.evicted.size() == 1 ? " leaves" : " leave") + " the cache: the window (W = " +
            std::to_string(d.layout.window) + ") has moved past " + (st.evicted.size() == 1 ? "it" : "them"));
  if (cols.first > 0)
    hatched((cols.first == 1 ? "row " : "rows ") + range_text(0, cols.first) + " left at earlier steps");
  const std::string added = step == 0 ? "rows of the prefill" : "the row added at this step";
  room_for(20.0f + text_width(added, B.ty.small));
  B.frame(lx, y + 1.0f, lx + 14.0f, y + B.ty.small, B.th.accent, 2.0f, "legend-new");
  B.text(lx + 20.0f, y + B.ty.small - 1.0f, added, B.ty.small, B.th.text);
  return y + line_h(B.ty.small) + 10.0f;
}

// The weight of query row `query` of head h on key p, batch item b: weights (b, H, T, T).
float query_weight(const Trace& tr, int b, int h, std::int64_t query, std::int64_t p) {
  const std::int64_t T = tr.tokens;
  return tr.weights.data[static_cast<std::size_t>(((static_cast<std::int64_t>(b) * tr.heads + h) * T + query) * T + p)];
}

// The scales: cached values signed (diverging) over what the cache holds, the newest query's
// weights from 0 over the columns drawn.
std::pair<ColorScale, ColorScale> kv_scales(const DecodeTrace& d, const CacheStep& st, const Columns& cols,
                                            const Options& o) {
  const Trace& tr = d.trace;
  const std::int64_t T = tr.tokens, query = st.queries.end - 1;
  ValueRange cached, weights;
  for (std::size_t i = 0; i < d.layout.tensors.size(); ++i) {
    const Tensor& t = d.held_tensor(i);
    const CachedTensor& ct = d.layout.tensors[i];
    for (int g = 0; g < ct.heads; ++g)
      for (std::int64_t p = st.held.begin; p < st.held.end; ++p)
        for (int e = 0; e < ct.width; ++e)
          cached.add(t.data[static_cast<std::size_t>(
              ((static_cast<std::int64_t>(o.batch) * ct.heads + g) * T + p) * ct.width + e)]);
  }
  for (int h = 0; h < tr.heads; ++h)
    for (std::int64_t p = cols.first; p < cols.end; ++p) weights.add(query_weight(tr, o.batch, h, query, p));
  Options signed_o = o;
  signed_o.log_scale = false;
  return {scale_for(cached, true, signed_o), scale_for(weights, false, signed_o)};
}

}  // namespace

// [SECTION] The figure

Figure build_kv_step_figure(const DecodeTrace& d, const std::vector<std::string>& tokens, int step, const Options& o) {
  if (step < 0 || step >= static_cast<int>(d.steps.size()))
    throw std::invalid_argument("--step: " + std::to_string(step) + " is not a step of this decode (0 to " +
                                std::to_string(d.steps.size() - 1) + ")");
  const Trace& tr = d.trace;
  if (o.batch < 0 || o.batch >= tr.batch)
    throw std::invalid_argument("--batch: " + std::to_string(o.batch) + " is outside [0, " + std::to_string(tr.batch) +
                                ")");
  Builder B(o);
  const CacheStep& st = d.steps[static_cast<std::size_t>(step)];
  const Columns cols{st.evicted.empty() ? st.held.begin : st.evicted.begin, st.held.end};
  const std::int64_t T = tr.tokens, query = st.queries.end - 1;
  std::vector<std::string> names;
  for (std::int64_t p = cols.first; p < cols.end; ++p) names.push_back(tokens[static_cast<std::size_t>(p)]);
  const bool latent = d.layout.tensors.size() == 1;
  const int blocks = latent ? 1 : tr.kv_heads;

  float y = kv_header(B, d, st, cols, tokens, step, o.canvas.width - 2.0f * kMargin);

  const auto [value_scale, weight_scale] = kv_scales(d, st, cols, o);
  auto weight = [&](int h, std::int64_t p) { return query_weight(tr, o.batch, h, query, p); };

  // Layout.
  float left = text_width("weights", B.ty.tile) + 12.0f;
  for (int h = 0; h < tr.heads; ++h) left = std::max(left, text_width("head " + std::to_string(h), B.ty.label) + 12.0f);
  // The colour bars' titles start at their bars and must fit too.
  const std::string value_title = "cached value", weight_title = "weight of query " + std::to_string(query);
  const float bar_room = std::max({colorbar_width(B, value_scale), colorbar_width(B, weight_scale),
                                   text_width(value_title, B.ty.small), text_width(weight_title, B.ty.small)}) +
                         40.0f;
  const float gap = 8.0f;
  const float gaps = gap * static_cast<float>(d.layout.tensors.size());
  const float caption_room = o.caption ? 2.0f * line_h(B.ty.small) + 16.0f : 0.0f;
  const float W = std::max(60.0f, o.canvas.width - 2.0f * kMargin - bar_room);
  const float H = std::max(60.0f, o.canvas.height - kMargin - y - caption_room);
  const int heads_per = tr.heads / blocks;
  auto block_title = [&](int b) {
    const int h0 = b * heads_per;
    return BlockTitle{
        latent ? "the latent: every head's keys and values, up-projected" : "K/V head " + std::to_string(b),
        "read by " + (heads_per == 1
                          ? "query head " + std::to_string(h0)
                          : "query heads " + std::to_string(h0) + "\xE2\x80\x93" + std::to_string(h0 + heads_per - 1))};
  };
  const std::string dot = " \xC2\xB7 ";
  float title_w = 0, title_w2 = 0;
  for (int b = 0; b < blocks; ++b) {
    const BlockTitle t = block_title(b);
    title_w = std::max(title_w, text_width(t.what + dot + t.by, B.ty.tile));
    title_w2 = std::max({title_w2, text_width(t.what, B.ty.tile), text_width(t.by, B.ty.tile)});
  }
  const Plan pl = plan(d, blocks, names, W, H, left, title_w, title_w2, gaps, B.ty);
  const float title_h = (pl.two_line_titles ? 2.0f : 1.0f) * line_h(B.ty.tile) + 4.0f;
  const float cell = pl.cell, top = pl.lp.show ? pl.lp.top : 0.0f;
  const int rows = block_rows(d, {0, 0, heads_per});
  const float block_w = left + cell * static_cast<float>(cols.count()),
              block_h = title_h + top + cell * static_cast<float>(rows) + gaps + kBlockRowGap;
  // Columns as wide as their titles where those are wider than the heatmaps.
  const float pitch = (pl.columns > 1 ? std::max(block_w, pl.two_line_titles ? title_w2 : title_w) : block_w) + 24.0f;

  auto mask = [&](int, int j) {
    const std::int64_t p = cols.first + j;
    return p < st.held.begin ? CellMask::Window : CellMask::Visible;
  };
  float right = kMargin;
  for (int b = 0; b < blocks; ++b) {
    const Block blk{latent ? 0 : b, b * heads_per, heads_per};
    const float bx = kMargin + static_cast<float>(b % pl.columns) * pitch;
    const float by = y + static_cast<float>(b / pl.columns) * block_h;
    const BlockTitle title = block_title(b);
    // A line wider than the canvas still (a very narrow one) ends in an ellipsis.
    const float fit = std::max(W, block_w);
    if (pl.two_line_titles) {
      right = std::max(right, bx + B.text(bx, by + text_ascent(B.ty.tile), fit_text(title.what, B.ty.tile, fit),
                                          B.ty.tile, B.th.text, 0, "block-title"));
      right = std::max(right, bx + B.text(bx, by + text_ascent(B.ty.tile) + line_h(B.ty.tile),
                                          fit_text(title.by, B.ty.tile, fit), B.ty.tile, B.th.text, 0, "block-title"));
    } else {
      right = std::max(
          right, bx + B.text(bx, by + text_ascent(B.ty.tile), fit_text(title.what + dot + title.by, B.ty.tile, fit),
                             B.ty.tile, B.th.text, 0, "block-title"));
    }
    const float hx = bx + left;
    float hy = by + title_h + top;
    for (std::size_t i = 0; i < d.layout.tensors.size(); ++i) {
      const CachedTensor& ct = d.layout.tensors[i];
      const Tensor& t = d.held_tensor(i);
      HeatmapSpec spec;
      spec.id = static_cast<int>(B.f.heatmaps.size());
      spec.rows = ct.width;
      spec.cols = cols.count();
      const std::int64_t base = (static_cast<std::int64_t>(o.batch) * ct.heads + blk.kv) * T;
      spec.value = [&t, &ct, &cols, base](int e, int j) {
        return t.data[static_cast<std::size_t>((base + cols.first + j) * ct.width + e)];
      };
      spec.mask = mask;
      spec.scale = value_scale;
      spec.col_names = &names;
      spec.numbers = o.values;
      draw_heatmap(B, spec, hx, hy, cell, pl.lp, false, i == 0);
      const std::string label = ct.name == "k" ? "keys" : ct.name == "v" ? "values" : "latent";
      const float size = side_label_size(B.ty, cell * static_cast<float>(ct.width));
      B.text(hx - 8.0f, hy + cell * static_cast<float>(ct.width) * 0.5f + text_ascent(size) * 0.5f, label, size,
             B.th.text, 2, "tensor-label");
      // The rows this step added, framed.
      const float nx = hx + cell * static_cast<float>(std::max(st.queries.begin, cols.first) - cols.first);
      B.frame(nx, hy, hx + cell * static_cast<float>(cols.count()), hy + cell * static_cast<float>(ct.width),
              B.th.accent, 2.0f, "new-rows");
      hy += cell * static_cast<float>(ct.width) + gap;
    }
    HeatmapSpec w;
    w.id = static_cast<int>(B.f.heatmaps.size());
    w.rows = blk.heads;
    w.cols = cols.count();
    w.value = [&weight, &blk, &cols](int i, int j) { return weight(blk.head0 + i, cols.first + j); };
    w.mask = mask;
    w.scale = weight_scale;
    w.col_names = &names;
    w.numbers = o.values;
    draw_heatmap(B, w, hx, hy, cell, pl.lp, false, false);
    if (cell >= B.ty.label + 2.0f) {
      for (int i = 0; i < blk.heads; ++i)
        B.text(hx - 8.0f, hy + cell * (static_cast<float>(i) + 0.5f) + text_ascent(B.ty.label) * 0.5f - 1.0f,
               "head " + std::to_string(blk.head0 + i), B.ty.label, B.th.text, 2);
    } else {
      const float size = side_label_size(B.ty, cell * static_cast<float>(blk.heads));
      B.text(hx - 8.0f, hy + cell * static_cast<float>(blk.heads) * 0.5f + text_ascent(size) * 0.5f, "weights", size,
             B.th.text, 2, "tensor-label");
    }
    B.hit("kv_block_" + std::to_string(b), bx, by, bx + block_w, hy + cell * static_cast<float>(blk.heads));
    right = std::max(right, bx + block_w);
  }
  // Colour bars on the right: the cached values, then the newest query's weights.
  const float bar_h = std::clamp(H * 0.4f, 60.0f, 260.0f), bx = right + 36.0f;
  colorbar(B, value_scale, bx, y + 20.0f, bar_h, value_title);
  colorbar(B, weight_scale, bx, y + 20.0f + bar_h + 48.0f, bar_h, weight_title);
  char decode_line[160];
  std::snprintf(decode_line, sizeof decode_line,
                "Decoding through a KV cache: prefill of %d rows, then one row at a time \xC2\xB7 step %d of %zu "
                "\xC2\xB7 batch item %d",
                d.prefill, step, d.steps.size() - 1, o.batch);
  caption(B, o, {model_line(tr), decode_line});
  return finish(B);
}

}  // namespace mhaviz::figure
