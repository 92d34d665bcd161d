// The comparison tab's picture: one head's weights in two implementations side by side, each
// through the one heatmap, on one colour scale, so equal numbers look equal.
#include <algorithm>

#include "figure/builder.hpp"
#include "figure/heatmap.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {

using namespace detail;

Figure compare_figure(const Trace& a, const Trace& b, const std::string& title_a, const std::string& title_b,
                      const std::vector<std::string>& tokens, const Options& o) {
  Builder B(o);
  const int T = a.tokens;
  const int head = std::clamp(o.head, 0, std::max(0, std::min(a.heads, b.heads) - 1));
  const int batch = std::clamp(o.batch, 0, std::max(0, a.batch - 1));
  const Trace* traces[2] = {&a, &b};
  ValueRange r;
  for (const Trace* t : traces) r.merge(value_range(t->stage_matrix(Stage::Weights, batch, head)));
  const ColorScale scale = scale_for(r, false, o);
  const float gap = 36.0f;
  const float bar_w = colorbar_width(B, scale) + 28.0f;
  const float W = std::max(40.0f, (o.canvas.width - 2.0f * kMargin - gap - bar_w) / 2.0f);
  const std::string head_text = "head " + std::to_string(head);
  const std::string titles[2] = {title_a + "  \xC2\xB7  " + head_text, title_b + "  \xC2\xB7  " + head_text};
  // Each title over its heatmap from the row labels' left edge; the second pane starts past the
  // first's title where that is wider than its heatmap (the cells are often limited by the
  // height). In one line each where both fit the canvas, else in two (the title, then the
  // head), else the title's words wrapped into half the canvas: on a 1024 × 768 window they ran
  // into each other, then were cut.
  const float room = o.canvas.width - 2.0f * kMargin - bar_w;  // for both panes
  const std::vector<std::string> layouts[3][2] = {
      {{titles[0]}, {titles[1]}},
      {{title_a, head_text}, {title_b, head_text}},
      {wrap(title_a, B.ty.tile, room * 0.5f - 16.0f), wrap(title_b, B.ty.tile, room * 0.5f - 16.0f)}};
  float cell = 0, title_h = 0, pitch = 0, left = 0, title_w = 0;
  LabelPlan lp;
  std::vector<std::string> lines[2];
  std::size_t n = 1;  // lines of the taller title
  bool fits = false;
  for (const auto& layout : layouts) {
    for (int k = 0; k < 2; ++k) {
      lines[k] = layout[k];
      if (&layout == &layouts[2]) lines[k].push_back(head_text);
    }
    n = std::max(lines[0].size(), lines[1].size());
    title_h = static_cast<float>(n) * line_h(B.ty.tile) + 2.0f;
    const float H = std::max(40.0f, o.canvas.height - 2.0f * kMargin - title_h);
    cell = fit_cell(W, H, T, T);
    lp = plan_labels(tokens, cell, B.ty.label);
    if (lp.show) {
      cell = fit_cell(W - lp.left, H - lp.top, T, T);
      lp = plan_labels(tokens, cell, B.ty.label);
    }
    left = lp.show ? lp.left : 0.0f;
    title_w = 0;
    for (const auto& pane : lines)
      for (const std::string& l : pane) title_w = std::max(title_w, text_width(l, B.ty.tile));
    pitch = std::max(left + cell * static_cast<float>(T) + gap, title_w + 16.0f);
    fits = pitch + std::max(left + cell * static_cast<float>(T), title_w) <= room;
    if (fits) break;
  }
  // Still too narrow (a word wider than half the canvas): the lines are cut at the pane's width.
  if (!fits) pitch = std::max(left + cell * static_cast<float>(T) + gap, std::min(pitch, room * 0.5f));
  // (title_w itself where the lines fit: pitch − 16 may round a hair below it.)
  const float side = cell * static_cast<float>(T), title_room = fits ? std::max(title_w, pitch - 16.0f) : pitch - 16.0f;
  const float y = kMargin + title_h + (lp.show ? lp.top : 0.0f);
  for (int k = 0; k < 2; ++k) {
    const Trace& t = *traces[k];
    const std::vector<float> vals = t.stage_matrix(Stage::Weights, batch, head);
    HeatmapSpec spec;
    spec.id = k;
    spec.rows = spec.cols = T;
    spec.value = [&vals, T](int i, int j) {
      return vals[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)];
    };
    spec.mask = [&t](int i, int j) { return trace_mask(t, i, j); };
    spec.scale = scale;
    spec.row_names = spec.col_names = &tokens;
    spec.numbers = o.values;
    const float px = kMargin + static_cast<float>(k) * pitch;
    draw_heatmap(B, spec, px + left, y, cell, lp, true, true);
    const float ty = y - (lp.show ? lp.top : 0.0f) - 6.0f;
    // Top-aligned: a pane whose title takes fewer lines starts them at the same height.
    const float top = ty - static_cast<float>(n - 1) * line_h(B.ty.tile);
    for (std::size_t l = 0; l < lines[k].size(); ++l)
      B.text(px, top + static_cast<float>(l) * line_h(B.ty.tile), fit_text(lines[k][l], B.ty.tile, title_room),
             B.ty.tile, B.th.text, 0, "head-title");
  }
  colorbar(B, scale, kMargin + pitch + left + side + 28.0f, y, std::clamp(side, std::min(120.0f, side), 480.0f),
           "weight");
  return finish(B);
}

}  // namespace mhaviz::figure
