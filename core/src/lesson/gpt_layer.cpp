// A trained GPT layer as a chapter-3 weight_split module (see gpt_layer.hpp).
#include "mhaviz/gpt_layer.hpp"

#include <stdexcept>

#include "mhaviz/gpt_forward.hpp"

namespace mhaviz {
namespace {

ModelConfig layer_config(const GptModel& m) {
  ModelConfig c;
  c.variant = Variant::WeightSplit;
  c.d_out = m.config.n_embd;
  c.num_heads = m.config.n_head;
  c.context_length = m.config.n_ctx;
  c.dropout = 0.0;
  c.qkv_bias = m.config.qkv_bias;
  c.causal = true;
  c.training = false;  // a trained model is shown as it predicts: no dropout
  return c;
}

const GptBlock& block_of(const GptModel& m, int layer) {
  if (layer < 0 || layer >= static_cast<int>(m.blocks.size()))
    throw std::out_of_range("layer " + std::to_string(layer) + " is not in 0.." + std::to_string(m.blocks.size()) + "-1");
  return m.blocks[static_cast<std::size_t>(layer)];
}

}  // namespace

// qkv [3D, D] -> W_query, W_key, W_value [D, D] (rows [p*D, (p+1)*D)); proj [D, D] -> out_proj.
Model weight_split_from_gpt_layer(const GptModel& m, int layer) {
  const GptBlock& b = block_of(m, layer);
  const int D = m.config.n_embd;
  const auto DD = static_cast<std::ptrdiff_t>(D) * D;
  Model out;
  out.config = layer_config(m);
  out.d_in = D;
  const char* names[3] = {"W_query", "W_key", "W_value"};
  const std::vector<float> qkv = gpt_linear_weight(b.qkv);  // the forward may hold it packed only
  for (int part = 0; part < 3; ++part) {
    Linear l;
    l.name = names[part];
    l.in = l.out = D;
    l.weight.assign(qkv.begin() + part * DD, qkv.begin() + (part + 1) * DD);
    if (!b.qkv.bias.empty()) l.bias.assign(b.qkv.bias.begin() + part * D, b.qkv.bias.begin() + (part + 1) * D);
    out.layers.push_back(std::move(l));
  }
  Linear proj;
  proj.name = "out_proj";
  proj.in = b.proj.in;
  proj.out = b.proj.out;
  proj.weight = gpt_linear_weight(b.proj);  // prepare_forward packs it again for this model
  proj.bias = b.proj.bias;
  out.layers.push_back(std::move(proj));
  prepare_forward(out);
  return out;
}

// x (T, n_embd) -> session of T tokens with x's rows as embeddings.
Session gpt_layer_session(const GptModel& m, int layer, const std::vector<std::string>& tokens, std::span<const float> x) {
  block_of(m, layer);
  const std::size_t D = static_cast<std::size_t>(m.config.n_embd);
  if (x.size() != tokens.size() * D)
    throw std::invalid_argument("gpt_layer_session: x holds " + std::to_string(x.size()) + " values, not " +
                                std::to_string(tokens.size()) + " x " + std::to_string(D));
  Session s;
  s.tokens = tokens;
  s.model = layer_config(m);
  s.batch = 1;
  s.embeddings.reserve(tokens.size());
  for (std::size_t t = 0; t < tokens.size(); ++t) s.embeddings.emplace_back(x.begin() + t * D, x.begin() + (t + 1) * D);
  return s;
}

}  // namespace mhaviz
