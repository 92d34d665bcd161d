// One picture for screen and slide, in-process: every view of the figure library built the
// way the screen builds it (dark, no caption) and the way a capture does (light, a caption,
// transparent) at the same canvas and typography has the same display list but for its
// colours and the caption appended; and a figure never spills out of its canvas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "figure/interv_figures.hpp"
#include "figure/kv_figure.hpp"
#include "figure/kv_memory_figure.hpp"
#include "figure/shapes_figure.hpp"
#include "figure/text.hpp"
#include "figure/train_figure.hpp"
#include "figure/variant_figure.hpp"
#include "figure/walk_figure.hpp"
#include "mhaviz/kv_cache.hpp"
#include "mhaviz/kv_memory.hpp"
#include "mhaviz/layout.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/variant_compare.hpp"
#include "text_clear.hpp"

namespace mhaviz {
namespace {

using figure_checks::expect_text_clear;

namespace lay = mhaviz::layout;

struct FigureRun {
  Session s;
  Model model;
  Trace trace;
};

FigureRun run(const std::string& name) {
  FigureRun r{lesson(name), {}, {}};
  r.model = build_model(r.s.model, r.s.d_in());
  r.trace = forward(r.model, r.s.input_tensor());
  return r;
}

// The journey lesson as the bonus variants' walkthrough shows it: grouped-query attention (6
// query heads on 2 K/V heads) with QK-norm, RoPE and a sliding window of 3, or multi-head latent
// attention (a latent of 5) with QK-norm.
FigureRun run_variant(Variant v) {
  FigureRun r{lesson("journey-dropout-half"), {}, {}};
  ModelConfig& m = r.s.model;
  m.variant = v;
  m.d_out = 12, m.num_heads = 6, m.dropout = 0.0, m.qk_norm = true;
  if (v == Variant::Gqa) m.num_kv_groups = 2, m.rope_base = 100.0, m.sliding_window = 3;
  if (v == Variant::Mla) m.latent_dim = 5;
  validate_session(r.s);
  r.model = build_model(m, r.s.d_in());
  r.trace = forward(r.model, r.s.input_tensor());
  return r;
}

figure::Options screen(figure::Canvas c, float font = 18.0f) {
  figure::Options o;
  o.dark = true;
  o.caption = false;
  o.canvas = c;
  o.type = figure::Typography::for_font(font);
  return o;
}

// The canvases of a 1024 × 768 window, a 1280 × 800 one, a projector's, and the 1280 × 800
// window with its font at 24 px (a teacher enlarging it for the back row), each with its font;
// last, the 1024 × 768 window with a 24-pixel font, the KV cache's canvas and the lesson's.
struct Screen {
  figure::Canvas c;
  float font;
};
constexpr Screen kScreens[] = {{{595, 560}, 18}, {{835, 590}, 18}, {{1475, 870}, 18}, {{700, 421}, 24},
                               {{835, 590}, 24}, {{600, 393}, 24}, {{600, 314}, 24}};
// What the walkthrough's controls leave of a 1024 × 768 window, and of a 1280 × 800 one and a
// 1024 × 768 one with a 24-pixel font.
constexpr Screen kWalkScreens[] = {{{579, 267}, 18}, {{700, 288}, 24}, {{600, 277}, 24}};

// Titles on one line of a walkthrough picture (panes Q, K and V side by side, grids beside each
// other) keep a text size apart: they hold a double space between name and shape, and one
// space between two titles read as one ("2, 6, 2) K_i").
void expect_titles_apart(const figure::Figure& fig, const std::string& what) {
  std::vector<figure_checks::TextBox> titles;
  for (const figure_checks::TextBox& b : figure_checks::text_boxes(fig))
    if (b.p->cls == "pane-title" || b.p->cls == "operand-title") titles.push_back(b);
  for (const auto& a : titles)
    for (const auto& b : titles) {
      if (&a == &b || a.p->y0 != b.p->y0 || a.x0 >= b.x0) continue;
      EXPECT_GE(b.x0 - a.x1, 0.9f * a.p->size) << what << ": \"" << a.p->text << "\" then \"" << b.p->text << "\"";
    }
}

figure::Options capture_of(figure::Options o) {
  o.dark = false;
  o.transparent = true;
  o.caption = true;
  return o;
}

// Everything but colours, and without the caption (a capture's addition).
std::vector<std::string> layout_of(const figure::Figure& f) {
  std::vector<std::string> out;
  for (const figure::Prim& p : f.prims) {
    if (p.cls == "caption") continue;
    figure::Prim q = p;
    q.color = q.color2 = {};
    out.push_back(std::to_string(static_cast<int>(q.kind)) + "|" + std::to_string(q.x0) + "," + std::to_string(q.y0) +
                  "," + std::to_string(q.x1) + "," + std::to_string(q.y1) + "|" + q.text + "|" + q.cls + "|" +
                  std::to_string(q.size) + "|" + std::to_string(q.align) + std::to_string(q.vertical) +
                  std::to_string(q.mono) + "|" + std::to_string(q.heatmap));
  }
  return out;
}

void expect_same_picture(const figure::Figure& a, const figure::Figure& b, const std::string& what) {
  EXPECT_EQ(layout_of(a), layout_of(b)) << what;
  ASSERT_EQ(a.heatmaps.size(), b.heatmaps.size()) << what;
  for (std::size_t k = 0; k < a.heatmaps.size(); ++k) {
    EXPECT_EQ(a.heatmaps[k].x0, b.heatmaps[k].x0) << what;
    EXPECT_EQ(a.heatmaps[k].y0, b.heatmaps[k].y0) << what;
    EXPECT_EQ(a.heatmaps[k].cell, b.heatmaps[k].cell) << what;
    EXPECT_EQ(a.heatmaps[k].values, b.heatmaps[k].values) << what;
  }
  EXPECT_EQ(a.hits, b.hits) << what;
  EXPECT_GE(b.width, a.width) << what << ": the caption may be wider";
  EXPECT_GE(b.height, a.height) << what << ": the caption goes below";
}

const std::vector<figure::Canvas> kCanvases = {{835, 385}, {1500, 900}, {640, 360}};

TEST(Figures, LessonViewsAreOnePictureForScreenAndCapture) {
  for (const char* name : {"seed003-wrapper", "journey-dropout-half", "seed002-fused-qkv-encoder"}) {
    const FigureRun r = run(name);
    for (const figure::Canvas& c : kCanvases)
      for (int st = 0; st < kStageCount; ++st)
        for (figure::View v : {figure::View::Grid, figure::View::Head}) {
          figure::Options o = screen(c);
          o.view = v;
          o.stage = static_cast<Stage>(st);
          o.frame_selected = true;
          const std::string what = std::string(name) + " stage " + std::string(stage_name(o.stage)) +
                                   (v == figure::View::Head ? " head" : " grid") + " on " + std::to_string(c.width);
          const figure::Figure a = figure::build_figure(r.trace, r.s.tokens, o);
          expect_same_picture(a, figure::build_figure(r.trace, r.s.tokens, capture_of(o)), what);
          EXPECT_LE(a.width, c.width + 1) << what;
          EXPECT_LE(a.height, c.height + 1) << what;
        }
  }
}

// Every step of every variant, with and without the mistake, still and halfway to the next.
TEST(Figures, WalkthroughStepsAreOnePictureAndFitTheirCanvas) {
  for (const char* name :
       {"seed003-wrapper", "seed003-weight-split-6d", "seed002-fused-qkv-encoder", "journey-dropout-half"}) {
    const FigureRun r = run(name);
    for (bool mistaken : {false, true}) {
      const figure::Mistake m = figure::make_mistake(r.model, r.trace);
      figure::WalkInput in;
      in.trace = &r.trace;
      in.model = &r.model;
      in.tokens = &r.s.tokens;
      in.mistake = &m;
      in.mistaken = mistaken && r.trace.config.variant != Variant::Wrapper;
      const int n = static_cast<int>(figure::walk_steps(in).size());
      for (const figure::Canvas& c : kCanvases) {
        const figure::Options o = screen(c);
        figure::WalkPlan plan;
        ASSERT_TRUE(figure::update_walk_plan(plan, in, o));
        EXPECT_FALSE(figure::update_walk_plan(plan, in, o)) << "the plan is kept while its inputs stay";
        for (float pos = 0.0f; pos <= static_cast<float>(n - 1); pos += 0.5f) {
          in.pos = pos;
          const std::string what = std::string(name) + (in.mistaken ? " mistaken" : "") + " at " + std::to_string(pos) +
                                   " on " + std::to_string(static_cast<int>(c.width));
          const figure::Figure a = figure::walk_picture(in, plan, o).fig;
          expect_same_picture(a, figure::walk_picture(in, plan, capture_of(o)).fig, what);
          // A canvas of 640 at an 18-pixel font is less than the titles and labels of the wider
          // steps: those are cut at the canvas's edge on screen. From 800 on, everything fits.
          if (c.width >= 800.0f) {
            EXPECT_LE(a.width, c.width + 1) << what;
          }
        }
      }
    }
  }
}

// Each step is its own picture: `render --view step K` gives a distinct figure for every K.
TEST(Figures, EveryStepIsADistinctPicture) {
  const FigureRun r = run("seed003-weight-split-6d");
  for (bool mistaken : {false, true}) {
    std::set<std::vector<std::string>> seen;
    figure::Options o = screen({1280, 720});
    o.view = figure::View::Step;
    o.model = &r.model;
    o.mistaken = mistaken;
    const int n = figure::step_count(r.trace, mistaken);
    for (int k = 0; k < n; ++k) {
      o.step = k;
      EXPECT_TRUE(seen.insert(layout_of(figure::build_figure(r.trace, r.s.tokens, o))).second) << "step " << k;
    }
  }
}

TEST(Figures, ShapesStripAndComparisonAreOnePicture) {
  const FigureRun r = run("seed003-wrapper");
  const figure::ShapesStrip strip = figure::lesson_shapes(r.trace, r.model.parameter_count(), 0.02, false);
  for (const figure::Canvas& c : kCanvases) {
    const figure::Options o = screen(c);
    const figure::Figure a = figure::shapes_figure(strip, o);
    expect_same_picture(a, figure::shapes_figure(strip, capture_of(o)), "shapes strip");
    EXPECT_NE(a.hit("shape_output"), nullptr);
    EXPECT_NE(a.hit("parameters"), nullptr);
    const figure::Figure cmp = figure::compare_figure(r.trace, r.trace, "a", "b", r.s.tokens, o);
    expect_same_picture(cmp, figure::compare_figure(r.trace, r.trace, "a", "b", r.s.tokens, capture_of(o)),
                        "comparison");
    EXPECT_EQ(cmp.heatmaps.size(), 2u);
  }
}

// A lesson of 23 tokens and 4 heads on small canvases: the tiles share their labels where
// labels on every tile would take the cells' room (3-4 px cells on a 1024 x 768 window), and the
// labels drawn are as far apart as they are tall, turned ones too (12 px apart at 14 px before).
TEST(Figures, ManyTokensOnASmallCanvasKeepCellsAndLabelsReadable) {
  Session s = lesson("seed003-weight-split-6d");
  const std::vector<std::string> words = {"The", "quick", "brown", "fox", "jumps",  "over", "the",  "lazy",
                                          "dog", "while", "the",   "cat", "sleeps", "on",   "a",    "warm",
                                          "mat", "near",  "the",   "old", "red",    "barn", "today"};
  s.tokens = words;
  s.embeddings.clear();
  for (std::size_t i = 0; i < words.size(); ++i)
    s.embeddings.push_back({0.1f * static_cast<float>(i % 7), 0.5f, 0.03f * static_cast<float>(i)});
  s.batch = 1;
  s.model.context_length = static_cast<int>(words.size());
  s.model.d_out = 12, s.model.num_heads = 4;
  validate_session(s);
  const Model m = build_model(s.model, s.d_in());
  const Trace t = forward(m, s.input_tensor());
  struct Case {
    figure::Canvas c;
    float font, min_cell;
  };
  for (const Case& k : {Case{{579, 267}, 18.0f, 3.0f}, Case{{835, 545}, 24.0f, 6.0f}, Case{{1280, 720}, 17.0f, 9.0f}}) {
    const figure::Figure f = figure::build_figure(t, s.tokens, screen(k.c, k.font));
    const std::string what =
        std::to_string(static_cast<int>(k.c.width)) + " x " + std::to_string(static_cast<int>(k.c.height));
    ASSERT_EQ(f.heatmaps.size(), 4u) << what;
    EXPECT_GE(f.heatmaps[0].cell, k.min_cell) << what;
    // Labels of one heatmap side, in reading order: each a label's height from the next.
    std::map<std::pair<bool, int>, std::vector<figure::Prim>> sides;  // (turned, line) -> labels
    for (const figure::Prim& p : f.prims)
      if (p.kind == figure::Prim::Kind::Text && p.cls == "label")
        sides[{p.vertical, static_cast<int>(std::lround(p.vertical ? p.y0 : p.x0))}].push_back(p);
    int checked = 0;
    for (auto& [side, labels] : sides) {
      const bool turned = side.first;  // a copy: clang 14 (the asan preset) captures no structured binding
      std::sort(labels.begin(), labels.end(),
                [turned](const figure::Prim& a, const figure::Prim& b) { return turned ? a.x0 < b.x0 : a.y0 < b.y0; });
      for (std::size_t i = 1; i < labels.size(); ++i) {
        const figure::Prim &a = labels[i - 1], &b = labels[i];
        const float apart = turned ? b.x0 - a.x0 : b.y0 - a.y0;
        if (apart > 60.0f) continue;  // the next heatmap's first
        EXPECT_GE(apart + 0.01f, figure::text_ascent(b.size) + 0.25f * b.size)
            << what << ": \"" << a.text << "\" and \"" << b.text << "\"" << (turned ? " (turned)" : "");
        ++checked;
      }
    }
    EXPECT_GT(checked, 8) << what;
  }
}

// A sliding window's hidden cells are told from the causal mask's: their own mask kind, hatch
// colours, legend, SVG pattern and class, on screen and in a capture alike.
TEST(Figures, WindowCellsHaveTheirOwnHatchAndLegend) {
  Session s = lesson("seed003-weight-split-6d");
  s.model.causal = true;
  s.model.sliding_window = 2;
  validate_session(s);
  const Model m = build_model(s.model, s.d_in());
  const Trace t = forward(m, s.input_tensor());
  figure::Options o = screen({1280, 720});
  const figure::Figure f = figure::build_figure(t, s.tokens, o);
  ASSERT_FALSE(f.heatmaps.empty());
  const figure::HeatmapInfo& h = f.heatmaps[0];
  const std::size_t T = static_cast<std::size_t>(h.cols);
  EXPECT_TRUE(h.hidden(2 * T + 0) && h.windowed(2 * T + 0));   // i - j = 2 >= W
  EXPECT_TRUE(h.hidden(0 * T + 1) && !h.windowed(0 * T + 1));  // key after the query
  EXPECT_FALSE(h.hidden(1 * T + 0));                           // i - j = 1 < W
  EXPECT_NE(f.window_a, f.masked_a);
  const auto legend =
      std::find_if(f.prims.begin(), f.prims.end(), [](const figure::Prim& p) { return p.cls == "legend-window"; });
  ASSERT_NE(legend, f.prims.end());
  EXPECT_EQ(legend->color, f.window_a);
  EXPECT_TRUE(std::any_of(f.prims.begin(), f.prims.end(), [](const figure::Prim& p) {
    return p.kind == figure::Prim::Kind::Text && p.text.find("outside the window") != std::string::npos;
  }));
  const std::string svg = figure::to_svg(f);
  EXPECT_NE(svg.find("class=\"cell masked window\""), std::string::npos);
  EXPECT_NE(svg.find("url(#hatch-window)"), std::string::npos);
  // The raster draws a window cell in the window's colours only.
  const std::vector<std::uint8_t> px = figure::rasterize(f, 1);
  const int x = static_cast<int>(h.x0 + 0.5f * h.cell), y = static_cast<int>(h.y0 + 2.5f * h.cell);
  const std::uint8_t* p =
      &px[(static_cast<std::size_t>(y) * static_cast<std::size_t>(f.width) + static_cast<std::size_t>(x)) * 4];
  const figure::Color got{p[0], p[1], p[2], 255};
  EXPECT_TRUE(got == f.window_a || got == f.window_b) << int(p[0]) << "," << int(p[1]) << "," << int(p[2]);
  expect_same_picture(f, figure::build_figure(t, s.tokens, capture_of(o)), "window lesson");
}

// The strip follows the variant's pipeline: gqa's keys and values at their K/V heads, then
// expanded; QK-norm and RoPE as steps of their own; mla's latent.
TEST(Figures, ShapesStripNamesEachVariantsTensorsAtTheirShapes) {
  Session s = lesson("seed003-weight-split-6d");
  s.model.variant = Variant::Gqa;
  s.model.d_out = 8;
  s.model.num_heads = 4;
  s.model.num_kv_groups = 2;
  s.model.qk_norm = true;
  s.model.rope_base = 10000.0;
  validate_session(s);
  const Model m = build_model(s.model, s.d_in());
  const Trace t = forward(m, s.input_tensor());
  const figure::ShapesStrip strip = figure::lesson_shapes(t, m.parameter_count(), 0.02, false);
  std::map<std::string, std::string> shapes;
  std::vector<std::string> order;
  for (const auto& item : strip.items) {
    shapes[item.name] = item.shape;
    order.push_back(item.name);
  }
  const std::string T = std::to_string(s.num_tokens()), b = std::to_string(s.batch);
  EXPECT_EQ(shapes["K,V"], "(" + b + ", " + T + ", 4)");
  EXPECT_EQ(shapes["k,v"], "(" + b + ", 2, " + T + ", 2)");
  EXPECT_EQ(shapes["q"], "(" + b + ", 4, " + T + ", 2)");
  EXPECT_EQ(shapes["k,v expanded"], "(" + b + ", 4, " + T + ", 2)");
  EXPECT_EQ(shapes["q,k rotated"], "(" + b + ", 4, " + T + ", 2), (" + b + ", 2, " + T + ", 2)");
  EXPECT_EQ(order, (std::vector<std::string>{"x", "Q", "K,V", "q", "k,v", "q,k normed", "q,k rotated", "k,v expanded",
                                             "scores", "weights", "context", "merged", "output"}));
  EXPECT_EQ(strip.first, "Parameters: " + figure::thousands(m.parameter_count()));
  s.model.variant = Variant::Mla;
  s.model.num_kv_groups = 0;
  s.model.rope_base = 0.0;
  s.model.latent_dim = 3;
  validate_session(s);
  const Model mla = build_model(s.model, s.d_in());
  const figure::ShapesStrip latent = figure::lesson_shapes(forward(mla, s.input_tensor()), 0, 0.02, false);
  EXPECT_EQ(latent.items[2].name, "latent");
  EXPECT_EQ(latent.items[2].shape, "(" + b + ", " + T + ", 3)");
}

// [SECTION] The Train view
// A run's curves as the Train view holds them: 600 steps of a loss that falls on the copy at
// step 400, a probe every 25 steps, and the probe's heads (2 layers x 4 heads on 32 tokens).
struct TrainRun {
  figure::TrainCurves c;
  std::vector<float> weights;  // (8, 32, 32): each row uniform over its keys
  figure::ModelView probe;
};

TrainRun train_run() {
  TrainRun r;
  r.c.n_layer = 2, r.c.n_head = 4, r.c.vocab = 64, r.c.total_steps = 1000;
  r.c.title = "Training a 2-layer attention-only GPT on the induction task";
  r.c.caption = "induction task, seed 123";
  for (int s = 1; s <= 600; ++s) r.c.add_step(s, 4.2f - (s > 400 ? 1.5f : 0.0f), 4.2f, s > 400 ? 0.3f : 4.2f);
  for (int s = 0; s <= 600; s += 25) {
    r.c.eval_steps.push_back(s);
    std::vector<float> sc(8 * kHeadPatternCount, 0.1f);
    sc[(4 + 1) * kHeadPatternCount + 3] = s > 400 ? 0.9f : 0.05f;  // head 1.1's induction score
    sc[0] = std::nanf("");                                         // a head with no score
    r.c.eval_scores.push_back(sc);
  }
  const int T = 32;
  r.weights.assign(8 * T * T, 0.0f);
  for (int k = 0; k < 8; ++k)
    for (int i = 0; i < T; ++i)
      for (int j = 0; j <= i; ++j)
        r.weights[static_cast<std::size_t>((k * T + i) * T + j)] = 1.0f / static_cast<float>(i + 1);
  r.probe.n_layer = 2, r.probe.n_head = 4, r.probe.tokens = T;
  for (int k = 0; k < 8; ++k) r.probe.weights.push_back(r.weights.data() + k * T * T);
  for (int i = 0; i < T; ++i) r.probe.token_names.push_back(std::to_string(i));
  r.probe.pattern = "induction";
  r.probe.scores.assign(8, 0.5f);
  return r;
}

TEST(Figures, TrainViewIsOnePictureAndFitsItsCanvas) {
  TrainRun r = train_run();
  for (const bool selected : {false, true}) {
    r.probe.selected_layer = selected ? 1 : -1, r.probe.selected_head = selected ? 1 : -1;
    for (const figure::Canvas& c : {figure::Canvas{1475, 870}, figure::Canvas{1000, 620}, figure::Canvas{835, 590}}) {
      const std::string what = "train view on " + std::to_string(c.width) + (selected ? ", head 1.1 large" : "");
      const figure::Options o = screen(c);
      const figure::Figure a = figure::build_train_figure(r.c, &r.probe, o);
      expect_same_picture(a, figure::build_train_figure(r.c, &r.probe, capture_of(o)), what);
      EXPECT_LE(a.width, c.width + 1) << what;
      EXPECT_LE(a.height, c.height + 1) << what;
      EXPECT_EQ(a.heatmaps.size(), selected ? 9u : 8u) << what;  // the thumbnails, and the large head
      ASSERT_NE(a.hit("thumb_1_1"), nullptr) << what;
      ASSERT_NE(a.hit("loss_plot"), nullptr) << what;
      // The plots stay clear of the heads' grid (beside it on a wide canvas, above it on a
      // narrow one), every curve inside its plot.
      const figure::Hit& loss = *a.hit("loss_plot");
      const figure::Hit& thumb = *a.hit("thumb_0_0");
      EXPECT_TRUE(c.width >= 1200 ? loss.x1 < thumb.x0 : loss.y1 < thumb.y0) << what;
      int loss_lines = 0;
      for (const figure::Prim& p : a.prims) {
        if (p.cls != "loss" && p.cls != "loss-first" && p.cls != "loss-repeat") continue;
        ++loss_lines;
        EXPECT_TRUE(p.x0 >= loss.x0 && p.x1 <= loss.x1 && p.y0 >= loss.y0 && p.y1 <= loss.y1) << what;
      }
      EXPECT_GT(loss_lines, 300) << what << ": one segment a pixel column at most";
      for (const char* d : {"previous-token", "induction", "duplicate-token", "first-token"})
        EXPECT_NE(a.hit(std::string("detector_") + d), nullptr) << what << " " << d;
    }
  }
}

// On every canvas the app gives it, down to a 1024 × 768 window's (and a projector's of that
// size): no text over another, none past the canvas's right edge.
TEST(Figures, TrainViewTextNeitherOverlapsNorLeavesTheCanvas) {
  TrainRun r = train_run();
  r.c.title += " \xC2\xB7 step 600 of 1000";
  // 700 × 421 and 700 × 545: a 1280 × 800 window with a 24-pixel font (the strip at 22% and 12%).
  // 600 × 522: a 1024 × 768 window with a 24-pixel font.
  for (const figure::Canvas& c :
       {figure::Canvas{1475, 870}, figure::Canvas{1000, 620}, figure::Canvas{835, 590}, figure::Canvas{595, 560},
        figure::Canvas{700, 421}, figure::Canvas{700, 545}, figure::Canvas{600, 522}})
    for (const bool probe : {true, false}) {
      const std::string what =
          "train view on " + std::to_string(c.width) + " x " + std::to_string(c.height) + (probe ? "" : ", no probe");
      const figure::Figure f = figure::build_train_figure(r.c, probe ? &r.probe : nullptr,
                                                          screen(c, c.width == 700 || c.width == 600 ? 24.0f : 18.0f));
      expect_text_clear(f, c.width, what);
      // The plots' titles whole: a 1024 × 768 window's detectors read "previous-to…", "duplicate-to…".
      for (const figure::Prim& p : f.prims) {
        if (p.cls == "plot-title") {
          EXPECT_EQ(p.text.find("\xE2\x80\xA6"), std::string::npos) << what << ": " << p.text;
        }
      }
    }
}

// A 1280 × 800 window with a 24-pixel font leaves the Train view about 700 × 545: the probe's
// heads were 10-pixel thumbnails under plots that took the height, its colour bar ran past the
// canvas's bottom. The heads keep 30 px at least, the bar and its ticks stay inside.
// Lines break between words only, whatever the width measure (the GUI's strip measures with
// ImGui's font): ImGui's own wrapping broke "weight decay 0.1" after "0.".
TEST(Figures, WordLinesBreakBetweenWordsOnly) {
  const auto chars = [](const std::string& t) { return static_cast<float>(t.size()); };
  EXPECT_EQ(figure::word_lines("AdamW lr 0.01, weight decay 0.1 \xC2\xB7 seed 123", 16.0f, chars),
            (std::vector<std::string>{"AdamW lr 0.01,", "weight decay 0.1", "\xC2\xB7 seed 123"}));
  // A word wider than the line is a line of its own; no empty lines.
  EXPECT_EQ(figure::word_lines("a /a/very/long/path b", 6.0f, chars),
            (std::vector<std::string>{"a", "/a/very/long/path", "b"}));
  EXPECT_TRUE(figure::word_lines("", 6.0f, chars).empty());
}

TEST(Figures, PathLinesBreakAfterASlashOnly) {
  const auto chars = [](const std::string& t) { return static_cast<float>(t.size()); };
  // ImGui broke this after ".", and its last folder between two digits.
  EXPECT_EQ(figure::path_lines("Checkpoint (step 600): /tmp/x/.local/state/runs/induction-20261129-034326/model.st",
                               30.0f, chars),
            (std::vector<std::string>{"Checkpoint (step 600): /tmp/x/", ".local/state/runs/",
                                      "induction-20261129-034326/", "model.st"}));
  // A name wider than the line is a line of its own; no empty lines, no leading spaces.
  EXPECT_EQ(figure::path_lines("a /averyveryverylongname/b", 6.0f, chars),
            (std::vector<std::string>{"a /", "averyveryverylongname/", "b"}));
  EXPECT_EQ(figure::path_lines("one two", 4.0f, chars), (std::vector<std::string>{"one", "two"}));
  EXPECT_TRUE(figure::path_lines("", 6.0f, chars).empty());
}

// A 1024 × 768 window leaves it 600 × 522: the heads were 12-pixel thumbnails there.
TEST(Figures, TrainViewWithALargeFontKeepsTheHeadsReadable) {
  TrainRun r = train_run();
  r.c.title += " \xC2\xB7 step 300 of 1000";  // as the app names it: two lines at 24 px
  for (const figure::Canvas& c : {figure::Canvas{700, 545}, figure::Canvas{600, 522}}) {
    SCOPED_TRACE(std::to_string(c.width) + " x " + std::to_string(c.height));
    const figure::Figure f = figure::build_train_figure(r.c, &r.probe, screen(c, 24.0f));
    int heads = 0;
    std::set<float> title_sizes;  // the detectors' titles: whole, and all of one size
    for (const figure::Prim& p : f.prims) {
      if (p.cls == "plot-title" && p.text != "Loss by training step") {
        EXPECT_EQ(p.text.find("\xE2\x80\xA6"), std::string::npos) << "cut: " << p.text;
        title_sizes.insert(p.size);
      }
      if (p.heatmap >= 0) {
        ++heads;
        EXPECT_GE(p.x1 - p.x0, 30.0f) << "a head's thumbnail";
        EXPECT_LE(p.y1, f.height) << "a head's thumbnail";
      }
      if (p.cls == "colorbar" || p.cls == "tick") {
        EXPECT_LE(std::max(p.y0, p.y1), f.height) << p.cls << " " << p.text;
      }
    }
    EXPECT_EQ(heads, 8);
    EXPECT_EQ(title_sizes.size(), 1u);
    // 700 × 545 holds it; 600 × 522 is too short and narrow for the plots beside the loss and the
    // heads under them: one under the other, taller than the canvas (the app scrolls it).
    if (c.width == 700) {
      EXPECT_LE(f.height, c.height + 1);
    } else {
      EXPECT_GT(f.height, c.height);
    }
    EXPECT_LE(f.width, c.width + 1);
    // The legends under the plots keep to the plots' column: the loss's "predicting the segment's
    // first occurrence" ran past it, up to the probe's text beside it.
    const figure::Hit* loss = f.hit("loss_plot");
    ASSERT_NE(loss, nullptr);
    // The loss's axis keeps some height: under three rows of legend it had 33 px (now 58).
    EXPECT_GE(loss->y1 - loss->y0, 50.0f);
    for (const figure_checks::TextBox& b : figure_checks::text_boxes(f)) {
      if (b.p->cls == "legend" && b.x0 < loss->x1) {
        EXPECT_LE(b.x1, loss->x1 + 12.0f) << b.p->text;
      }
    }
  }
}

// The KV cache's step: its blocks' titles, the colour bars' titles, on the canvases of a 1024 ×
// 768 window up to a projector's, for multi-head, grouped-query and latent attention.
TEST(Figures, KvStepTextNeitherOverlapsNorLeavesTheCanvas) {
  // The last: grouped-query attention with a window of 2, whose last step evicts a row (the
  // legend's two notes of rows gone ran 350 px past a 600-px canvas at 24 px).
  for (const int k : {0, 1, 2, 3}) {
    const Variant v = k == 0 ? Variant::WeightSplit : k == 2 ? Variant::Mla : Variant::Gqa;
    Session s = lesson("seed003-weight-split-6d");
    s.model.variant = v;
    s.model.num_heads = v == Variant::Mla ? 2 : 4;
    s.model.d_out = 8;
    s.model.num_kv_groups = v == Variant::Gqa ? 2 : 0;
    s.model.latent_dim = v == Variant::Mla ? 3 : 0;
    s.model.sliding_window = k == 3 ? 2 : 0;
    validate_session(s);
    const Model m = build_model(s.model, s.d_in());
    const DecodeTrace d = decode_with_cache(m, s.input_tensor(), 1);
    for (const auto& [c, font] : kScreens)
      for (int step : {0, static_cast<int>(d.steps.size()) - 1}) {
        const std::string what =
            std::string(variant_name(v)) + " step " + std::to_string(step) + " on " + std::to_string(c.width);
        const figure::Options o = screen(c, font);
        const figure::Figure f = figure::build_kv_step_figure(d, s.tokens, step, o);
        expect_text_clear(f, c.width, what);
        // Rows a line of labels tall at least: a canvas too short for that (four K/V heads on
        // 600 × 393 with a 24-pixel font had 1-pixel cells) gets a taller figure, never a wider one.
        for (const figure::HeatmapInfo& h : f.heatmaps) EXPECT_GE(h.cell, std::ceil(o.type.label * 1.35f)) << what;
        EXPECT_LE(f.width, c.width + 1) << what;
      }
  }
}

// Many tokens: the columns make the cells narrower than a line of labels; the figure stays as
// wide as its canvas (it scrolls only up and down) and its side labels shrink to their rows.
TEST(Figures, KvStepWithManyTokensKeepsToTheCanvasWidth) {
  Session s = lesson("seed003-weight-split-6d");
  const Session base = s;
  s.tokens.clear(), s.embeddings.clear();
  for (int k = 0; k < 48; ++k) {
    s.tokens.push_back(base.tokens[static_cast<std::size_t>(k) % base.tokens.size()] + std::to_string(k));
    s.embeddings.push_back(base.embeddings[static_cast<std::size_t>(k) % base.embeddings.size()]);
    s.embeddings.back()[0] += 0.01f * static_cast<float>(k);
  }
  s.model.context_length = 48;
  s.model.num_heads = 4, s.model.d_out = 8;
  validate_session(s);
  const DecodeTrace d = decode_with_cache(build_model(s.model, s.d_in()), s.input_tensor(), 40);
  for (const auto& [c, font] : kScreens) {
    const std::string what = "48 tokens on " + std::to_string(c.width) + " x " + std::to_string(c.height);
    const figure::Figure f =
        figure::build_kv_step_figure(d, s.tokens, static_cast<int>(d.steps.size()) - 1, screen(c, font));
    expect_text_clear(f, c.width, what);
    EXPECT_LE(f.width, c.width + 1) << what;
  }
}

// An 800 × 600 window leaves the lesson's figure about 440 × 230: its subtitle and its note
// of an unchanged stage wrap ("columns: keys" was cut at the edge).
TEST(Figures, LessonHeaderWrapsOnAnEightHundredPixelWindow) {
  for (const char* name : {"seed003-wrapper", "seed002-fused-qkv-encoder", "seed003-weight-split-6d"}) {
    const FigureRun r = run(name);
    for (int st = 0; st < kStageCount; ++st)
      for (const figure::View v : {figure::View::Grid, figure::View::Head}) {
        figure::Options o = screen({440, 230});
        o.view = v, o.stage = static_cast<Stage>(st);
        expect_text_clear(figure::build_figure(r.trace, r.s.tokens, o), 440,
                          std::string(name) + " stage " + std::to_string(st));
      }
  }
}

// The sweep's and the lens's subtitle whole on two lines where one is too narrow (the lens's
// "cell: the most likely next token…" was cut at "cell: t…" on the app's 835-px canvas).
TEST(Figures, GridSubtitleTakesTwoLinesBeforeItIsCut) {
  figure::GridView g;
  g.title = "Logit lens: what each layer would predict next";
  g.subtitle =
      "the final norm and the LM head on the residual after each layer \xC2\xB7 \u201cWhen Mary and John went "
      "to the store, John gave a drink\u201d \xC2\xB7 cell: the most likely next token, coloured by its "
      "probability";
  g.rows = 13, g.cols = 10;
  for (int r = 0; r < g.rows; ++r) g.row_names.push_back("L" + std::to_string(r));
  for (int k = 0; k < g.cols; ++k) g.col_names.push_back("t" + std::to_string(k));
  g.values.assign(static_cast<std::size_t>(g.rows * g.cols), 0.5f);
  std::string joined;
  int lines = 0;
  for (const figure::Prim& p : figure::build_grid_figure(g, screen({835, 567})).prims)
    if (p.cls == "subtitle") joined += (lines++ ? " " : "") + p.text;
  EXPECT_EQ(lines, 2);
  EXPECT_EQ(joined, g.subtitle);
}

// The other figures the app draws, on the canvases of a 1024 × 768 window up to a projector's
// and with a 24-pixel font (kScreens): the lesson's grid and head at every stage, the
// walkthrough's steps, the comparison, the variants' equivalences and costs, the KV cache
// against context for every preset, the model view.
TEST(Figures, EveryViewsTextNeitherOverlapsNorLeavesTheCanvas) {
  TrainRun t = train_run();
  for (const auto& [c, font] : kScreens) {
    const std::string on = " on " + std::to_string(c.width) + " (font " + std::to_string(static_cast<int>(font)) + ")";
    for (const bool lens : {false, true}) {
      // The ablation sweep's 12 × 12 grid; the logit lens's 13 layers × 10 positions of tokens.
      figure::GridView g;
      g.title = lens ? "Logit lens: the top next token after each layer" : "Ablation sweep: change in log p(\" Mary\")";
      g.subtitle = "gpt2 \xC2\xB7 12 layers \xC2\xB7 12 heads \xC2\xB7 zero ablation of each head alone";
      g.rows = lens ? 13 : 12, g.cols = lens ? 10 : 12;
      for (int r = 0; r < g.rows; ++r)
        g.row_names.push_back(lens ? "after " + std::to_string(r) : "L" + std::to_string(r));
      for (int k = 0; k < g.cols; ++k)
        g.col_names.push_back(lens ? " token" + std::to_string(k) : "H" + std::to_string(k));
      for (int k = 0; k < g.rows * g.cols; ++k) {
        g.values.push_back(lens ? static_cast<float>(k % 10) / 10.0f : static_cast<float>(k % 21 - 10) / 10.0f);
        if (lens) g.cell_text.push_back(" the");
      }
      g.signed_values = !lens;
      g.value_under_text = lens;
      g.bar_title = lens ? "probability" : "change";
      if (lens) {
        g.side_title = "rank of \" Mary\"";
        for (int r = 0; r < g.rows; ++r) g.side_text.push_back("#" + std::to_string(r + 1) + "  0.01");
      }
      expect_text_clear(figure::build_grid_figure(g, screen(c, font)), c.width, (lens ? "lens" : "sweep") + on);
    }
    for (const KvModel& m : kv_presets()) {
      const figure::Figure fig = figure::build_kv_memory_figure(m, screen(c, font));
      expect_text_clear(fig, c.width, "KV memory of " + m.name + on);
      // The context axis's numbers a space apart at least (at 24 px "65536" ran up to "131072").
      std::vector<figure_checks::TextBox> ticks;
      for (const figure_checks::TextBox& b : figure_checks::text_boxes(fig))
        if (b.p->cls == "tick" && b.p->align == 1) ticks.push_back(b);
      std::sort(ticks.begin(), ticks.end(), [](const auto& x, const auto& y) { return x.x0 < y.x0; });
      for (std::size_t i = 1; i < ticks.size(); ++i)
        EXPECT_GE(ticks[i].x0 - ticks[i - 1].x1, 0.3f * ticks[i].p->size)
            << "KV memory of " << m.name << on << ": " << ticks[i - 1].p->text << ", " << ticks[i].p->text;
    }
    for (const int selected : {-1, 1}) {
      t.probe.selected_layer = selected, t.probe.selected_head = selected;
      expect_text_clear(figure::build_model_figure(t.probe, screen(c, font)), c.width, "model view" + on);
    }
    for (const char* name : {"seed003-wrapper", "seed003-weight-split-6d", "seed002-fused-qkv-encoder", "gqa", "mla"}) {
      const std::string lesson_name = name;
      const FigureRun r = lesson_name == "gqa"   ? run_variant(Variant::Gqa)
                          : lesson_name == "mla" ? run_variant(Variant::Mla)
                                                 : run(name);
      const std::string what = std::string(name) + on;
      expect_text_clear(
          figure::build_variant_figure(compare_attention_variants(r.model, r.s.input_tensor()), screen(c, font)),
          c.width, "variants of " + what);
      expect_text_clear(figure::compare_figure(r.trace, r.trace, "Wrapper: head's own module",
                                               "Weight split: q.view + transpose", r.s.tokens, screen(c, font)),
                        c.width, "comparison of " + what);
      for (int st = 0; st < kStageCount; ++st)
        for (const figure::View v : {figure::View::Grid, figure::View::Head}) {
          figure::Options o = screen(c, font);
          o.view = v, o.stage = static_cast<Stage>(st);
          expect_text_clear(figure::build_figure(r.trace, r.s.tokens, o), c.width,
                            "lesson " + what + " stage " + std::to_string(st));
        }
      // Every step on every canvas. At 835 px and 24 px, pane titles wider than their cells take
      // two lines (before, the step's cells shrank to 4 px and a title ran into the chain strip).
      // Under 800 px, the mask step's legend ran past the canvas's edge, row labels of cells a
      // little shorter than the font into each other, and on 579 × 267 pane titles with the note
      // of numbered key columns past the edge (a 1024 × 768 window's walkthrough).
      const figure::Mistake m = figure::make_mistake(r.model, r.trace);
      figure::WalkInput in;
      in.trace = &r.trace, in.model = &r.model, in.tokens = &r.s.tokens, in.mistake = &m;
      // Q alone (the app's default) and Q, K and V side by side (the renders' default).
      std::vector<Screen> walk_screens{{c, font}};  // and, once, the walkthrough's own canvases
      if (&c == &kScreens[0].c)
        walk_screens.insert(walk_screens.end(), std::begin(kWalkScreens), std::end(kWalkScreens));
      for (const Screen& w : walk_screens)
        for (const int pane : {0, 3}) {
          in.pane = pane;
          figure::WalkPlan plan;
          ASSERT_TRUE(figure::update_walk_plan(plan, in, screen(w.c, w.font)));
          const int n = static_cast<int>(figure::walk_steps(in).size());
          for (int k = 0; k < n; ++k) {
            in.pos = static_cast<float>(k);
            const std::string where = "walkthrough step " + std::to_string(k) + " of " + name + " on " +
                                      std::to_string(static_cast<int>(w.c.width)) + " x " +
                                      std::to_string(static_cast<int>(w.c.height)) + (pane ? ", all panes" : "");
            const figure::Figure fig = figure::walk_picture(in, plan, screen(w.c, w.font)).fig;
            expect_text_clear(fig, w.c.width, where);
            expect_titles_apart(fig, where);
          }
        }
    }
  }
}

// The wrapper's QKV step labels each module's block "heads[0]: own W"; with a 24-pixel font the
// labels ran into each other. The longest form that fits a block is drawn, never two over one
// another.
TEST(Figures, WalkthroughModuleLabelsKeepToTheirBlocks) {
  const FigureRun r = run("seed003-wrapper");
  const figure::Mistake m = figure::make_mistake(r.model, r.trace);
  for (const float font : {18.0f, 24.0f, 30.0f}) {
    figure::WalkInput in;
    in.trace = &r.trace, in.model = &r.model, in.tokens = &r.s.tokens, in.mistake = &m;
    in.pos = 1.0f;  // each head projects
    figure::WalkPlan plan;
    const figure::Options o = screen({835, 590}, font);
    ASSERT_TRUE(figure::update_walk_plan(plan, in, o));
    const figure::Figure f = figure::walk_picture(in, plan, o).fig;
    std::vector<const figure::Prim*> labels;
    for (const figure::Prim& p : f.prims)
      if (p.cls == "block-label") labels.push_back(&p);
    ASSERT_GE(labels.size(), 2u) << "font " << font;
    for (const figure::Prim* a : labels) {
      EXPECT_EQ(a->text.rfind("h", 0), 0u) << a->text;
      for (const figure::Prim* b : labels) {
        if (a == b || b->x0 <= a->x0 || std::fabs(a->y0 - b->y0) > 1.0f) continue;
        EXPECT_LE(a->x0 + figure::text_width(a->text, a->size), b->x0)
            << "font " << font << ": \"" << a->text << "\" runs into \"" << b->text << "\"";
      }
    }
  }
}

// With a 24-pixel font the walkthrough's header (the title, the PyTorch line, what the step
// computes, the legend) stays inside the canvas, on more lines where it must, and its row
// labels thin out rather than run into each other where the cells are smaller than a label.
TEST(Figures, WalkthroughHeaderAndRowLabelsWithALargeFont) {
  for (const char* name : {"seed003-wrapper", "seed003-weight-split-6d", "seed002-fused-qkv-encoder"}) {
    const FigureRun r = run(name);
    const figure::Mistake m = figure::make_mistake(r.model, r.trace);
    figure::WalkInput in;
    in.trace = &r.trace, in.model = &r.model, in.tokens = &r.s.tokens, in.mistake = &m;
    figure::WalkPlan plan;
    const figure::Options o = screen({835, 590}, 24.0f);
    ASSERT_TRUE(figure::update_walk_plan(plan, in, o));
    const int n = static_cast<int>(figure::walk_steps(in).size());
    for (int k = 0; k < n; ++k) {
      in.pos = static_cast<float>(k);
      const figure::Figure f = figure::walk_picture(in, plan, o).fig;
      const std::string what = std::string(name) + " step " + std::to_string(k);
      figure::Figure header, rows;
      for (const figure::Prim& p : f.prims) {
        if (p.cls == "title" || p.cls == "code" || p.cls == "shape" || p.cls == "legend-text")
          header.prims.push_back(p);
        if (p.cls == "row-label") rows.prims.push_back(p);
      }
      ASSERT_FALSE(header.prims.empty()) << what;
      expect_text_clear(header, o.canvas.width, "header of " + what);
      expect_text_clear(rows, 1.0e6f, "row labels of " + what);
    }
  }
}

// With a 24-pixel font on 1280 × 800 the walkthrough's canvas is about 700 × 288: the mask
// step's full header (title, PyTorch line, shape, heads, two lines of legend) took 150 px and
// left its grids 9-px cells. Where the full header would take more than 45% of the height, it
// leaves out the shape (the pane title gives it) and the heads' generic line; on a projector's
// canvas it keeps them.
TEST(Figures, WalkthroughHeaderGivesWayOnAShortCanvas) {
  const FigureRun r = run("seed003-wrapper");
  const figure::Mistake m = figure::make_mistake(r.model, r.trace);
  figure::WalkInput in;
  in.trace = &r.trace, in.model = &r.model, in.tokens = &r.s.tokens, in.mistake = &m;
  int step = 0;
  ASSERT_TRUE(figure::parse_step_arg(r.trace, false, "mask", step));
  in.pos = static_cast<float>(step);
  for (const auto& [c, font, compact] :
       {std::tuple{figure::Canvas{700, 288}, 24.0f, true}, std::tuple{figure::Canvas{1475, 870}, 18.0f, false}}) {
    figure::WalkPlan plan;
    const figure::Options o = screen(c, font);
    ASSERT_TRUE(figure::update_walk_plan(plan, in, o));
    const figure::WalkPicture pic = figure::walk_picture(in, plan, o);
    const std::string on = "on " + std::to_string(static_cast<int>(c.width));
    bool shape = false;
    for (const figure::Prim& p : pic.fig.prims) shape = shape || p.cls == "shape";
    EXPECT_EQ(shape, !compact) << on;
    if (compact) {
      EXPECT_GE(pic.cs, 15.0f) << on;
    }
  }
}

// The comparison's two titles are whole, with their text clear, from the short strip a 1024 × 768
// window leaves it (about 570 × 190, where "Weight split: q.view + transp…" was cut) to a
// projector's canvas: they take a second line, then wrap, rather than lose words.
TEST(Figures, ComparisonTitlesAreWholeOnEveryCanvas) {
  const FigureRun r = run("seed003-wrapper");
  for (const figure::Canvas& c : {figure::Canvas{420, 190}, figure::Canvas{570, 190}, figure::Canvas{595, 560},
                                  figure::Canvas{835, 300}, figure::Canvas{1475, 870}}) {
    const figure::Figure f = figure::compare_figure(r.trace, r.trace, "Wrapper: head's own module",
                                                    "Weight split: q.view + transpose", r.s.tokens, screen(c));
    const std::string on =
        " on " + std::to_string(static_cast<int>(c.width)) + " x " + std::to_string(static_cast<int>(c.height));
    expect_text_clear(f, c.width, "comparison" + on);
    std::string words;
    for (const figure::Prim& p : f.prims)
      if (p.cls == "head-title") {
        EXPECT_EQ(p.text.find("\xE2\x80\xA6"), std::string::npos) << "\"" << p.text << "\" cut" << on;
        words += p.text + " ";
      }
    for (const char* w : {"Wrapper:", "module", "split:", "q.view", "transpose", "head 0"})
      EXPECT_NE(words.find(w), std::string::npos) << w << " missing from the titles" << on;
  }
}

// The copy's curve falls where the losses do: its last point is low in the plot, the first
// occurrence's stays high.
TEST(Figures, TrainLossCurvesDrawTheirValues) {
  const TrainRun r = train_run();
  const figure::Figure f = figure::build_train_figure(r.c, nullptr, screen({1000, 620}));
  const figure::Hit& loss = *f.hit("loss_plot");
  float repeat_end = 0, first_end = 0, chance_y = -1;
  for (const figure::Prim& p : f.prims) {
    if (p.cls == "loss-repeat") repeat_end = p.y1;
    if (p.cls == "loss-first") first_end = p.y1;
    if (p.cls == "chance" && p.kind == figure::Prim::Kind::Line) chance_y = p.y0;
  }
  // y range 0 .. 5 (ticks of 1): 0.3 near the bottom, 4.2 near the top; ln 64 = 4.16 just under it.
  const float h = loss.y1 - loss.y0;
  EXPECT_NEAR((loss.y1 - repeat_end) / h, 0.3f / 5.0f, 0.02f);
  EXPECT_NEAR((loss.y1 - first_end) / h, 4.2f / 5.0f, 0.02f);
  EXPECT_NEAR((loss.y1 - chance_y) / h, std::log(64.0f) / 5.0f, 0.02f);
}

TEST(Figures, TrainLogIsReadAsTheViewHoldsIt) {
  std::istringstream log(
      "{\"step\": 1, \"loss\": 4.2, \"loss_first\": 4.3, \"loss_repeat\": 4.1}\n"
      "{\"step\": 2, \"loss\": 4.0, \"eval\": {\"loss\": 4, \"heads\": {\"previous-token\": [[0.1, 0.2]], "
      "\"first-token\": [[0.3, null]], \"duplicate-token\": [[0.5, 0.6]], \"induction\": [[0.7, 0.8]]}}}\n");
  const figure::TrainCurves c = figure::read_train_log(log);
  EXPECT_EQ(c.steps, (std::vector<std::int64_t>{1, 2}));
  EXPECT_FLOAT_EQ(c.loss_first[0], 4.3f);
  EXPECT_TRUE(std::isnan(c.loss_first[1]));
  EXPECT_EQ(c.n_layer, 1);
  EXPECT_EQ(c.n_head, 2);
  ASSERT_EQ(c.eval_steps, (std::vector<std::int64_t>{2}));
  // (layer 0 head 1) · 4 + induction (3): 0.8; first-token of head 1 has no score.
  EXPECT_FLOAT_EQ(c.eval_scores[0][1 * kHeadPatternCount + 3], 0.8f);
  EXPECT_TRUE(std::isnan(c.eval_scores[0][1 * kHeadPatternCount + 1]));
  for (const char* bad :
       {"{\"loss\": 1}\n", "not json\n", "{\"step\": 2, \"loss\": 1}\n{\"step\": 1, \"loss\": 1}\n", ""}) {
    std::istringstream in(bad);
    EXPECT_THROW(figure::read_train_log(in), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace mhaviz
