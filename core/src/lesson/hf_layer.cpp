// A Qwen3, Qwen2, Llama or Gemma 3 layer as the lesson's gqa module (see hf_layer.hpp).
#include "mhaviz/hf_layer.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/linear.hpp"

namespace mhaviz {
namespace {

const HfBlock& block_of(const HfModel& m, int layer) {
  if (layer < 0 || layer >= static_cast<int>(m.blocks.size()))
    throw std::out_of_range("layer " + std::to_string(layer) + " is not in 0.." + std::to_string(m.blocks.size()) +
                            "-1");
  return m.blocks[static_cast<std::size_t>(layer)];
}

void add_linear(ParameterFile& f, const std::string& name, const Linear& l, bool bias) {
  f.tensors[name + ".weight"] = {{l.out, l.in}, detail::linear_weight(l)};  // the forward may hold it packed only
  if (bias) f.tensors[name + ".bias"] = {{l.out}, l.bias};
}

// An RMSNorm scale as the lesson multiplies by it: w, or Gemma's 1 + w rounded to float once,
// which is the factor the model's kernel forms (rms_norm.hpp: · (1.0f + w)).
std::vector<float> norm_scale(const HfConfig& c, const std::vector<float>& w) {
  std::vector<float> s = w;
  if (c.gemma_norms)
    for (float& v : s) v = 1.0f + v;
  return s;
}

}  // namespace

std::string hf_layer_refusal(const HfModel& m) {
  const HfConfig& c = m.config;
  const std::string name = std::string(hf_arch_name(c.arch));
  if (c.o_bias) return name + ": o_proj has a bias (attention_bias), which the lesson's gqa out_proj has not";
  const std::int64_t q_width = static_cast<std::int64_t>(c.num_attention_heads) * c.head_dim;
  if (c.hidden_size > Limits::kMaxDim || q_width > Limits::kMaxDim)
    return name + ": hidden_size " + std::to_string(c.hidden_size) + " and heads x head_dim " +
           std::to_string(q_width) + " must be within the lesson's limit of " + std::to_string(Limits::kMaxDim);
  if (c.num_attention_heads > Limits::kMaxHeads)
    return name + ": " + std::to_string(c.num_attention_heads) + " heads, over the lesson's limit of " +
           std::to_string(Limits::kMaxHeads);
  return {};
}

ModelConfig hf_layer_config(const HfModel& m, int layer) {
  const HfBlock& b = block_of(m, layer);
  if (const std::string why = hf_layer_refusal(m); !why.empty()) throw std::invalid_argument(why);
  const HfConfig& hc = m.config;
  ModelConfig c;
  c.variant = Variant::Gqa;
  c.num_heads = hc.num_attention_heads;
  c.d_out = hc.num_attention_heads * hc.head_dim;
  c.num_kv_groups = hc.num_key_value_heads;
  c.out_dim = hc.hidden_size != c.d_out ? hc.hidden_size : 0;
  const int ctx = hc.max_position_embeddings > 0 ? hc.max_position_embeddings : Limits::kMaxContext;
  c.context_length = std::min(ctx, Limits::kMaxContext);
  c.dropout = 0.0;
  c.qkv_bias = hc.qkv_bias;
  c.causal = true;
  c.training = false;  // a trained model is shown as it predicts
  c.sliding_window = b.sliding ? hc.sliding_window : 0;
  c.qk_norm = hc.qk_norm;
  if (hc.qk_norm) c.qk_norm_eps = hc.rms_norm_eps;
  const HfRope& rope = b.sliding ? hc.rope_local : hc.rope;
  c.rope_base = rope.theta;
  // The forward's own frequencies (the same doubles) where scaling makes them other than θ^(−2i/hd).
  if (rope.scaling != HfRope::Scaling::None) c.rope_inv_freq = b.sliding ? m.inv_freq_local : m.inv_freq_global;
  // Gemma multiplies the scores by query_pre_attn_scalar^−0.5 (even where it equals head_dim: the
  // factor rounds otherwise than the division); the others divide by √head_dim, as the lesson.
  if (hc.gemma_norms) c.query_pre_attn_scalar = hc.query_pre_attn_scalar;
  return c;
}

// q/k/v_proj -> W_query/W_key/W_value, o_proj -> out_proj, q_norm/k_norm -> q_norm.scale/k_norm.scale.
std::shared_ptr<ParameterFile> hf_layer_parameters(const HfModel& m, int layer) {
  const HfBlock& b = block_of(m, layer);
  const HfConfig& c = m.config;
  auto f = std::make_shared<ParameterFile>();
  add_linear(*f, "W_query", b.q, c.qkv_bias);
  add_linear(*f, "W_key", b.k, c.qkv_bias);
  add_linear(*f, "W_value", b.v, c.qkv_bias);
  add_linear(*f, "out_proj", b.o, false);
  if (c.qk_norm) {
    const std::int64_t hd = c.head_dim;
    f->tensors["q_norm.scale"] = {{hd}, norm_scale(c, b.q_norm)};
    f->tensors["k_norm.scale"] = {{hd}, norm_scale(c, b.k_norm)};
  }
  return f;
}

// x (T, hidden) -> a session of T tokens with x's rows as embeddings.
Session hf_layer_session(const HfModel& m, int layer, const std::vector<std::string>& tokens,
                         std::span<const float> x) {
  Session s;
  s.model = hf_layer_config(m, layer);
  const std::size_t C = static_cast<std::size_t>(m.config.hidden_size);
  if (x.size() != tokens.size() * C)
    throw std::invalid_argument("hf_layer_session: x holds " + std::to_string(x.size()) + " values, not " +
                                std::to_string(tokens.size()) + " x " + std::to_string(C));
  s.model.weights = hf_layer_parameters(m, layer);
  s.tokens = tokens;
  s.batch = 1;
  s.embeddings.reserve(tokens.size());
  for (std::size_t t = 0; t < tokens.size(); ++t) s.embeddings.emplace_back(x.begin() + t * C, x.begin() + (t + 1) * C);
  return s;
}

}  // namespace mhaviz
