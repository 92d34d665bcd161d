#include <cmath>
#include <limits>

#include "lesson/forward_steps.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

std::string_view stage_name(Stage s) {
  switch (s) {
    case Stage::Scores: return "scores";
    case Stage::Masked: return "masked";
    case Stage::Scaled: return "scaled";
    case Stage::Weights: return "weights";
    case Stage::Dropped: return "dropped";
  }
  return "?";
}

std::string_view stage_title(Stage s) {
  switch (s) {
    case Stage::Scores: return "Raw scores q\xC2\xB7k\xE1\xB5\x80";
    case Stage::Masked: return "Masked scores";
    case Stage::Scaled:
      return "Scaled scores / \xE2\x88\x9A"
             "d";
    case Stage::Weights: return "Attention weights (softmax)";
    case Stage::Dropped: return "Weights after dropout";
  }
  return "?";
}

bool parse_stage(std::string_view name, Stage& out) {
  for (int i = 0; i < kStageCount; ++i) {
    if (stage_name(static_cast<Stage>(i)) == name) {
      out = static_cast<Stage>(i);
      return true;
    }
  }
  return false;
}

Cost forward_cost(const ModelConfig& c, int d_in, int tokens, int batch) {
  const std::int64_t b = batch, T = tokens, H = c.num_heads, D = c.d_out, hd = head_dim(c), din = d_in;
  const std::int64_t bias = c.qkv_bias ? 1 : 0;
  Cost k;
  const std::int64_t attention_flops = 2 * (2 * b * H * T * T * hd);  // q·kᵀ and weights·v
  switch (c.variant) {
    case Variant::Wrapper:
      k.matmul_calls = H * 5;  // per head: 3 Linear, q·kᵀ, weights·v
      k.flops = H * 3 * (2 * b * T * din * D) + attention_flops;
      k.parameters = H * 3 * (din * D + bias * D);
      break;
    case Variant::WeightSplit:
      k.matmul_calls = 6;  // 3 Linear, q·kᵀ, weights·v, out_proj
      k.flops = 3 * (2 * b * T * din * D) + attention_flops + 2 * b * T * D * D;
      k.parameters = 3 * (din * D + bias * D) + D * D + D;
      break;
    case Variant::FusedQkv:
      k.matmul_calls = 4;  // qkv_layer, q·kᵀ, weights·v, linear_layer
      k.flops = 2 * b * T * din * 3 * D + attention_flops + 2 * b * T * D * D;
      k.parameters = din * 3 * D + bias * 3 * D + D * D + D;
      break;
    case Variant::Gqa: {
      const std::int64_t KV = static_cast<std::int64_t>(c.num_kv_groups) * hd, O = output_dim(c);
      k.matmul_calls = 6;  // W_query, W_key, W_value, q·kᵀ, weights·v, out_proj
      k.flops = 2 * b * T * din * (D + 2 * KV) + attention_flops + 2 * b * T * D * O;
      k.parameters = din * D + bias * D + 2 * (din * KV + bias * KV) + D * O;  // out_proj without bias
      break;
    }
    case Variant::Mla: {
      const std::int64_t L = c.latent_dim;
      k.matmul_calls = 7;  // W_query, W_DKV, W_UK, W_UV, q·kᵀ, weights·v, out_proj
      k.flops = 2 * b * T * (din * D + din * L + 2 * L * D) + attention_flops + 2 * b * T * D * D;
      k.parameters = din * D + din * L + 2 * L * D + bias * (D + L + 2 * D) + D * D + D;
      break;
    }
  }
  if (c.qk_norm) k.parameters += 2 * hd;  // q_norm and k_norm scales; RoPE has no parameters
  return k;
}

AttentionMask attention_mask(const ModelConfig& c) {
  AttentionMask m;
  m.causal = c.causal;
  m.window = c.sliding_window;
  return m;
}

float Trace::scale() const {
  if (config.query_pre_attn_scalar > 0.0) return detail::score_scale(config).value;
  return 1.0f / static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
}

float Trace::scaled(float score) const {
  const detail::ScoreScale s = detail::score_scale(config);
  return s.op == detail::ScoreScale::Op::Divide ? score / s.value : score * s.value;
}

bool Trace::kept(int b, int h, int i, int j) const {
  if (keep.empty()) return true;
  const std::size_t e =
      static_cast<std::size_t>(((static_cast<std::int64_t>(b) * heads + h) * tokens + i) * tokens + j);
  return keep[e] != 0;
}

// (T, T) of one head. Masked and Scaled are derived here rather than stored: at GPT-2
// sizes each stage costs 48 MiB, and the derivation is the exact PyTorch operation.
void Trace::stage_matrix(Stage s, int b, int h, float* out) const {
  const std::int64_t TT = static_cast<std::int64_t>(tokens) * tokens;
  const std::int64_t base = (static_cast<std::int64_t>(b) * heads + h) * TT;
  const float ninf = -std::numeric_limits<float>::infinity();
  const AttentionMask m = mask();
  const float* src = nullptr;
  switch (s) {
    case Stage::Scores:
    case Stage::Masked:
    case Stage::Scaled: src = scores.ptr() + base; break;
    case Stage::Weights: src = weights.ptr() + base; break;
    case Stage::Dropped: src = weights_after_dropout().ptr() + base; break;
  }
  for (int i = 0; i < tokens; ++i)
    for (int j = 0; j < tokens; ++j) {
      const std::int64_t e = static_cast<std::int64_t>(i) * tokens + j;
      float x = src[e];
      if (s == Stage::Masked || s == Stage::Scaled) {
        if (!m.visible(i, j))
          x = ninf;
        else if (s == Stage::Scaled)
          x = scaled(x);
      }
      out[e] = x;
    }
}

std::vector<float> Trace::stage_matrix(Stage s, int b, int h) const {
  std::vector<float> m(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(tokens));
  stage_matrix(s, b, h, m.data());
  return m;
}

float Trace::stage_value(Stage s, int b, int h, int i, int j) const {
  const std::int64_t e = ((static_cast<std::int64_t>(b) * heads + h) * tokens + i) * tokens + j;
  switch (s) {
    case Stage::Scores: return scores.data[static_cast<std::size_t>(e)];
    case Stage::Masked:
      return masked(i, j) ? -std::numeric_limits<float>::infinity() : scores.data[static_cast<std::size_t>(e)];
    case Stage::Scaled:
      return masked(i, j) ? -std::numeric_limits<float>::infinity() : scaled(scores.data[static_cast<std::size_t>(e)]);
    case Stage::Weights: return weights.data[static_cast<std::size_t>(e)];
    case Stage::Dropped: return weights_after_dropout().data[static_cast<std::size_t>(e)];
  }
  return 0.0f;
}

Tensor mistaken_merge(const Trace& trace) {
  // A contiguous (b, h, T, hd) buffer read as (b, T, h*hd): same memory, new shape.
  Tensor t = trace.context;
  t.shape = {trace.batch, trace.tokens, static_cast<std::int64_t>(trace.heads) * trace.head_dim};
  return t;
}

std::vector<NamedTensor> named_tensors(const Model& model, const Trace& tr) {
  std::vector<NamedTensor> out;
  for (const auto& l : model.layers) {
    Tensor w({l.out, l.in});
    w.data = l.weight;
    out.push_back({l.name + ".weight", std::move(w)});
    if (!l.bias.empty()) {
      Tensor bt({l.out});
      bt.data = l.bias;
      out.push_back({l.name + ".bias", std::move(bt)});
    }
  }
  for (const auto& [name, scale] :
       {std::pair{"q_norm.scale", &model.q_norm}, std::pair{"k_norm.scale", &model.k_norm}}) {
    if (scale->empty()) continue;
    Tensor t({static_cast<std::int64_t>(scale->size())});
    t.data = *scale;
    out.push_back({name, std::move(t)});
  }
  out.push_back({"input", tr.input});
  if (!tr.qkv.empty()) out.push_back({"qkv", tr.qkv});
  out.push_back({"queries", tr.queries});
  out.push_back({"keys", tr.keys});
  out.push_back({"values", tr.values});
  if (!tr.latent.empty()) out.push_back({"latent", tr.latent});
  out.push_back({"q", tr.q});
  out.push_back({"k", tr.k});
  out.push_back({"v", tr.v});
  for (const auto& [name, t] : {std::pair{"q_normed", &tr.q_normed}, std::pair{"k_normed", &tr.k_normed},
                                std::pair{"q_rotated", &tr.q_rotated}, std::pair{"k_rotated", &tr.k_rotated}})
    if (!t->empty()) out.push_back({name, *t});
  if (!tr.k_expanded.empty()) out.push_back({"k_expanded", tr.k_expanded});
  if (!tr.v_expanded.empty()) out.push_back({"v_expanded", tr.v_expanded});
  if (!tr.scores.empty()) out.push_back({"attn_scores", tr.scores});  // a decode through a cache has none
  out.push_back({"attn_weights", tr.weights});
  out.push_back({"attn_weights_dropped", tr.weights_after_dropout()});
  if (!tr.keep.empty()) {
    Tensor keep(tr.weights.shape);
    for (std::size_t i = 0; i < tr.keep.size(); ++i) keep.data[i] = tr.keep[i] ? 1.0f : 0.0f;
    out.push_back({"dropout_keep", std::move(keep)});
  }
  out.push_back({"context", tr.context});
  out.push_back({"context_merged", tr.context_merged});
  out.push_back({"output", tr.output});
  return out;
}

}  // namespace mhaviz
