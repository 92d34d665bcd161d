// The Train view's figure (train_figure.hpp): line plots with axes, ticks and legends in the
// figure library's primitives, and the probe's grid of heads (model_figure.cpp) placed beside
// them.
//
// Index
//   [SECTION] Axes: nice ticks, the frame, a series as lines
//   [SECTION] The loss plot
//   [SECTION] The detectors' small plots
//   [SECTION] The figure
//   [SECTION] The log of `mhaviz train`
#include "figure/train_figure.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "figure/builder.hpp"
#include "figure/plot.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {

void TrainCurves::add_step(std::int64_t step, float l, float first, float repeat) {
  steps.push_back(step);
  loss.push_back(l);
  loss_first.push_back(first);
  loss_repeat.push_back(repeat);
}

namespace detail {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// The order the view names the detectors in: the two heads of the induction circuit first.
constexpr HeadPattern kPlotOrder[kHeadPatternCount] = {HeadPattern::PreviousToken, HeadPattern::Induction,
                                                       HeadPattern::DuplicateToken, HeadPattern::FirstToken};

// [SECTION] Axes: nice ticks, the frame, a series as lines

// values[k] at steps[k] as lines; NaN breaks the line. With more points than pixels across,
// each pixel column draws the mean of its points (every step stays in the curve).
void draw_series(Builder& B, const Axes& a, const std::vector<std::int64_t>& steps, const std::vector<float>& values,
                 Color c, float width, const std::string& cls) {
  float px = 0, py = 0;
  bool have = false;
  int column = std::numeric_limits<int>::min();
  double sum = 0;
  int count = 0;
  auto flush = [&] {
    if (count == 0) return;
    const float x = static_cast<float>(column) + 0.5f;
    const float y = a.sy(sum / count);
    if (have) B.line(px, py, x, y, c, width, cls);
    px = x, py = y, have = true;
    sum = 0, count = 0;
  };
  for (std::size_t k = 0; k < steps.size() && k < values.size(); ++k) {
    const int col = static_cast<int>(std::floor(a.sx(static_cast<double>(steps[k]))));
    if (col != column) flush(), column = col;
    if (!std::isfinite(values[k])) {
      have = false;
      continue;
    }
    sum += values[k];
    ++count;
  }
  flush();
}

// A horizontal dashed line across a plot.
void dashed(Builder& B, const Axes& a, double y, Color c, const std::string& cls) {
  const float py = a.sy(y);
  for (float x = a.x0; x < a.x1; x += 10.0f) B.line(x, py, std::min(a.x1, x + 5.0f), py, c, 1.0f, cls);
}

void marker(Builder& B, const Axes& a, const TrainCurves& c) {
  if (c.marker < 0) return;
  const float x = a.sx(static_cast<double>(c.marker));
  B.line(x, a.y0, x, a.y1, B.th.accent, 2.0f, "marker");
}

double x_end(const TrainCurves& c) {
  double end = static_cast<double>(std::max<std::int64_t>(c.total_steps, 1));
  if (!c.steps.empty()) end = std::max(end, static_cast<double>(c.steps.back()));
  if (!c.eval_steps.empty()) end = std::max(end, static_cast<double>(c.eval_steps.back()));
  return end;
}

// [SECTION] The loss plot

Color first_color() { return head_color(0); }
Color repeat_color() { return head_color(1); }

void loss_plot(Builder& B, const TrainCurves& c, float x0, float y0, float x1, float y1) {
  float top = 0;
  for (const auto* v : {&c.loss, &c.loss_first, &c.loss_repeat})
    for (const float f : *v)
      if (std::isfinite(f)) top = std::max(top, f);
  const double chance = c.vocab > 1 ? std::log(static_cast<double>(c.vocab)) : 0.0;
  top = std::max(top, static_cast<float>(chance));
  const double ys = nice_step(top > 0 ? top : 1.0, 5);
  Axes a;
  a.ymax = std::ceil((top > 0 ? top : 1.0) * 1.02 / ys) * ys;
  a.xmax = x_end(c);
  a.x0 = x0 + y_tick_room(B, a.ymax, ys);
  a.x1 = x1 - 12.0f;  // the last tick's label is centred on the axis's end
  a.y0 = y0 + line_h(B.ty.tile) + 4.0f;
  // Under the plot: the x ticks' labels, then the legend in as many rows as it takes.
  const bool halves = std::any_of(c.loss_repeat.begin(), c.loss_repeat.end(), [](float v) { return std::isfinite(v); });
  const Color colours[] = {B.th.text, first_color(), repeat_color()};
  // The longest wording whose every key fits the plot's width (at 24 px the long one ran past
  // the plot, up to the probe's text beside it); a shorter one where its fewer rows of legend
  // give a plot squeezed under four lines of text its height back (24 px on 1280 × 800: the
  // plot's axis was 40 px under three rows of legend).
  const char* const wordings[][3] = {
      {"every position", "predicting the segment's first occurrence", "predicting its copy"},
      {"every position", "predicting a first occurrence", "predicting its copy"},
      {"every position", "first occurrence", "its copy"}};
  const auto to_legend_of = [&](const KeyFlow& fl) { return 6.0f + text_ascent(B.ty.small) + fl.row_h; };
  const auto bottom_of = [&](const KeyFlow& fl) {
    return y1 - std::max(3.0f * line_h(B.ty.small) + 8.0f,
                         to_legend_of(fl) + static_cast<float>(fl.rows - 1) * fl.row_h + 0.3f * B.ty.small + 2.0f);
  };
  std::vector<std::string> names;
  KeyFlow flow;
  for (const auto& w : wordings) {
    const bool chosen = !names.empty();
    std::vector<std::string> n;
    bool fits = true;
    for (int k = 0; k < (halves ? 3 : 1); ++k) {
      n.push_back(w[k]);
      fits = fits && key_width(B, w[k]) <= a.x1 - a.x0;
    }
    const KeyFlow fl = flow_keys(B, n, a.x0, a.x0, a.x1);
    const bool first = !chosen && (fits || &w == &wordings[2]);
    const bool squeezed = chosen && bottom_of(flow) - a.y0 < 4.0f * line_h(B.ty.small) && fl.rows < flow.rows;
    if (first || (fits && squeezed)) {
      names = std::move(n);
      flow = fl;
    }
  }
  const float to_legend = to_legend_of(flow);
  a.y1 = bottom_of(flow);
  draw_axes(B, a, "Loss by training step", "", 8, 5);
  if (chance > 0) {
    dashed(B, a, chance, B.th.dim, "chance");
    char buf[64];
    std::snprintf(buf, sizeof buf, "ln %d = %.2f: chance", c.vocab, chance);
    // Under the line at the right end, where the losses have fallen away from it by then.
    B.text(a.x1 - 4.0f, a.sy(chance) + text_ascent(B.ty.small) + 3.0f, buf, B.ty.small, B.th.dim, 2, "chance");
  }
  draw_series(B, a, c.steps, c.loss, B.th.text, 1.5f, "loss");
  if (halves) {
    draw_series(B, a, c.steps, c.loss_first, first_color(), 1.5f, "loss-first");
    draw_series(B, a, c.steps, c.loss_repeat, repeat_color(), 2.0f, "loss-repeat");
  }
  marker(B, a, c);
  B.hit("loss_plot", a.x0, a.y0, a.x1, a.y1);
  draw_keys(B, flow, a.y1 + to_legend, names, [&](std::size_t k) { return colours[k]; });
}

// [SECTION] The detectors' small plots

// The heads' colours after their lead, flowing over rows from x0 to right.
constexpr const char* kHeadsLead = "heads (layer.head):";
std::vector<std::string> head_names(const TrainCurves& c) {
  std::vector<std::string> names;
  for (int l = 0; l < c.n_layer; ++l)
    for (int h = 0; h < c.n_head; ++h) names.push_back(std::to_string(l) + "." + std::to_string(h));
  return names;
}
KeyFlow flow_heads(const Builder& B, const TrainCurves& c, float x0, float right) {
  return flow_keys(B, head_names(c), x0 + text_width(kHeadsLead, B.ty.small) + 12.0f, x0, right);
}

void legend_heads(Builder& B, const TrainCurves& c, float x0, float y, float right) {
  B.text(x0, y, kHeadsLead, B.ty.small, B.th.dim, 0, "legend");
  draw_keys(B, flow_heads(B, c, x0, right), y, head_names(c),
            [](std::size_t k) { return head_color(static_cast<int>(k)); });
}

void detector_plot(Builder& B, const TrainCurves& c, HeadPattern p, float title_size, bool title_from_edge, float x0,
                   float y0, float x1, float y1) {
  Axes a;
  a.ymax = 1.0;
  a.xmax = x_end(c);
  a.x0 = x0 + y_tick_room(B, 1.0, 0.5);
  a.x1 = x1 - 12.0f;  // the last tick's label is centred on the axis's end
  a.y0 = y0 + line_h(B.ty.tile) + 4.0f;
  a.y1 = y1 - line_h(B.ty.small) - 6.0f;
  const std::string name(head_pattern_name(p));
  // The title within the plot's width: side by side with the loss (a large font), "duplicate-token"
  // ran into the next plot's ticks. Over the axis, or from the plot's left edge, at the top, clear
  // of the tick "1" (a 1024 × 768 window's plots cut "previous-to…").
  draw_axes(B, a, "", "", 4, 2);
  if (title_from_edge)
    B.text(x0, y0 + 1.0f + text_ascent(title_size), fit_text(name, title_size, x1 - x0), title_size, B.th.text, 0,
           "plot-title");
  else
    B.text(a.x0, a.y0 - 6.0f, fit_text(name, title_size, x1 - a.x0), title_size, B.th.text, 0, "plot-title");
  const int heads = c.n_layer * c.n_head;
  std::vector<float> v(c.eval_steps.size());
  for (int k = 0; k < heads; ++k) {
    for (std::size_t e = 0; e < c.eval_steps.size(); ++e) {
      const auto& s = c.eval_scores[e];
      const std::size_t at = static_cast<std::size_t>(k) * kHeadPatternCount + static_cast<std::size_t>(p);
      v[e] = at < s.size() ? s[at] : kNaN;
    }
    draw_series(B, a, c.eval_steps, v, head_color(k), 1.5f, "score");
  }
  marker(B, a, c);
  B.hit("detector_" + name, a.x0, a.y0, a.x1, a.y1);
}

// [SECTION] The figure

// src's display list into dst, moved by (dx, dy).
void append(Figure& dst, Figure src, float dx, float dy) {
  const int base = static_cast<int>(dst.heatmaps.size());
  for (Prim& p : src.prims) {
    p.x0 += dx, p.x1 += dx, p.y0 += dy, p.y1 += dy;
    if (p.heatmap >= 0) p.heatmap += base;
    dst.prims.push_back(std::move(p));
  }
  for (HeatmapInfo& h : src.heatmaps) {
    h.x0 += dx, h.y0 += dy;
    dst.heatmaps.push_back(std::move(h));
  }
  for (Hit& h : src.hits) {
    h.x0 += dx, h.x1 += dx, h.y0 += dy, h.y1 += dy;
    dst.hits.push_back(std::move(h));
  }
  dst.cells += src.cells;
}

// The title in one line, or where it is wider than w (a 1024 × 768 window), in two: broken at
// the last " · " before which it fits (the run's step goes below), else at a space; a line
// that still does not fit ends in an ellipsis.
std::vector<std::string> title_lines(const std::string& t, float size, float w) {
  if (text_width(t, size) <= w) return {t};
  for (const std::string sep : {" \xC2\xB7 ", " "})
    for (std::size_t at = t.rfind(sep); at != std::string::npos && at > 0; at = t.rfind(sep, at - 1))
      if (text_width(t.substr(0, at), size) <= w)
        return {t.substr(0, at), fit_text(t.substr(at + sep.size()), size, w)};
  return {fit_text(t, size, w)};
}

// The widest detector's name at `size`: two plots side by side need twice it (detector_plots
// draws their titles smaller, then from the plots' edges, but never cut).
float widest_detector(float size) {
  float w = 0;
  for (int k = 0; k < kHeadPatternCount; ++k)
    w = std::max(w, text_width(std::string(head_pattern_name(kPlotOrder[k])), size));
  return w;
}

// The least height of one detector plot: its title, an axis with its "0" and "1" apart, the x
// ticks' numbers.
float detector_row_need(const Typography& ty) { return line_h(ty.tile) + 4.0f + 2.0f * line_h(ty.small) + 12.0f; }

// The detectors' four small plots in two rows (in one where two rows would be shorter than a plot
// needs and four fit across: a large font), then the heads' colours, within a rectangle.
void detector_plots(Builder& B, const TrainCurves& c, float x0, float y0, float x1, float y1) {
  // The legend's rows: two at least (the picture on wide canvases), more where the heads wrap.
  const int rows = c.n_layer > 0 ? flow_heads(B, c, x0, x1).rows : 0;
  const float key_row = line_h(B.ty.small) + 2.0f;
  const float legend_h = std::max(
      2.0f * key_row + 8.0f, B.ty.small + 4.0f + static_cast<float>(rows - 1) * key_row + 0.3f * B.ty.small + 2.0f);
  const float quarter = std::floor((x1 - x0 - 48.0f) * 0.25f);
  const bool one_row = std::floor((y1 - y0 - legend_h) * 0.5f) < detector_row_need(B.ty) &&
                       quarter >= text_width("duplicate-token", B.ty.tile) + y_tick_room(B, 1.0, 0.5) + 16.0f;
  const int per_row = one_row ? 4 : 2, n_rows = one_row ? 1 : 2;
  const float row_h = std::floor((y1 - y0 - legend_h) / static_cast<float>(n_rows));
  const float w = one_row ? quarter : std::floor((x1 - x0 - 16.0f) * 0.5f);
  // The four titles at the titles' size where every name fits over its axis, else all smaller,
  // whole (a 24-pixel font on 1280 × 800 cut "previous-token" to "previous-tok…"), and all from
  // the plots' left edges where one does not fit over its axis even so (a 1024 × 768 window).
  const auto all_fit = [&](float size, float room) {
    for (int k = 0; k < kHeadPatternCount; ++k)
      if (text_width(std::string(head_pattern_name(kPlotOrder[k])), size) > room) return false;
    return true;
  };
  const float over_axis = w - y_tick_room(B, 1.0, 0.5);
  const float title_size = all_fit(B.ty.tile, over_axis) ? B.ty.tile : B.ty.small;
  const bool from_edge = !all_fit(title_size, over_axis);
  for (int k = 0; k < kHeadPatternCount; ++k) {
    const float px = x0 + static_cast<float>(k % per_row) * (w + 16.0f);
    const float py = y0 + static_cast<float>(k / per_row) * row_h;
    detector_plot(B, c, kPlotOrder[k], title_size, from_edge, px, py, px + w, py + row_h - 6.0f);
  }
  if (c.n_layer > 0) legend_heads(B, c, x0, y0 + static_cast<float>(n_rows) * row_h + B.ty.small + 4.0f, x1);
}

// Where each part goes. Wide canvases (a projector's 1920 × 1080): the plots in the left half,
// the loss above the detectors, the probe's heads in the right half. Narrower ones (the
// default 1280 × 800 window): the loss and the detectors side by side above, the heads below
// across the whole width, so that a head shown large keeps cells of several pixels.
struct TrainLayout {
  float loss[4], detectors[4], probe[4];  // x0, y0, x1, y1
  bool stacked = false;                   // one under the other, the probe as tall as its heads need
};
constexpr float kWideFrom = 1200.0f;

// `plots_need`: the height the four detector plots and their legend need to stay readable (a
// large font makes it more than the usual share). `probe_need`: the least height of the probe's
// part below the plots (its header, legend and two rows of readable heads); where the narrower
// arrangement leaves it less (a 24-pixel font on 1280 × 800: the heads were 10 px), the wide
// arrangement is used if its left column holds the detectors. `beside_w`: the least width of
// the detectors' column beside the loss (their titles whole, two plots across).
// Where neither holds the plots and the heads readable (a 1024 × 768 window with a 24-pixel
// font: 600 × 522, the heads 10 px under plots titled "duplicate-tok…"), everything goes one
// under the other across the whole width, each with the height it needs: taller than the canvas,
// which the app scrolls. The layout's bottom is then past `bottom`.
TrainLayout train_layout(float W, float top, float bottom, bool probe, float plots_need, float probe_need,
                         float beside_w) {
  TrainLayout L{};
  const float x0 = kMargin, x1 = W - kMargin, gap = 16.0f, h = bottom - top;
  auto set = [](float* r, float a, float b, float c, float d) { r[0] = a, r[1] = b, r[2] = c, r[3] = d; };
  // The narrower arrangement's plots: their need, within 45% to 75% of the height.
  const float mid = top + std::floor(std::max(h * 0.45f, std::min(h * 0.75f, plots_need)));
  // The loss's share of the width where the detectors go beside it.
  const float split = x0 + std::floor((x1 - x0) * 0.55f), beside = x1 - split - gap;
  const bool wide_holds = W >= kWideFrom || (bottom - mid - 10.0f < probe_need && h * 0.65f - 10.0f >= plots_need);
  const bool narrow_holds = bottom - mid - 10.0f >= probe_need && beside >= beside_w;
  if (probe && !wide_holds && !narrow_holds) {
    const float loss_end = top + std::floor(std::max(h * 0.45f, plots_need * 0.8f));
    const float plots_end = loss_end + 10.0f + plots_need;
    set(L.loss, x0, top, x1, loss_end);
    set(L.detectors, x0, loss_end + 10.0f, x1, plots_end);
    set(L.probe, x0, plots_end + 10.0f, x1, std::max(bottom, plots_end + 10.0f + probe_need));
    L.stacked = true;
    return L;
  }
  if (!probe && h * 0.5f - 10.0f < plots_need && beside >= beside_w) {
    // Short (a large font): the loss and the detectors side by side, each the whole height.
    set(L.loss, x0, top, split, bottom);
    set(L.detectors, split + gap, top, x1, bottom);
  } else if (!probe) {
    // The detectors below the loss: half the height, or what they need (past `bottom` where the
    // canvas is both short and narrow).
    const float half = top + std::floor(h * 0.5f);
    set(L.loss, x0, top, x1, half);
    set(L.detectors, x0, half + 10.0f, x1, std::max(bottom, half + 10.0f + plots_need));
    L.stacked = bottom < half + 10.0f + plots_need;
  } else if (wide_holds) {
    // The detectors below the loss: half the height, or what they need up to 65%.
    const float middle = x0 + std::floor((x1 - x0) * 0.5f);
    const float half = top + std::floor(h - std::min(h * 0.65f, std::max(h * 0.5f, plots_need + 10.0f)));
    set(L.loss, x0, top, middle, half);
    set(L.detectors, x0, half + 10.0f, middle, bottom);
    set(L.probe, middle + gap, top, x1, bottom);
  } else {
    set(L.loss, x0, top, split, mid);
    set(L.detectors, split + gap, top, x1, mid);
    set(L.probe, x0, mid + 10.0f, x1, bottom);
  }
  return L;
}

Figure train_figure(const TrainCurves& c, const ModelView* probe, const Options& o) {
  Builder B(o);
  const float W = std::max(o.canvas.width, 480.0f), H = std::max(o.canvas.height, 360.0f);
  float y = kMargin + text_ascent(B.ty.title);
  const std::vector<std::string> title =
      title_lines(c.title.empty() ? std::string("Training") : c.title, B.ty.title, W - 2.0f * kMargin);
  for (std::size_t k = 0; k < title.size(); ++k) {
    if (k > 0) y += line_h(B.ty.title);
    B.text(kMargin, y, title[k], B.ty.title, B.th.text, 0, "title");
  }
  y += 14.0f;
  // A capture's caption goes below what the screen lays out: the same picture, taller.
  const float bottom = H - kMargin;
  const TrainLayout L = train_layout(
      W, y, bottom, probe != nullptr, 2.0f * detector_row_need(B.ty) + 4.0f * line_h(B.ty.small),
      line_h(B.ty.title) + 5.0f * line_h(B.ty.small) + 2.0f * 40.0f, 2.0f * widest_detector(B.ty.small) + 16.0f);
  loss_plot(B, c, L.loss[0], L.loss[1], L.loss[2], L.loss[3]);
  detector_plots(B, c, L.detectors[0], L.detectors[1], L.detectors[2], L.detectors[3]);
  if (probe) {
    Options po = o;
    po.caption = false;
    // The grid's content starts kMargin into its canvas: its canvas is its rectangle and a
    // margin around it.
    po.canvas = {L.probe[2] - L.probe[0] + 2 * kMargin, L.probe[3] - L.probe[1] + 2 * kMargin};
    Figure g = build_model_figure(*probe, po);
    // One under the other, the probe takes the height its heads need to be read: 40-pixel
    // thumbnails (or what its width allows), in steps of 20 px.
    if (L.stacked && !g.heatmaps.empty()) {
      const auto side = [](const Figure& x) { return x.heatmaps[0].cell * static_cast<float>(x.heatmaps[0].cols); };
      Options tall = po;
      tall.canvas.height = 1e4f;
      const float want = std::min(40.0f, side(build_model_figure(*probe, tall)));
      for (int k = 0; k < 60 && side(g) < want; ++k) {
        po.canvas.height += 20.0f;
        g = build_model_figure(*probe, po);
      }
    }
    const float dx = L.probe[0] - kMargin, dy = L.probe[1] - kMargin;
    B.grow(dx + static_cast<float>(g.width) - kMargin, dy + static_cast<float>(g.height) - kMargin);
    append(B.f, std::move(g), dx, dy);
  }
  B.grow(L.loss[2], std::max({bottom, L.probe[3], L.detectors[3]}));
  std::vector<std::string> lines;
  if (!c.caption.empty()) lines.push_back(c.caption);
  lines.push_back(
      "loss: mean next-token cross-entropy of each step's batch; detector scores: mean attention on the pattern's keys "
      "over the probe");
  caption(B, o, lines);
  return finish(B);
}

}  // namespace
}  // namespace detail

Figure build_train_figure(const TrainCurves& c, const ModelView* probe, const Options& o) {
  const std::size_t per = static_cast<std::size_t>(c.n_layer) * static_cast<std::size_t>(c.n_head) * kHeadPatternCount;
  if (c.loss.size() != c.steps.size() || c.loss_first.size() != c.steps.size() ||
      c.loss_repeat.size() != c.steps.size())
    throw std::invalid_argument("train figure: " + std::to_string(c.loss.size()) + " losses for " +
                                std::to_string(c.steps.size()) + " steps");
  if (c.eval_scores.size() != c.eval_steps.size())
    throw std::invalid_argument("train figure: " + std::to_string(c.eval_scores.size()) + " probes for " +
                                std::to_string(c.eval_steps.size()) + " probe steps");
  for (const auto& s : c.eval_scores)
    if (s.size() != per)
      throw std::invalid_argument("train figure: " + std::to_string(s.size()) + " scores in a probe of " +
                                  std::to_string(c.n_layer) + " layers x " + std::to_string(c.n_head) + " heads");
  return detail::train_figure(c, probe, o);
}

// [SECTION] The log of `mhaviz train`

namespace {
using json = nlohmann::json;

float number_or_nan(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<float>() : std::numeric_limits<float>::quiet_NaN();
}

// eval.heads {pattern: [[layer 0's heads], …]} -> scores in TrainCurves' order; sets the sizes
// on the first probe and holds later ones to them.
std::vector<float> probe_scores(const json& heads, TrainCurves& c, const std::string& where) {
  if (!heads.is_object()) throw std::invalid_argument(where + ": eval.heads is not an object");
  for (int p = 0; p < kHeadPatternCount; ++p) {
    const std::string name(head_pattern_name(kHeadPatterns[p]));
    if (!heads.contains(name) || !heads[name].is_array() || heads[name].empty() || !heads[name][0].is_array())
      throw std::invalid_argument(where + ": eval.heads has no layers of \"" + name + "\"");
    const int L = static_cast<int>(heads[name].size()), H = static_cast<int>(heads[name][0].size());
    if (c.n_layer == 0) c.n_layer = L, c.n_head = H;
    if (L != c.n_layer || H != c.n_head)
      throw std::invalid_argument(where + ": eval.heads \"" + name + "\" has " + std::to_string(L) + " layers x " +
                                  std::to_string(H) + " heads, the first probe " + std::to_string(c.n_layer) + " x " +
                                  std::to_string(c.n_head));
  }
  std::vector<float> out(static_cast<std::size_t>(c.n_layer * c.n_head) * kHeadPatternCount,
                         std::numeric_limits<float>::quiet_NaN());
  for (int p = 0; p < kHeadPatternCount; ++p) {
    const json& layers = heads[std::string(head_pattern_name(kHeadPatterns[p]))];
    for (int l = 0; l < c.n_layer; ++l) {
      if (!layers[l].is_array() || static_cast<int>(layers[l].size()) != c.n_head)
        throw std::invalid_argument(where + ": eval.heads layer " + std::to_string(l) + " does not have " +
                                    std::to_string(c.n_head) + " heads");
      for (int h = 0; h < c.n_head; ++h)
        if (layers[l][h].is_number())
          out[static_cast<std::size_t>((l * c.n_head + h) * kHeadPatternCount + p)] = layers[l][h].get<float>();
    }
  }
  return out;
}
}  // namespace

TrainCurves read_train_log(std::istream& in) {
  TrainCurves c;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(n);
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() || !j.contains("loss") ||
        !j["loss"].is_number())
      throw std::invalid_argument(where + ": not a `mhaviz train --log` object with \"step\" and \"loss\"");
    const std::int64_t step = j["step"].get<std::int64_t>();
    if (!c.steps.empty() && step <= c.steps.back())
      throw std::invalid_argument(where + ": step " + std::to_string(step) + " after step " +
                                  std::to_string(c.steps.back()));
    c.add_step(step, j["loss"].get<float>(), number_or_nan(j, "loss_first"), number_or_nan(j, "loss_repeat"));
    if (j.contains("eval") && j["eval"].is_object() && j["eval"].contains("heads")) {
      c.eval_scores.push_back(probe_scores(j["eval"]["heads"], c, where));
      c.eval_steps.push_back(step);
    }
  }
  if (c.steps.empty()) throw std::invalid_argument("the log has no step (one JSON object per line)");
  c.total_steps = c.steps.back();
  return c;
}

}  // namespace mhaviz::figure
