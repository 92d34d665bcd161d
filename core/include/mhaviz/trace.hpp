// The forward pass and everything it computed, named and shaped for panels and exports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/attention_mask.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/tensor.hpp"

namespace mhaviz {

// The five views of a head's (T, T) attention matrix, in pipeline order.
enum class Stage { Scores, Masked, Scaled, Weights, Dropped };
inline constexpr int kStageCount = 5;
std::string_view stage_name(Stage s);   // "scores", "masked", "scaled", "weights", "dropped"
std::string_view stage_title(Stage s);  // "Raw scores q·kᵀ", ...
bool parse_stage(std::string_view name, Stage& out);

// What one forward costs, counted the way PyTorch would execute the seeds' modules.
struct Cost {
  std::int64_t matmul_calls = 0;  // Linear calls plus batched matmuls (q·kᵀ, weights·v)
  std::int64_t flops = 0;         // 2·m·n·k summed over every matmul
  std::int64_t parameters = 0;
};
Cost forward_cost(const ModelConfig& c, int d_in, int tokens, int batch);

// The mask a config's module applies: causal or none, and the sliding window when set (a
// lesson's sequences have no padding).
AttentionMask attention_mask(const ModelConfig& c);

struct Trace {
  ModelConfig config;
  int batch = 0, tokens = 0, d_in = 0, heads = 0, head_dim = 0;
  int kv_heads = 0;  // G: K/V heads (gqa: num_kv_groups; otherwise == heads)

  Tensor input;  // (b, T, d_in)
  // Projections as the variant computes them:
  //   wrapper:      queries/keys/values (b, T, h*d_out), head i's Linear output in columns [i*d_out, (i+1)*d_out)
  //   weight_split: queries/keys/values (b, T, d_out)
  //   fused_qkv:    qkv (b, T, 3*d_out); queries/keys/values hold its per-head chunks re-merged (b, T, d_out)
  //   gqa:          queries (b, T, d_out); keys/values (b, T, G*hd)
  //   mla:          queries (b, T, d_out); keys/values (b, T, d_out) up-projected from the latent
  Tensor queries, keys, values;
  Tensor latent;                   // mla only: W_DKV(x), (b, T, latent_dim), what its KV cache holds
  Tensor qkv;                      // fused_qkv only, else empty
  std::vector<float> workspace;    // scratch of the stacked projection (N, 3*h*hd); not a tensor to show
  Tensor q;                        // (b, h, T, hd) per-head, after view + transpose (or permute + chunk)
  Tensor k, v;                     // (b, G, T, hd) likewise, at the K/V heads (G == h but in gqa)
  Tensor q_normed, k_normed;       // qk_norm only: RMSNorm over head_dim of q and k, shapes of q and k
  Tensor q_rotated, k_rotated;     // rope_base only: RoPE of q and k (after QK-norm when set); scores read these
  Tensor k_expanded, v_expanded;   // gqa only: (b, h, T, hd) repeat_interleave(h / G, dim=1) of the k read and v
  Tensor scores;                   // (b, h, T, T) raw q·kᵀ of every cell, hidden ones too, before mask and scale
                                   // (of q, k after QK-norm and RoPE when set)
  Tensor weights;                  // (b, h, T, T) softmax(masked scores / sqrt(hd)); hidden cells exactly 0
  std::vector<std::uint8_t> keep;  // (b, h, T, T) 1 = kept by dropout; empty when no dropout was drawn
  Tensor dropped;                  // (b, h, T, T) after dropout; empty when no dropout was drawn (equal to weights)
  Tensor context;                  // (b, h, T, hd) weights · v
  Tensor context_merged;           // (b, T, h*hd) transpose back + merge (wrapper: concatenation)
  Tensor output;                   // wrapper: == context_merged; others (b, T, d_out) after the output projection
  Cost cost;

  bool dropout_applied() const { return !dropped.empty(); }
  const Tensor& weights_after_dropout() const { return dropout_applied() ? dropped : weights; }
  AttentionMask mask() const { return attention_mask(config); }
  // Which rule hides cell (i, j), if any: the causal mask (j > i) or the sliding window
  // (i - j >= W), which the heatmaps draw differently.
  MaskRule hidden_by(int i, int j) const { return mask().hidden_by(i, j); }
  bool masked(int i, int j) const { return !mask().visible(i, j); }
  bool kept(int b, int h, int i, int j) const;
  float scale() const;  // the factor scores are scaled by: 1 / sqrt(head_dim), or query_pre_attn_scalar^-0.5
  float scaled(float score) const;  // score / sqrt(head_dim) in float, or score · that factor, as the forward

  // One head's (T, T) matrix of a stage, row-major, written to out (size T*T).
  // Masked cells of Masked/Scaled are -inf, as PyTorch holds them.
  void stage_matrix(Stage s, int b, int h, float* out) const;
  std::vector<float> stage_matrix(Stage s, int b, int h) const;
  float stage_value(Stage s, int b, int h, int i, int j) const;
};

// Forward pass. input: (b, T, d_in) with d_in == model.d_in, T <= context_length.
// Returns the Trace with every intermediate. Dropout draws continue model.rng_after_init
// (a copy: forward is repeatable and const).
Trace forward(const Model& model, const Tensor& input);
// Same, into an existing Trace whose buffers are reused when shapes are unchanged
// (the app recomputes into one Trace on every edit).
void forward(const Model& model, const Tensor& input, Trace& out);

// RoPE's inverse frequencies for a lesson: 1 / base^(2i / head_dim) for i < head_dim / 2, as the
// book's compute_rope_params (no scaling). head_dim even.
std::vector<double> rope_inv_freq(double base, int head_dim);
// The inverse frequencies a config's RoPE uses: its rope_inv_freq when a model's scaling set
// them, else rope_inv_freq(rope_base, head_dim).
std::vector<double> rope_inv_freq(const ModelConfig& c);

// Slow, obviously-correct loop version of forward(), the oracle for tests.
Trace forward_reference(const Model& model, const Tensor& input);

// The seeds' "common mistake" (seed 002): merge (b, h, T, hd) -> (b, T, h*hd) with a plain
// reshape and no transpose back. Returns (b, T, h*hd); compare with trace.context_merged.
Tensor mistaken_merge(const Trace& trace);

// Raw scores q·kᵀ (b, H, T, T) of every cell of q (b, H, T, hd) against k (b, G, T, hd), H % G
// == 0, query head h reading k's head h / (H / G), computed as forward() computes trace.scores.
Tensor raw_scores(const Trace& trace, const Tensor& q, const Tensor& k);

// gqa's common mistake: the K/V heads expanded with .repeat(1, H / G, 1, 1) instead of
// .repeat_interleave(H / G, dim=1), so query head h reads K/V head h mod G instead of h / (H / G).
struct RepeatMistake {
  Tensor k_expanded, v_expanded;  // (b, H, T, hd): what .repeat gives (of the k and v attention reads)
  Tensor scores;                  // (b, H, T, T): raw q·kᵀ of the mis-paired heads
};
RepeatMistake mistaken_repeat(const Trace& trace);

// Tensors under PyTorch names: state_dict names plus attn_scores, attn_weights,
// attn_weights_dropped, context, output (see tests/data/reference/README.md), and the
// other intermediates under their Trace names (queries, keys, values, q, k, v, ...).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};
std::vector<NamedTensor> named_tensors(const Model& model, const Trace& trace);

}  // namespace mhaviz
