// The exact GPT-2 forward in float32 over a GptModel (gpt.hpp), keeping what the panels
// show, and recomputing after an edit only the positions the edit can change.
//
// Per block: x = LayerNorm_1(resid) → qkv = x · W_qkvᵀ + b → split into heads →
// scores = q·kᵀ → causal mask → softmax(scores / √hd) → context = weights · v → merge →
// proj → resid += ; LayerNorm_2 → fc → GELU (tanh, torch's approximate='tanh') → fc_proj →
// resid += ; then the final LayerNorm and the LM head. T is the number of tokens, C = n_embd,
// H = n_head, hd = C / H, V = vocab_size.
//
// Incremental: in a causal model position i reads only positions ≤ i, so after an edit whose
// first changed position is t, rows < t are kept and rows ≥ t recomputed (the KV-cache idea:
// the kept rows' k and v are what the new rows attend to). The result is bitwise the fresh
// forward's: on the kernel every element is the same sum in the same order whatever the row
// range; on OpenBLAS, whose small products may sum in another order, rows are computed in
// blocks aligned to kBlasRows, and the block holding t is recomputed whole.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mhaviz/attention_mask.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/gpt.hpp"
#include "mhaviz/key_panels.hpp"
#include "mhaviz/tensor.hpp"

namespace mhaviz {

// The mask a layer of the model applies (GPT-2 and the book's GPTModel: causal).
AttentionMask gpt_attention_mask(const GptConfig& c);

// Raw scores are not kept: the weights are what the views show, and (1, H, T, T) per layer
// is 48 MiB at GPT-2's T = 1024 (the lesson of a layer, gpt_layer.hpp, recomputes them).
struct GptLayerTrace {
  AttentionMask mask;    // which keys each query saw: ask it, never the values
  Tensor x;              // (1, T, C) LayerNorm_1's output: the attention's input X
  Tensor q, k, v;        // (1, H, T, hd) per head, as view(1, T, H, hd).transpose(1, 2)
  Tensor weights;        // (1, H, T, T) softmax(q·kᵀ / √hd) over the keys the mask shows; hidden cells exactly 0
  Tensor context;        // (1, H, T, hd) weights · v
  Tensor resid_mid;      // (1, T, C) residual stream after the attention's residual add
  Tensor resid;          // (1, T, C) residual stream after the block: the next block's input
  KeyPanels key_panels;  // k packed for the kernel: a forward from row P packs only the panels of keys P and later
};

struct GptTrace {
  // What the tensors were computed from; a later call reuses rows only for the same model
  // object and backend. After changing a model's weights, start from a fresh GptTrace.
  const GptModel* model = nullptr;
  Backend backend = Backend::OpenBlas;
  std::vector<int> ids;               // T token ids
  Tensor embeddings;                  // (1, T, C) wte[id] + wpe[position]: layer 0's input
  std::vector<GptLayerTrace> layers;  // n_layer
  Tensor final_norm;                  // (1, T, C) final LayerNorm of the last residual: the LM head's input
  Tensor logits_last;                 // (V) LM head at position T - 1
  int recomputed_from = 0;            // first row the last call computed (T: none, only the logits)
  // Scratch of the rows being computed, kept to reuse its capacity.
  std::vector<float> scratch_qkv, scratch_merged, scratch_proj, scratch_hidden;

  int tokens() const { return static_cast<int>(ids.size()); }
};

// Gets a model ready for backend(): where it is not OpenBLAS every Linear is packed for the
// kernel and its `weight` freed (memory: the weights once, plus wteᵀ packed for a tied head);
// on OpenBLAS weights are put back and packed copies freed. Call once after load_gpt and
// again after set_backend; a forward on a model prepared for another backend is still exact
// (it multiplies by whichever copy there is), only slower.
void prepare_gpt_forward(GptModel& model);

// A Linear's weight [out, in] whether it is held as `weight` or only packed.
std::vector<float> gpt_linear_weight(const Linear& l);

// ids (T), 1 ≤ T ≤ n_ctx, each in [0, V) -> every tensor of tr for those ids, reusing the rows
// of tr that cannot have changed (see above). Throws std::invalid_argument for bad ids.
void gpt_forward(const GptModel& model, std::span<const int> ids, GptTrace& tr);
GptTrace gpt_forward(const GptModel& model, std::span<const int> ids);

// (V) logits at position pos of tr (0 ≤ pos < T): the LM head applied to final_norm's row.
std::vector<float> gpt_logits(const GptModel& model, const GptTrace& tr, int pos);

struct TokenProbability {
  int id = 0;
  float p = 0.0f;
};
// The next token after position pos: softmax of its logits (V), and the top k by probability
// (ties: lower id first).
struct NextToken {
  std::vector<float> probs;
  std::vector<TokenProbability> top;
};
NextToken next_token(const GptModel& model, const GptTrace& tr, int pos, int k);
// The same from a position's logits (V), whichever model made them.
NextToken next_token_from_logits(const std::vector<float>& logits, int k);

// Multiply-adds × 2 of a forward computing rows [from, T) plus the LM head at the last row.
double gpt_forward_flops(const GptConfig& c, int T, int from);

// Bytes of the weights a forward of one row reads whole, as held: every block's, the final
// norm's and the LM head's (a tied head's packed panels after prepare_gpt_forward); of the
// token and position embeddings it reads one row, so they are not counted.
std::int64_t gpt_weight_bytes(const GptModel& model);
// Reads each of those bytes once, on the forward's threads, and returns their sum as 64-bit
// words (so that the reads are made): its time is the floor of an edit at the last position.
std::uint64_t gpt_read_weights(const GptModel& model);

// The oracle: the same forward as plain loops with double accumulation, slow on purpose.
// Every tensor of GptTrace is filled (scratch left empty).
GptTrace gpt_forward_reference(const GptModel& model, std::span<const int> ids);

}  // namespace mhaviz
