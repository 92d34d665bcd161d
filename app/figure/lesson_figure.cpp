// The lesson's heatmaps: every head of a stage, or one head enlarged, laid out to fill the
// canvas (the app's centre, render's --size) with the largest cells that leave room for
// token labels, a colour bar and the legend. The app draws this figure on screen and its
// captures are this figure with the capture's theme and a caption.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "figure/builder.hpp"
#include "figure/heatmap.hpp"
#include "figure/stage_note.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure::detail {
namespace {

// [SECTION] Values and scales
struct Heads {
  std::vector<std::vector<float>> values;  // per head, (T, T) of the stage, hidden cells -inf
  std::vector<ValueRange> ranges;          // per head: the stage's range (or stages 1-3 with one scale)
};

Heads head_values(const Trace& tr, const Options& o) {
  Heads out;
  const int T = tr.tokens;
  const bool masked = masked_stage(o.stage);
  const bool one_scale = o.scores_one_scale && signed_stage(o.stage);
  for (int h = 0; h < tr.heads; ++h) {
    // Raw scores keep every cell (stage 1 shows what the mask will hide); later stages
    // hide masked cells (-inf), so a weight's zero there is not part of the range.
    std::vector<float> v = tr.stage_matrix(o.stage, o.batch, h);
    if (masked)
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j)
          if (tr.masked(i, j))
            v[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)] =
                -std::numeric_limits<float>::infinity();
    ValueRange r = value_range(v);
    if (one_scale) {
      // Stages 1-3 on one range: raw scores (every cell) and scaled ones (visible cells).
      r.merge(value_range(tr.stage_matrix(Stage::Scores, o.batch, h)));
      r.merge(value_range(tr.stage_matrix(Stage::Scaled, o.batch, h)));
    }
    out.values.push_back(std::move(v));
    out.ranges.push_back(r);
  }
  return out;
}

ColorScale head_scale(const Heads& hv, const Options& o, int head) {
  ValueRange r;
  if (o.shared_scale) {
    for (const ValueRange& x : hv.ranges) r.merge(x);
  } else {
    r = hv.ranges[static_cast<std::size_t>(head)];
  }
  return scale_for(r, signed_stage(o.stage), o);
}

// [SECTION] Header: what is shown
float header(Builder& B, const Trace& tr, const Options& o, bool one) {
  float y = kMargin + text_ascent(B.ty.title);
  std::string title(stage_title(o.stage));
  if (one)
    title +=
        "  \xC2\xB7  head " + (o.layer >= 0 ? std::to_string(o.layer) + "." : std::string()) + std::to_string(o.head);
  B.text(kMargin, y, title, B.ty.title, B.th.text, 0, "title");
  y += line_h(B.ty.small) + 2;
  char sub[200];
  std::snprintf(
      sub, sizeof sub,
      "batch item %d \xC2\xB7 %d tokens \xC2\xB7 %d heads of head_dim %d \xC2\xB7 rows: queries, columns: keys",
      o.batch, tr.tokens, tr.heads, tr.head_dim);
  // The subtitle and the note in as many lines as the canvas needs (an 800 × 600 window cut
  // "columns: keys"; a 1024 × 768 one with a 24-pixel font ran the note past the edge).
  const float max_w = o.canvas.width - 2.0f * kMargin;
  y = paragraph(B, kMargin, y, max_w, sub, B.ty.small, B.th.dim, "subtitle");
  const std::string note = unchanged_stage_note(o.stage, tr.config);
  if (!note.empty()) {
    y += line_h(B.ty.small) + 2;
    const float top = y - B.ty.small;
    float w = 0;
    for (const std::string& line : wrap(note, B.ty.small, max_w)) w = std::max(w, text_width(line, B.ty.small));
    y = paragraph(B, kMargin, y, max_w, note, B.ty.small, B.th.warn, "note");
    B.hit("stage_note", kMargin, top, kMargin + w, y + 4.0f);
  }
  return y + 12.0f;
}

// [SECTION] Tiles: columns, cell size and labels that fill the canvas
struct Tiles {
  int cols = 1, rows = 1;
  float cell = 1;
  LabelPlan lp;
  bool per_tile = true;  // every tile labelled, or shared axes (first column, first row)
  float score = -1;
};

// The columns that give the largest cells; token labels are worth some size (with few
// tokens they are the lesson: which word attends to which). Up to 32 tokens every tile has its
// labels where that costs little; where the repeated labels would take the room the cells need
// (23 tokens, 4 heads on a 1024 x 768 window: 3-pixel cells), the tiles share the first
// column's and the first row's.
Tiles choose_tiles(const std::vector<std::string>& tokens, int shown, float W, float H, float title_h, float gap,
                   float label_size) {
  const int T = static_cast<int>(tokens.size());
  Tiles best;
  for (const bool per_tile : {true, false}) {
    // Labels on every tile: one tile, or up to 32 tokens; shared labels: more than one tile.
    if (!(per_tile ? shown == 1 || T <= 32 : shown > 1)) continue;
    // Shared labels take a tile's cells 18% larger than labels on every tile to be chosen.
    const float worth = per_tile || T > 32 ? 1.0f : 0.85f;
    for (int c = 1; c <= shown; ++c) {
      const int r = (shown + c - 1) / c;
      const float fc = static_cast<float>(c), fr = static_cast<float>(r);
      const auto cell_for = [&](const LabelPlan& lp) {
        const float nl = lp.show ? (per_tile ? fc : 1.0f) : 0.0f, nt = lp.show ? (per_tile ? fr : 1.0f) : 0.0f;
        return fit_cell((W - gap * (fc - 1) - nl * lp.left) / fc,
                        (H - gap * (fr - 1) - fr * title_h - nt * lp.top) / fr, T, T);
      };
      const float bare = cell_for(LabelPlan{});
      if (bare * static_cast<float>(T) > best.score)
        best = {c, r, bare, LabelPlan{}, per_tile, bare * static_cast<float>(T)};
      // Margins shrink the cells, which may call for rotated or thinned labels: settle on a plan
      // that fits the size it leaves.
      LabelPlan lp = plan_labels(tokens, bare, label_size);
      for (int k = 0; k < 4 && lp.show; ++k) {
        const LabelPlan next = plan_labels(tokens, cell_for(lp), label_size);
        if (!next.show || (next.left <= lp.left && next.top <= lp.top)) break;
        lp.left = std::max(lp.left, next.left);
        lp.top = std::max(lp.top, next.top);
        lp.vertical = lp.vertical || next.vertical;
        lp.step = std::max(lp.step, next.step);
      }
      if (!lp.show) continue;
      float cell = cell_for(lp);
      // The plan above was made for larger cells: at the final ones, every n-th token as far
      // as legibility needs (turned labels 3 px apart ran into each other), and turned where
      // they no longer fit across (a turn takes its height).
      LabelPlan fin = plan_labels(tokens, cell, label_size);
      if (fin.show && fin.vertical && !lp.vertical) {
        lp.vertical = true;
        lp.top = std::max(lp.top, fin.top);
        cell = cell_for(lp);
        fin = plan_labels(tokens, cell, label_size);
      }
      if (!fin.show) continue;
      lp.step = std::max(lp.step, legible_step(cell, label_size));
      const float score = cell * static_cast<float>(T) * (T <= 32 ? 2.0f : 1.3f) * worth;
      if (score > best.score) best = {c, r, cell, lp, per_tile, score};
    }
  }
  return best;
}

void legend(Builder& B, const Trace& tr, const Options& o, float x, float y) {
  float lx = x;
  if (masked_stage(o.stage) && tr.config.causal) lx = mask_legend(B, lx, y, "masked (key after the query)");
  if (masked_stage(o.stage) && tr.config.sliding_window > 0)
    lx = mask_legend(
        B, lx, y,
        "outside the window (i \xE2\x88\x92 j \xE2\x89\xA5 W = " + std::to_string(tr.config.sliding_window) + ")",
        true);
  if (o.stage == Stage::Dropped && tr.dropout_applied()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "\xC3\x97 dropped; kept weights \xC3\x97 1/(1 \xE2\x88\x92 %.2f)",
                  tr.config.dropout);
    B.text(lx, y + B.ty.small - 1.0f, buf, B.ty.small, B.th.text);
  }
  B.grow(0, y + B.ty.small + 2.0f);
}

std::string caption_line(const Trace& tr, const Options& o, bool one, const ColorScale& bar) {
  const Shape sh{tr.batch, tr.heads, tr.tokens, tr.tokens};
  std::string what =
      std::string(stage_tensor(o.stage)) + " " + shape_string(sh) + ", batch item " + std::to_string(o.batch);
  if (one) what += ", head " + std::to_string(o.head);
  what += " \xC2\xB7 stage " + std::to_string(static_cast<int>(o.stage) + 1) +
          " of 5: " + std::string(stage_name(o.stage)) + " \xC2\xB7 " + std::to_string(tr.tokens) + " tokens";
  if (bar.log) what += " \xC2\xB7 log colour scale";
  if (o.scores_one_scale && signed_stage(o.stage)) what += " \xC2\xB7 one colour scale for stages 1-3";
  return what;
}

}  // namespace

// Grid of heads (or one head), header, colour bar, legend; caption when asked.
Figure lesson_figure(const Trace& tr, const std::vector<std::string>& tokens, const Options& o) {
  Builder B(o);
  const int T = tr.tokens, H = tr.heads;
  const bool one = o.view == View::Head;
  const Heads hv = head_values(tr, o);
  const float top = std::ceil(header(B, tr, o, one));  // whole pixels: cells on the pixel grid

  const ColorScale bar = head_scale(hv, o, o.head);
  const float gap = 18.0f, title_h = line_h(B.ty.tile) + 2.0f;
  const float bar_w = colorbar_width(B, bar) + 28.0f;
  const float legend_h = line_h(B.ty.small) + 16.0f;
  const int shown = one ? 1 : H;
  const float W = std::max(40.0f, o.canvas.width - 2.0f * kMargin - bar_w);
  const float Hgt = std::max(40.0f, o.canvas.height - top - legend_h - kMargin);
  const Tiles t = choose_tiles(tokens, shown, W, Hgt, title_h, gap, B.ty.label);
  const float side = t.cell * static_cast<float>(T);
  const LabelPlan& lp = t.lp;
  const float pitch_x = side + gap + (t.per_tile && lp.show ? lp.left : 0.0f);
  const float pitch_y = side + gap + title_h + (t.per_tile && lp.show ? lp.top : 0.0f);
  const float gx = kMargin + (lp.show ? lp.left : 0.0f);
  const float gy = top + title_h + (lp.show ? lp.top : 0.0f);

  for (int k = 0; k < shown; ++k) {
    const int head = one ? o.head : k;
    const int c = k % t.cols, r = k / t.cols;
    const float hx = gx + static_cast<float>(c) * pitch_x, hy = gy + static_cast<float>(r) * pitch_y;
    HeatmapSpec spec;
    spec.id = head;
    spec.rows = spec.cols = T;
    const std::vector<float>& vals = hv.values[static_cast<std::size_t>(head)];
    spec.value = [&vals, T](int i, int j) {
      return vals[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)];
    };
    if (masked_stage(o.stage)) spec.mask = [&tr](int i, int j) { return trace_mask(tr, i, j); };
    if (o.stage == Stage::Dropped && tr.dropout_applied() && o.dropout_marks)
      spec.dropped = [&tr, &o, head](int i, int j) { return !tr.kept(o.batch, head, i, j); };
    spec.scale = head_scale(hv, o, head);
    spec.row_names = spec.col_names = &tokens;
    spec.numbers = o.values;
    spec.hidden_numbers = o.stage == Stage::Masked || o.stage == Stage::Scaled;
    const bool rl = t.per_tile || c == 0, cl = t.per_tile || r == 0;
    draw_heatmap(B, spec, hx, hy, t.cell, lp, rl, cl);
    std::string title = "Head " + (o.layer >= 0 ? std::to_string(o.layer) + "." : std::string()) + std::to_string(head);
    if (!o.shared_scale) title += "  [" + format_value(spec.scale.vmin) + ", " + format_value(spec.scale.vmax) + "]";
    const bool selected = !one && o.frame_selected && head == o.head;
    B.text(hx, hy - (cl && lp.show ? lp.top : 0.0f) - 6.0f, title, B.ty.tile, selected ? B.th.accent : B.th.text, 0,
           "head-title");
    if (selected) B.frame(hx - 2.0f, hy - 2.0f, hx + side + 2.0f, hy + side + 2.0f, B.th.accent, 2.0f, "selected");
    B.hit("head_" + std::to_string(head), hx, hy, hx + side, hy + side);
  }
  const float grid_right = gx + static_cast<float>(t.cols - 1) * pitch_x + side;
  const float grid_bottom = gy + static_cast<float>(t.rows - 1) * pitch_y + side;
  // Colour bar: the shared range, or the selected head's (per-head ranges are in the titles).
  const std::string bar_title = std::string(signed_stage(o.stage) ? "score" : "weight") + (bar.log ? " (log)" : "") +
                                (o.shared_scale ? "" : ", head " + std::to_string(o.head));
  colorbar(B, bar, grid_right + 28.0f, gy, std::clamp(grid_bottom - gy, std::min(120.0f, side), 480.0f), bar_title);
  legend(B, tr, o, kMargin, grid_bottom + 12.0f);
  caption(B, o, {o.model_caption.empty() ? model_line(tr) : o.model_caption, caption_line(tr, o, one, bar)});
  return finish(B);
}

}  // namespace mhaviz::figure::detail
