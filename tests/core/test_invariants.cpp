// Properties every forward must have, on random shapes and all three variants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <thread>
#include <tuple>

#include "mhaviz/backend.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

const Variant kVariants[] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv};

// One instance per backend: a backend this CPU cannot run is reported as skipped (GTEST_SKIP,
// in CTest's summary and `core_tests`' own), never dropped silently, and every run prints the
// backends it exercised (test::OnBackend, test_util.hpp).
class OracleOnBackend : public test::OnBackend {};

// Same dropout draws, and every named tensor of got within atol + rtol·|want| of want's.
void expect_traces_near(const Model& m, const Trace& got, const Trace& want, double atol, double rtol,
                        const std::string& what) {
  ASSERT_EQ(got.keep, want.keep) << "dropout draws differ, " << what;
  const auto a = named_tensors(m, got), b = named_tensors(m, want);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].name, b[i].name);
    ASSERT_EQ(a[i].tensor.shape, b[i].tensor.shape) << a[i].name;
    for (std::size_t e = 0; e < a[i].tensor.data.size(); ++e)
      ASSERT_NEAR(a[i].tensor.data[e], b[i].tensor.data[e], atol + rtol * std::fabs(b[i].tensor.data[e]))
          << what << " " << a[i].name << "[" << e << "]";
  }
}

// The fast forward against the loop oracle.
void expect_matches_oracle(const Model& m, const Tensor& input, double atol, double rtol, const std::string& what) {
  expect_traces_near(m, forward(m, input), forward_reference(m, input), atol, rtol, what);
}

TEST_P(OracleOnBackend, FastForwardEqualsLoopOracle) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 60; ++trial)
    for (Variant v : kVariants) {
      const Session s = test::random_session(gen, v, trial % 2 == 1);
      expect_matches_oracle(build_model(s.model, s.d_in()), s.input_tensor(), 1e-5, 1e-5,
                            std::string(variant_name(v)) + " trial " + std::to_string(trial));
    }
}

// Shapes past the kernel's tile edges (12 rows, 32 columns) and large enough that the
// products and stages split over threads; the activation tolerance.
TEST_P(OracleOnBackend, LargerShapesEqualLoopOracle) {
  std::mt19937 gen(23);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int trial = 0; trial < 12; ++trial) {
    const Variant v = kVariants[trial % 3];
    Session s = test::random_session(gen, v, trial % 4 == 1);
    const int T = pick(13, 150), din = pick(1, 200);
    s.model.num_heads = pick(1, 6);
    s.model.d_out = v == Variant::Wrapper ? pick(1, 40) : s.model.num_heads * pick(1, 40);
    s.model.context_length = T;
    s.batch = pick(1, 2);
    std::uniform_real_distribution<float> val(-2.0f, 2.0f);
    s.tokens.clear();
    s.embeddings.assign(static_cast<std::size_t>(T), std::vector<float>(static_cast<std::size_t>(din)));
    for (auto& row : s.embeddings) {
      s.tokens.push_back("t" + std::to_string(s.tokens.size()));
      for (auto& x : row) x = val(gen);
    }
    expect_matches_oracle(build_model(s.model, s.d_in()), s.input_tensor(), 2e-5, 1e-4,
                          std::string(variant_name(v)) + " T=" + std::to_string(T) + " d_in=" + std::to_string(din) +
                              " trial " + std::to_string(trial));
  }
}
INSTANTIATE_TEST_SUITE_P(Backends, OracleOnBackend,
                         ::testing::Values(Backend::Avx512, Backend::Avx2, Backend::OpenBlas), test::backend_label);

// GPT-2 small's attention (T = 128, d = 768, 12 heads): the AVX-512 kernel and OpenBLAS
// give the same tensors to float rounding.
// A model of the given shape and an input (b, T, d_in) uniform in [-1, 1).
struct Sized {
  Model model;
  Tensor input;
};
Sized sized(Variant v, int b, int T, int d_in, int d_out, int heads, double dropout, unsigned seed) {
  ModelConfig c;
  c.variant = v;
  c.d_out = d_out;
  c.num_heads = heads;
  c.context_length = T;
  c.dropout = dropout;
  Sized s{build_model(c, d_in), Tensor({b, T, d_in})};
  std::mt19937 gen(seed);
  for (auto& e : s.input.data) e = torch_uniform(gen, -1.0f, 1.0f);
  return s;
}

// One test per backend that skips, visibly, where the CPU cannot run it.
class BackendsThisCpuRuns : public ::testing::TestWithParam<Backend> {};
TEST_P(BackendsThisCpuRuns, Runs) {
  if (!backend_supported(GetParam())) GTEST_SKIP() << "this CPU cannot run " << backend_name(GetParam());
  const Backend before = backend();
  ASSERT_TRUE(set_backend(GetParam()));
  EXPECT_EQ(backend(), GetParam());
  set_backend(before);
}
INSTANTIATE_TEST_SUITE_P(Backends, BackendsThisCpuRuns, ::testing::Values(Backend::Avx512, Backend::Avx2, Backend::OpenBlas),
                         [](const auto& p) { return std::string(backend_name(p.param)); });

// The kernel's two tile sets compute each element as the same FMA chain: equal bits.
TEST(Invariants, Avx2AndAvx512KernelsGiveTheSameBits) {
  if (!backend_supported(Backend::Avx512) || !backend_supported(Backend::Avx2)) GTEST_SKIP() << "needs a CPU with both";
  for (const auto& [T, d, h] : {std::tuple{1, 8, 1}, {7, 20, 4}, {45, 96, 3}, {130, 768, 12}}) {
    const Sized g = sized(Variant::WeightSplit, 1, T, d, d, h, 0.0, 41);
    const Backend before = backend();
    set_backend(Backend::Avx512);
    const Trace a = forward(g.model, g.input);
    set_backend(Backend::Avx2);
    const Trace b = forward(g.model, g.input);
    set_backend(before);
    expect_traces_near(g.model, a, b, 0.0, 0.0, "avx2 against avx512, T " + std::to_string(T));
  }
}

TEST(Invariants, BackendsAgreeAtGpt2Size) {
  if (!backend_supported(Backend::Avx512) && !backend_supported(Backend::Avx2)) GTEST_SKIP() << "this CPU runs no kernel";
  const Sized g = sized(Variant::WeightSplit, 1, 128, 768, 768, 12, 0.1, 29);
  const Model& m = g.model;
  const Tensor& x = g.input;
  const Backend before = backend();
  set_backend(backend_supported(Backend::Avx512) ? Backend::Avx512 : Backend::Avx2);
  const Trace a = forward(m, x);
  set_backend(Backend::OpenBlas);
  const Trace b = forward(m, x);
  set_backend(before);
  expect_traces_near(m, a, b, 2e-5, 1e-4, "kernel against openblas");
}

// Two threads running threaded-size forwards at once (one gets the worker pool, the other
// runs inline), into buffers at other addresses, produce exactly the bits of a forward
// run alone: the same input always shows the same numbers.
TEST(Invariants, ConcurrentForwardsGiveTheSameTensors) {
  const Sized g = sized(Variant::FusedQkv, 2, 96, 192, 256, 4, 0.0, 31);
  const Model& m = g.model;
  const Tensor& x = g.input;
  const Trace alone = forward(m, x);
  auto run = [&](int& mismatches) {
    Trace t;
    for (int i = 0; i < 15; ++i) {
      forward(m, x, t);
      if (t.output.data != alone.output.data || t.weights.data != alone.weights.data) ++mismatches;
    }
  };
  int m1 = 0, m2 = 0;
  std::thread other(run, std::ref(m2));
  run(m1);
  other.join();
  EXPECT_EQ(m1, 0);
  EXPECT_EQ(m2, 0);
}

// The forward projects with a stacked copy of W_query/W_key/W_value: a weight changed
// through layer(name) must be seen by the next forward, not the stale stack.
TEST(Invariants, ChangedWeightsReachTheForward) {
  std::mt19937 gen(11);
  for (Variant v : {Variant::Wrapper, Variant::WeightSplit}) {
    const Session s = test::random_session(gen, v, false);
    Model m = build_model(s.model, s.d_in());
    const std::string key = v == Variant::Wrapper ? "heads.0.W_key" : "W_key";
    for (float& w : m.layer(key).weight) w *= -2.0f;
    const Trace fast = forward(m, s.input_tensor());
    const Trace slow = forward_reference(m, s.input_tensor());
    for (std::size_t e = 0; e < slow.keys.data.size(); ++e)
      ASSERT_NEAR(fast.keys.data[e], slow.keys.data[e], 1e-5 + 1e-5 * std::fabs(slow.keys.data[e])) << variant_name(v);
    prepare_forward(m);
    const Trace restacked = forward(m, s.input_tensor());
    for (std::size_t e = 0; e < fast.keys.data.size(); ++e)
      ASSERT_NEAR(restacked.keys.data[e], fast.keys.data[e], 1e-5 + 1e-5 * std::fabs(fast.keys.data[e])) << variant_name(v);
  }
  // The output projection's packed copy goes stale the same way.
  const Session s = test::random_session(gen, Variant::FusedQkv, false);
  Model m = build_model(s.model, s.d_in());
  for (float& w : m.layer("linear_layer").weight) w *= 3.0f;
  const Trace fast = forward(m, s.input_tensor()), slow = forward_reference(m, s.input_tensor());
  for (std::size_t e = 0; e < slow.output.data.size(); ++e)
    ASSERT_NEAR(fast.output.data[e], slow.output.data[e], 1e-5 + 1e-5 * std::fabs(slow.output.data[e]));
}

// Every row sums to 1 over exactly the cells the mask leaves: the masked cells (j > i under
// a causal mask, counted here from the config, not from the trace's own helper) are exactly 0,
// and every other cell is positive, so a mask that hides one cell too many or too few fails.
TEST(Invariants, SoftmaxRowsSumToOneAndMaskedCellsAreZero) {
  std::mt19937 gen(11);
  std::int64_t masked_seen = 0, masked_expected = 0;
  for (int trial = 0; trial < 40; ++trial)
    for (Variant v : kVariants) {
      const Session s = test::random_session(gen, v, false);
      const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
      const int T = t.tokens;
      for (int b = 0; b < t.batch; ++b)
        for (int h = 0; h < t.heads; ++h) {
          masked_expected += s.model.causal ? T * (T - 1) / 2 : 0;
          for (int i = 0; i < T; ++i) {
            double sum = 0;
            for (int j = 0; j < T; ++j) {
              const float w = t.weights.at({b, h, i, j});
              const bool hidden = s.model.causal && j > i;
              if (w == 0.0f) ++masked_seen;
              if (hidden) {
                EXPECT_EQ(w, 0.0f) << variant_name(v) << " masked cell (" << i << ", " << j << ") of T " << T;
              } else {
                EXPECT_GT(w, 0.0f) << variant_name(v) << " visible cell (" << i << ", " << j << ") of T " << T;
              }
              sum += w;
            }
            EXPECT_NEAR(sum, 1.0, 1e-5);
          }
        }
    }
  EXPECT_EQ(masked_seen, masked_expected) << "cells of weight 0 against the cells a causal mask hides";
  EXPECT_GT(masked_expected, 0);
}

TEST(Invariants, CausalOutputIgnoresLaterTokens) {
  std::mt19937 gen(13);
  for (int trial = 0; trial < 30; ++trial)
    for (Variant v : kVariants) {
      Session s = test::random_session(gen, v, false);
      s.model.causal = true;
      if (s.num_tokens() < 2) continue;
      const Model m = build_model(s.model, s.d_in());
      const Trace before = forward(m, s.input_tensor());
      const int changed = std::uniform_int_distribution<int>(1, s.num_tokens() - 1)(gen);
      for (auto& x : s.embeddings[static_cast<std::size_t>(changed)]) x += 1.5f;
      const Trace after = forward(m, s.input_tensor());
      const int width = static_cast<int>(before.output.shape[2]);
      bool later_changed = false;
      for (int b = 0; b < s.batch; ++b)
        for (int t = 0; t < s.num_tokens(); ++t)
          for (int j = 0; j < width; ++j) {
            if (t < changed) ASSERT_EQ(before.output.at({b, t, j}), after.output.at({b, t, j})) << "token " << t;
            else later_changed = later_changed || before.output.at({b, t, j}) != after.output.at({b, t, j});
          }
      EXPECT_TRUE(later_changed) << "changing token " << changed << " changed nothing";
    }
}

TEST(Invariants, WrapperEqualsWeightSplitWithStackedWeights) {
  std::mt19937 gen(17);
  for (int trial = 0; trial < 40; ++trial) {
    const Session s = test::random_session(gen, Variant::Wrapper, false);
    const Model wrapper = build_model(s.model, s.d_in());
    const Model split = weight_split_from_wrapper(wrapper);
    ASSERT_EQ(split.config.d_out % split.config.num_heads, 0);
    const Trace a = forward(wrapper, s.input_tensor()), b = forward(split, s.input_tensor());
    ASSERT_EQ(a.weights.shape, b.weights.shape);
    for (std::size_t i = 0; i < a.weights.data.size(); ++i) EXPECT_NEAR(a.weights.data[i], b.weights.data[i], 1e-6);
    ASSERT_EQ(a.output.shape, b.output.shape);
    for (std::size_t i = 0; i < a.output.data.size(); ++i) EXPECT_NEAR(a.output.data[i], b.output.data[i], 1e-6);
  }
}

TEST(Invariants, FusedEqualsWeightSplitWithRearrangedWeights) {
  std::mt19937 gen(19);
  for (int trial = 0; trial < 40; ++trial) {
    const Session s = test::random_session(gen, Variant::FusedQkv, false);
    const Model fused = build_model(s.model, s.d_in());
    const Model split = weight_split_from_fused(fused);
    const Trace a = forward(fused, s.input_tensor()), b = forward(split, s.input_tensor());
    for (std::size_t i = 0; i < a.q.data.size(); ++i) ASSERT_NEAR(a.q.data[i], b.q.data[i], 1e-6);
    for (std::size_t i = 0; i < a.weights.data.size(); ++i) EXPECT_NEAR(a.weights.data[i], b.weights.data[i], 1e-6);
    for (std::size_t i = 0; i < a.output.data.size(); ++i) EXPECT_NEAR(a.output.data[i], b.output.data[i], 1e-6);
  }
}

TEST(Invariants, MistakenMergeScramblesExactlyAsAFlatReshape) {
  const Session s = lesson("seed003-weight-split-6d");
  const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
  const Tensor wrong = mistaken_merge(t);
  const int T = t.tokens, hd = t.head_dim, M = t.heads * hd;
  ASSERT_EQ(wrong.shape, t.context_merged.shape);
  bool differs = false;
  for (int b = 0; b < t.batch; ++b)
    for (int r = 0; r < T; ++r)
      for (int c = 0; c < M; ++c) {
        // Flat position r*M + c of batch b in the (h, T, hd) buffer: head, token, feature.
        const int flat = r * M + c, h = flat / (T * hd), tok = (flat / hd) % T, d = flat % hd;
        EXPECT_EQ(wrong.at({b, r, c}), t.context.at({b, h, tok, d}));
        EXPECT_EQ(t.context_merged.at({b, r, c}), t.context.at({b, c / hd, r, c % hd}));
        differs = differs || wrong.at({b, r, c}) != t.context_merged.at({b, r, c});
      }
  EXPECT_TRUE(differs);
}

TEST(Invariants, StagesDeriveFromScores) {
  const Session s = lesson("journey-dropout-half");
  const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
  ASSERT_TRUE(t.dropout_applied());
  for (int h = 0; h < t.heads; ++h) {
    const auto raw = t.stage_matrix(Stage::Scores, 1, h), masked = t.stage_matrix(Stage::Masked, 1, h);
    const auto scaled = t.stage_matrix(Stage::Scaled, 1, h), dropped = t.stage_matrix(Stage::Dropped, 1, h);
    for (int i = 0; i < t.tokens; ++i)
      for (int j = 0; j < t.tokens; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * t.tokens + j);
        EXPECT_EQ(raw[e], t.scores.at({1, h, i, j}));
        if (j > i) {
          EXPECT_TRUE(std::isinf(masked[e]) && masked[e] < 0);
          EXPECT_TRUE(std::isinf(scaled[e]) && scaled[e] < 0);
        } else {
          EXPECT_EQ(masked[e], raw[e]);
          EXPECT_FLOAT_EQ(scaled[e], raw[e] / std::sqrt(static_cast<float>(t.head_dim)));
        }
        EXPECT_EQ(dropped[e], t.kept(1, h, i, j) ? t.weights.at({1, h, i, j}) * 2.0f : 0.0f);
        EXPECT_EQ(t.stage_value(Stage::Scaled, 1, h, i, j), scaled[e]);
      }
  }
}

TEST(Invariants, ForwardIsRepeatableAndReusesBuffers) {
  const Session s = lesson("journey-dropout-half");
  const Model m = build_model(s.model, s.d_in());
  Trace reused;
  forward(m, s.input_tensor(), reused);
  const Trace fresh = forward(m, s.input_tensor());
  forward(m, s.input_tensor(), reused);
  EXPECT_EQ(reused.keep, fresh.keep);
  EXPECT_EQ(reused.output.data, fresh.output.data);
  // Eval mode draws nothing and drops nothing.
  ModelConfig eval = s.model;
  eval.training = false;
  const Trace e = forward(build_model(eval, s.d_in()), s.input_tensor());
  EXPECT_FALSE(e.dropout_applied());
  EXPECT_EQ(e.weights.data, fresh.weights.data);
}

TEST(Cost, ParameterCountsMatchTheModels) {
  ModelConfig c;
  c.variant = Variant::WeightSplit;
  c.d_out = 768;
  c.num_heads = 12;
  c.context_length = 1024;
  EXPECT_EQ(forward_cost(c, 768, 4, 1).parameters, 2360064);
  std::mt19937 gen(23);
  for (int trial = 0; trial < 20; ++trial)
    for (Variant v : kVariants) {
      const Session s = test::random_session(gen, v, false);
      const Model m = build_model(s.model, s.d_in());
      EXPECT_EQ(forward_cost(s.model, s.d_in(), s.num_tokens(), s.batch).parameters, m.parameter_count());
    }
  // The seeds' argument: the wrapper needs h times the matmul calls.
  c.variant = Variant::Wrapper;
  c.d_out = 64;
  EXPECT_EQ(forward_cost(c, 768, 4, 1).matmul_calls, 60);
  c.variant = Variant::FusedQkv;
  c.d_out = 768;
  EXPECT_EQ(forward_cost(c, 768, 4, 1).matmul_calls, 4);
}

}  // namespace
}  // namespace mhaviz
