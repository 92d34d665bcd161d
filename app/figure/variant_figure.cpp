// The attention variants side by side (variant_figure.hpp): a projected slide, so the
// numbers are in the label size or larger and every column of the cost table has its bars.
#include "figure/variant_figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "figure/builder.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {

using namespace detail;

namespace {

// [SECTION] Words and numbers

// Okabe-Ito, as the memory plot colours MHA, GQA and MLA; MQA and SWA the palette's next hues.
Color variant_color(const std::string& v) {
  if (v == "GQA") return {230, 159, 0, 255};
  if (v == "MQA") return {213, 94, 0, 255};
  if (v == "MLA") return {0, 158, 115, 255};
  if (v == "SWA") return {204, 121, 167, 255};
  return {0, 114, 178, 255};
}
Color good_color(const Options& o) { return o.dark ? Color{110, 200, 120, 255} : Color{0, 128, 60, 255}; }

// In decimal units, as `mhaviz kv-memory` prints GB: counts 144, 12.3 k, 5.57 M, 1.20 G;
// bytes 144 B, 12.3 KB, 5.57 MB, 1.20 GB.
std::string decimal_text(std::int64_t v, bool bytes) {
  char buf[32];
  const double d = static_cast<double>(v);
  const char* unit = bytes ? "B" : "";
  if (v >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f G%s", d / 1e9, unit);
  else if (v >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f M%s", d / 1e6, unit);
  else if (v >= 10000)
    std::snprintf(buf, sizeof buf, "%.1f %s", d / 1e3, bytes ? "KB" : "k");
  else
    std::snprintf(buf, sizeof buf, "%lld%s%s", static_cast<long long>(v), bytes ? " " : "", unit);
  return buf;
}
std::string count_text(std::int64_t v) { return decimal_text(v, false); }
std::string bytes_text(std::int64_t v) { return decimal_text(v, true); }

// [SECTION] Equivalences: a mark, the claim, the verdict in the numbers' colour, how it was made
float draw_equivalences(Builder& B, const VariantComparison& c, const Options& o, float y, float width) {
  y += line_h(B.ty.tile) + 6.0f;
  y = paragraph(
      B, kMargin, y, width,
      "Equivalence: each pair run through the real forward, eval mode, max |a \xE2\x88\x92 b| over every value",
      B.ty.tile, B.th.text, "section");
  const float mark = line_h(B.ty.label);
  const float x_claim = kMargin + mark + 10.0f;
  for (std::size_t k = 0; k < c.equivalences.size(); ++k) {
    const Equivalence& e = c.equivalences[k];
    y += line_h(B.ty.label) + 8.0f;
    const float top = y - text_ascent(B.ty.label);
    const Color col = e.equal ? good_color(o) : B.th.warn;
    B.rect(kMargin, top, kMargin + mark, top + mark, col, "mark");
    B.text(kMargin + mark * 0.5f, y, e.equal ? "=" : "\xE2\x89\xA0", B.ty.label, on(col), 1, "mark-text");
    const float claim_w =
        B.text(x_claim, y, fit_text(e.claim, B.ty.label, width - mark - 10.0f), B.ty.label, B.th.text, 0, "claim");
    std::string verdict = e.verdict;
    if (e.equal != e.expected_equal) verdict += e.equal ? " (the lesson expected a difference)" : " (not equal)";
    const float vx = x_claim + claim_w + 16.0f;
    if (vx + text_width(verdict, B.ty.label) <= kMargin + width) {
      B.text(vx, y, verdict, B.ty.label, col, 0, "verdict");
    } else {
      y += line_h(B.ty.label);
      y = paragraph(B, x_claim, y, width - mark - 10.0f, verdict, B.ty.label, col, "verdict");
    }
    std::string how = e.how + ".  ";
    for (const auto& [name, d] : e.diffs) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "%s %.3g; ", name.c_str(), d);
      how += buf;
    }
    how.resize(how.size() - 2);
    y = paragraph(B, x_claim, y + line_h(B.ty.small), width - mark - 10.0f, how, B.ty.small, B.th.dim, "how");
    B.hit("equivalence_" + std::to_string(k), kMargin, top, kMargin + width, y + 4.0f);
  }
  return y;
}

// [SECTION] Cost table: a row per variant, a column per measure, each cell its value, its ratio
// to MHA and a bar scaled to the column's largest value
struct Column {
  std::string title;
  std::int64_t (*value)(const VariantCost&);
  std::string (*text)(std::int64_t);
};

float draw_costs(Builder& B, const VariantComparison& c, float y, float width) {
  y += line_h(B.ty.tile) + 18.0f;
  B.text(kMargin, y, "Cost at this size, and its ratio to MHA", B.ty.tile, B.th.text, 0, "section");
  const Column cols[] = {
      {"parameters", [](const VariantCost& v) { return v.cost.parameters; }, count_text},
      {"FLOPs of one forward", [](const VariantCost& v) { return v.cost.flops; }, count_text},
      {"KV cache per token", [](const VariantCost& v) { return v.kv_bytes_token; }, bytes_text},
      {"KV cache at " + std::to_string(c.context) + " tokens" +
           (c.batch > 1 ? " \xC3\x97 b " + std::to_string(c.batch) : ""),
       [](const VariantCost& v) { return v.kv_bytes_context; }, bytes_text},
  };
  constexpr int kCols = 4;
  float name_w = 0;
  for (const VariantCost& v : c.costs)
    name_w = std::max({name_w, text_width(v.variant, B.ty.tile), text_width(v.detail, B.ty.small)});
  name_w = std::min(name_w + 16.0f, width * 0.34f);
  const float cw = (width - name_w) / kCols, pad = 12.0f;
  // A title wider than its column goes on two lines or more, the last over the values ("KV
  // cache at 23 tok…" was cut on a 1280 x 800 window).
  std::vector<std::string> heads[kCols];
  std::size_t most = 1;
  for (int k = 0; k < kCols; ++k) {
    heads[k] = wrap(cols[k].title, B.ty.small, cw - pad);
    most = std::max(most, heads[k].size());
  }
  y += line_h(B.ty.small) * static_cast<float>(most) + 8.0f;
  for (int k = 0; k < kCols; ++k)
    for (std::size_t i = 0; i < heads[k].size(); ++i)
      B.text(kMargin + name_w + cw * static_cast<float>(k),
             y - line_h(B.ty.small) * static_cast<float>(heads[k].size() - 1 - i), heads[k][i], B.ty.small, B.th.dim, 0,
             "column");
  std::int64_t top[kCols] = {1, 1, 1, 1};
  for (const VariantCost& v : c.costs)
    for (int k = 0; k < kCols; ++k) top[k] = std::max(top[k], cols[k].value(v));
  const VariantCost& mha = c.costs.front();
  // Bars on whole pixels: solid at every scale, the same pixels on screen and in a capture.
  const float bar_h = std::round(std::max(10.0f, B.ty.small * 0.9f));
  for (const VariantCost& v : c.costs) {
    const float row_top = y + 8.0f;
    y = row_top + text_ascent(B.ty.tile);
    const Color col = variant_color(v.variant);
    B.text(kMargin, y, v.variant, B.ty.tile, col, 0, "variant");
    for (int k = 0; k < kCols; ++k) {
      const std::int64_t val = cols[k].value(v), base = cols[k].value(mha);
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "  \xC3\x97%.2f",
                    base > 0 ? static_cast<double>(val) / static_cast<double>(base) : 0.0);
      const float x = std::round(kMargin + name_w + cw * static_cast<float>(k));
      B.text(x, y, fit_text(cols[k].text(val) + ratio, B.ty.label, cw - pad), B.ty.label, B.th.text, 0, "value");
      const float len = std::max(2.0f, std::round((cw - pad) * static_cast<float>(val) / static_cast<float>(top[k])));
      const float by = std::round(y + line_h(B.ty.small) - B.ty.small * 0.5f);
      B.rect(x, by, x + len, by + bar_h, col, "bar");
    }
    y += line_h(B.ty.small);
    B.text(kMargin, y, fit_text(v.detail, B.ty.small, name_w - 8.0f), B.ty.small, B.th.dim, 0, "detail");
    y = std::max(y, y - B.ty.small * 0.5f + bar_h) + 4.0f;
    B.hit("cost_" + v.variant, kMargin, row_top, kMargin + width, y);
    B.line(kMargin, y + 4.0f, kMargin + width, y + 4.0f, Color{B.th.frame.r, B.th.frame.g, B.th.frame.b, 90}, 1.0f,
           "rule");
  }
  return y;
}

}  // namespace

Figure build_variant_figure(const VariantComparison& c, const Options& o) {
  Builder B(o);
  const float width = std::max(480.0f, o.canvas.width - 2.0f * kMargin);
  float y = kMargin + text_ascent(B.ty.title);
  B.text(kMargin, y, "Attention variants at this lesson's size", B.ty.title, B.th.text, 0, "title");
  char line[256];
  std::snprintf(line, sizeof line, "b = %d, T = %d, d_in = %d, %d query heads of head_dim %d, context_length %d",
                c.batch, c.tokens, c.d_in, c.heads, c.head_dim, c.context);
  y += line_h(B.ty.label) + 2.0f;
  B.text(kMargin, y, line, B.ty.label, B.th.text, 0, "subtitle");
  y = paragraph(B, kMargin, y + line_h(B.ty.small) + 2.0f, width, c.base + ".", B.ty.small, B.th.dim, "base");
  y = draw_equivalences(B, c, o, y, width);
  y = draw_costs(B, c, y, width);
  y += 10.0f;
  for (const std::string& n : c.notes)
    y = paragraph(B, kMargin, y + line_h(B.ty.small), width, n, B.ty.small, B.th.dim, "note");
  caption(B, o,
          {"Equivalences: tolerance 1e-5 (float32 rounding stays far below it); costs: forward_cost and "
           "kv_memory_table, as mhaviz dump and mhaviz kv-memory count them"});
  return finish(B);
}

}  // namespace mhaviz::figure
