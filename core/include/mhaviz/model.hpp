// Model configuration, parameters initialised exactly as PyTorch does after
// torch.manual_seed(seed), and the forward pass that records a Trace.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/linear.hpp"
#include "mhaviz/tensor.hpp"

namespace mhaviz {

// wrapper, weight_split and fused_qkv: chapter 3 and the Transformer tutorial; gqa and mla: the
// book's bonus GroupedQueryAttention (ch04/04_gqa) and MultiHeadLatentAttention (ch04/05_mla).
enum class Variant { Wrapper, WeightSplit, FusedQkv, Gqa, Mla };
inline constexpr Variant kAllVariants[] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv, Variant::Gqa,
                                           Variant::Mla};

// Trained parameters of a chapter-3 module read from a safetensors file (a session's
// model.weights): state_dict name ("W_query.weight", "heads.0.W_key.bias") -> float32 values
// with their shape. build_model puts them in place of the seed's init.
struct ParameterFile {
  std::string path;  // absolute
  struct Tensor {
    std::vector<std::int64_t> shape;
    std::vector<float> values;
  };
  std::map<std::string, Tensor, std::less<>> tensors;
};

std::string_view variant_name(Variant v);  // "wrapper", "weight_split", "fused_qkv", "gqa", "mla"
bool parse_variant(std::string_view name, Variant& out);

struct ModelConfig {
  Variant variant = Variant::Wrapper;
  int d_out = 2;
  int num_heads = 2;
  int context_length = 6;
  double dropout = 0.0;
  bool qkv_bias = false;
  bool causal = true;
  std::uint64_t seed = 123;
  // Training mode applies dropout, as the seeds' notebooks do; eval mode draws nothing.
  bool training = true;
  // gqa: the number of K/V heads (the book's num_kv_groups in GroupedQueryAttention; its memory
  // estimator's n_kv_groups is the group size instead). Divides num_heads; 1 is multi-query
  // attention. 0 for the other variants.
  int num_kv_groups = 0;
  // Split variants: key j visible to query i only when 0 <= i - j < W (MultiHeadAttentionWithSWA);
  // needs causal. 0: off.
  int sliding_window = 0;
  // mla: the latent's width (W_DKV's output); the session's default is default_latent_dim(d_out).
  // 0 for the other variants.
  int latent_dim = 0;
  // Split variants but mla: rotary position embedding on queries and keys after the head split
  // (split halves, positions from 0, as the book's Llama 3 / Qwen3 apply_rope), with this base
  // θ. 0: off. mla has none: real models give it a decoupled RoPE key this lesson does not model.
  double rope_base = 0.0;
  // Split variants: RMSNorm over head_dim (eps 1e-6, scale initialised to ones) on queries and
  // keys after the head split and before RoPE, as Qwen3's q_norm and k_norm.
  bool qk_norm = false;
  // The fields below let a trained model's layer (hf_layer.hpp) be this module with its own
  // numbers; the book's modules leave them at their defaults.
  // qk_norm: RMSNorm's eps (the model's rms_norm_eps; Qwen3 and Gemma 3 ship 1e-6).
  double qk_norm_eps = 1e-6;
  // rope_base: the head_dim/2 inverse frequencies used in place of rope_base^(-2i/head_dim),
  // when a model scales them (Llama 3's rope_scaling "llama3", "linear"). Empty: unscaled.
  std::vector<double> rope_inv_freq;
  // Split variants: scores scaled by query_pre_attn_scalar^-0.5 as a factor (Gemma 3) instead
  // of divided by sqrt(head_dim). 0: sqrt(head_dim).
  double query_pre_attn_scalar = 0.0;
  // gqa: out_proj's width, Linear(d_out, out_dim) (the book's Qwen3 and Gemma 3 project back to
  // d_in, which may differ from num_heads * head_dim). 0: d_out, as chapter 3.
  int out_dim = 0;
  // Trained parameters replacing the seed's init (null: init from seed). Their shapes fix
  // d_in, d_out, num_heads and qkv_bias: validate_model refuses a config they do not fit.
  // Dropout masks still continue the seed's stream, as in PyTorch after load_state_dict.
  std::shared_ptr<const ParameterFile> weights;
};

// One parameter a config builds: its state_dict name and shape ([out, in] or [out]).
struct ParameterSpec {
  std::string name;
  std::vector<std::int64_t> shape;
};
// Every parameter of the module, in PyTorch construction order.
std::vector<ParameterSpec> parameter_specs(const ModelConfig& config, int d_in);

// head_dim: d_out for the wrapper (each head projects to d_out), d_out / num_heads otherwise.
int head_dim(const ModelConfig& c);
// Width of the concatenated/merged context: num_heads * head_dim.
int merged_dim(const ModelConfig& c);
// out_proj's output width: out_dim when set, else d_out.
int output_dim(const ModelConfig& c);
// K/V heads the attention reads: num_kv_groups for gqa, num_heads otherwise.
int kv_heads(const ModelConfig& c);
// MultiHeadLatentAttention's latent_dim when none is given: max(16, d_out // 8).
int default_latent_dim(int d_out);
// A split variant (every one but the wrapper): one attention over heads of d_out / num_heads.
bool is_split(Variant v);

struct Model {
  ModelConfig config;
  int d_in = 0;
  // In PyTorch construction order (see model.cpp), which is the order the generator fed them.
  std::vector<Linear> layers;
  // Generator state after parameter init: dropout masks continue this stream.
  std::mt19937 rng_after_init;
  // wrapper, weight_split and gqa: W_query, W_key, W_value (the wrapper's head after head)
  // stacked row-wise, [merged_dim + 2 * kv_heads * head_dim, d_in]; mla: W_query and W_DKV,
  // [merged_dim + latent_dim, d_in]. The projections of the input are then one GEMM (fewer
  // passes over the input and better use of two cores at small T). Set by prepare_forward;
  // emptied, with that layer's packed copy, when a layer is handed out for change by layer(name).
  Linear qkv_stacked;
  // qk_norm: the scales of q_norm and k_norm (head_dim values each; ones from init, or the
  // weights file's q_norm.scale, k_norm.scale). Empty otherwise.
  std::vector<float> q_norm, k_norm;

  const Linear& layer(std::string_view name) const;  // throws std::out_of_range
  Linear& layer(std::string_view name);
  std::int64_t parameter_count() const;
};

// torch.nn.init-compatible uniform draw: one 32-bit draw per value.
float torch_uniform(std::mt19937& gen, float from, float to);
// nn.Linear(in, out).reset_parameters() continuing gen: the weight (out, in) row-major by
// kaiming_uniform_(a=√5), then, when bias is not null, the bias (out) by uniform_(±1/√in).
void torch_linear_init(std::mt19937& gen, int in, int out, float* weight, float* bias);
// torch.bernoulli-compatible dropout draw in [0, 1): two 32-bit draws, 53 bits.
double torch_uniform53(std::mt19937& gen);

// Builds and initialises every Linear in construction order from config.seed.
// Precondition: the config passed validate_model (session.hpp); d_in > 0.
Model build_model(const ModelConfig& config, int d_in);

// Fills model.qkv_stacked from the current layers (fused_qkv: left empty, qkv_layer is one
// already) and, on a CPU with AVX2 or AVX-512, the packed copies of the stacked projection and the
// output projection. build_model and the conversions below call it; call it again after
// changing weights through layer(name) to get the fast path back.
void prepare_forward(Model& model);

// Weight-split model whose heads are the wrapper's heads: W_query/W_key/W_value
// are the heads' matrices stacked row-wise ([h*d_out, d_in]); out_proj is the
// identity with zero bias. Forward of both gives identical attention weights and
// output (dropout off).
Model weight_split_from_wrapper(const Model& wrapper);
// Weight-split model computing the same function as a fused_qkv model: the fused
// [3*d_out, d_in] rows (per head: q | k | v) are regrouped into W_query, W_key,
// W_value; linear_layer becomes out_proj.
Model weight_split_from_fused(const Model& fused);

}  // namespace mhaviz
