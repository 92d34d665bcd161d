// One attention layer of a Qwen3, Qwen2, Llama or Gemma 3 model as the lesson's module: the
// book's GroupedQueryAttention (gqa) with the layer's own weights and options, so the
// walkthrough's gqa, QK-norm, RoPE and window steps show that layer's real numbers (as
// gpt_layer.hpp does for a GPT-2 layer with the weight-split module).
//
//   X          = the layer's input RMSNorm output (T, hidden): d_in = hidden_size
//   W_query    = q_proj [H·hd, hidden], W_key / W_value = k_proj / v_proj [G·hd, hidden]
//                (with Qwen2's biases: qkv_bias); d_out = H·hd, num_kv_groups = G
//   out_proj   = o_proj [hidden, H·hd], no bias: out_dim = hidden when it is not H·hd
//   qk_norm    = q_norm / k_norm (Gemma's (1 + w) stored as the float 1 + w, the same product),
//                qk_norm_eps = rms_norm_eps
//   rope_base  = the layer's base (Gemma 3's rope_local_base_freq on sliding layers);
//                rope_inv_freq = the model's frequencies when it scales them (llama3, linear)
//   sliding_window on sliding layers; Gemma: query_pre_attn_scalar (scores · its ^−0.5)
// What the lesson cannot reproduce exactly is refused (hf_layer_refusal), never approximated.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mhaviz/hf_model.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/session.hpp"

namespace mhaviz {

// Why m's layers cannot be the lesson's module with the model's own numbers, in one line (an
// o_proj bias, sizes past the lesson's limits); empty when they can.
std::string hf_layer_refusal(const HfModel& m);

// The gqa config of layer `layer` (0-based), without weights. Throws std::out_of_range for a
// layer past num_hidden_layers, std::invalid_argument with hf_layer_refusal's line.
ModelConfig hf_layer_config(const HfModel& m, int layer);

// The layer's parameters under the lesson's names (W_query.weight, out_proj.weight,
// q_norm.scale ...), float32; path left empty (the caller names the file it writes, if any).
std::shared_ptr<ParameterFile> hf_layer_parameters(const HfModel& m, int layer);

// The session that opens the layer: tokens (T display strings), x = the layer's input norm
// output (T, hidden) row-major (HfLayerTrace::x) as the embeddings, batch 1, eval mode, the
// config above with hf_layer_parameters as its weights. Throws as hf_layer_config, and
// std::invalid_argument when x is not T × hidden.
Session hf_layer_session(const HfModel& m, int layer, const std::vector<std::string>& tokens, std::span<const float> x);

}  // namespace mhaviz
