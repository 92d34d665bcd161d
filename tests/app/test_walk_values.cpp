// The walkthrough's shared table (app/figure/walk_values.hpp): values, names, colours,
// labels and numbers, which the app's panel and `mhaviz render --view step` both read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "figure/walk_values.hpp"
#include "mhaviz/layout.hpp"
#include "mhaviz/session.hpp"

namespace mhaviz {
namespace {

namespace lay = mhaviz::layout;
using figure::column_labels;

struct LessonRun {
  Session s;
  Model model;
  Trace trace;
};

LessonRun run_lesson(const char* name) {
  LessonRun r{lesson(name), {}, {}};
  r.model = build_model(r.s.model, r.s.d_in());
  r.trace = forward(r.model, r.s.input_tensor());
  return r;
}

// A width per character: a stand-in for a font, enough to test the fitting rules.
float chars(const std::string& s) { return 7.0f * static_cast<float>(s.size()); }

// [SECTION] Numbers (bug 8: "-0.00" in cells; screen "-∞" vs capture "-inf")
TEST(WalkValues, NegativeZeroPrintsWithoutSign) {
  EXPECT_EQ(figure::format_value(-0.001f), "0.00");
  EXPECT_EQ(figure::format_value(-0.0f), "0.00");
  EXPECT_EQ(figure::format_number(-0.00001f, 4), "0.0000");
  EXPECT_EQ(figure::format_value(-0.006f), "-0.01");
  EXPECT_EQ(figure::format_value(-12.34f), "-12.3");
  EXPECT_EQ(figure::format_value(-123.4f), "-123");
}

TEST(WalkValues, MaskedPrintsAsPyTorch) {
  EXPECT_EQ(figure::format_value(-INFINITY), "-inf");
  EXPECT_EQ(figure::format_number(-INFINITY, 4), "-inf");
}

// "seed 002" in lesson tooltips read like the RNG seed (the app's seed control): lessons say
// what they are.
TEST(WalkValues, LessonTooltipsNameWhatTheyAre) {
  for (const LessonInfo& l : lessons()) {
    std::string d = l.description;
    std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    EXPECT_EQ(d.find("seed 0"), std::string::npos) << l.name << ": " << l.description;
    EXPECT_EQ(d.find("seeds 0"), std::string::npos) << l.name << ": " << l.description;
  }
}

// [SECTION] Names (one per tensor: screen and capture said "Q.view" / "queries.view")
TEST(WalkValues, OneNamePerTensor) {
  EXPECT_EQ(figure::pane_name(Variant::WeightSplit, lay::Step::View, 0, false), "queries.view");
  EXPECT_EQ(figure::pane_name(Variant::WeightSplit, lay::Step::Project, 1, false), "keys");
  EXPECT_EQ(figure::pane_name(Variant::WeightSplit, lay::Step::Dropout, 0, false), "attn_weights after dropout");
  EXPECT_EQ(figure::pane_name(Variant::WeightSplit, lay::Step::Merge, 0, true), "plain reshape (the mistake)");
  EXPECT_EQ(figure::pane_name(Variant::Wrapper, lay::Step::Merge, 0, true), "context_vec");  // the wrapper concatenates
}

// The figure's pane titles are the table's names (the panel titles its grids the same way).
TEST(WalkValues, FigureTitlesComeFromTheTable) {
  const LessonRun r = run_lesson("book-weight-split-3d");
  const auto steps = lay::steps_for(lay::dims_for(r.trace.config, 1, r.trace.tokens, r.trace.d_in), false);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    figure::Options o;
    o.view = figure::View::Step;
    o.step = static_cast<int>(k);
    o.model = &r.model;
    const figure::Figure f = figure::build_figure(r.trace, r.s.tokens, o);
    int titles = 0;
    for (const auto& p : f.prims) {
      if (p.cls != "pane-title") continue;
      const std::string want = figure::pane_name(r.trace.config.variant, steps[k], titles, false) + "  ";
      EXPECT_EQ(p.text.substr(0, want.size()), want) << "step " << lay::step_name(steps[k]);
      ++titles;
    }
    EXPECT_EQ(titles, figure::pane_count(r.trace.config.variant, steps[k])) << lay::step_name(steps[k]);
  }
}

// [SECTION] Values (bug 3: the mistake did not reach out_proj and the output)
TEST(WalkValues, MistakeFlowsToTheOutput) {
  const LessonRun r = run_lesson("seed003-weight-split-6d");
  const figure::Mistake m = figure::make_mistake(r.model, r.trace);
  ASSERT_EQ(m.output.shape, r.trace.output.shape);
  const figure::StepSource ok{&r.trace, 0, false, nullptr};
  const figure::StepSource bad{&r.trace, 0, true, &m};
  const lay::Layout l = lay::step_layout(lay::Step::OutProj, ok.dims());
  double diff = 0.0;
  for (std::int64_t i = 0; i < l.numel(); ++i) {
    EXPECT_EQ(figure::step_value(ok, lay::Step::OutProj, i), r.trace.output.data[static_cast<std::size_t>(i)]);
    EXPECT_EQ(figure::step_value(bad, lay::Step::OutProj, i), m.output.data[static_cast<std::size_t>(i)]);
    diff = std::max(diff, std::fabs(static_cast<double>(m.output.data[static_cast<std::size_t>(i)] -
                                                        r.trace.output.data[static_cast<std::size_t>(i)])));
  }
  EXPECT_GT(diff, 1e-3) << "the scrambled merge must give a visibly different output";
}

// With one head the plain reshape is the correct merge: the mistake's out_proj then gives
// the forward's own output, which checks make_mistake's product against the core's.
TEST(WalkValues, MistakeOutputIsOutProjOfTheMerge) {
  Session s = lesson("seed003-weight-split-6d");
  s.model.num_heads = 1;
  const Model model = build_model(s.model, s.d_in());
  const Trace tr = forward(model, s.input_tensor());
  const figure::Mistake m = figure::make_mistake(model, tr);
  ASSERT_EQ(m.output.numel(), tr.output.numel());
  for (std::int64_t i = 0; i < tr.output.numel(); ++i)
    EXPECT_NEAR(m.output.data[static_cast<std::size_t>(i)], tr.output.data[static_cast<std::size_t>(i)], 1e-5f);
}

TEST(WalkValues, FigureOutputStepShowsTheMistake) {
  const LessonRun r = run_lesson("seed003-weight-split-6d");
  figure::Options o;
  o.view = figure::View::Step;
  o.mistaken = true;
  o.model = &r.model;
  ASSERT_TRUE(figure::parse_step_arg(r.trace, true, "out_proj", o.step));
  const figure::Figure f = figure::build_figure(r.trace, r.s.tokens, o);
  const figure::Mistake m = figure::make_mistake(r.model, r.trace);
  // Every cell's title names the value shown: the wrong output's first element.
  bool found = false;
  for (const auto& p : f.prims)
    if (p.cls == "cell" && p.text.rfind("[0, 0, 0, 0] = ", 0) == 0) {
      found = true;
      EXPECT_EQ(p.text, "[0, 0, 0, 0] = " + figure::format_value(m.output.data[0]));
    }
  EXPECT_TRUE(found);
  EXPECT_NE(figure::format_value(m.output.data[0]), figure::format_value(r.trace.output.data[0]));
}

// [SECTION] Colours (bug 7: cells coloured by |value|, -0.23 looked like +0.31)
TEST(WalkValues, SignedScoresUseTheDivergingMap) {
  EXPECT_EQ(figure::step_tint(lay::Step::Scores), figure::Tint::Diverging);
  EXPECT_EQ(figure::step_tint(lay::Step::Mask), figure::Tint::Diverging);
  EXPECT_EQ(figure::step_tint(lay::Step::Softmax), figure::Tint::Weights);
  const figure::Rgb bg{1, 1, 1};
  const figure::Rgb neg = figure::cell_rgb(figure::Tint::Diverging, 0, -1, -0.23f, 0.31f, false, bg);
  const figure::Rgb pos = figure::cell_rgb(figure::Tint::Diverging, 0, -1, 0.31f, 0.31f, false, bg);
  EXPECT_GT(neg.b, neg.r) << "negative scores are blue";
  EXPECT_GT(pos.r, pos.b) << "positive scores are red";
  const figure::Rgb zero = figure::cell_rgb(figure::Tint::Diverging, 0, -1, 0.0f, 0.31f, false, bg);
  EXPECT_NEAR(zero.r, zero.b, 0.05f) << "zero is the neutral middle";
  const auto legend = figure::diverging_legend(0.5f);
  ASSERT_EQ(legend.size(), 5u);
  EXPECT_EQ(legend.front().text, "-0.50");
  EXPECT_EQ(legend[2].text, "0.00");
  EXPECT_EQ(legend.back().text, "0.50");
}

TEST(WalkValues, FigureScoresStepHasTheLegend) {
  const LessonRun r = run_lesson("seed003-wrapper");
  figure::Options o;
  o.view = figure::View::Step;
  ASSERT_TRUE(figure::parse_step_arg(r.trace, false, "scores", o.step));
  const figure::Figure f = figure::build_figure(r.trace, r.s.tokens, o);
  const auto n =
      std::count_if(f.prims.begin(), f.prims.end(), [](const figure::Prim& p) { return p.cls == "legend-diverging"; });
  EXPECT_EQ(n, 5);
}

// [SECTION] Labels (bug 1: "Your 1 starts with one step"; bug 2: "token 0: Yourtoken 1: journey")
TEST(WalkValues, KeyColumnsAreNeverHalfNamesHalfNumbers) {
  const std::vector<std::string> toks = {"Your", "journey", "starts", "with", "one", "step"};
  for (float cell = 4.0f; cell <= 80.0f; cell += 1.0f) {
    const figure::ColumnLabels c = column_labels(toks, cell, chars);
    ASSERT_EQ(c.text.size(), toks.size());
    const bool names = c.text == toks;
    bool numbers = true, empty = true;
    for (std::size_t j = 0; j < toks.size(); ++j) {
      numbers = numbers && c.text[j] == std::to_string(j);
      empty = empty && c.text[j].empty();
    }
    EXPECT_TRUE(names || numbers || empty) << "cell " << cell;
    EXPECT_EQ(!c.note.empty(), numbers) << "cell " << cell;
    // Each label fits its room: a column, or two on staggered lines.
    for (const auto& t : c.text) EXPECT_LE(chars(t), c.lines * cell) << "cell " << cell << " " << t;
  }
  // "journey" (49 px) in 30 px columns: the names on two lines, not the index 1.
  const figure::ColumnLabels c = column_labels(toks, 30.0f, chars);
  EXPECT_EQ(c.lines, 2);
  EXPECT_EQ(c.text[1], "journey");
}

TEST(WalkValues, BlockLabelsFitTheirBlockInOneForm) {
  const std::vector<std::string> toks = {"Your", "journey", "starts", "with", "one", "step"};
  for (float w = 0.0f; w <= 140.0f; w += 3.0f) {
    const auto l = figure::block_labels(lay::Kind::TokenBlocks, 6, toks, w, chars);
    ASSERT_EQ(l.size(), 6u);
    for (const auto& t : l) EXPECT_LE(chars(t), w) << "width " << w;
    // One form for every block: all name their token, or none does.
    const auto named = std::count_if(
        l.begin(), l.end(), [&](const std::string& t) { return t.find_first_of("aeiou") != std::string::npos; });
    EXPECT_TRUE(named == 0 || named == 6) << "width " << w;
  }
  EXPECT_EQ(figure::block_labels(lay::Kind::TokenBlocks, 6, toks, 1000.0f, chars)[1], "token 1: journey");
  EXPECT_EQ(figure::block_labels(lay::Kind::TokenBlocks, 6, toks, 50.0f, chars)[1], "journey");
  EXPECT_EQ(figure::block_labels(lay::Kind::TokenBlocks, 6, toks, 50.0f, chars)[4], "one");
  EXPECT_EQ(figure::block_labels(lay::Kind::HeadBlocks, 4, {}, 1000.0f, chars)[3], "head 3");
}

}  // namespace
}  // namespace mhaviz
