// Layout mappings of the walkthrough: every mapping and its inverse on random shapes, the
// moves against the tensors the core really computes, animation endpoints, the mistaken merge.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "mhaviz/layout.hpp"
#include "test_util.hpp"

namespace mhaviz::layout {
namespace {

const Variant kVariants[] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv};

int pick(std::mt19937& gen, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); }

// The variants whose layouts alone are tested (gqa's sessions need num_kv_groups: GqaSteps...).
const Variant kLayoutVariants[] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv, Variant::Gqa,
                                   Variant::Mla};

Dims random_dims(std::mt19937& gen, Variant v) {
  Dims d;
  d.variant = v;
  d.b = pick(gen, 1, 3);
  d.T = pick(gen, 1, 7);
  d.d_in = pick(gen, 1, 6);
  d.h = pick(gen, 1, 4);
  d.hd = pick(gen, 1, 4);
  if (v == Variant::Gqa) d.G = d.h % 2 == 0 ? pick(gen, 1, 2) : 1;  // a divisor of h
  if (v == Variant::Mla) d.latent = pick(gen, 1, 5);
  if (v != Variant::Wrapper) {
    d.qk_norm = pick(gen, 0, 1) == 1;
    d.rope = pick(gen, 0, 1) == 1;
  }
  return d;
}

Dims dims_of(const Trace& t) { return dims_for(t.config, t.batch, t.tokens, t.d_in); }

TEST(Layout, AxisSlotsRoundTrip) {
  std::mt19937 gen(1);
  for (int trial = 0; trial < 500; ++trial) {
    const Axis a{pick(gen, 1, 40), pick(gen, 0, 1) ? 0 : pick(gen, 2, 12)};
    std::set<std::int64_t> used;
    for (std::int64_t i = 0; i < a.n; ++i) {
      const std::int64_t s = a.slot(i);
      if (s < 0) {
        ASSERT_TRUE(a.windowed());
        continue;
      }
      ASSERT_LT(s, a.slots());
      ASSERT_EQ(a.index_at(s), i);
      ASSERT_TRUE(used.insert(s).second);
    }
    for (std::int64_t s = 0; s < a.slots(); ++s) {
      const std::int64_t i = a.index_at(s);
      if (i < 0) {
        ASSERT_TRUE(a.ellipsis_at(s));
      } else {
        ASSERT_EQ(a.slot(i), s);
      }
    }
    if (a.windowed()) {
      EXPECT_EQ(a.slot(0), 0);
      EXPECT_EQ(a.slot(a.n - 1), a.slots() - 1);  // the last index is always shown
    }
  }
}

// A window hides at least two indices: one hidden index would leave its slot to an ellipsis
// that takes as much room (4 heads under a limit of 3 showed 0, 1, "… 1 more", 3). Slots never
// exceed limit + 1.
TEST(Layout, AnEllipsisStandsForTwoIndicesOrMore) {
  for (std::int64_t limit = 2; limit <= 12; ++limit)
    for (std::int64_t n = 1; n <= 40; ++n) {
      const Axis a{n, limit};
      EXPECT_LE(a.slots(), limit + 1) << n << " under " << limit;
      EXPECT_EQ(a.windowed(), n >= limit + 2) << n << " under " << limit;
      std::int64_t shown = 0;
      for (std::int64_t i = 0; i < n; ++i) shown += a.slot(i) >= 0 ? 1 : 0;
      EXPECT_TRUE(shown == n || n - shown >= 2) << n << " under " << limit << ": " << shown << " shown";
    }
}

// index -> cell -> index, cell -> point -> cell, for every step of every variant.
TEST(Layout, EveryStepMappingAndInverseRoundTrip) {
  std::mt19937 gen(2);
  for (int trial = 0; trial < 60; ++trial) {
    for (Variant v : kLayoutVariants) {
      const Dims d = random_dims(gen, v);
      for (bool mistaken : {false, true}) {
        for (Step s : steps_for(d, mistaken)) {
          Layout l = step_layout(s, d);
          if (trial % 2) {
            l.max_blocks = pick(gen, 2, 4);
            l.max_rows = pick(gen, 2, 4);
            l.max_cols = pick(gen, 2, 4);
          }
          if (trial % 3 == 1) {
            l.block_cols = pick(gen, 1, 5);  // blocks side by side, wrapping
            l.block_gap_x = 0.25f * static_cast<float>(pick(gen, 1, 6));
          }
          ASSERT_EQ(shape_numel(l.shape()) * l.panes, l.numel()) << step_name(s);
          const Point ext = extent(l);
          std::set<std::pair<float, float>> points;
          for (std::int64_t f = 0; f < l.numel(); ++f) {
            const Cell c = cell_of(l, f);
            ASSERT_EQ(index_of(l, c), f) << step_name(s) << " flat " << f;
            if (!visible(l, c)) continue;
            const Point p = point_of(l, c);
            ASSERT_GE(p.x, 0.0f);
            ASSERT_GE(p.y, 0.0f);
            ASSERT_LE(p.x + 1.0f, ext.x + 1e-4f);
            ASSERT_LE(p.y + 1.0f, ext.y + 1e-4f);
            ASSERT_TRUE(points.insert({p.x, p.y}).second) << "two cells drawn at one place, " << step_name(s);
            Cell back;
            ASSERT_TRUE(cell_at(l, {p.x + 0.5f, p.y + 0.5f}, back)) << step_name(s);
            ASSERT_EQ(back, c) << step_name(s);
          }
          // Everything outside a cell is no cell (gaps between panes and blocks, ellipses).
          Cell none;
          EXPECT_FALSE(cell_at(l, {-0.5f, 0.5f}, none));
          EXPECT_FALSE(cell_at(l, {ext.x + 0.5f, 0.5f}, none));
        }
      }
    }
  }
}

TEST(Layout, HeadOfFollowsTheSeedsDrawings) {
  Dims d{Variant::WeightSplit, 1, 3, 6, 2, 3};
  const Layout proj = step_layout(Step::Project, d), view = step_layout(Step::View, d),
               tr = step_layout(Step::Transpose, d);
  // Q[0, t, j]: head j / 3.
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 6; ++j) {
      const Cell c = cell_of(proj, t * 6 + j);
      EXPECT_EQ(c.row, t);
      EXPECT_EQ(c.col, j);
      EXPECT_EQ(head_of(proj, c), j / 3);
      const Cell cv = cell_of(view, t * 6 + j);  // view keeps the flat index
      EXPECT_EQ(cv.block, t);
      EXPECT_EQ(cv.row, j / 3);
      EXPECT_EQ(cv.col, j % 3);
      EXPECT_EQ(head_of(view, cv), j / 3);
      const Cell ct = cell_of(tr, move_index(Move::Transpose, view, tr, t * 6 + j));
      EXPECT_EQ(ct.block, j / 3);
      EXPECT_EQ(ct.row, t);
      EXPECT_EQ(ct.col, j % 3);
      EXPECT_EQ(head_of(tr, ct), j / 3);
    }
  d.variant = Variant::FusedQkv;
  const Layout fused = step_layout(Step::Project, d);
  // qkv columns per head: [q | k | v] of 3 each.
  EXPECT_EQ(part_of(fused, {0, 0, 0, 4}), 1);
  EXPECT_EQ(head_of(fused, {0, 0, 0, 10}), 1);
  EXPECT_EQ(part_of(fused, {0, 0, 0, 17}), 2);
}

TEST(Layout, MovesAreBijectionsWithInverses) {
  std::mt19937 gen(3);
  for (int trial = 0; trial < 80; ++trial) {
    for (Variant v : kLayoutVariants) {
      const Dims d = random_dims(gen, v);
      for (bool mistaken : {false, true}) {
        const auto steps = steps_for(d, mistaken);
        for (std::size_t i = 1; i < steps.size(); ++i) {
          const Move m = step_move(steps[i - 1], steps[i], mistaken);
          if (m == Move::None) continue;
          const Layout a = step_layout(steps[i - 1], d), b = step_layout(steps[i], d);
          ASSERT_EQ(a.numel(), b.numel()) << step_name(steps[i]);
          std::vector<bool> hit(static_cast<std::size_t>(b.numel()), false);
          for (std::int64_t f = 0; f < a.numel(); ++f) {
            const std::int64_t g = move_index(m, a, b, f);
            ASSERT_GE(g, 0);
            ASSERT_LT(g, b.numel());
            ASSERT_FALSE(hit[static_cast<std::size_t>(g)]) << step_name(steps[i]);
            hit[static_cast<std::size_t>(g)] = true;
            ASSERT_EQ(move_index_inverse(m, a, b, g), f) << step_name(steps[i]);
          }
        }
      }
    }
  }
}

// The element at a layout's flat index holds the value the core computed there.
TEST(Layout, MovesMatchTheTensorsTheCoreComputes) {
  std::mt19937 gen(4);
  for (int trial = 0; trial < 40; ++trial) {
    for (Variant v : kVariants) {
      const Session s = test::random_session(gen, v, false);
      const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
      const Dims d = dims_of(t);
      const Tensor* qkv3[3] = {&t.q, &t.k, &t.v};
      const Tensor* proj3[3] = {&t.queries, &t.keys, &t.values};
      const Layout proj = step_layout(Step::Project, d);
      const Layout trans = step_layout(Step::Transpose, d);
      if (v == Variant::WeightSplit) {
        const Layout view = step_layout(Step::View, d);
        for (std::int64_t f = 0; f < proj.numel(); ++f) {
          const Cell c = cell_of(proj, f);
          const float x = proj3[c.pane]->data[static_cast<std::size_t>(f % proj.pane_numel())];
          const std::int64_t g = move_index(Move::Transpose, view, trans, move_index(Move::Same, proj, view, f));
          const Cell ct = cell_of(trans, g);
          ASSERT_EQ(ct.pane, c.pane);
          ASSERT_EQ(qkv3[ct.pane]->data[static_cast<std::size_t>(g % trans.pane_numel())], x);
        }
      } else if (v == Variant::FusedQkv) {
        const Layout view = step_layout(Step::View, d), chunk = step_layout(Step::Chunk, d);
        for (std::int64_t f = 0; f < proj.numel(); ++f) {
          const float x = t.qkv.data[static_cast<std::size_t>(f)];
          const std::int64_t g = move_index(Move::Transpose, view, trans, move_index(Move::Same, proj, view, f));
          const std::int64_t k = move_index(Move::Chunk, trans, chunk, g);
          const Cell cc = cell_of(chunk, k);
          ASSERT_EQ(cc.pane, part_of(proj, cell_of(proj, f)));
          ASSERT_EQ(qkv3[cc.pane]->data[static_cast<std::size_t>(k % chunk.pane_numel())], x);
        }
      } else {
        // Wrapper: head i's Linear output is block i of the per-head drawing.
        for (std::int64_t f = 0; f < proj.numel(); ++f) {
          const Cell c = cell_of(proj, f);
          const HeadIndex hi{c.block / d.h, c.row, c.block % d.h, c.col};
          const std::int64_t col = merged_column(hi, d.hd);
          ASSERT_EQ(qkv3[c.pane]->data[static_cast<std::size_t>(f % proj.pane_numel())],
                    proj3[c.pane]->at({hi.b, hi.t, col}));
        }
      }
      // Back: context (b, h, T, hd) -> merged (b, T, h*hd).
      const auto steps = steps_for(d);
      const int ctx = static_cast<int>(std::find(steps.begin(), steps.end(), Step::Context) - steps.begin());
      const Step last_merge = v == Variant::Wrapper ? Step::Concat : Step::Merge;
      const int mrg = static_cast<int>(std::find(steps.begin(), steps.end(), last_merge) - steps.begin());
      for (std::int64_t f = 0; f < t.context.numel(); ++f) {
        const auto path = follow(steps, d, false, ctx, f);
        const std::int64_t g = path[static_cast<std::size_t>(mrg)];
        ASSERT_GE(g, 0);
        ASSERT_EQ(t.context_merged.data[static_cast<std::size_t>(g)], t.context.data[static_cast<std::size_t>(f)]);
      }
    }
  }
}

TEST(Layout, IndexPathQtoViewToTranspose) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 50; ++trial) {
    const Dims d = random_dims(gen, Variant::WeightSplit);
    const auto steps = steps_for(d);
    const Layout proj = step_layout(Step::Project, d), view = step_layout(Step::View, d),
                 tr = step_layout(Step::Transpose, d);
    for (int b = 0; b < d.b; ++b)
      for (int t = 0; t < d.T; ++t)
        for (int j = 0; j < d.d_out(); ++j) {
          const Cell q{1, b, t, j};  // K, the second pane
          const auto path = follow(steps, d, false, 1, index_of(proj, q));
          const HeadIndex hi = split_column(b, t, j, d.hd);
          EXPECT_EQ(hi.head, j / d.hd);
          EXPECT_EQ(hi.d, j % d.hd);
          EXPECT_EQ(merged_column(hi, d.hd), j);
          EXPECT_EQ(cell_of(view, path[2]), (Cell{1, b * d.T + t, hi.head, hi.d}));  // q[b, t, head, d]
          EXPECT_EQ(cell_of(tr, path[3]), (Cell{1, b * d.h + hi.head, t, hi.d}));    // q[b, head, t, d]
          EXPECT_EQ(path[4], -1);                                                    // scores are a new tensor
        }
  }
}

TEST(Layout, AnimationEndpointsAreTheStaticLayouts) {
  std::mt19937 gen(6);
  for (int trial = 0; trial < 40; ++trial) {
    for (Variant v : kLayoutVariants) {
      const Dims d = random_dims(gen, v);
      for (bool mistaken : {false, true}) {
        const auto steps = steps_for(d, mistaken);
        for (std::size_t i = 1; i < steps.size(); ++i) {
          const Move m = step_move(steps[i - 1], steps[i], mistaken);
          Layout a = step_layout(steps[i - 1], d), b = step_layout(steps[i], d);
          if (trial % 3 == 0) a.max_rows = b.max_rows = a.max_cols = b.max_cols = 2;
          if (trial % 4 == 1) b.block_cols = 3;
          for (std::int64_t f = 0; f < a.numel(); ++f) {
            const Point p0 = point_of(a, cell_of(a, f));
            for (float stagger : {0.0f, 0.5f}) {
              EXPECT_EQ(animate(a, b, m, f, 0.0f, stagger), p0);
              const std::int64_t g = move_index(m, a, b, f);
              const Point p1 = animate(a, b, m, f, 1.0f, stagger);
              if (g < 0) {
                EXPECT_EQ(p1, p0);  // no correspondence: the old drawing fades out in place
                continue;
              }
              EXPECT_EQ(p1, point_of(b, cell_of(b, g)));
              // Middle frames lie on the segment between the endpoints.
              const Point pm = animate(a, b, m, f, 0.5f, stagger);
              EXPECT_GE(pm.x, std::min(p0.x, p1.x) - 1e-4f);
              EXPECT_LE(pm.x, std::max(p0.x, p1.x) + 1e-4f);
              EXPECT_GE(pm.y, std::min(p0.y, p1.y) - 1e-4f);
              EXPECT_LE(pm.y, std::max(p0.y, p1.y) + 1e-4f);
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(ease(0.0f), 0.0f);
  EXPECT_EQ(ease(1.0f), 1.0f);
  EXPECT_FLOAT_EQ(ease(0.5f), 0.5f);
}

// Seed 002's reshape without the transpose back reads the (b, h, T, hd) buffer as (b, T, h*hd).
TEST(Layout, MistakenMergeDiffersExactlyAsPredicted) {
  std::mt19937 gen(7);
  int scrambled_runs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    for (Variant v : {Variant::WeightSplit, Variant::FusedQkv}) {
      const Session s = test::random_session(gen, v, trial % 2 == 0);
      const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
      const Tensor wrong = mistaken_merge(t);
      const Dims d = dims_of(t);
      const auto steps = steps_for(d, true);
      const int ctx = static_cast<int>(std::find(steps.begin(), steps.end(), Step::Context) - steps.begin());
      ASSERT_EQ(steps[static_cast<std::size_t>(ctx + 1)], Step::Merge);  // no transpose back
      std::int64_t moved = 0;
      for (int b = 0; b < t.batch; ++b)
        for (int tt = 0; tt < t.tokens; ++tt)
          for (int j = 0; j < t.heads * t.head_dim; ++j) {
            const HeadIndex ok = split_column(b, tt, j, t.head_dim);
            const HeadIndex bad = mistaken_source(b, tt, j, t.tokens, t.heads, t.head_dim);
            ASSERT_EQ(t.context_merged.at({b, tt, j}), t.context.at({ok.b, ok.head, ok.t, ok.d}));
            ASSERT_EQ(wrong.at({b, tt, j}), t.context.at({bad.b, bad.head, bad.t, bad.d}));
            if (!(ok == bad)) ++moved;
            // The animation of the mistaken walkthrough puts context[bad] exactly at [b, tt, j].
            const Layout cl = step_layout(Step::Context, d), ml = step_layout(Step::Merge, d);
            const std::int64_t f = index_of(cl, {0, bad.b * t.heads + bad.head, bad.t, bad.d});
            const auto path = follow(steps, d, true, ctx, f);
            ASSERT_EQ(cell_of(ml, path[static_cast<std::size_t>(ctx + 1)]), (Cell{0, b, tt, j}));
          }
      // Row t, head J of the correct merge comes from p / hd = t*h + J of the plain reshape, which reads
      // token (t*h + J) mod T of head (t*h + J) / T: the same element iff t*(h - 1) == J*(T - 1).
      std::int64_t fixed = 0;
      for (int tt = 0; tt < t.tokens; ++tt)
        for (int J = 0; J < t.heads; ++J) fixed += tt * (t.heads - 1) == J * (t.tokens - 1) ? 1 : 0;
      EXPECT_EQ(moved, static_cast<std::int64_t>(t.batch) * t.head_dim *
                           (static_cast<std::int64_t>(t.tokens) * t.heads - fixed));
      if (t.heads == 1 || t.tokens == 1) {
        EXPECT_EQ(moved, 0);  // nothing to scramble
      } else {
        ++scrambled_runs;
        EXPECT_GT(moved, 0);  // token 0 head 1 always lands in the wrong place
      }
    }
  }
  EXPECT_GT(scrambled_runs, 10);
}

TEST(Layout, WrapperAndWeightSplitAgreeWithin1e6) {
  std::mt19937 gen(8);
  for (int trial = 0; trial < 40; ++trial) {
    const Session s = test::random_session(gen, Variant::Wrapper, false);
    const Model w = build_model(s.model, s.d_in());
    const Model ws = weight_split_from_wrapper(w);
    const Trace a = forward(w, s.input_tensor()), b = forward(ws, s.input_tensor());
    ASSERT_EQ(a.weights.shape, b.weights.shape);
    for (std::size_t i = 0; i < a.weights.data.size(); ++i) ASSERT_NEAR(a.weights.data[i], b.weights.data[i], 1e-6);
    for (std::size_t i = 0; i < a.output.data.size(); ++i) ASSERT_NEAR(a.output.data[i], b.output.data[i], 1e-6);
  }
}

// gqa: keys | values at G heads move like the weight split's (view, transpose), the expansion
// holds K/V head h / (H / G) for query head h, and the repeat mistake's tensors are .repeat's,
// its scores computed as the forward computes (equal bits wherever the pairing agrees).
TEST(Layout, GqaStepsHoldTheCoresTensors) {
  std::mt19937 gen(9);
  int mispaired_runs = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Session s = test::random_session(gen, Variant::WeightSplit, false);
    s.model.variant = Variant::Gqa;
    const int divisors[] = {1, 2, 3, 6};
    s.model.num_heads = 6;
    s.model.d_out = 6 * pick(gen, 1, 3);
    s.model.num_kv_groups = divisors[pick(gen, 0, 3)];
    if (s.model.causal && trial % 2) s.model.sliding_window = pick(gen, 1, 4);
    validate_session(s);
    const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
    const Dims d = dims_of(t);
    ASSERT_EQ(d.kv(), s.model.num_kv_groups);
    ASSERT_EQ(d.window, s.model.sliding_window);
    EXPECT_EQ(mistake_kind(d), MistakeKind::Repeat);
    const auto steps = steps_for(d, true);
    ASSERT_EQ(steps, steps_for(d, false));  // the repeat mistake keeps every step
    const int tr = static_cast<int>(std::find(steps.begin(), steps.end(), Step::Transpose) - steps.begin());
    ASSERT_EQ(steps[static_cast<std::size_t>(tr + 1)], Step::Expand);
    // keys | values (b, T, G*hd) -> view -> transpose: the core's k and v.
    const Layout proj = step_layout(Step::Project, d), trans = step_layout(Step::Transpose, d);
    ASSERT_EQ(proj.panes, 2);
    ASSERT_EQ(trans.dims[1], d.kv());
    const Tensor* kv[2] = {&t.keys, &t.values};
    const Tensor* heads[2] = {&t.k, &t.v};
    for (std::int64_t f = 0; f < proj.numel(); ++f) {
      const auto path = follow(steps, d, false, 1, f);
      const Cell c = cell_of(trans, path[static_cast<std::size_t>(tr)]);
      ASSERT_EQ(heads[c.pane]->data[static_cast<std::size_t>(path[static_cast<std::size_t>(tr)] % trans.pane_numel())],
                kv[c.pane]->data[static_cast<std::size_t>(f % proj.pane_numel())]);
    }
    EXPECT_EQ(query_layout(Step::Transpose, d).dims[1], d.h);
    // The expansion and the mistake's.
    const RepeatMistake m = mistaken_repeat(t);
    bool mispaired = false;
    for (int b = 0; b < t.batch; ++b)
      for (int h = 0; h < d.h; ++h) {
        const int g = kv_head_read(d, h, false), bad = kv_head_read(d, h, true);
        ASSERT_EQ(g, h / (d.h / d.kv()));
        ASSERT_EQ(bad, h % d.kv());
        mispaired |= g != bad;
        for (int i = 0; i < t.tokens; ++i) {
          for (int e = 0; e < d.hd; ++e) {
            ASSERT_EQ(t.k_expanded.at({b, h, i, e}), t.k.at({b, g, i, e}));
            ASSERT_EQ(m.k_expanded.at({b, h, i, e}), t.k.at({b, bad, i, e}));
            ASSERT_EQ(m.v_expanded.at({b, h, i, e}), t.v.at({b, bad, i, e}));
          }
          for (int j = 0; j < t.tokens; ++j) {
            if (g == bad) {
              ASSERT_EQ(m.scores.at({b, h, i, j}), t.scores.at({b, h, i, j}));
              continue;
            }
            double want = 0.0;
            for (int e = 0; e < d.hd; ++e) want += static_cast<double>(t.q.at({b, h, i, e})) * t.k.at({b, bad, j, e});
            ASSERT_NEAR(m.scores.at({b, h, i, j}), want, 1e-5 + 1e-5 * std::fabs(want));
          }
        }
      }
    mispaired_runs += mispaired ? 1 : 0;
    EXPECT_EQ(mispaired, d.kv() > 1 && d.group() > 1) << "G " << d.kv();
  }
  EXPECT_GT(mispaired_runs, 5);
}

// QK-norm, then RoPE, come right after the split into heads (the fused chunk), before gqa's
// expansion and the scores, with or without the mistake; the wrapper has neither.
TEST(Layout, NormAndRopeStepsFollowTheSplit) {
  for (Variant v : kLayoutVariants)
    for (int opts = 0; opts < 4; ++opts)
      for (bool mistaken : {false, true}) {
        Dims d{v, 1, 4, 3, 2, 2};
        d.qk_norm = (opts & 1) != 0 && v != Variant::Wrapper;
        d.rope = (opts & 2) != 0 && v != Variant::Wrapper && v != Variant::Mla;
        d.latent = v == Variant::Mla ? 3 : 0;
        const auto steps = steps_for(d, mistaken);
        Dims plain = d;
        plain.qk_norm = plain.rope = false;
        auto want = steps_for(plain, mistaken);
        if (v == Variant::Mla) {
          EXPECT_EQ(want[1], Step::Latent);  // x -> latent first
        }
        if (v != Variant::Wrapper) {
          auto at = std::find(want.begin(), want.end(), v == Variant::FusedQkv ? Step::Chunk : Step::Transpose) + 1;
          if (d.rope) at = want.insert(at, Step::Rope);
          if (d.qk_norm) want.insert(at, Step::QkNorm);
        }
        ASSERT_EQ(steps, want) << variant_name(v) << " options " << opts;
        const auto next = std::find(steps.begin(), steps.end(), d.rope ? Step::Rope : Step::QkNorm);
        if (d.qk_norm || d.rope) {
          EXPECT_EQ(*(next + 1), v == Variant::Gqa ? Step::Expand : Step::Scores) << variant_name(v);
        }
        for (Step st : steps) {
          Step back;
          ASSERT_TRUE(parse_step(step_name(st), back));
          ASSERT_EQ(back, st);
        }
      }
}

// The input step's line says how this input was made: one copy, the seeds' two, or more.
TEST(Layout, InputCodeFollowsTheBatch) {
  EXPECT_EQ(step_code(Step::Input, Dims{Variant::WeightSplit}, 1), "x = inputs.unsqueeze(0)   # a batch of one");
  EXPECT_EQ(step_code(Step::Input, Dims{Variant::Wrapper}, 2), "x = torch.stack((inputs, inputs), dim=0)");
  EXPECT_EQ(step_code(Step::Input, Dims{Variant::FusedQkv}, 3), "x = torch.stack((inputs, inputs, inputs), dim=0)");
  EXPECT_EQ(step_code(Step::Input, Dims{Variant::WeightSplit}, 8), "x = torch.stack([inputs] * 8, dim=0)");
  EXPECT_EQ(step_code(Step::Scores, Dims{Variant::WeightSplit}, 1),
            step_code(Step::Scores, Dims{Variant::WeightSplit}, 2));
}

}  // namespace
}  // namespace mhaviz::layout
