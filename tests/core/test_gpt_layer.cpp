// A trained GPT layer as the chapter-3 weight_split module: the module's forward on the
// layer's input gives the attention a GPT layer computes, written out here as loops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mhaviz/gpt_layer.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {
namespace {

Linear random_linear(std::mt19937& gen, int in, int out, bool bias) {
  std::normal_distribution<float> n(0.0f, 0.3f);
  Linear l;
  l.in = in;
  l.out = out;
  l.weight.resize(static_cast<std::size_t>(in) * out);
  for (float& w : l.weight) w = n(gen);
  if (bias) {
    l.bias.resize(static_cast<std::size_t>(out));
    for (float& b : l.bias) b = n(gen);
  }
  return l;
}

GptModel random_gpt(int layers, int d, int heads, bool qkv_bias) {
  std::mt19937 gen(5);
  GptModel m;
  m.config = {layers, heads, d, 16, 40, 1e-5f, qkv_bias};
  for (int l = 0; l < layers; ++l) {
    GptBlock b;
    b.qkv = random_linear(gen, d, 3 * d, qkv_bias);
    b.proj = random_linear(gen, d, d, true);
    m.blocks.push_back(std::move(b));
  }
  return m;
}

// x (T, D) -> (H, T, T) causal softmax(q kᵀ / √hd), q = x Wqᵀ + bq from the qkv rows.
std::vector<float> loop_attention(const GptModel& m, int layer, const std::vector<float>& x, int T) {
  const GptBlock& b = m.blocks[static_cast<std::size_t>(layer)];
  const int D = m.config.n_embd, H = m.config.n_head, hd = D / H;
  auto proj = [&](int part, int t, int f) {
    const int row = part * D + f;
    double s = b.qkv.bias.empty() ? 0.0 : b.qkv.bias[static_cast<std::size_t>(row)];
    for (int i = 0; i < D; ++i) s += double(b.qkv.weight[static_cast<std::size_t>(row) * D + i]) * x[static_cast<std::size_t>(t) * D + i];
    return s;
  };
  std::vector<float> w(static_cast<std::size_t>(H) * T * T, 0.0f);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < T; ++i) {
      std::vector<double> s(static_cast<std::size_t>(i) + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int f = 0; f < hd; ++f) dot += proj(0, i, h * hd + f) * proj(1, j, h * hd + f);
        s[static_cast<std::size_t>(j)] = dot / std::sqrt(double(hd));
        mx = std::max(mx, s[static_cast<std::size_t>(j)]);
      }
      for (double& v : s) sum += v = std::exp(v - mx);
      for (int j = 0; j <= i; ++j) w[(static_cast<std::size_t>(h) * T + i) * T + j] = float(s[static_cast<std::size_t>(j)] / sum);
    }
  return w;
}

TEST(GptLayer, WeightSplitModuleComputesTheLayersAttention) {
  for (bool bias : {true, false}) {
    const GptModel m = random_gpt(2, 12, 3, bias);
    const int T = 5;
    std::mt19937 gen(9);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> x(static_cast<std::size_t>(T) * 12);
    for (float& v : x) v = n(gen);
    std::vector<std::string> tokens{"The", "␣cat", "␣sat", "␣on", "␣it"};
    const Session s = gpt_layer_session(m, 1, tokens, x);
    ASSERT_NO_THROW(validate_session(s));
    const Model model = weight_split_from_gpt_layer(m, 1);
    EXPECT_EQ(model.config.variant, Variant::WeightSplit);
    EXPECT_FALSE(model.config.training);
    const Trace tr = forward(model, s.input_tensor());
    const auto expected = loop_attention(m, 1, x, T);
    ASSERT_EQ(tr.weights.data.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(tr.weights.data[i], expected[i], 2e-5) << "cell " << i;
    // out_proj is the layer's proj.
    EXPECT_EQ(model.layer("out_proj").weight, m.blocks[1].proj.weight);
    EXPECT_EQ(model.layer("out_proj").bias, m.blocks[1].proj.bias);
  }
}

TEST(GptLayer, LayerAndInputOutOfRangeAreErrors) {
  const GptModel m = random_gpt(2, 12, 3, true);
  EXPECT_THROW(weight_split_from_gpt_layer(m, 2), std::out_of_range);
  EXPECT_THROW(weight_split_from_gpt_layer(m, -1), std::out_of_range);
  std::vector<float> x(11);
  EXPECT_THROW(gpt_layer_session(m, 0, {"a"}, x), std::invalid_argument);
}

}  // namespace
}  // namespace mhaviz
