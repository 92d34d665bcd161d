// The KV cache's size against the context length (kv_memory_figure.hpp): every row of
// kv_memory_table, counted anew at each context length sampled.
#include "figure/kv_memory_figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "figure/builder.hpp"
#include "figure/plot.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {

using namespace detail;

namespace {

// Decimal units, as the book prints GB: the largest that keeps the top value at least 1.
struct Unit {
  double div;
  const char* name;
};
Unit unit_for(double bytes) {
  for (const Unit u : {Unit{1e9, "GB"}, Unit{1e6, "MB"}, Unit{1e3, "KB"}})
    if (bytes >= u.div) return u;
  return {1, "bytes"};
}

// "GQA 4.29 GB"; bytes as a whole number.
std::string end_text(const KvRow& r, double bytes, const Unit& u) {
  char v[96];
  std::snprintf(v, sizeof v, "%s %.*f %s", r.variant.c_str(), u.div == 1 ? 0 : 2, bytes / u.div, u.name);
  return v;
}

// The base variant's colour (the Okabe-Ito palette): MHA blue, GQA orange, MLA green.
Color series_color(const std::string& v) {
  if (v.starts_with("GQA")) return {230, 159, 0, 255};
  if (v.starts_with("MLA")) return {0, 158, 115, 255};
  return {0, 114, 178, 255};
}

}  // namespace

Figure build_kv_memory_figure(const KvModel& m, const Options& o) {
  Builder B(o);
  // Context lengths: eight a doubling, from 256 tokens (1 for a short context) to m.context.
  const double lo = m.context >= 1024 ? 8.0 : 0.0, hi = std::log2(static_cast<double>(m.context));
  std::vector<std::int64_t> contexts;
  for (double x = lo; x < hi; x += 0.125) contexts.push_back(std::llround(std::pow(2.0, x)));
  contexts.push_back(m.context);
  contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
  std::vector<KvRow> names = kv_memory_table(m);
  std::vector<std::vector<double>> bytes(names.size());
  for (const std::int64_t L : contexts) {
    KvModel at = m;
    at.context = L;
    const std::vector<KvRow> rows = kv_memory_table(at);
    for (std::size_t r = 0; r < rows.size(); ++r) bytes[r].push_back(static_cast<double>(rows[r].bytes));
  }
  double top = 0;
  for (const auto& b : bytes) top = std::max(top, b.back());
  const Unit u = unit_for(top);

  float y = kMargin + text_ascent(B.ty.title);
  const float width = o.canvas.width - 2.0f * kMargin;  // title and line wrapped (a large font)
  y = paragraph(B, kMargin, y, width, "KV cache against context length \xC2\xB7 " + m.name, B.ty.title, B.th.text,
                "title");
  char line[256];
  std::snprintf(line, sizeof line,
                "emb_dim %d, %d heads of %d, %d K/V head%s, %d layer%s, batch %d, %s (%d bytes per value)", m.emb_dim,
                m.heads, m.head_dim, m.kv_heads, m.kv_heads == 1 ? "" : "s", m.layers, m.layers == 1 ? "" : "s",
                m.batch, m.dtype.c_str(), m.dtype_bytes);
  y += line_h(B.ty.small) + 2.0f;
  y = paragraph(B, kMargin, y, width, line, B.ty.small, B.th.dim, "subtitle");
  // Legend: each row's name, dashed for the windowed ones, in as many rows as the canvas needs.
  y += line_h(B.ty.small) + 6.0f;
  std::vector<std::string> keys;
  for (const KvRow& r : names)
    keys.push_back(r.variant + " (" + r.detail + (r.variant.find("SWA") != std::string::npos ? ", dashed)" : ")"));
  const KeyFlow flow = flow_keys(B, keys, kMargin, kMargin, o.canvas.width - kMargin);
  draw_keys(B, flow, y, keys, [&](std::size_t r) { return series_color(names[r].variant); });
  y += static_cast<float>(flow.rows - 1) * flow.row_h + 10.0f;

  const float caption_room = o.caption ? 2.0f * line_h(B.ty.small) + 16.0f : 0.0f;
  Axes a;
  a.xmin = lo, a.xmax = std::max(hi, lo + 1.0);
  a.ymin = 0, a.ymax = std::max(top / u.div, 1e-9) * 1.05;
  const double ys = nice_step(a.ymax, 6);
  a.ymax = std::ceil(a.ymax / ys) * ys;
  a.x0 = kMargin + y_tick_room(B, a.ymax, ys) + 4.0f;
  a.y0 = y + line_h(B.ty.tile) + 4.0f;
  // Room at the right for each line's end value.
  float end_w = 0;
  for (std::size_t r = 0; r < names.size(); ++r) {
    end_w = std::max(end_w, text_width(end_text(names[r], bytes[r].back(), u), B.ty.small));
  }
  a.x1 = std::max(a.x0 + 120.0f, o.canvas.width - kMargin - end_w - 12.0f);
  a.y1 = std::max(a.y0 + 80.0f, o.canvas.height - kMargin - caption_room - 2.0f * line_h(B.ty.small) - 12.0f);
  draw_axes(B, a, std::string("KV cache (") + u.name + ")", "context length (tokens, log scale)", 10, 6, true);
  B.hit("kv_memory_plot", a.x0, a.y0, a.x1, a.y1);
  for (std::size_t r = 0; r < names.size(); ++r) {
    const Color c = series_color(names[r].variant);
    const bool dashed = names[r].variant.find("SWA") != std::string::npos;
    for (std::size_t k = 1; k < contexts.size(); ++k) {
      if (dashed && k % 2 == 0) continue;
      B.line(a.sx(std::log2(static_cast<double>(contexts[k - 1]))), a.sy(bytes[r][k - 1] / u.div),
             a.sx(std::log2(static_cast<double>(contexts[k]))), a.sy(bytes[r][k] / u.div), c, 2.5f, "series");
    }
  }
  // Each line's end value at its right end, pushed apart where two end close together.
  std::vector<std::size_t> order(names.size());
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = r;
  std::sort(order.begin(), order.end(),
            [&](std::size_t p, std::size_t q) { return bytes[p].back() > bytes[q].back(); });
  // None below the x axis, where its last tick's number reaches past the plot's right edge (a
  // large font): the stack moves up from there.
  std::vector<float> ly(order.size());
  float below = -1e9f;
  for (std::size_t i = 0; i < order.size(); ++i) {
    ly[i] = std::max(a.sy(bytes[order[i]].back() / u.div) + text_ascent(B.ty.small) * 0.5f, below);
    below = ly[i] + line_h(B.ty.small);
  }
  float above = static_cast<float>(a.y1);
  for (std::size_t i = order.size(); i-- > 0;) {
    ly[i] = std::min(ly[i], above);
    above = ly[i] - line_h(B.ty.small);
  }
  for (std::size_t i = 0; i < order.size(); ++i)
    B.text(a.x1 + 8.0f, ly[i], end_text(names[order[i]], bytes[order[i]].back(), u), B.ty.small,
           series_color(names[order[i]].variant), 0, "end-value");
  caption(B, o,
          {"Counted as the book's memory_estimator_*.py: bytes = batch \xC2\xB7 context \xC2\xB7 layers \xC2\xB7 "
           "values cached per token and layer \xC2\xB7 bytes per value; a sliding layer keeps min(W, context) tokens",
           "GB are decimal (10^9 bytes); mhaviz kv-memory prints the same figures as a table"});
  return finish(B);
}

}  // namespace mhaviz::figure
