// The one heatmap (heatmap.hpp): values, colours, numbers, dropout marks, token labels, the
// colour bar, and the range and label rules every heatmap of the app follows.
#include "figure/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>

#include "figure/text.hpp"

namespace mhaviz::figure {

Color cell_color(const ColorScale& s, float v) {
  const auto c = colormap_lut(s.cmap, static_cast<int>(std::lround(std::clamp(scale_t(s, v), 0.0f, 1.0f) * 255.0f)));
  return {c[0], c[1], c[2], 255};
}

namespace detail {

// [SECTION] Values and the range rule
bool signed_stage(Stage st) { return st == Stage::Scores || st == Stage::Masked || st == Stage::Scaled; }
bool masked_stage(Stage st) { return st != Stage::Scores; }

CellMask trace_mask(const Trace& tr, int i, int j) { return cell_mask(tr.hidden_by(i, j)); }

CellMask cell_mask(MaskRule r) {
  switch (r) {
    case MaskRule::Causal: return CellMask::Causal;
    case MaskRule::Window: return CellMask::Window;
    case MaskRule::Visible: break;
  }
  return CellMask::Visible;
}

void ValueRange::add(float v) {
  if (!std::isfinite(v)) return;
  if (empty) {
    lo = hi = v;
    empty = false;
  } else {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (v > 0.0f) min_pos = min_pos > 0.0f ? std::min(min_pos, v) : v;
}

void ValueRange::merge(const ValueRange& o) {
  if (o.empty) return;
  add(o.lo);
  add(o.hi);
  if (o.min_pos > 0.0f) min_pos = min_pos > 0.0f ? std::min(min_pos, o.min_pos) : o.min_pos;
}

ValueRange value_range(std::span<const float> v) {
  ValueRange r;
  for (float x : v) r.add(x);
  return r;
}

ColorScale scale_for(const ValueRange& r, bool signed_values, const Options& o) {
  return color_scale(r.lo, r.hi, r.min_pos, signed_values, o.colormap, o.diverging_for_signed, o.log_scale);
}

// [SECTION] Token labels
namespace {
// The smallest of 1, 2, 4, 5, 8, 10, ... at least `need`.
int nice_step(float need) {
  static constexpr int kNice[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 512, 1024, 2048, 4096};
  const int n = std::max(1, static_cast<int>(std::ceil(need - 1e-3f)));
  for (int k : kNice)
    if (k >= n) return k;
  return kNice[std::size(kNice) - 1];
}

// A label's height as rows and turned columns need it: its ascent and a quarter of its size.
float label_room(float size) { return text_ascent(size) + 0.25f * size; }
}  // namespace

int legible_step(float cell, float size) { return nice_step(0.8f * label_room(size) / std::max(cell, 1e-3f)); }

LabelPlan plan_labels(const std::vector<std::string>& tokens, float cell, float size) {
  LabelPlan p;
  const int T = static_cast<int>(tokens.size());
  if (cell * static_cast<float>(T) < 60.0f || T == 0) return p;
  p.show = true;
  p.step = nice_step(size * 1.4f / cell);
  const float cap = text_width("abcdefghij", size);
  float maxw = 0;
  for (int i = 0; i < T; i += p.step) maxw = std::max(maxw, text_width(tokens[static_cast<std::size_t>(i)], size));
  const float w = std::min(maxw, cap);
  p.left = std::ceil(w + 8.0f);
  p.vertical = maxw > cell * static_cast<float>(p.step) - 4.0f;
  p.top = std::ceil(p.vertical ? w + 8.0f : line_h(size) + 2.0f);
  return p;
}

// [SECTION] One heatmap
std::vector<float> heatmap_values(const HeatmapSpec& h) {
  std::vector<float> v(static_cast<std::size_t>(h.rows) * static_cast<std::size_t>(h.cols));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::size_t k = 0;
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j, ++k) v[k] = h.mask && h.mask(i, j) != CellMask::Visible ? neg_inf : h.value(i, j);
  return v;
}

float fit_cell(float w, float h, int rows, int cols) {
  const float c = std::min(w / static_cast<float>(std::max(1, cols)), h / static_cast<float>(std::max(1, rows)));
  return c >= 1.0f ? std::floor(c) : std::max(c, 1.0f / 64.0f);
}

namespace {

// Numbers grow with the cells (a projector at the back of a room), from the small size up.
float number_size(const Builder& B, float cell) {
  return std::clamp(std::round(cell * 0.26f), B.ty.small, B.ty.title * 1.4f);
}

// Numbers when the widest one fits its cell (at most 48 x 48: beyond, nobody reads them).
bool numbers_fit(const Builder& B, const HeatmapSpec& h, const std::vector<float>& vals, float cell) {
  const float size = number_size(B, cell);
  if (!h.numbers || h.rows > 48 || h.cols > 48 || cell < size + 6.0f) return false;
  float widest = 0;
  for (float v : vals)
    if (std::isfinite(v) || h.hidden_numbers) widest = std::max(widest, text_width(format_value(v), size));
  return cell >= widest + 6.0f;
}

void cell_marks(Builder& B, const HeatmapSpec& h, const HeatmapInfo& info, float cell, bool values) {
  const bool crosses = h.dropped && cell >= 8.0f;
  if (!values && !crosses) return;
  const float gap = info.gap, size = number_size(B, cell);
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j) {
      const std::size_t k =
          static_cast<std::size_t>(i) * static_cast<std::size_t>(h.cols) + static_cast<std::size_t>(j);
      const float v = info.values[k];
      const bool hidden = info.hidden(k);
      const Color fill = hidden ? (info.windowed(k) ? B.th.window_a : B.th.masked_a) : cell_color(info.scale, v);
      const float cx0 = info.x0 + static_cast<float>(j) * cell, cy0 = info.y0 + static_cast<float>(i) * cell;
      const bool dropped = crosses && !hidden && h.dropped(i, j);
      if (values && (!hidden || h.hidden_numbers)) {
        const Color tc = hidden ? B.th.text : on(fill);
        const float ty = cy0 + (cell - gap) * 0.5f + text_ascent(size) * 0.5f - 1.0f;
        B.text(cx0 + (cell - gap) * (dropped ? 0.42f : 0.5f), ty, format_value(v), size, tc, 1, "value");
      }
      if (dropped) {
        const Color lc = on(fill);
        const float r = cell * (values ? 0.1f : 0.22f);
        const float mx = cx0 + (cell - gap) * (values ? 0.84f : 0.5f),
                    my = cy0 + (cell - gap) * (values ? 0.18f : 0.5f);
        B.line(mx - r, my - r, mx + r, my + r, lc, 1.5f, "dropped");
        B.line(mx - r, my + r, mx + r, my - r, lc, 1.5f, "dropped");
      }
    }
}

void token_labels(Builder& B, const HeatmapSpec& h, const HeatmapInfo& info, const LabelPlan& lp, bool row_labels,
                  bool col_labels) {
  if (!lp.show) return;
  const float size = B.ty.label, cell = info.cell;
  const float maxw = lp.left - 8.0f;
  // Rows a little closer than a label is tall (its ascent and descent: 14-px rows of the six
  // heads of the bonus variants on a 1024 × 768 window) get labels that much smaller, not
  // labels running into each other.
  const float pitch = cell * static_cast<float>(lp.step);
  const float row_size = std::min(size, size * pitch / label_room(size));
  // Rows of cells shorter than a label: the first row's label would reach above the heatmap,
  // into the corner where the first column's label ends (4-pixel cells of a large head on a
  // 1024 × 768 window with a 24-pixel font: "0" on "0"); it starts below that label instead.
  const float lowest = col_labels && h.col_names ? info.y0 - 5.5f + text_ascent(row_size) : -1e30f;
  if (row_labels && h.row_names)
    for (int i = 0; i < h.rows; i += lp.step) {
      const float cy = info.y0 + (static_cast<float>(i) + 0.5f) * cell;
      B.text(info.x0 - 5.0f, std::max(lowest, cy + text_ascent(row_size) * 0.5f - 1.0f),
             fit_text((*h.row_names)[static_cast<std::size_t>(i)], row_size, maxw), row_size, B.th.text, 2);
    }
  if (col_labels && h.col_names)
    for (int j = 0; j < h.cols; j += lp.step) {
      const float cx = info.x0 + (static_cast<float>(j) + 0.5f) * cell;
      const std::string& t = (*h.col_names)[static_cast<std::size_t>(j)];
      if (lp.vertical)  // turned: as close as rows, and as much smaller
        B.text(cx + text_ascent(row_size) * 0.5f - 1.0f, info.y0 - 5.0f, fit_text(t, row_size, lp.top - 8.0f), row_size,
               B.th.text, 0, "label", true);
      else
        B.text(cx, info.y0 - 6.0f, t, size, B.th.text, 1);
    }
}

}  // namespace

int draw_heatmap(Builder& B, const HeatmapSpec& h, float x0, float y0, float cell, const LabelPlan& lp, bool row_labels,
                 bool col_labels) {
  HeatmapInfo info;
  info.head = h.id;
  info.x0 = x0, info.y0 = y0, info.cell = cell, info.rows = h.rows, info.cols = h.cols;
  info.gap = cell >= 20.0f ? 1.0f : 0.0f;  // a thin gap between large cells
  info.scale = h.scale;
  info.values = heatmap_values(h);
  if (h.mask) {
    info.mask.resize(info.values.size());
    std::size_t k = 0;
    for (int i = 0; i < h.rows; ++i)
      for (int j = 0; j < h.cols; ++j) info.mask[k++] = h.mask(i, j);
  }
  if (cell >= 4.0f) {
    if (h.row_names) info.row_names = *h.row_names;
    if (h.col_names) info.col_names = *h.col_names;
  }
  // The cells are one primitive (a 4096-token head has 16M of them); numbers and dropout
  // marks are drawn over them only when cells are large enough to read.
  Prim cells;
  cells.kind = Prim::Kind::Cells;
  cells.heatmap = static_cast<int>(B.f.heatmaps.size());
  cells.x0 = x0, cells.y0 = y0;
  cells.x1 = x0 + cell * static_cast<float>(h.cols), cells.y1 = y0 + cell * static_cast<float>(h.rows);
  cells.color = B.th.masked_a, cells.color2 = B.th.masked_b;
  B.f.prims.push_back(cells);
  B.grow(cells.x1, cells.y1);
  B.f.cells += h.rows * h.cols;
  cell_marks(B, h, info, cell, numbers_fit(B, h, info.values, cell));
  token_labels(B, h, info, lp, row_labels, col_labels);
  B.f.heatmaps.push_back(std::move(info));
  return static_cast<int>(B.f.heatmaps.size()) - 1;
}

// [SECTION] Colour bar and legend
float colorbar_width(const Builder& B, const ColorScale& s) {
  // Room for the widest usual tick whatever the values: a new stage or range must not move
  // the heatmaps (under the pointer, or between two slides).
  float w = text_width("-00.000", B.ty.small);
  for (int k = 0; k <= 4; ++k)
    w = std::max(
        w, text_width(format_tick(scale_value(s, 1.0f - static_cast<float>(k) / 4.0f), (s.vmax - s.vmin) / 4.0f, s.log),
                      B.ty.small));
  return 16.0f + 8.0f + w;
}

float colorbar(Builder& B, const ColorScale& s, float x, float y0, float h, const std::string& title) {
  const float w = 16.0f;
  // Clear of the top tick's label, which is centred on the bar's top edge beside it: the
  // title's descent above that label's top (11 px at the usual sizes; more with a large font).
  const float lift = std::max(11.0f, std::floor(text_ascent(B.ty.small) * 0.5f + 0.25f * B.ty.small + 3.0f));
  B.text(x, y0 - lift, title, B.ty.small, B.th.dim, 0, "colorbar-title");
  B.rect(x - 1, y0 - 1, x + w + 1, y0 + h + 1, B.th.frame, "colorbar-frame");
  Prim p;
  p.kind = Prim::Kind::Gradient;
  p.x0 = x, p.y0 = y0, p.x1 = x + w, p.y1 = y0 + h, p.cmap = s.cmap, p.cls = "colorbar";
  B.f.prims.push_back(p);
  // Five ticks, or three or two where a short bar would set their numbers over each other.
  const float tick_h = line_h(B.ty.small);
  const int n = h >= 4.0f * tick_h ? 4 : h >= 2.0f * tick_h ? 2 : 1;
  for (int k = 0; k <= n; ++k) {
    const float f = static_cast<float>(k) / static_cast<float>(n);
    const float y = y0 + f * h;
    B.line(x + w, y, x + w + 5, y, B.th.text, 1.0f, "tick");
    B.text(x + w + 8, y + text_ascent(B.ty.small) * 0.5f - 1.0f,
           format_tick(scale_value(s, 1.0f - f), (s.vmax - s.vmin) / static_cast<float>(n), s.log), B.ty.small,
           B.th.text, 0, "tick");
  }
  B.hit("colorbar", x, y0, x + w, y0 + h);
  return colorbar_width(B, s);
}

float mask_legend(Builder& B, float x, float y, const std::string& text, bool window) {
  const float sz = B.ty.small;
  B.hatch(x, y, x + 16, y + sz + 1.0f, window ? "legend-window" : "legend-masked", {}, window);
  return x + 22.0f + B.text(x + 22.0f, y + sz - 1.0f, text, sz, B.th.text) + 18.0f;
}

}  // namespace detail
}  // namespace mhaviz::figure
