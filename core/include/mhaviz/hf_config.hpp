// config.json of a Hugging Face decoder checkpoint (Qwen3, Qwen2, Llama 2/3 and SmolLM2-style
// Llama models, Gemma 3), read into one plain struct with every number the forward needs.
// Fields a file leaves out take the default of the model's transformers config class
// (configuration_{qwen3,qwen2,llama,gemma3}.py), so a file means what it means there; the
// sizes that define the network have no sensible default and must be present.
// Every problem is a LoadError of one line naming the file and the field.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/load_error.hpp"

namespace mhaviz {

enum class HfArch { Qwen3, Qwen2, Llama, Gemma3 };

// Rotary position embedding of one kind of layer: split halves, x·cos + rotate_half(x)·sin,
// angle pos · inv_freq[i] for i < head_dim/2, the same angles for both halves.
struct HfRope {
  enum class Scaling { None, Linear, Llama3 };
  double theta = 10000.0;  // base: inv_freq[i] = theta^(-2i/head_dim) before scaling
  Scaling scaling = Scaling::None;
  double factor = 1.0;                               // Linear: inv_freq / factor; Llama3: the low-frequency divisor
  double low_freq_factor = 1.0;                      // Llama3
  double high_freq_factor = 4.0;                     // Llama3
  double original_max_position_embeddings = 8192.0;  // Llama3
  // The head_dim/2 inverse frequencies, scaled (transformers' modeling_rope_utils:
  // _compute_default / _compute_linear_scaling / _compute_llama3_parameters), in double.
  std::vector<double> inv_freq(int head_dim) const;
};

struct HfConfig {
  HfArch arch = HfArch::Llama;
  std::string model_type;         // as the file spells it ("gemma3_text", or "gemma3" read from its text_config)
  bool from_text_config = false;  // "gemma3": the text model's fields came from text_config

  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  // K/V heads; query head h uses K/V head h / (heads / kv_heads)
  int head_dim = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;

  HfRope rope;        // full-attention layers
  HfRope rope_local;  // sliding-window layers (Gemma 3: base rope_local_base_freq, unscaled); else = rope

  bool tie_word_embeddings = false;  // LM head = embed_tokens (no lm_head.weight)
  bool qkv_bias = false;             // q_proj/k_proj/v_proj have biases (Qwen2 always; others: attention_bias)
  bool o_bias = false;               // o_proj has a bias (attention_bias, not Qwen2)
  bool mlp_bias = false;             // gate/up/down_proj have biases (Llama's mlp_bias)
  bool qk_norm = false;              // RMSNorm over head_dim on q and k before RoPE (Qwen3, Gemma 3)
  // Gemma: RMSNorm multiplies by (1 + weight); four norms per block (input, post-attention,
  // pre-feedforward, post-feedforward); the embedding is scaled by sqrt(hidden_size)
  // (transformers rounds that scale to the weights' dtype first: bf16(sqrt(640)) = 25.25).
  bool gemma_norms = false;
  enum class Activation { SiLU, GeluTanh } activation = Activation::SiLU;  // the gate's: silu or gelu_pytorch_tanh

  int sliding_window = 0;     // keys i - W < j <= i on a sliding layer; 0: none
  std::vector<bool> sliding;  // per layer: a sliding-window layer
  double query_pre_attn_scalar =
      0;                         // scores scaled by query_pre_attn_scalar^-0.5 (head_dim unless Gemma says otherwise)
  double embedding_scale = 1.0;  // sqrt(hidden_size) for Gemma, else 1

  int bos_token_id = -1;           // -1: none given
  std::vector<int> eos_token_ids;  // an int or a list in the file

  int kv_group() const { return num_attention_heads / num_key_value_heads; }  // query heads per K/V head
  double score_scale() const;                                                 // 1 / sqrt(query_pre_attn_scalar)
};

// Parses config.json text; `source` names it in errors ("models/qwen3/config.json").
HfConfig parse_hf_config(std::string_view json_text, std::string_view source = "config.json");
HfConfig read_hf_config(const std::filesystem::path& config_json);

// "qwen3, qwen2, llama, gemma3_text, gemma3": what parse_hf_config accepts.
std::string_view hf_supported_model_types();
std::string_view hf_arch_name(HfArch a);  // "Qwen3", "Qwen2", "Llama", "Gemma 3"

}  // namespace mhaviz
