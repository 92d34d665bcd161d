// How values map to colours (app/figure/colormap.hpp, color_scale): the diverging scale's
// symmetric range whichever sign reaches further, the sequential and weight scales, values
// that are not finite, the log scale's floor and the colours of known values on it; then the
// same rules as a built figure applies them, head by head or on one shared scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "figure/colormap.hpp"
#include "figure/figure.hpp"
#include "mhaviz/session.hpp"

namespace mhaviz {
namespace {

using figure::color_scale;
using figure::Colormap;
using figure::ColorScale;

constexpr float kInf = std::numeric_limits<float>::infinity();

// A scale of scores (signed) on the diverging map, as the app asks for it by default.
ColorScale scores(float lo, float hi) { return color_scale(lo, hi, 0.0f, true, Colormap::Viridis, true, false); }

void expect_range(const ColorScale& s, float vmin, float vmax, Colormap cmap, const char* what) {
  EXPECT_FLOAT_EQ(s.vmin, vmin) << what;
  EXPECT_FLOAT_EQ(s.vmax, vmax) << what;
  EXPECT_EQ(s.cmap, cmap) << what;
  EXPECT_FALSE(s.log) << what;
}

// [SECTION] The diverging scale of signed scores
TEST(ColorScale, DivergingIsSymmetricWhicheverSignReachesFurther) {
  expect_range(scores(-2.0f, 5.0f), -5.0f, 5.0f, Colormap::Diverging, "positive dominates");
  expect_range(scores(-5.0f, 2.0f), -5.0f, 5.0f, Colormap::Diverging, "negative dominates");
  expect_range(scores(-7.0f, -0.5f), -7.0f, 7.0f, Colormap::Diverging, "all negative");
  expect_range(scores(0.25f, 3.0f), -3.0f, 3.0f, Colormap::Diverging, "all positive");
  expect_range(scores(-3.0f, -3.0f), -3.0f, 3.0f, Colormap::Diverging, "a single negative value");
  expect_range(scores(4.0f, 4.0f), -4.0f, 4.0f, Colormap::Diverging, "a single positive value");
  expect_range(scores(0.0f, 0.0f), -0.5f, 0.5f, Colormap::Diverging, "all zero: a range around it");
  // Zero sits at the map's neutral middle, and ±max at its ends.
  const ColorScale s = scores(-5.0f, 2.0f);
  EXPECT_FLOAT_EQ(figure::scale_t(s, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(figure::scale_t(s, -5.0f), 0.0f);
  EXPECT_FLOAT_EQ(figure::scale_t(s, 5.0f), 1.0f);
  EXPECT_FLOAT_EQ(figure::scale_value(s, 0.75f), 2.5f);
}

// The diverging map picked in the colormap box, with "diverging map for signed scores"
// turned off, is still the diverging map: symmetric too. A sequential map spans [lo, hi].
TEST(ColorScale, SignedScoresOnThePickedMap) {
  expect_range(color_scale(-5.0f, 2.0f, 0.0f, true, Colormap::Diverging, false, false), -5.0f, 5.0f,
               Colormap::Diverging, "diverging picked, negative dominates");
  expect_range(color_scale(-1.0f, 3.0f, 0.0f, true, Colormap::Diverging, false, false), -3.0f, 3.0f,
               Colormap::Diverging, "diverging picked, positive dominates");
  expect_range(color_scale(-5.0f, 2.0f, 0.0f, true, Colormap::Magma, false, false), -5.0f, 2.0f, Colormap::Magma,
               "sequential: the values' own range");
  expect_range(color_scale(1.5f, 1.5f, 0.0f, true, Colormap::Cividis, false, false), 1.0f, 2.0f, Colormap::Cividis,
               "sequential, a single value: a range around it");
}

TEST(ColorScale, WeightsStartAtZero) {
  const auto weights = [](float lo, float hi) {
    return color_scale(lo, hi, lo > 0 ? lo : 0.0f, false, Colormap::Viridis, true, false);
  };
  expect_range(weights(0.1f, 0.7f), 0.0f, 0.7f, Colormap::Viridis, "weights");
  expect_range(weights(0.25f, 0.25f), 0.0f, 0.25f, Colormap::Viridis, "a single weight");
  expect_range(weights(0.0f, 0.0f), -0.5f, 0.5f, Colormap::Viridis, "all zero");
  // The flag for signed scores leaves weights on their own map.
  EXPECT_EQ(color_scale(0.0f, 1.0f, 0.0f, false, Colormap::Magma, true, false).cmap, Colormap::Magma);
}

// Callers pass the finite extremes; an infinity or NaN that slips through (a masked cell's
// -inf) is ignored rather than making the whole range infinite or NaN.
TEST(ColorScale, ValuesThatAreNotFiniteAreIgnored) {
  const float nan = std::nanf("");
  expect_range(scores(-kInf, 3.0f), -3.0f, 3.0f, Colormap::Diverging, "-inf and 3");
  expect_range(scores(-2.0f, kInf), -2.0f, 2.0f, Colormap::Diverging, "-2 and inf");
  expect_range(scores(nan, -4.0f), -4.0f, 4.0f, Colormap::Diverging, "NaN and -4");
  expect_range(scores(nan, nan), -0.5f, 0.5f, Colormap::Diverging, "nothing finite");
  const ColorScale w = color_scale(0.0f, 0.8f, nan, false, Colormap::Viridis, true, true);
  expect_range(w, 0.0f, 0.8f, Colormap::Viridis, "weights, min_pos NaN: no log floor to take");
}

// [SECTION] The log scale of weights: its floor and the colours of known values
// viridis at 0, 0.25, 0.5, 0.75 and 1 (matplotlib's table; ours interpolates 11 of its entries).
struct Rgb8 {
  int r, g, b;
};
void expect_colour(const ColorScale& s, float v, Rgb8 want, const char* what) {
  const float t = std::clamp(figure::scale_t(s, v), 0.0f, 1.0f);
  const auto c = figure::colormap_lut(s.cmap, static_cast<int>(std::lround(t * 255.0f)));
  EXPECT_NEAR(c[0], want.r, 2) << what;
  EXPECT_NEAR(c[1], want.g, 2) << what;
  EXPECT_NEAR(c[2], want.b, 2) << what;
}

TEST(ColorScale, LogFloorIsFourDecadesBelowTheLargestWeight) {
  // The smallest positive weight far below: the floor is hi / 10^4.
  ColorScale s = color_scale(0.0f, 0.5f, 1e-9f, false, Colormap::Viridis, true, true);
  EXPECT_TRUE(s.log);
  EXPECT_FLOAT_EQ(s.vmin, 0.5f * 1e-4f);
  EXPECT_FLOAT_EQ(s.vmax, 0.5f);
  // Within four decades: the floor is the smallest positive weight itself.
  s = color_scale(0.0f, 0.5f, 0.002f, false, Colormap::Viridis, true, true);
  EXPECT_TRUE(s.log);
  EXPECT_FLOAT_EQ(s.vmin, 0.002f);
  // One positive value (or none): no log range to span, linear from zero.
  s = color_scale(0.0f, 0.5f, 0.5f, false, Colormap::Viridis, true, true);
  EXPECT_FALSE(s.log);
  EXPECT_FLOAT_EQ(s.vmin, 0.0f);
  s = color_scale(0.0f, 0.0f, 0.0f, false, Colormap::Viridis, true, true);
  EXPECT_FALSE(s.log);

  // Decades are equal steps: vmax at the top, the floor at the bottom, one decade up a
  // quarter of the way, anything below the floor (zero included) clamped to the bottom.
  s = color_scale(0.0f, 1.0f, 1e-7f, false, Colormap::Viridis, true, true);
  ASSERT_TRUE(s.log);
  ASSERT_FLOAT_EQ(s.vmin, 1e-4f);
  EXPECT_FLOAT_EQ(figure::scale_t(s, 1.0f), 1.0f);
  EXPECT_FLOAT_EQ(figure::scale_t(s, 1e-4f), 0.0f);
  EXPECT_NEAR(figure::scale_t(s, 1e-3f), 0.25f, 1e-6f);
  EXPECT_NEAR(figure::scale_t(s, 1e-2f), 0.5f, 1e-6f);
  EXPECT_EQ(figure::scale_t(s, 1e-6f), 0.0f);
  EXPECT_EQ(figure::scale_t(s, 0.0f), 0.0f);
  EXPECT_NEAR(figure::scale_value(s, 0.75f), 0.1f, 1e-6f);
  expect_colour(s, 1.0f, {0xfd, 0xe7, 0x25}, "vmax: viridis(1)");
  expect_colour(s, 1e-4f, {0x44, 0x01, 0x54}, "the floor: viridis(0)");
  expect_colour(s, 1e-3f, {0x3b, 0x52, 0x8b}, "a decade up: viridis(0.25)");
  expect_colour(s, 1e-2f, {0x21, 0x91, 0x8c}, "two decades up: viridis(0.5)");
  expect_colour(s, 1e-1f, {0x5e, 0xc9, 0x62}, "three decades up: viridis(0.75)");
  expect_colour(s, 1e-6f, {0x44, 0x01, 0x54}, "below the floor: clamped to viridis(0)");
}

// [SECTION] The same rules in a built figure: every head on one scale, or each on its own
struct LessonTrace {
  Session s = lesson("seed003-weight-split-6d");
  Trace trace;
  LessonTrace() { trace = forward(build_model(s.model, s.d_in()), s.input_tensor()); }
};

float max_abs_finite(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return m;
}

TEST(ColorScale, FiguresShareOneScaleOrGiveEachHeadItsOwn) {
  const LessonTrace r;
  ASSERT_GE(r.trace.heads, 2);
  for (const Stage st : {Stage::Scores, Stage::Masked}) {
    figure::Options o;
    o.stage = st;
    float all = 0.0f;
    std::vector<float> own(static_cast<std::size_t>(r.trace.heads));
    for (int h = 0; h < r.trace.heads; ++h) {
      own[static_cast<std::size_t>(h)] = max_abs_finite(r.trace.stage_matrix(st, 0, h));
      all = std::max(all, own[static_cast<std::size_t>(h)]);
    }
    ASSERT_GT(all, 0.0f);
    o.shared_scale = true;
    const figure::Figure shared = figure::build_figure(r.trace, r.s.tokens, o);
    o.shared_scale = false;
    const figure::Figure each = figure::build_figure(r.trace, r.s.tokens, o);
    ASSERT_EQ(shared.heatmaps.size(), own.size());
    ASSERT_EQ(each.heatmaps.size(), own.size());
    for (std::size_t h = 0; h < own.size(); ++h) {
      // The masked stage holds -inf above the diagonal: ignored, the range stays finite.
      EXPECT_FLOAT_EQ(shared.heatmaps[h].scale.vmax, all) << stage_name(st) << " head " << h;
      EXPECT_FLOAT_EQ(shared.heatmaps[h].scale.vmin, -all) << stage_name(st) << " head " << h;
      EXPECT_FLOAT_EQ(each.heatmaps[h].scale.vmax, own[h]) << stage_name(st) << " head " << h;
      EXPECT_FLOAT_EQ(each.heatmaps[h].scale.vmin, -own[h]) << stage_name(st) << " head " << h;
      EXPECT_EQ(each.heatmaps[h].scale.cmap, Colormap::Diverging);
    }
  }
}

// The log scale as a figure draws it: the largest weight in viridis(1), every weight at or
// below the floor in viridis(0).
TEST(ColorScale, FigureColoursOnTheLogScale) {
  const LessonTrace r;
  figure::Options o;
  o.stage = Stage::Weights;
  o.log_scale = true;
  const figure::Figure f = figure::build_figure(r.trace, r.s.tokens, o);
  ASSERT_FALSE(f.heatmaps.empty());
  int top = 0, bottom = 0;
  for (const figure::HeatmapInfo& hm : f.heatmaps) {
    ASSERT_TRUE(hm.scale.log);
    for (std::size_t i = 0; i < hm.values.size(); ++i) {
      const float v = hm.values[i];
      if (!std::isfinite(v) || (v < hm.scale.vmax && v > hm.scale.vmin)) continue;
      (v >= hm.scale.vmax ? top : bottom) += 1;
      const auto want = figure::colormap_lut(Colormap::Viridis, v >= hm.scale.vmax ? 255 : 0);
      const figure::Color got = figure::cell_color(hm.scale, v);  // the colour every drawing gives the cell
      EXPECT_EQ(got.r, want[0]) << "head " << hm.head << " cell " << i << " = " << v;
      EXPECT_EQ(got.g, want[1]) << "head " << hm.head << " cell " << i << " = " << v;
      EXPECT_EQ(got.b, want[2]) << "head " << hm.head << " cell " << i << " = " << v;
    }
  }
  EXPECT_GE(top, 1);
  EXPECT_GE(bottom, 1);
}

}  // namespace
}  // namespace mhaviz
