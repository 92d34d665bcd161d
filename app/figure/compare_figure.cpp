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
  const float gap = 36.0f, title_h = line_h(B.ty.tile) + 2.0f;
  const float bar_w = colorbar_width(B, scale) + 28.0f;
  const float W = std::max(40.0f, (o.canvas.width - 2.0f * kMargin - gap - bar_w) / 2.0f);
  const float H = std::max(40.0f, o.canvas.height - 2.0f * kMargin - title_h);
  float cell = fit_cell(W, H, T, T);
  LabelPlan lp = plan_labels(tokens, cell, B.ty.label);
  if (lp.show) {
    cell = fit_cell(W - lp.left, H - lp.top, T, T);
    lp = plan_labels(tokens, cell, B.ty.label);
  }
  const float side = cell * static_cast<float>(T);
  float x = kMargin + (lp.show ? lp.left : 0.0f);
  const float y = kMargin + title_h + (lp.show ? lp.top : 0.0f);
  for (int k = 0; k < 2; ++k) {
    const Trace& t = *traces[k];
    const std::vector<float> vals = t.stage_matrix(Stage::Weights, batch, head);
    HeatmapSpec spec;
    spec.id = k;
    spec.rows = spec.cols = T;
    spec.value = [&vals, T](int i, int j) { return vals[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)]; };
    spec.mask = [&t](int i, int j) { return trace_mask(t, i, j); };
    spec.scale = scale;
    spec.row_names = spec.col_names = &tokens;
    spec.numbers = o.values;
    draw_heatmap(B, spec, x, y, cell, lp, true, true);
    B.text(x, y - (lp.show ? lp.top : 0.0f) - 6.0f, (k == 0 ? title_a : title_b) + "  \xC2\xB7  head " + std::to_string(head),
           B.ty.tile, B.th.text, 0, "head-title");
    x += side + gap + (lp.show ? lp.left : 0.0f);
  }
  colorbar(B, scale, x - gap + 28.0f - (lp.show ? lp.left : 0.0f), y, std::clamp(side, std::min(120.0f, side), 480.0f),
           "weight");
  return finish(B);
}

}  // namespace mhaviz::figure
