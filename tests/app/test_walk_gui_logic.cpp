// The walkthrough's logic that needs no window: --walkthrough parsing (walk_spec) and
// moving through the steps (walk_transport).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "figure/variant_figure.hpp"
#include "mhaviz/session.hpp"
#include "variant_edit.hpp"
#include "walk_compare.hpp"
#include "walk_spec.hpp"
#include "walk_transport.hpp"

namespace mhaviz::gui {
namespace {

// [SECTION] --walkthrough (bug 9: an unknown word silently opened the walkthrough)
TEST(WalkSpec, KnownWords) {
  const WalkSpec w = parse_walk_spec("transpose+0.5,mistake,pane=all,pin=3,no-numbers");
  EXPECT_EQ(w.step, "transpose");
  EXPECT_FLOAT_EQ(w.fraction, 0.5f);
  EXPECT_TRUE(w.mistake);
  EXPECT_EQ(w.pane, 3);
  EXPECT_EQ(w.pin, 3);
  EXPECT_FALSE(w.numbers);
  EXPECT_EQ(parse_walk_spec("12").step, "12");
}

TEST(WalkSpec, UnknownWordIsAnErrorNamingIt) {
  for (const char* bad : {"transpose,typo", "pane=x", "pin=-1", "0", "view+2", "view,softmax", "mistakes"}) {
    try {
      parse_walk_spec(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("--walkthrough: '", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

// [SECTION] Transport (bug 6: a jump replayed every step between)
TEST(WalkTransport, JumpGoesStraightThere) {
  Walkthrough w;
  w.pos = w.target = 11.0f;
  go_to(w, 2.0f, 12);
  EXPECT_EQ(w.pos, 2.0f);
  EXPECT_EQ(w.target, 2.0f);
  EXPECT_FALSE(advance(w, 1.0, 12));
}

TEST(WalkTransport, AdjacentStepsAnimate) {
  Walkthrough w;
  w.pos = w.target = 2.0f;
  w.last_time = 0.0;
  next_step(w, 12);
  EXPECT_EQ(w.pos, 2.0f);
  EXPECT_EQ(w.target, 3.0f);
  EXPECT_TRUE(advance(w, 0.05, 12));
  EXPECT_GT(w.pos, 2.0f);
  EXPECT_LT(w.pos, 3.0f);
  // Next again while moving: still one step ahead of the target, so it animates on.
  next_step(w, 12);
  EXPECT_LT(w.pos, 3.0f);
  EXPECT_EQ(w.target, 4.0f);
  for (int i = 1; i < 200; ++i) advance(w, 0.05 + 0.05 * i, 12);
  EXPECT_EQ(w.pos, 4.0f);
}

TEST(WalkTransport, PlayRunsToTheEnd) {
  Walkthrough w;
  toggle_play(w, 3);
  EXPECT_TRUE(w.playing);
  for (int i = 1; i < 400 && w.playing; ++i) advance(w, 0.05 * i, 3);
  EXPECT_FALSE(w.playing);
  EXPECT_EQ(w.pos, 2.0f);
}

// Space in the middle of a move (issue 13: paused at "step 3.08", rows left skewed): the
// move finishes and the picture rests on the step it was heading for.
TEST(WalkTransport, PauseSettlesOnAWholeStep) {
  Walkthrough w;
  w.pos = w.target = 3.0f;
  toggle_play(w, 12);
  double t = 0.0;
  while (w.pos <= 3.05f) advance(w, t += 0.02, 12);  // playing, just past step 3
  ASSERT_LT(w.pos, 4.0f);
  toggle_play(w, 12);
  EXPECT_FALSE(w.playing);
  EXPECT_EQ(w.target, 4.0f);
  for (int i = 0; i < 200 && advance(w, t += 0.05, 12); ++i) {
  }
  EXPECT_EQ(w.pos, 4.0f);
  // Paused on a whole step (during the hold between moves): it stays there.
  toggle_play(w, 12);
  toggle_play(w, 12);
  EXPECT_EQ(w.target, 4.0f);
  EXPECT_FALSE(advance(w, t += 0.05, 12));
  EXPECT_EQ(w.pos, 4.0f);
}

// [SECTION] Variant switch (bug 4: the walkthrough kept head_dim, the Model panel kept d_out)
TEST(VariantEdit, KeepsHeadsAndHeadDimBothWays) {
  ModelConfig c;
  c.variant = Variant::Wrapper;
  c.d_out = 2;
  c.num_heads = 2;
  const ModelConfig split = with_variant(c, Variant::WeightSplit, VariantKeeps::HeadDim);
  EXPECT_EQ(split.d_out, 4);
  EXPECT_EQ(split.num_heads, 2);
  const ModelConfig back = with_variant(split, Variant::Wrapper, VariantKeeps::HeadDim);
  EXPECT_EQ(back.d_out, 2);
  EXPECT_EQ(back.num_heads, 2);
  const ModelConfig fused = with_variant(split, Variant::FusedQkv, VariantKeeps::HeadDim);
  EXPECT_EQ(fused.d_out, 4);
  EXPECT_EQ(fused.num_heads, 2);
}

// The book's comparison: MultiHeadAttentionWrapper(d_out=2, num_heads=2) against
// MultiHeadAttention(d_out=2, num_heads=2), whose heads are 1 wide.
TEST(VariantEdit, KeepsDOutAsTheBookCompares) {
  ModelConfig c;
  c.variant = Variant::Wrapper;
  c.d_out = 2;
  c.num_heads = 2;
  const ModelConfig split = with_variant(c, Variant::WeightSplit, VariantKeeps::DOut);
  EXPECT_EQ(split.d_out, 2);
  EXPECT_EQ(split.num_heads, 2);
  EXPECT_EQ(head_dim(split), 1);
  EXPECT_EQ(with_variant(split, Variant::Wrapper, VariantKeeps::DOut).d_out, 2);
  // Heads that do not divide d_out: the nearest count that does.
  c.num_heads = 4;
  c.d_out = 6;
  const ModelConfig six = with_variant(c, Variant::FusedQkv, VariantKeeps::DOut);
  EXPECT_EQ(six.d_out, 6);
  EXPECT_EQ(six.num_heads, 3);
  EXPECT_EQ(six.d_out % six.num_heads, 0);
}

// A gqa or mla session switched to a chapter-3 variant leaves its own fields behind (the
// session would be refused with num_kv_groups on weight_split), a window only on the wrapper.
TEST(VariantEdit, TheBonusVariantsFieldsStayWithThem) {
  ModelConfig c;
  c.variant = Variant::Gqa;
  c.d_out = 6;
  c.num_heads = 6;
  c.num_kv_groups = 2;
  c.sliding_window = 3;
  const ModelConfig split = with_variant(c, Variant::WeightSplit, VariantKeeps::DOut);
  EXPECT_EQ(split.num_kv_groups, 0);
  EXPECT_EQ(split.sliding_window, 3);
  EXPECT_NO_THROW(validate_model(split, 3, 6, 1));
  const ModelConfig wrapper = with_variant(c, Variant::Wrapper, VariantKeeps::HeadDim);
  EXPECT_EQ(wrapper.num_kv_groups, 0);
  EXPECT_EQ(wrapper.sliding_window, 0);
  c.variant = Variant::Mla;
  c.num_kv_groups = 0;
  c.latent_dim = 16;
  EXPECT_EQ(with_variant(c, Variant::FusedQkv, VariantKeeps::DOut).latent_dim, 0);
}

// Switching to gqa or mla from the Model panel starts from the teaching defaults; a size edit
// keeps gqa's K/V heads a divisor of num_heads and turns RoPE off with an odd head_dim.
TEST(VariantEdit, BonusVariantsStartValidAndStayValidAsSizesChange) {
  ModelConfig c;
  c.variant = Variant::WeightSplit;
  c.d_out = 12;
  c.num_heads = 6;
  ModelConfig g = with_variant(c, Variant::Gqa, VariantKeeps::HeadDim);
  EXPECT_EQ(g.num_kv_groups, 3);  // two query heads per K/V head
  EXPECT_NO_THROW(validate_model(g, 3, 6, 1));
  EXPECT_EQ(kv_head_choices(g), (std::vector<int>{1, 2, 3, 6}));
  const ModelConfig m = with_variant(c, Variant::Mla, VariantKeeps::DOut);
  EXPECT_EQ(m.latent_dim, 16);
  EXPECT_NO_THROW(validate_model(m, 3, 6, 1));
  g.d_out = 8;
  g.num_heads = 4;  // 3 K/V heads do not divide 4
  g.rope_base = 10000.0;
  EXPECT_EQ(fit_variant_fields(g), "K/V heads 3 -> 2 (a divisor of num_heads 4)");
  EXPECT_EQ(g.num_kv_groups, 2);
  EXPECT_EQ(g.rope_base, 10000.0);  // head_dim 2
  g.d_out = 12;
  EXPECT_EQ(fit_variant_fields(g), "RoPE off: head_dim 3 is odd (RoPE rotates pairs)");
  EXPECT_EQ(g.rope_base, 0.0);
  EXPECT_NO_THROW(validate_model(g, 3, 6, 1));
  EXPECT_EQ(fit_variant_fields(g), "");
  EXPECT_EQ(default_kv_heads(5), 1);
}

// QK-norm and RoPE go with the variants that have them; RoPE also with a head_dim made odd.
TEST(VariantEdit, QkNormAndRopeStayWhereTheyFit) {
  ModelConfig c;
  c.variant = Variant::Gqa;
  c.d_out = 8;
  c.num_heads = 2;
  c.num_kv_groups = 1;
  c.qk_norm = true;
  c.rope_base = 10000.0;
  const ModelConfig split = with_variant(c, Variant::WeightSplit, VariantKeeps::DOut);
  EXPECT_TRUE(split.qk_norm);
  EXPECT_EQ(split.rope_base, 10000.0);
  EXPECT_NO_THROW(validate_model(split, 3, 6, 1));
  const ModelConfig mla = with_variant(c, Variant::Mla, VariantKeeps::DOut);
  EXPECT_TRUE(mla.qk_norm);
  EXPECT_EQ(mla.rope_base, 0.0);
  const ModelConfig wrapper = with_variant(c, Variant::Wrapper, VariantKeeps::HeadDim);
  EXPECT_FALSE(wrapper.qk_norm);
  EXPECT_EQ(wrapper.rope_base, 0.0);
  c.d_out = 6;
  c.num_heads = 6;  // head_dim 1 as weight_split at the same d_out and 6 heads: nothing to rotate
  c.rope_base = 100.0;
  const ModelConfig odd = with_variant(c, Variant::FusedQkv, VariantKeeps::DOut);
  EXPECT_EQ(odd.rope_base, 0.0);
  EXPECT_NO_THROW(validate_model(odd, 3, 6, 1));
}

// [SECTION] Wrapper vs weight split (bug 5: another model, unsaid; times that were noise)
Comparison compare_lesson(const char* name) {
  const Session s = lesson(name);
  return compare_variants(build_model(s.model, s.d_in()), s.input_tensor(), 4);
}

TEST(Compare, SaysWhatItComparesAndAgrees) {
  const Comparison c = compare_lesson("seed003-wrapper");
  ASSERT_TRUE(c.valid) << c.note;
  EXPECT_NE(c.note.find("out_proj is the identity"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("this session's model"), std::string::npos) << c.note;
  EXPECT_LT(c.max_diff_weights, 1e-6);
  EXPECT_LT(c.max_diff_output, 1e-5);
  ASSERT_GE(c.rows.size(), 2u);
  // A teaching-size forward (microseconds) is timed in batches long enough to measure.
  const Comparison::Row& r = c.rows.front();
  EXPECT_GE(r.samples, 7);
  // Each sample is a batch sized to last 0.25 ms when it was calibrated; the median batch may
  // run faster than that one did, but not by a factor of 2.5. A timing: judged in optimised
  // builds without sanitizers (MHAVIZ_JUDGE_SPEED=1, which CMake gives their tests).
  const char* judge = std::getenv("MHAVIZ_JUDGE_SPEED");
  if (judge != nullptr && std::string(judge) == "1") {
    EXPECT_GE(r.per_sample * r.wrapper_ms, 0.1) << r.per_sample << " x " << r.wrapper_ms << " ms";
  } else {
    std::printf("speed not judged in this build (MHAVIZ_JUDGE_SPEED=%s): batches of %d forwards of %.4f ms\n",
                judge ? judge : "unset", r.per_sample, r.wrapper_ms);
  }
  if (r.wrapper_ms < 0.1) {
    EXPECT_GT(r.per_sample, 1) << "a forward under 0.1 ms timed alone";
  }
  EXPECT_GT(r.wrapper_ms, 0.0);
  EXPECT_GT(r.split_ms, 0.0);
  EXPECT_EQ(r.wrapper.matmul_calls, 5 * 2);  // per head: 3 projections, q·kᵀ, weights·v
  EXPECT_EQ(r.split.matmul_calls, 6);
}

TEST(Compare, SaysWhenItsModelIsNotTheSessions) {
  const Comparison c = compare_lesson("book-weight-split-3d");
  ASSERT_TRUE(c.valid) << c.note;
  EXPECT_NE(c.note.find("differ from the walkthrough's"), std::string::npos) << c.note;
}

// [SECTION] The attention variants against MHA: the same tab's other part
TEST(Compare, ComparesTheVariantsAndSaysWhatTheNumbersShow) {
  Session s = lesson("seed003-weight-split-6d");  // 2 heads of head_dim 3, T = 3, b = 2
  s.model.d_out = 4;                              // head_dim 2: RoPE can rotate it
  s.model.sliding_window = 2;
  s.model.training = false;
  const Comparison c = compare_variants(build_model(s.model, s.d_in()), s.input_tensor(), 4);
  ASSERT_TRUE(c.valid) << c.note;
  const VariantComparison& v = c.variants;
  EXPECT_NE(v.base.find("this session's weight-split"), std::string::npos) << v.base;
  // Every pair the session can make, each verdict what the lesson says of it.
  std::vector<std::string> claims;
  for (const Equivalence& e : v.equivalences) {
    claims.push_back(e.claim);
    EXPECT_EQ(e.equal, e.expected_equal) << e.claim << ": " << e.verdict;
    if (e.expected_equal) {
      EXPECT_EQ(e.verdict, "bit-equal") << e.claim;
    }
  }
  const std::vector<std::string> want = {
      "GQA with 2 K/V heads (one per query head) = MHA", "GQA with 1 K/V head, made by mean-pooling, is not MHA",
      "Sliding window W = T = 3 = causal MHA",           "Sliding window W = 2 < T is not causal MHA",
      "RoPE at one token (every angle 0) = no RoPE",     "RoPE at 3 tokens is not no RoPE"};
  EXPECT_EQ(claims, want);
  // One cost row per variant, MHA first; the session's window, GQA's h / 2.
  std::vector<std::string> rows;
  for (const VariantCost& r : v.costs) rows.push_back(r.variant + ": " + r.detail);
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "MHA: 2 K/V heads (weight split)", "GQA: 1 K/V head (h / 2: the session is not gqa)",
                      "MQA: 1 K/V head (GQA with G = 1)", "MLA: latent_dim 16 (max(16, d_out // 8))",
                      "SWA: MHA, window 2 (the session's)"}));
  // The figure says each claim and verdict, and names each row.
  figure::Options o;
  o.canvas = {1280, 800};
  const figure::Figure f = figure::build_variant_figure(v, o);
  std::string text;
  for (const figure::Prim& p : f.prims)
    if (p.kind == figure::Prim::Kind::Text) text += p.text + "\n";
  for (const Equivalence& e : v.equivalences) {
    EXPECT_NE(text.find(e.claim), std::string::npos) << e.claim;
    EXPECT_NE(text.find(e.verdict), std::string::npos) << e.verdict;
  }
  for (const VariantCost& r : v.costs) EXPECT_NE(f.hit("cost_" + r.variant), nullptr) << r.variant;
  EXPECT_LE(f.width, 1280);
  // The cost table's column titles whole on a narrow canvas, on more lines where one is too
  // narrow ("KV cache at 23 tok…" on a 1280 x 800 window).
  o.canvas = {560, 600};
  std::string titles;
  float first = 1e9f, last = -1e9f;
  for (const figure::Prim& p : figure::build_variant_figure(v, o).prims)
    if (p.kind == figure::Prim::Kind::Text && p.cls == "column") {
      titles += (titles.empty() ? "" : " ") + p.text;
      first = std::min(first, p.y0);
      last = std::max(last, p.y0);
    }
  EXPECT_EQ(titles, "parameters FLOPs of one forward KV cache per token KV cache at 3 tokens \u00d7 b 2");
  EXPECT_GT(last, first) << "at 560 px some title takes two lines";
}

}  // namespace
}  // namespace mhaviz::gui
