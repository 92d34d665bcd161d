// Line plots in the figure library's primitives (no plotting library in Debian 12): nice ticks,
// axes with a frame, grid and labels, legend keys. The Train view's curves (train_figure.cpp)
// and the KV cache's memory plot (kv_memory_figure.cpp) draw with them. Internal to app/figure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "figure/builder.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure::detail {

// A tick step of 1, 2 or 5 × 10^k that cuts `range` into at most `most` parts.
inline double nice_step(double range, int most) {
  if (!(range > 0)) return 1;
  const double raw = range / std::max(1, most);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

inline std::string tick_text(double v, double step) {
  char buf[32];
  if (step >= 1 && std::fabs(v) >= 1000 && std::fmod(v, 1000) == 0)
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1000);
  else if (step >= 1)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f", std::clamp(static_cast<int>(std::ceil(-std::log10(step))), 1, 4), v);
  return buf;
}

// A plot's data rectangle (logical pixels) and the ranges it maps.
struct Axes {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  float sx(double x) const { return x0 + static_cast<float>((x - xmin) / (xmax - xmin)) * (x1 - x0); }
  float sy(double y) const {
    return y1 - static_cast<float>((std::clamp(y, ymin, ymax) - ymin) / (ymax - ymin)) * (y1 - y0);
  }
};

// The room the y ticks' text takes left of a plot.
inline float y_tick_room(const Builder& B, double ymax, double step) {
  return text_width(tick_text(ymax, step), B.ty.small) + 10.0f;
}

// The frame, grid lines at every tick, the tick labels and the axes' titles.
// log2_x: the x range is log2 of the values, ticked at whole powers of two labelled by the value.
inline void draw_axes(Builder& B, const Axes& a, const std::string& title, const std::string& xlabel, int xticks,
                      int yticks, bool log2_x = false) {
  const Color grid{B.th.frame.r, B.th.frame.g, B.th.frame.b, 70};
  // A short plot (a narrow window's) gets fewer y ticks, so that their labels stay apart.
  yticks = std::clamp(static_cast<int>((a.y1 - a.y0) / line_h(B.ty.small)), 1, std::max(1, yticks));
  const double ys = nice_step(a.ymax - a.ymin, yticks);
  for (double y = std::ceil(a.ymin / ys) * ys; y <= a.ymax + ys * 1e-6; y += ys) {
    const float py = a.sy(y);
    B.line(a.x0, py, a.x1, py, grid, 1.0f, "grid");
    B.text(a.x0 - 6.0f, py + text_ascent(B.ty.small) * 0.5f - 1.0f, tick_text(y, ys), B.ty.small, B.th.text, 2, "tick");
  }
  // x ticks no closer than their widest number and a space (at 24 px the KV cache's "65536"
  // ran up to "131072"): fewer where a narrow plot would bring them together.
  double xs = 1.0;
  const auto x_label = [&](double x) { return log2_x ? tick_text(std::pow(2.0, x), 1.0) : tick_text(x, xs); };
  for (int n = std::max(1, xticks); n >= 1; --n) {
    xs = log2_x ? std::max(1.0, std::ceil((a.xmax - a.xmin) / n)) : nice_step(a.xmax - a.xmin, n);
    float widest = 0;
    for (double x = std::ceil(a.xmin / xs) * xs; x <= a.xmax + xs * 1e-6; x += xs)
      widest = std::max(widest, text_width(x_label(x), B.ty.small));
    if (a.sx(a.xmin + xs) - a.sx(a.xmin) >= widest + 0.3f * B.ty.small) break;
  }
  for (double x = std::ceil(a.xmin / xs) * xs; x <= a.xmax + xs * 1e-6; x += xs) {
    const float px = a.sx(x);
    B.line(px, a.y1, px, a.y1 + 4.0f, B.th.text, 1.0f, "tick");
    B.text(px, a.y1 + 6.0f + text_ascent(B.ty.small), x_label(x), B.ty.small, B.th.text, 1, "tick");
  }
  B.frame(a.x0, a.y0, a.x1, a.y1, B.th.frame, 1.0f, "axes");
  B.text(a.x0, a.y0 - 6.0f, title, B.ty.tile, B.th.text, 0, "plot-title");
  if (!xlabel.empty())
    B.text(a.x1, a.y1 + 6.0f + text_ascent(B.ty.small) + line_h(B.ty.small), xlabel, B.ty.small, B.th.dim, 2, "axis");
}

// A legend entry: a short line of the series' colour and its name; returns the next x.
inline float key(Builder& B, float x, float y, Color c, const std::string& text) {
  B.line(x, y - B.ty.small * 0.35f, x + 18.0f, y - B.ty.small * 0.35f, c, 3.0f, "legend-line");
  return x + 24.0f + B.text(x + 24.0f, y, text, B.ty.small, B.th.text, 0, "legend") + 16.0f;
}
inline float key_width(const Builder& B, const std::string& text) { return 24.0f + text_width(text, B.ty.small); }

// Legend entries flowing from x (after a lead such as "heads:") across to `right`, a new row at
// x0 when the next would not fit: where each goes, as (x, row). Measured before drawing, so that
// a plot leaves room for as many rows as its legend takes on a narrow canvas.
struct KeyFlow {
  std::vector<std::pair<float, int>> at;
  int rows = 1;
  float row_h = 0;  // from one row's baseline to the next's
};
inline KeyFlow flow_keys(const Builder& B, const std::vector<std::string>& names, float x, float x0, float right) {
  KeyFlow f;
  f.row_h = line_h(B.ty.small) + 2.0f;
  int row = 0;
  for (const std::string& n : names) {
    if (x > x0 && x + key_width(B, n) > right) x = x0, ++row;
    f.at.emplace_back(x, row);
    x += key_width(B, n) + 16.0f;
  }
  f.rows = row + 1;
  return f;
}

// The entries of `names` where flow_keys put them, the first row's baseline at y0;
// colour(k): entry k's series colour.
template <class ColourOf>
void draw_keys(Builder& B, const KeyFlow& f, float y0, const std::vector<std::string>& names, ColourOf colour) {
  for (std::size_t k = 0; k < names.size(); ++k)
    key(B, f.at[k].first, y0 + static_cast<float>(f.at[k].second) * f.row_h, colour(k), names[k]);
}

}  // namespace mhaviz::figure::detail
