// The attention variants side by side at a lesson's size: what equals multi-head attention
// exactly (each pair run through the real forward and its max |difference| measured), and
// what each variant costs (parameters, FLOPs of one forward, KV-cache bytes). Computed once per
// input; the walkthrough's "Compare variants" tab and `mhaviz render --view variants` draw it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mhaviz/model.hpp"
#include "mhaviz/tensor.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

// Two modules run on the same input in eval mode, and how far apart their tensors are.
struct Equivalence {
  std::string claim;            // what is compared: "GQA with 6 K/V heads, its K/V weights the MHA's"
  std::string how;              // how the second module was made from the first
  bool expected_equal = false;  // what the lesson says; `equal` says what the numbers say
  // Per tensor compared ("attention weights", "output", "scores"), the max |a - b| over every element.
  std::vector<std::pair<std::string, double>> diffs;
  bool equal = false;   // every diff within kEquivalenceTolerance
  std::string verdict;  // the numbers in words: "bit-equal", "equal within 3.0e-08", "differ: output by up to 0.21"
};
// Float32 rounding of a teaching-size forward stays far below this; a real difference far above.
inline constexpr double kEquivalenceTolerance = 1e-5;

// One variant of the cost table, counted at the lesson's b, T and d_in.
struct VariantCost {
  std::string variant;  // "MHA", "GQA", "MQA", "MLA", "SWA"
  std::string detail;   // its size and where it came from: "2 K/V heads (the session's)", "window 3 (T / 2)"
  ModelConfig config;   // the module counted
  Cost cost;            // forward_cost(config, d_in, T, b)
  // The KV cache in float32 for the module as one layer, as kv_memory_table counts it (so equal
  // to `mhaviz kv-memory --session FILE --dtype fp32`): one token of one sequence, and the
  // session's batch at its context_length (a window keeps at most W tokens).
  std::int64_t kv_bytes_token = 0;
  std::int64_t kv_bytes_context = 0;
};

struct VariantComparison {
  int d_in = 0, tokens = 0, batch = 0, heads = 0, head_dim = 0, context = 0;
  int dtype_bytes = 4;  // the KV bytes' value size: float32, what the lesson computes in
  std::string base;     // which MHA the others are measured against
  std::vector<Equivalence> equivalences;
  std::vector<VariantCost> costs;  // MHA first (the ratios' denominator), then GQA, MQA, MLA, SWA
  std::vector<std::string> notes;  // choices made where the session says nothing; what is not shown and why
};

// The comparison for a session's model (any variant) and its input (b, T, d_in), T >= 1:
//   MHA: a weight-split MultiHeadAttention with the session's heads, head_dim, seed and options
//        (the session's own module when it is weight_split), eval mode;
//   equivalences: GQA with G = h K/V heads from the MHA's weights; GQA with fewer K/V heads by
//        mean-pooling each group's K/V weights (not equal: how far); a window W >= T and one of
//        W < T against the causal MHA; RoPE at one token (every angle zero) and at T tokens
//        against no RoPE; a pair the session cannot make (no causal mask, odd head_dim) is left
//        out with a note;
//   costs: MHA, GQA (the session's G, else h / 2), MQA, MLA (the session's latent_dim, else
//        max(16, d_out // 8)), SWA (the session's window, else T / 2).
// Throws std::invalid_argument when input is not (b, T, model.d_in).
VariantComparison compare_attention_variants(const Model& model, const Tensor& input);

// max |a - b| over every element; +inf when the shapes differ.
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace mhaviz
