// The figure library's entry points (figure.hpp): the dispatch of a lesson's views, the
// model view of a trained GPT, thumbnails pooled for it, steps by name, ticks, typography.
// The lesson's heatmaps are lesson_figure.cpp, a walkthrough step walk_picture.cpp, the one
// heatmap they all draw through heatmap.cpp.
#include "figure/figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "figure/builder.hpp"
#include "figure/heatmap.hpp"
#include "figure/walk_figure.hpp"
#include "figure/text.hpp"
#include "mhaviz/layout.hpp"

namespace mhaviz::figure {
namespace {

using namespace detail;  // the drawing kit (builder.hpp)

// [SECTION] The model view of a trained GPT
Figure model_figure(const ModelView& m, const Options& o) {
  Builder B(o);
  const float kTitle = B.ty.title, kLabel = B.ty.label, kSmall = B.ty.small;
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
  const ColorScale rg = thumbs.scale;

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
      const std::vector<float>& px = pooled[static_cast<std::size_t>(k)];
      HeatmapSpec spec;
      spec.id = k;
      spec.rows = spec.cols = n;
      spec.value = [&px, n](int i, int j) { return px[static_cast<std::size_t>(i * n + j)]; };
      spec.mask = [&px, n](int i, int j) {
        const float v = px[static_cast<std::size_t>(i * n + j)];
        return std::isinf(v) && v < 0 ? CellMask::Causal : CellMask::Visible;
      };
      spec.scale = rg;
      draw_heatmap(B, spec, tx, ty, cell, LabelPlan{}, false, false);
      const bool is_top = std::find(top5.begin(), top5.end(), k) != top5.end();
      const bool is_selected = l == m.selected_layer && h == m.selected_head;
      if (is_top || is_selected) {
        const Color c = is_selected ? selected : accent;
        B.frame(tx - 2.0f, ty - 2.0f, tx + side + 2.0f, ty + side + 2.0f, c, 2.0f);
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
  float lx = mask_legend(B, kMargin, ly, "masked (key after the query)");
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
    Mistake mistake;
    if (o.mistaken && trace.config.variant != Variant::Wrapper)
      mistake = o.model ? make_mistake(*o.model, trace) : Mistake{mistaken_merge(trace), {}};
    WalkInput in;
    in.trace = &trace;
    in.model = o.model;
    in.tokens = &tokens;
    in.mistake = &mistake;
    in.batch = o.batch;
    in.mistaken = o.mistaken;
    in.pane = o.pane;
    in.numbers = o.values;
    in.pos = static_cast<float>(o.step);
    return walk_step_figure(in, o);
  }
  if (o.head < 0 || o.head >= trace.heads)
    throw std::invalid_argument("--head: " + std::to_string(o.head) + " is out of range [0, " +
                                std::to_string(trace.heads - 1) + "]");
  return lesson_figure(trace, tokens, o);
}

const Hit* Figure::hit(const std::string& id) const {
  for (const Hit& h : hits)
    if (h.id == id) return &h;
  return nullptr;
}

Typography Typography::for_font(float px) {
  // The render defaults (17, 14, 13, 12) are these ratios of a 17-pixel font.
  return {px, std::round(px * 14.0f / 17.0f), std::round(px * 13.0f / 17.0f), std::round(px * 12.0f / 17.0f)};
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
