// Layout of the teaching figures: the heatmap of one head, the grid of every head, and the
// model view of a trained GPT, as a display list in logical pixels (see figure.hpp); a step of
// the walkthrough is step_figure.cpp.
#include "figure/figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "figure/builder.hpp"
#include "figure/text.hpp"
#include "mhaviz/layout.hpp"

namespace mhaviz::figure {
namespace {

using namespace detail;  // the drawing kit (builder.hpp)

// [SECTION] Heatmaps
bool signed_stage(Stage st) { return st == Stage::Scores || st == Stage::Masked || st == Stage::Scaled; }
bool hatched_stage(Stage st) { return st != Stage::Scores; }  // raw scores are shown unmasked

using Range = ColorScale;

// The same scale the app's heatmap panel uses (panel_heatmaps.cpp range_for).
Range range_of(const Options& o, const std::vector<std::vector<float>>& heads, int only) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo, min_pos = 0.0f;
  for (std::size_t h = 0; h < heads.size(); ++h) {
    if (!o.shared_scale && static_cast<int>(h) != only) continue;
    for (float v : heads[h]) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      if (v > 0.0f) min_pos = min_pos > 0.0f ? std::min(min_pos, v) : v;
    }
  }
  if (!std::isfinite(lo)) lo = hi = 0.0f;
  return color_scale(lo, hi, min_pos, signed_stage(o.stage), o.colormap, o.diverging_for_signed, o.log_scale);
}

Color cell_color(const Range& r, float v) {
  const auto c = colormap_lut(r.cmap, static_cast<int>(std::lround(std::clamp(scale_t(r, v), 0.0f, 1.0f) * 255.0f)));
  return {c[0], c[1], c[2], 255};
}

struct LabelPlan {
  bool show = false;
  bool vertical = false;
  float left = 0, top = 0;
  int step = 1;
};

// Every step-th token, with a step from 1, 2, 4, 5, 8, 10, 16, 20, 25, 32, ... so that
// labelled positions are easy to count; labels wider than ten letters ("abcdefghij") abbreviated.
LabelPlan plan_labels(const std::vector<std::string>& tokens, float cell) {
  LabelPlan p;
  const int T = static_cast<int>(tokens.size());
  if (cell * static_cast<float>(T) < 60.0f) return p;
  p.show = true;
  const int need = std::max(1, static_cast<int>(std::ceil(kLabel * 1.4f / cell)));
  static constexpr int kNice[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 512, 1024, 2048, 4096};
  for (int n : kNice) {
    p.step = n;
    if (n >= need) break;
  }
  const float cap = text_width("abcdefghij", kLabel);
  float maxw = 0;
  for (int i = 0; i < T; i += p.step) maxw = std::max(maxw, text_width(tokens[static_cast<std::size_t>(i)], kLabel));
  const float w = std::min(maxw, cap);
  p.left = std::ceil(w + 8.0f);
  p.vertical = maxw > cell * static_cast<float>(p.step) - 4.0f;
  p.top = std::ceil(p.vertical ? w + 8.0f : line_h(kLabel) + 2.0f);
  return p;
}

std::vector<std::vector<float>> head_values(const Trace& tr, const Options& o) {
  const int T = tr.tokens;
  std::vector<std::vector<float>> out(static_cast<std::size_t>(tr.heads));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int h = 0; h < tr.heads; ++h) {
    auto& v = out[static_cast<std::size_t>(h)];
    v = tr.stage_matrix(o.stage, o.batch, h);
    if (hatched_stage(o.stage))
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j)
          if (tr.masked(i, j)) v[static_cast<std::size_t>(i * T + j)] = neg_inf;
  }
  return out;
}

// Cells, values, dropout crosses and labels of one head's heatmap at (x0, y0).
void heatmap(Builder& B, const Trace& tr, const std::vector<std::string>& tokens, const Options& o, int head,
             const std::vector<float>& vals, const Range& rg, float x0, float y0, float cell, const LabelPlan& lp,
             bool row_labels, bool col_labels) {
  const int T = tr.tokens;
  const bool dropout_marks = o.stage == Stage::Dropped && tr.dropout_applied();
  // Values when the widest one fits its cell; a thin gap between large cells.
  bool values = o.values && T <= 48 && cell >= kSmall + 6.0f;
  if (values) {
    float widest = 0;
    for (float v : vals)
      if (std::isfinite(v) || o.stage == Stage::Masked || o.stage == Stage::Scaled)
        widest = std::max(widest, text_width(format_value(v), kSmall));
    values = cell >= widest + 6.0f;
  }
  const float gap = cell >= 20.0f ? 1.0f : 0.0f;
  // The cells are one primitive (a 4096-token head has 16M of them); values and dropout
  // marks are drawn over them only when cells are large enough to read.
  HeatmapInfo info;
  info.head = head;
  info.x0 = x0, info.y0 = y0, info.cell = cell, info.rows = T, info.cols = T, info.gap = gap;
  info.vmin = rg.vmin, info.vmax = rg.vmax, info.cmap = rg.cmap, info.log = rg.log;
  info.values = vals;
  info.colors.resize(vals.size());
  for (std::size_t k = 0; k < vals.size(); ++k) {
    const float v = vals[k];
    info.colors[k] = std::isinf(v) && v < 0 ? B.th.masked_a : cell_color(rg, v);
  }
  if (cell >= 4.0f) info.row_names = info.col_names = tokens;
  Prim cells;
  cells.kind = Prim::Kind::Cells;
  cells.heatmap = static_cast<int>(B.f.heatmaps.size());
  cells.x0 = x0, cells.y0 = y0, cells.x1 = x0 + cell * static_cast<float>(T),
  cells.y1 = y0 + cell * static_cast<float>(T);
  cells.color = B.th.masked_a, cells.color2 = B.th.masked_b;
  B.f.prims.push_back(cells);
  B.grow(cells.x1, cells.y1);
  B.f.cells += T * T;
  if (values || dropout_marks) {
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) {
        const float v = vals[static_cast<std::size_t>(i * T + j)];
        const Color fill = info.colors[static_cast<std::size_t>(i * T + j)];
        const float cx0 = x0 + static_cast<float>(j) * cell, cy0 = y0 + static_cast<float>(i) * cell;
        const bool masked = std::isinf(v) && v < 0;
        const bool dropped = dropout_marks && !tr.masked(i, j) && !tr.kept(o.batch, head, i, j);
        if (values && (!masked || o.stage == Stage::Masked || o.stage == Stage::Scaled)) {
          const Color tc = masked ? B.th.text : on(fill);
          const float ty = cy0 + (cell - gap) * 0.5f + text_ascent(kSmall) * 0.5f - 1.0f;
          B.text(cx0 + (cell - gap) * (dropped ? 0.42f : 0.5f), ty, format_value(v), kSmall, tc, 1, "value");
        }
        if (dropped && cell >= 8.0f) {
          const Color lc = on(fill);
          const float r = cell * (values ? 0.1f : 0.22f);
          const float mx = cx0 + (cell - gap) * (values ? 0.84f : 0.5f),
                      my = cy0 + (cell - gap) * (values ? 0.18f : 0.5f);
          B.line(mx - r, my - r, mx + r, my + r, lc, 1.5f, "dropped");
          B.line(mx - r, my + r, mx + r, my - r, lc, 1.5f, "dropped");
        }
      }
  }
  B.f.heatmaps.push_back(std::move(info));
  if (!lp.show) return;
  const float maxw = lp.left - 8.0f;
  if (row_labels)
    for (int i = 0; i < T; i += lp.step) {
      const float cy = y0 + (static_cast<float>(i) + 0.5f) * cell;
      B.text(x0 - 5.0f, cy + text_ascent(kLabel) * 0.5f - 1.0f,
             fit_text(tokens[static_cast<std::size_t>(i)], kLabel, maxw), kLabel, B.th.text, 2);
    }
  if (col_labels)
    for (int j = 0; j < T; j += lp.step) {
      const float cx = x0 + (static_cast<float>(j) + 0.5f) * cell;
      if (lp.vertical) {
        B.text(cx + text_ascent(kLabel) * 0.5f - 1.0f, y0 - 5.0f,
               fit_text(tokens[static_cast<std::size_t>(j)], kLabel, lp.top - 8.0f), kLabel, B.th.text, 0, "label",
               true);
      } else {
        B.text(cx, y0 - 6.0f, tokens[static_cast<std::size_t>(j)], kLabel, B.th.text, 1);
      }
    }
}

void colorbar(Builder& B, const Range& rg, float x, float y0, float h, const std::string& title) {
  const float w = 16.0f;
  B.text(x, y0 - 8.0f, title, kSmall, B.th.dim, 0, "colorbar-title");
  B.rect(x - 1, y0 - 1, x + w + 1, y0 + h + 1, B.th.frame, "colorbar-frame");
  Prim p;
  p.kind = Prim::Kind::Gradient;
  p.x0 = x, p.y0 = y0, p.x1 = x + w, p.y1 = y0 + h, p.cmap = rg.cmap, p.cls = "colorbar";
  B.f.prims.push_back(p);
  for (int k = 0; k <= 4; ++k) {
    const float f = static_cast<float>(k) / 4.0f;
    const float y = y0 + f * h;
    B.line(x + w, y, x + w + 5, y, B.th.text, 1.0f, "tick");
    B.text(x + w + 8, y + text_ascent(kSmall) * 0.5f - 1.0f,
           format_tick(scale_value(rg, 1.0f - f), (rg.vmax - rg.vmin) / 4.0f, rg.log), kSmall, B.th.text, 0, "tick");
  }
}

// Legend under the heatmaps: the hatch of masked cells and the dropout cross.
void legend(Builder& B, const Trace& tr, const Options& o, float x, float y) {
  float lx = x;
  if (hatched_stage(o.stage) && tr.config.causal) {
    B.hatch(lx, y, lx + 16, y + 13, "legend-masked");
    lx += 22;
    lx += B.text(lx, y + 11, "masked (key after the query)", kSmall, B.th.text) + 18;
  }
  if (o.stage == Stage::Dropped && tr.dropout_applied()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "\xC3\x97 dropped; kept weights \xC3\x97 1/(1 \xE2\x88\x92 %.2f)",
                  tr.config.dropout);
    B.text(lx, y + 11, buf, kSmall, B.th.text);
  }
  B.grow(0, y + 14);
}

Figure heatmap_figure(const Trace& tr, const std::vector<std::string>& tokens, const Options& o) {
  Builder B;
  B.th = theme(o);
  const int T = tr.tokens, H = tr.heads;
  const bool one = o.view == View::Head;
  const std::vector<std::vector<float>> vals = head_values(tr, o);
  // Header: what is shown.
  float y = kMargin + text_ascent(kTitle);
  B.text(kMargin, y, std::string(stage_title(o.stage)), kTitle, B.th.text, 0, "title");
  y += line_h(kSmall) + 2;
  char sub[160];
  std::snprintf(sub, sizeof sub, "%s%s \xC2\xB7 batch item %d \xC2\xB7 rows: queries, columns: keys",
                one ? "head " : "", one ? std::to_string(o.head).c_str() : (std::to_string(H) + " heads").c_str(),
                o.batch);
  B.text(kMargin, y, sub, kSmall, B.th.dim, 0, "subtitle");
  y += 12;

  // Tiles: cell size in whole logical pixels (identical cells at every scale).
  const int cols = one ? 1 : (H <= 4 ? H : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(H) * 4.0 / 3.0))));
  const int rows = one ? 1 : (H + cols - 1) / cols;
  const float target = one ? 512.0f : (H <= 4 ? 320.0f : 256.0f);
  const float cell = std::clamp(std::floor(target / static_cast<float>(T)), 1.0f, one ? 72.0f : 56.0f);
  const float side = cell * static_cast<float>(T);
  const LabelPlan lp = plan_labels(tokens, cell);
  // With few tokens the labels are the lesson: every tile gets them. With many, the axes
  // are shared (rows on the left column, keys over the top row) to keep tiles close.
  const bool per_tile = one || T <= 32;
  const float gap = 18.0f;
  const float title_h = line_h(kTile) + 2;
  const float pitch_x = side + gap + (per_tile ? lp.left : 0.0f);
  const float pitch_y = side + gap + title_h + (per_tile ? lp.top : 0.0f);
  const float gx = kMargin + lp.left;
  const float gy = y + title_h + lp.top;
  Range shared = range_of(o, vals, o.head);
  for (int k = 0; k < (one ? 1 : H); ++k) {
    const int head = one ? o.head : k;
    const int c = k % cols, r = k / cols;
    const float hx = gx + static_cast<float>(c) * pitch_x, hy = gy + static_cast<float>(r) * pitch_y;
    const Range rg = o.shared_scale ? shared : range_of(o, vals, head);
    const bool rl = per_tile || c == 0, cl = per_tile || r == 0;
    heatmap(B, tr, tokens, o, head, vals[static_cast<std::size_t>(head)], rg, hx, hy, cell, lp, rl, cl);
    std::string t = "Head " + (o.layer >= 0 ? std::to_string(o.layer) + "." : std::string()) + std::to_string(head);
    if (!o.shared_scale) t += "  [" + format_value(rg.vmin) + ", " + format_value(rg.vmax) + "]";
    B.text(hx, hy - (cl && lp.show ? lp.top : 0.0f) - 6.0f, t, kTile, B.th.text, 0, "head-title");
  }
  const float grid_right = gx + static_cast<float>(cols - 1) * pitch_x + side;
  const float grid_bottom = gy + static_cast<float>(rows - 1) * pitch_y + side;
  // Colorbar: the shared range, or the selected head's (per-head ranges are in the titles).
  const Range bar = o.shared_scale ? shared : range_of(o, vals, o.head);
  const float bar_h = std::clamp(side, 120.0f, 320.0f);
  const std::string bar_title = std::string(signed_stage(o.stage) ? "score" : "weight") + (bar.log ? " (log)" : "");
  colorbar(B, bar, grid_right + 28.0f, gy, std::min(bar_h, grid_bottom - gy), bar_title);
  legend(B, tr, o, kMargin, grid_bottom + 12.0f);
  const Shape sh{tr.batch, tr.heads, tr.tokens, tr.tokens};
  std::string what = stage_tensor(o.stage) + " " + shape_string(sh) + ", batch item " + std::to_string(o.batch);
  if (one) what += ", head " + std::to_string(o.head);
  what += " \xC2\xB7 stage " + std::to_string(static_cast<int>(o.stage) + 1) +
          " of 5: " + std::string(stage_name(o.stage)) + " \xC2\xB7 " + std::to_string(T) + " tokens";
  if (bar.log) what += " \xC2\xB7 log colour scale";
  caption(B, o, {o.model_caption.empty() ? model_line(tr) : o.model_caption, what});
  return finish(B);
}

// [SECTION] The model view of a trained GPT
Figure model_figure(const ModelView& m, const Options& o) {
  Builder B;
  B.th = theme(o);
  const int L = m.n_layer, H = m.n_head, T = m.tokens;
  float y = kMargin + text_ascent(kTitle);
  B.text(kMargin, y, m.title.empty() ? std::string("Attention weights of every layer and head") : m.title, kTitle,
         B.th.text, 0, "title");
  y += line_h(kSmall) + 2;
  std::string sub = std::to_string(L) + " layers \xC3\x97 " + std::to_string(H) +
                    " heads \xC2\xB7 each thumbnail: queries down, keys across \xC2\xB7 " + std::to_string(T) +
                    " tokens";
  B.text(kMargin, y, sub, kSmall, B.th.dim, 0, "subtitle");
  y += 14;

  // Thumbnail side: the grid about 1200 x 1300 logical pixels at most, whole pixels per cell.
  const float gap = m.scores.empty() ? 8.0f : 8.0f + line_h(kSmall);
  const float side_max = std::clamp(
      std::floor(std::min(1200.0f / static_cast<float>(H), 1300.0f / static_cast<float>(L))) - 8.0f, 16.0f, 160.0f);
  const int f = thumbnail_factor(T, side_max);
  const int n = (T + f - 1) / f;
  const float cell = std::max(1.0f, std::floor(side_max / static_cast<float>(n)));
  const float side = cell * static_cast<float>(n);
  const float left = std::ceil(text_width("L00", kLabel) + 10.0f), top = line_h(kLabel) + 4.0f;
  const float gx = kMargin + left, gy = y + top;
  const float pitch_x = side + 8.0f, pitch_y = side + gap;

  ModelThumbnails thumbs = model_thumbnails(m, f, o.colormap, o.log_scale);
  std::vector<std::vector<float>>& pooled = thumbs.pooled;
  const Range rg = thumbs.scale;

  // The top five heads of the detector, framed.
  std::vector<int> top5;
  if (!m.scores.empty()) {
    std::vector<int> order;
    for (int k = 0; k < L * H; ++k)
      if (std::isfinite(m.scores[static_cast<std::size_t>(k)])) order.push_back(k);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return m.scores[static_cast<std::size_t>(a)] > m.scores[static_cast<std::size_t>(b)];
    });
    order.resize(std::min<std::size_t>(order.size(), 5));
    top5 = order;
  }
  const Color accent{230, 85, 13, 255}, selected{0, 114, 178, 255};
  for (int h = 0; h < H; ++h)
    B.text(gx + static_cast<float>(h) * pitch_x + side * 0.5f, gy - 6.0f, "H" + std::to_string(h), kLabel, B.th.text, 1,
           "label");
  for (int l = 0; l < L; ++l) {
    const float ty = gy + static_cast<float>(l) * pitch_y;
    B.text(gx - 8.0f, ty + side * 0.5f + text_ascent(kLabel) * 0.5f - 1.0f, "L" + std::to_string(l), kLabel, B.th.text,
           2, "label");
    for (int h = 0; h < H; ++h) {
      const int k = l * H + h;
      const float tx = gx + static_cast<float>(h) * pitch_x;
      HeatmapInfo info;
      info.head = k;
      info.x0 = tx, info.y0 = ty, info.cell = cell, info.rows = n, info.cols = n;
      info.vmin = rg.vmin, info.vmax = rg.vmax, info.cmap = rg.cmap, info.log = rg.log;
      info.values = std::move(pooled[static_cast<std::size_t>(k)]);
      info.colors.resize(info.values.size());
      for (std::size_t c = 0; c < info.values.size(); ++c) {
        const float v = info.values[c];
        info.colors[c] = std::isinf(v) && v < 0 ? B.th.masked_a : cell_color(rg, v);
      }
      Prim cells;
      cells.kind = Prim::Kind::Cells;
      cells.heatmap = static_cast<int>(B.f.heatmaps.size());
      cells.x0 = tx, cells.y0 = ty, cells.x1 = tx + side, cells.y1 = ty + side;
      cells.color = B.th.masked_a, cells.color2 = B.th.masked_b;
      B.f.prims.push_back(cells);
      B.grow(cells.x1, cells.y1);
      B.f.cells += n * n;
      B.f.heatmaps.push_back(std::move(info));
      const bool is_top = std::find(top5.begin(), top5.end(), k) != top5.end();
      const bool is_selected = l == m.selected_layer && h == m.selected_head;
      if (is_top || is_selected) {
        const Color c = is_selected ? selected : accent;
        const float w = 2.0f, x0 = tx - 2.0f, y0 = ty - 2.0f, x1 = tx + side + 2.0f, y1 = ty + side + 2.0f;
        B.line(x0, y0, x1, y0, c, w, "frame");
        B.line(x1, y0, x1, y1, c, w, "frame");
        B.line(x1, y1, x0, y1, c, w, "frame");
        B.line(x0, y1, x0, y0, c, w, "frame");
      }
      if (!m.scores.empty()) {
        const float s = m.scores[static_cast<std::size_t>(k)];
        char buf[16];
        if (std::isfinite(s))
          std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(s));
        else
          std::snprintf(buf, sizeof buf, "\xE2\x80\x93");
        B.text(tx + side * 0.5f, ty + side + line_h(kSmall), buf, kSmall, is_top ? accent : B.th.dim, 1, "score");
      }
    }
  }
  const float grid_right = gx + static_cast<float>(H - 1) * pitch_x + side;
  const float grid_bottom =
      gy + static_cast<float>(L - 1) * pitch_y + side + (m.scores.empty() ? 0.0f : line_h(kSmall));
  colorbar(B, rg, grid_right + 28.0f, gy, std::clamp(grid_bottom - gy, 120.0f, 320.0f),
           std::string("weight") + (rg.log ? " (log)" : ""));
  float ly = grid_bottom + 12.0f;
  B.hatch(kMargin, ly, kMargin + 16, ly + 13, "legend-masked");
  float lx = kMargin + 22.0f;
  lx += B.text(lx, ly + 11, "masked (key after the query)", kSmall, B.th.text) + 18.0f;
  if (f > 1) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "each pixel: the largest weight of a %d\xC3\x97%d block of cells", f, f);
    lx += B.text(lx, ly + 11, buf, kSmall, B.th.text) + 18.0f;
  }
  if (!top5.empty()) {
    B.line(lx, ly + 6.5f, lx + 16, ly + 6.5f, accent, 2.0f, "frame");
    B.text(lx + 22.0f, ly + 11, "top five " + m.pattern + " heads (score under each thumbnail)", kSmall, B.th.text);
  }
  B.grow(0, ly + 14);
  std::vector<std::string> lines;
  if (!m.caption.empty()) lines.push_back(m.caption);
  lines.push_back("attn_weights (1, " + std::to_string(H) + ", " + std::to_string(T) + ", " + std::to_string(T) +
                  ") of each layer" + (rg.log ? " \xC2\xB7 log colour scale" : ""));
  caption(B, o, lines);
  return finish(B);
}

}  // namespace

// One thumbnail's pixels: (n, n) where n = ceil(T / f), pooled by the largest weight over
// each f x f block of visible cells (masked cells are -inf; a block of only masked cells
// stays -inf and is hatched).
std::vector<float> pool_max(const float* w, int T, int f, int n) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), neg_inf);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      float& o = out[static_cast<std::size_t>(i / f) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j / f)];
      o = std::max(o, w[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)]);
    }
  return out;
}

ModelThumbnails model_thumbnails(const ModelView& m, int f, Colormap cmap, bool log_scale) {
  ModelThumbnails t;
  t.f = f;
  t.n = (m.tokens + f - 1) / f;
  t.pooled.resize(m.weights.size());
  float hi = 0.0f, min_pos = 0.0f;
  for (std::size_t k = 0; k < m.weights.size(); ++k) {
    t.pooled[k] = pool_max(m.weights[k], m.tokens, f, t.n);
    for (float v : t.pooled[k]) {
      if (!std::isfinite(v)) continue;
      hi = std::max(hi, v);
      if (v > 0.0f) min_pos = min_pos > 0.0f ? std::min(min_pos, v) : v;
    }
  }
  t.scale = color_scale(0.0f, hi, min_pos, false, cmap, true, log_scale);
  return t;
}

Figure build_model_figure(const ModelView& m, const Options& o) {
  if (m.n_layer < 1 || m.n_head < 1 || m.tokens < 1 ||
      m.weights.size() != static_cast<std::size_t>(m.n_layer) * static_cast<std::size_t>(m.n_head))
    throw std::invalid_argument("model view: " + std::to_string(m.weights.size()) + " heads given for " +
                                std::to_string(m.n_layer) + " layers x " + std::to_string(m.n_head) + " heads");
  if (!m.scores.empty() && m.scores.size() != m.weights.size())
    throw std::invalid_argument("model view: " + std::to_string(m.scores.size()) + " detector scores for " +
                                std::to_string(m.weights.size()) + " heads");
  return model_figure(m, o);
}

int step_count(const Trace& trace, bool mistaken) {
  return static_cast<int>(lay::steps_for(trace.config.variant, mistaken).size());
}

bool parse_step_arg(const Trace& trace, bool mistaken, const std::string& arg, int& out) {
  const auto steps = lay::steps_for(trace.config.variant, mistaken);
  lay::Step s;
  if (lay::parse_step(arg, s)) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i] == s) {
        out = static_cast<int>(i);
        return true;
      }
    return false;
  }
  if (arg.empty() || arg.size() > 4 || arg.find_first_not_of("0123456789") != std::string::npos) return false;
  const int k = std::stoi(arg);
  if (k < 0 || k >= static_cast<int>(steps.size())) return false;
  out = k;
  return true;
}

Figure build_figure(const Trace& trace, const std::vector<std::string>& tokens, const Options& o) {
  if (o.batch < 0 || o.batch >= trace.batch)
    throw std::invalid_argument("--batch: " + std::to_string(o.batch) + " is out of range [0, " +
                                std::to_string(trace.batch - 1) + "]");
  if (static_cast<int>(tokens.size()) != trace.tokens)
    throw std::invalid_argument("tokens: the trace and the token list differ");
  if (o.view == View::Step) {
    const int n = step_count(trace, o.mistaken);
    if (o.step < 0 || o.step >= n)
      throw std::invalid_argument("--step: " + std::to_string(o.step) + " is out of range [0, " +
                                  std::to_string(n - 1) + "]");
    return step_figure(trace, tokens, o);
  }
  if (o.view == View::Head && (o.head < 0 || o.head >= trace.heads))
    throw std::invalid_argument("--head: " + std::to_string(o.head) + " is out of range [0, " +
                                std::to_string(trace.heads - 1) + "]");
  Options oo = o;
  if (oo.view == View::Grid) oo.head = std::clamp(o.head, 0, trace.heads - 1);
  return heatmap_figure(trace, tokens, oo);
}

// [SECTION] Numbers as the app and the figures print them
std::string format_tick(float v, float step, bool log) {
  char buf[32];
  if (log) {
    std::snprintf(buf, sizeof buf, "%.2g", static_cast<double>(v));
    return buf;
  }
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(std::max(1e-9f, std::fabs(step))))) + 1, 2, 6);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
  return buf;
}

}  // namespace mhaviz::figure
