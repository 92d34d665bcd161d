// Figures of the interventions (interv_figures.hpp): one labelled heatmap with its colour bar.
//
// [SECTION] The grid figure
// [SECTION] Views of the sweep, the patching grids and the lens
#include "figure/interv_figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "figure/gpt_figures.hpp"
#include "figure/heatmap.hpp"

namespace mhaviz::figure {

using namespace detail;

// [SECTION] The grid figure

namespace {

void check_sizes(const GridView& g) {
  const auto n = static_cast<std::size_t>(g.rows) * static_cast<std::size_t>(g.cols);
  if (g.rows < 1 || g.cols < 1 || g.values.size() != n)
    throw std::invalid_argument("grid: " + std::to_string(g.values.size()) + " values for " + std::to_string(g.rows) +
                                " × " + std::to_string(g.cols) + " cells");
  if (g.row_names.size() != static_cast<std::size_t>(g.rows) || g.col_names.size() != static_cast<std::size_t>(g.cols))
    throw std::invalid_argument("grid: the row and column names do not match its " + std::to_string(g.rows) + " × " +
                                std::to_string(g.cols) + " cells");
  if (!g.cell_text.empty() && g.cell_text.size() != n)
    throw std::invalid_argument("grid: " + std::to_string(g.cell_text.size()) + " cell texts for " + std::to_string(n) +
                                " cells");
  if (!g.side_text.empty() && g.side_text.size() != static_cast<std::size_t>(g.rows))
    throw std::invalid_argument("grid: " + std::to_string(g.side_text.size()) + " side lines for " +
                                std::to_string(g.rows) + " rows");
}

// The side column's width: its widest line, and room to breathe on either side.
float side_width(const GridView& g, const Builder& B) {
  if (g.side_text.empty()) return 0.0f;
  float w = text_width(g.side_title, B.ty.small);
  for (const std::string& t : g.side_text) w = std::max(w, text_width(t, B.ty.label));
  return w + 20.0f;
}

// The side column at x, a line at each row's middle, the title above the first row; the
// marked column framed.
void side_column(Builder& B, const GridView& g, float x, float y0, float cell) {
  if (g.marked_col >= 0 && g.marked_col < g.cols) {
    const float cx = x - 16.0f - cell * static_cast<float>(g.cols - g.marked_col);
    B.frame(cx, y0, cx + cell, y0 + cell * static_cast<float>(g.rows), B.th.accent, 2.0f, "marked-column");
  }
  if (g.side_text.empty()) return;
  B.text(x, y0 - 8.0f, g.side_title, B.ty.small, B.th.accent, 0, "side-title");
  const float size = std::min(B.ty.label, std::max(8.0f, std::floor(cell * 0.8f)));
  for (int r = 0; r < g.rows; ++r)
    B.text(x, y0 + (static_cast<float>(r) + 0.5f) * cell + text_ascent(size) * 0.5f - 1.0f,
           g.side_text[static_cast<std::size_t>(r)], size, B.th.text, 0, "side-text");
}

ColorScale grid_scale(const GridView& g, const Options& o) {
  ColorScale s;
  if (g.signed_values) {
    // Symmetric about 0 and at least ±1: a patching effect of 1 is "fully restored" on every
    // figure, and a sweep of small changes is not blown up to the full range.
    float m = 1.0f;
    for (const float v : g.values)
      if (std::isfinite(v)) m = std::max(m, std::fabs(v));
    s.vmin = -m;
    s.vmax = m;
    s.cmap = Colormap::Diverging;
  } else {
    s.vmin = 0.0f;
    s.vmax = 1.0f;
    s.cmap = o.colormap == Colormap::Diverging ? Colormap::Viridis : o.colormap;
  }
  return s;
}

// The texts of the cells over the heatmap (fit to the cell, on the cell's colour).
void cell_texts(Builder& B, const GridView& g, const HeatmapInfo& info) {
  const float cell = info.cell, size = std::min(B.ty.label, std::floor(cell * 0.4f));
  if (size < 8.0f) return;
  for (int r = 0; r < g.rows; ++r)
    for (int c = 0; c < g.cols; ++c) {
      const std::size_t k =
          static_cast<std::size_t>(r) * static_cast<std::size_t>(g.cols) + static_cast<std::size_t>(c);
      const float x0 = info.x0 + static_cast<float>(c) * cell, y0 = info.y0 + static_cast<float>(r) * cell;
      const std::string t = fit_text(g.cell_text[k], size, cell - 4.0f);
      const Color ink = on(cell_color(info.scale, g.values[k]));
      const bool two = g.value_under_text && cell >= 3.0f * size;
      const float mid = y0 + cell * 0.5f + text_ascent(size) * 0.5f - 1.0f;
      B.text(x0 + cell * 0.5f, two ? mid - size * 0.6f : mid, t, size, ink, 1, "cell-text");
      if (two) B.text(x0 + cell * 0.5f, mid + size * 0.7f, format_value(g.values[k]), size * 0.85f, ink, 1, "value");
    }
}

}  // namespace

Figure build_grid_figure(const GridView& g, const Options& o) {
  check_sizes(g);
  Builder B(o);
  float y = kMargin + text_ascent(B.ty.title);
  const float text_w = o.canvas.width - 2.0f * kMargin;
  B.text(kMargin, y, fit_text(g.title, B.ty.title, text_w), B.ty.title, B.th.text, 0, "title");
  // The subtitle on up to two lines: cut on one, the lens's "cell: top token…" and the sweep's
  // "rows: layers, columns: h…" were lost on an 835-px canvas.
  for (const std::string& line : wrap(g.subtitle, B.ty.small, text_w, 2)) {
    y += line_h(B.ty.small) + 2.0f;
    B.text(kMargin, y, line, B.ty.small, B.th.dim, 0, "subtitle");
  }
  const float top = y + 16.0f;
  const ColorScale scale = grid_scale(g, o);
  const float bar_w = colorbar_width(B, scale) + 24.0f + side_width(g, B);
  const float caption_h = o.caption ? 2.0f * line_h(B.ty.small) + 20.0f : 0.0f;
  // Labels from the cell size and the cell size from the room the labels leave, twice.
  LabelPlan lp;
  float cell = 1.0f;
  for (int pass = 0; pass < 3; ++pass) {
    cell = fit_cell(o.canvas.width - 2.0f * kMargin - bar_w - lp.left,
                    o.canvas.height - top - kMargin - caption_h - lp.top, g.rows, g.cols);
    const LabelPlan rows = plan_labels(g.row_names, cell, B.ty.label),
                    cols = plan_labels(g.col_names, cell, B.ty.label);
    lp.show = rows.show && cols.show;
    lp.left = rows.left;
    lp.top = cols.top;
    lp.vertical = cols.vertical;
    lp.step = std::max(rows.step, cols.step);
  }
  HeatmapSpec spec;
  spec.rows = g.rows;
  spec.cols = g.cols;
  spec.value = [&](int r, int c) {
    return g.values[static_cast<std::size_t>(r) * static_cast<std::size_t>(g.cols) + static_cast<std::size_t>(c)];
  };
  spec.scale = scale;
  spec.row_names = &g.row_names;
  spec.col_names = &g.col_names;
  spec.numbers = g.cell_text.empty();
  const float x0 = kMargin + (lp.show ? lp.left : 0.0f), y0 = top + (lp.show ? lp.top : 0.0f);
  const int id = draw_heatmap(B, spec, x0, y0, cell, lp, true, true);
  if (!g.cell_text.empty()) cell_texts(B, g, B.f.heatmaps[static_cast<std::size_t>(id)]);
  for (int r = 0; r < g.rows; ++r)
    for (int c = 0; c < g.cols; ++c) {
      const float cx = x0 + static_cast<float>(c) * cell, cy = y0 + static_cast<float>(r) * cell;
      B.hit("grid_" + std::to_string(r) + "_" + std::to_string(c), cx, cy, cx + cell, cy + cell);
    }
  const float grid_h = cell * static_cast<float>(g.rows), grid_right = x0 + cell * static_cast<float>(g.cols);
  side_column(B, g, grid_right + 16.0f, y0, cell);
  colorbar(B, scale, grid_right + side_width(g, B) + 24.0f, y0 + 14.0f, std::clamp(grid_h - 14.0f, 120.0f, 480.0f),
           g.bar_title);
  caption(B, o, {g.caption});
  return finish(B);
}

// [SECTION] Views of the sweep, the patching grids and the lens

namespace {

std::vector<std::string> numbered(const char* prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// "log p(' Mary')" or "logit(' Mary') − logit(' John')".
std::string metric_name(const Tokenizer& tok, const TokenMetric& m) {
  const auto name = [&](int id) { return "'" + display_tokens(tok, {id}).front() + "'"; };
  if (m.vs < 0) return "log p(" + name(m.target) + ")";
  return "logit(" + name(m.target) + ") \xE2\x88\x92 logit(" + name(m.vs) + ")";
}

std::string quoted(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) s += t;
  return "\xE2\x80\x9C" + s.substr(0, 80) + "\xE2\x80\x9D";
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

namespace {

// The views below, captioned with the model's line.
GridView sweep_of(const std::string& caption, const InterventionGrid& g, const Tokenizer& tok,
                  const TokenMetric& metric, AblationMode mode, const std::vector<std::string>& tokens) {
  GridView v;
  v.title = "Ablating each head alone: change in " + metric_name(tok, metric);
  v.subtitle = std::string(mode == AblationMode::Mean ? "mean-ablated" : "zero-ablated") +
               " \xC2\xB7 next token after " + quoted(tokens) + " \xC2\xB7 clean " + fixed(g.clean) +
               " \xC2\xB7 rows: layers, columns: heads";
  v.caption = caption;
  v.rows = g.rows;
  v.cols = g.cols;
  v.values = g.values;
  v.row_names = numbered("L", g.rows);
  v.col_names = numbered("H", g.cols);
  v.bar_title = "change";
  return v;
}

GridView patch_of(const std::string& caption, const InterventionGrid& g, const Tokenizer& tok,
                  const TokenMetric& metric, PatchPer per, const std::vector<std::string>& clean,
                  const std::vector<std::string>& corrupt) {
  GridView v;
  v.title = std::string("Patching ") +
            (per == PatchPer::Head ? "each head's output" : "the residual after each layer") +
            " from the clean run: " + metric_name(tok, metric) + " restored";
  v.subtitle = "clean " + quoted(clean) + " (" + fixed(g.clean) + ") \xC2\xB7 corrupted " + quoted(corrupt) + " (" +
               fixed(g.corrupt) + ") \xC2\xB7 1 = fully restored, 0 = no effect";
  v.caption = caption;
  v.rows = g.rows;
  v.cols = g.cols;
  v.values = g.values;
  v.row_names = numbered("L", g.rows);
  if (per == PatchPer::Head) {
    v.col_names = numbered("H", g.cols);
  } else {
    v.col_names = corrupt;
    for (std::size_t i = 0; i < corrupt.size() && i < clean.size(); ++i)
      if (corrupt[i] != clean[i]) v.col_names[i] = "*" + corrupt[i];
  }
  v.bar_title = "restored";
  return v;
}

}  // namespace

GridView sweep_view(const GptModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    AblationMode mode, const std::vector<std::string>& tokens, const std::string& path) {
  return sweep_of(gpt_caption(m, path, static_cast<int>(tokens.size())), g, tok, metric, mode, tokens);
}
GridView sweep_view(const HfModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    AblationMode mode, const std::vector<std::string>& tokens, const std::string& path) {
  return sweep_of(hf_caption(model_facts(m), path, static_cast<int>(tokens.size())), g, tok, metric, mode, tokens);
}

GridView patch_view(const GptModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    PatchPer per, const std::vector<std::string>& clean, const std::vector<std::string>& corrupt,
                    const std::string& path) {
  return patch_of(gpt_caption(m, path, static_cast<int>(clean.size())), g, tok, metric, per, clean, corrupt);
}
GridView patch_view(const HfModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    PatchPer per, const std::vector<std::string>& clean, const std::vector<std::string>& corrupt,
                    const std::string& path) {
  return patch_of(hf_caption(model_facts(m), path, static_cast<int>(clean.size())), g, tok, metric, per, clean,
                  corrupt);
}

void make_norm_weighted(ModelView& v) {
  const std::string name =
      "\xCE\xB1\xC2\xB7\xE2\x80\x96"
      "f(x)\xE2\x80\x96";  // α·‖f(x)‖
  v.title = "Norm-weighted (" + name + "): " + v.title;
  v.bar_title = name;
}

std::string rank_text(int rank, float p) {
  char buf[64];
  const double pc = static_cast<double>(p) * 100.0;
  std::snprintf(buf, sizeof buf, pc >= 0.1 ? "rank %d \xC2\xB7 %.1f%%" : "rank %d \xC2\xB7 %.2g%%", rank + 1, pc);
  return buf;
}

namespace {

GridView lens_of(const std::string& caption, const LogitLens& lens, const Tokenizer& tok,
                 const std::vector<std::string>& tokens, int position) {
  GridView v;
  v.title = "Logit lens: what each layer would predict next";
  v.subtitle = "the final norm and the LM head on the residual after each layer \xC2\xB7 " + quoted(tokens) +
               " \xC2\xB7 cell: the most likely next token, coloured by its probability";
  v.caption = caption;
  v.rows = lens.layers;
  v.cols = lens.tokens;
  v.row_names = numbered("L", lens.layers);
  v.col_names = tokens;
  v.signed_values = false;
  v.value_under_text = true;
  v.bar_title = "p(top)";
  for (int l = 0; l < lens.layers; ++l)
    for (int t = 0; t < lens.tokens; ++t) {
      const TokenProbability& top = lens.at(l, t, 0);
      v.values.push_back(top.p);
      v.cell_text.push_back(display_tokens(tok, {top.id}).front());
    }
  if (lens.target < 0 || position < 0 || position >= lens.tokens) return v;
  // The chosen token after each layer at the chosen position: how far up the ranking it climbs.
  v.marked_col = position;
  v.side_title = "rank of '" + display_tokens(tok, {lens.target}).front() + "' after \xE2\x80\x9C" +
                 tokens[static_cast<std::size_t>(position)] + "\xE2\x80\x9D (position " + std::to_string(position) +
                 ")";
  for (int l = 0; l < lens.layers; ++l) {
    const std::size_t at =
        static_cast<std::size_t>(l) * static_cast<std::size_t>(lens.tokens) + static_cast<std::size_t>(position);
    v.side_text.push_back(rank_text(lens.rank[at], lens.target_p[at]));
  }
  return v;
}

}  // namespace

GridView lens_view(const GptModel& m, const LogitLens& lens, const Tokenizer& tok,
                   const std::vector<std::string>& tokens, const std::string& path, int position) {
  return lens_of(gpt_caption(m, path, lens.tokens), lens, tok, tokens, position);
}
GridView lens_view(const HfModel& m, const LogitLens& lens, const Tokenizer& tok,
                   const std::vector<std::string>& tokens, const std::string& path, int position) {
  return lens_of(hf_caption(model_facts(m), path, lens.tokens), lens, tok, tokens, position);
}

}  // namespace mhaviz::figure
