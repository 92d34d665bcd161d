// The trainer's math without torch: the fast forward and backward against the loop oracle on
// every backend, the oracle against finite differences, AdamW against its formula, the
// parameter table's names and order.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "mhaviz/train.hpp"
#include "kernels/softmax.hpp"
#include "test_util.hpp"
#include "train/reference.hpp"

namespace mhaviz {
namespace {

using train::GptTrainConfig;
using train::GptTrainModel;

GptTrainConfig config(int V, int T, int C, int H, int L, bool attn_only, bool qkv_bias) {
  GptTrainConfig c;
  c.vocab_size = V;
  c.context_length = T;
  c.emb_dim = C;
  c.n_heads = H;
  c.n_layers = L;
  c.attn_only = attn_only;
  c.qkv_bias = qkv_bias;
  return c;
}

// A model from the seed with every parameter moved a little, so LayerNorm scales are not all 1
// and shifts and biases not all 0 (as after some training).
GptTrainModel perturbed_model(const GptTrainConfig& c, unsigned seed) {
  GptTrainModel m = train::init_model(c, seed);
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.0f, 0.1f);
  for (float& p : m.params) p += n(gen);
  return m;
}

std::vector<std::int32_t> random_tokens(const GptTrainConfig& c, int B, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::int32_t> t(static_cast<std::size_t>(B * (c.context_length + 1)));
  for (auto& id : t) id = static_cast<std::int32_t>(gen() % static_cast<unsigned>(c.vocab_size));
  return t;
}

// [SECTION] the parameter table

TEST(TrainLayout, NamesAndOrderAreTorchsParameters) {
  const auto full = train::parameter_layout(config(10, 8, 6, 2, 1, false, true));
  std::vector<std::string> names;
  for (const auto& t : full) names.push_back(t.name);
  const std::vector<std::string> expected = {"tok_emb.weight",
                                             "pos_emb.weight",
                                             "trf_blocks.0.att.W_query.weight",
                                             "trf_blocks.0.att.W_query.bias",
                                             "trf_blocks.0.att.W_key.weight",
                                             "trf_blocks.0.att.W_key.bias",
                                             "trf_blocks.0.att.W_value.weight",
                                             "trf_blocks.0.att.W_value.bias",
                                             "trf_blocks.0.att.out_proj.weight",
                                             "trf_blocks.0.att.out_proj.bias",
                                             "trf_blocks.0.ff.layers.0.weight",
                                             "trf_blocks.0.ff.layers.0.bias",
                                             "trf_blocks.0.ff.layers.2.weight",
                                             "trf_blocks.0.ff.layers.2.bias",
                                             "trf_blocks.0.norm1.scale",
                                             "trf_blocks.0.norm1.shift",
                                             "trf_blocks.0.norm2.scale",
                                             "trf_blocks.0.norm2.shift",
                                             "final_norm.scale",
                                             "final_norm.shift",
                                             "out_head.weight"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(full[10].shape, (std::vector<std::int64_t>{24, 6}));  // ff.layers.0: [4C, C]
  std::int64_t offset = 0;
  for (const auto& t : full) {
    EXPECT_EQ(t.offset, offset) << t.name;
    offset += t.numel();
  }
  const auto attn = train::parameter_layout(config(10, 8, 6, 2, 2, true, false));
  ASSERT_EQ(attn.size(), 2u + 2 * 5 + 1);
  EXPECT_EQ(attn[2].name, "trf_blocks.0.att.W_query.weight");
  EXPECT_EQ(attn[6].name, "trf_blocks.0.att.out_proj.bias");
  EXPECT_EQ(attn.back().name, "out_head.weight");
}

TEST(TrainLayout, BadSizesNameTheOptionAndValue) {
  auto message = [](const GptTrainConfig& c) {
    try {
      train::validate_config(c);
    } catch (const train::TrainError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(config(64, 32, 64, 5, 2, true, false)),
            "--heads: 5 does not divide --d-model 64 (each head gets d-model / heads dimensions)");
  EXPECT_EQ(message(config(64, 32, 64, 4, 0, true, false)), "--layers: 0 is out of range [1, 64]");
  EXPECT_EQ(message(config(1, 32, 64, 4, 2, true, false)), "--vocab: 1 is out of range [2, 1048576]");
  EXPECT_EQ(message(config(64, 1, 64, 4, 2, true, false)), "--context: 1 is out of range [2, 4096]");
  EXPECT_EQ(message(config(64, 32, 64, 4, 2, true, false)), "");
}

TEST(TrainInit, LayerNormOnesAndZerosAndTheSameBitsForTheSameSeed) {
  const GptTrainConfig c = config(20, 9, 8, 2, 2, false, false);
  const GptTrainModel a = train::init_model(c, 5), b = train::init_model(c, 5), other = train::init_model(c, 6);
  EXPECT_EQ(a.params, b.params);
  EXPECT_NE(a.params, other.params);
  for (const auto& t : a.layout) {
    const auto v = a.values(t.name);
    if (t.name.ends_with(".scale")) {
      EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 1.0f; })) << t.name;
    }
    if (t.name.ends_with(".shift")) {
      EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; })) << t.name;
    }
    if (t.name.ends_with("_emb.weight")) {  // normal(0, 1): not the Linears' small uniform bound
      double sq = 0;
      for (float x : v) sq += static_cast<double>(x) * x;
      EXPECT_GT(sq / static_cast<double>(v.size()), 0.5) << t.name;
    }
  }
}

// [SECTION] fast path against the oracle

// Gradients a, b of one tensor: max |a − b| relative to the tensor's largest |b|. The key
// projection's bias has a gradient of exactly 0 (softmax ignores a constant added to a row of
// scores, and q·b_key is one): where b is that small against the model's largest gradient g_max,
// both sides must be rounding noise, max |a| below 1e-6·g_max, which then counts as no error.
double gradient_error(const float* a, const double* b, std::int64_t n, double g_max) {
  double diff = 0, scale = 0, a_max = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
    a_max = std::max(a_max, std::fabs(static_cast<double>(a[i])));
  }
  if (scale < 1e-6 * g_max) return a_max < 1e-6 * g_max ? 0.0 : 1.0;
  return diff / scale;
}

void expect_matches_oracle(const GptTrainConfig& c, int B, unsigned seed, const std::string& label) {
  const GptTrainModel m = perturbed_model(c, seed);
  const auto tokens = random_tokens(c, B, seed + 1);
  train::Activations acts;
  const double loss = train::forward(m, tokens, B, acts);
  std::vector<float> grads(m.params.size());
  train::backward(m, acts, grads);
  std::vector<double> ref;
  const double ref_loss = train::loss_and_grads_reference(m, tokens, B, &ref);
  EXPECT_NEAR(loss, ref_loss, 2e-6 * ref_loss) << label;
  double g_max = 0;
  for (double g : ref) g_max = std::max(g_max, std::fabs(g));
  for (const auto& t : m.layout)
    EXPECT_LT(gradient_error(grads.data() + t.offset, ref.data() + t.offset, t.numel(), g_max), 2e-5)
        << label << " " << t.name;
  // The step as the trainer takes it, the batch in two shards: the same numbers to rounding.
  train::StepWorkspace ws;
  std::vector<float> sharded(m.params.size());
  EXPECT_NEAR(train::loss_and_gradients(m, tokens, B, ws, sharded), ref_loss, 2e-6 * ref_loss) << label;
  for (const auto& t : m.layout)
    EXPECT_LT(gradient_error(sharded.data() + t.offset, ref.data() + t.offset, t.numel(), g_max), 2e-5)
        << label << " sharded " << t.name;
  ASSERT_EQ(ws.losses.size(), acts.losses.size()) << label;
  for (std::size_t i = 0; i < ws.losses.size(); ++i)
    EXPECT_NEAR(ws.losses[i], acts.losses[i], 1e-6f * acts.losses[i]) << label;
}

class TrainOracle : public test::OnBackend {};

TEST_P(TrainOracle, FastForwardAndBackwardMatchTheLoops) {
  // Sizes off the tiles' edges (12 and 6 rows, 32 and 16 columns), one head, heads of 1.
  expect_matches_oracle(config(29, 13, 24, 3, 2, true, false), 3, 1, "attn-only");
  expect_matches_oracle(config(29, 13, 24, 3, 2, false, false), 3, 2, "full");
  expect_matches_oracle(config(37, 7, 20, 4, 1, false, true), 2, 3, "full, qkv_bias");
  expect_matches_oracle(config(5, 2, 3, 3, 3, true, true), 1, 4, "attn-only, hd 1, T 2");
  expect_matches_oracle(config(70, 33, 36, 1, 1, false, false), 2, 5, "one head of 36, V 70");
}

TEST_P(TrainOracle, ThreadedSizesMatchTheLoops) {
  // The induction experiment's shape at 8 sequences: large enough to split over threads.
  expect_matches_oracle(config(64, 32, 64, 4, 2, true, false), 8, 6, "experiment shape");
  expect_matches_oracle(config(64, 32, 64, 4, 1, false, false), 8, 7, "full at that shape");
}

TEST_P(TrainOracle, RepeatedStepsGiveTheSameBits) {
  const GptTrainConfig c = config(64, 32, 64, 4, 2, true, false);
  const GptTrainModel m = perturbed_model(c, 8);
  const auto tokens = random_tokens(c, 16, 9);
  train::Activations a1, a2;
  std::vector<float> g1(m.params.size()), g2(m.params.size());
  const double l1 = train::forward(m, tokens, 16, a1);
  train::backward(m, a1, g1);
  const double l2 = train::forward(m, tokens, 16, a2);
  train::backward(m, a2, g2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
}

INSTANTIATE_TEST_SUITE_P(Backends, TrainOracle, ::testing::Values(Backend::Avx512, Backend::Avx2, Backend::OpenBlas),
                         test::backend_label);

TEST(TrainOracle, LoopsMatchFiniteDifferences) {
  for (const GptTrainConfig& c : {config(7, 4, 6, 2, 2, true, true), config(7, 4, 6, 3, 1, false, true)}) {
    const GptTrainModel m = perturbed_model(c, 11);
    std::vector<double> p(m.params.begin(), m.params.end()), grads;
    const auto tokens = random_tokens(c, 2, 12);
    train::loss_and_grads_double(c, p, tokens, 2, &grads);
    // Every tensor's first and last value: central differences in double.
    for (const auto& t : m.layout)
      for (std::int64_t i : {t.offset, t.offset + t.numel() - 1}) {
        const double h = 1e-5, keep = p[static_cast<std::size_t>(i)];
        p[static_cast<std::size_t>(i)] = keep + h;
        const double up = train::loss_and_grads_double(c, p, tokens, 2, nullptr);
        p[static_cast<std::size_t>(i)] = keep - h;
        const double down = train::loss_and_grads_double(c, p, tokens, 2, nullptr);
        p[static_cast<std::size_t>(i)] = keep;
        EXPECT_NEAR(grads[static_cast<std::size_t>(i)], (up - down) / (2 * h), 1e-7)
            << t.name << " [" << i - t.offset << "]";
      }
  }
}

// [SECTION] the attention's softmax over a head's block

TEST(TrainSoftmax, CausalBlockHasTheBitsOfSoftmaxRowRowByRow) {
  std::mt19937 gen(5);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (const int T : {1, 2, 5, 8, 9, 16, 31, 32, 33, 70})
    for (const float divisor : {4.0f, 5.0f, 1.0f}) {
      std::vector<float> s(static_cast<std::size_t>(T * T)), block, row(static_cast<std::size_t>(T)),
          scratch(static_cast<std::size_t>(detail::softmax_scratch(T)));
      for (float& x : s) x = n(gen);
      block = s;
      detail::softmax_causal(block.data(), T, divisor);
      for (int i = 0; i < T; ++i) {
        detail::softmax_row(s.data() + i * T, i + 1, divisor, scratch.data(), row.data());
        for (int j = 0; j < T; ++j) {
          const float want = j <= i ? row[static_cast<std::size_t>(j)] : 0.0f;
          ASSERT_EQ(std::bit_cast<std::uint32_t>(block[static_cast<std::size_t>(i * T + j)]),
                    std::bit_cast<std::uint32_t>(want))
              << "T " << T << " divisor " << divisor << " [" << i << ", " << j << "]";
        }
      }
      // The backward against att ⊙ (d − rowsum(att ⊙ d)) / divisor in double.
      std::vector<float> d(s.size());
      for (float& x : d) x = n(gen);
      std::vector<float> g = d;
      detail::softmax_causal_backward(g.data(), block.data(), T, divisor);
      for (int i = 0; i < T; ++i) {
        double dot = 0;
        for (int j = 0; j <= i; ++j)
          dot +=
              static_cast<double>(block[static_cast<std::size_t>(i * T + j)]) * d[static_cast<std::size_t>(i * T + j)];
        for (int j = 0; j < T; ++j) {
          const std::size_t k = static_cast<std::size_t>(i * T + j);
          const double want = j <= i ? block[k] * (d[k] - dot) / divisor : 0.0;
          ASSERT_NEAR(g[k], want, 1e-5 * (1 + std::fabs(want))) << "T " << T << " [" << i << ", " << j << "]";
          if (j > i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(g[k]), 0u) << "an exact +0 above the diagonal";
          }
        }
      }
    }
}

// [SECTION] AdamW

TEST(TrainAdamW, MatchesItsFormulaInDouble) {
  std::mt19937 gen(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> p(1000), g(1000);
  for (float& x : p) x = n(gen);
  std::vector<double> pd(p.begin(), p.end()), m(1000, 0.0), v(1000, 0.0);
  train::AdamW opt;
  opt.lr = 1e-2;
  opt.weight_decay = 0.1;
  for (int step = 1; step <= 5; ++step) {
    for (float& x : g) x = n(gen);
    g[7] = 0.0f;  // a parameter the batch does not reach: only the decay moves it
    const float before = p[7];
    opt.update(p, g);
    for (std::size_t i = 0; i < p.size(); ++i) {
      pd[i] *= 1 - 1e-2 * 0.1;
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * static_cast<double>(g[i]) * g[i];
      const double mhat = m[i] / (1 - std::pow(0.9, step)),
                   denom = std::sqrt(v[i] / (1 - std::pow(0.999, step))) + 1e-8;
      pd[i] -= 1e-2 * mhat / denom;
      // The float path and the double formula part by rounding only.
      ASSERT_NEAR(p[i], pd[i], 1e-6 * (1 + std::fabs(pd[i]))) << "step " << step << " [" << i << "]";
    }
    if (step == 1) {
      EXPECT_EQ(p[7], before * static_cast<float>(1 - 1e-2 * 0.1));
    }
  }
  EXPECT_EQ(opt.step, 5);
}

}  // namespace
}  // namespace mhaviz
