// Interventions on a trained GPT's forward (gpt_forward.hpp), the interpretability tools a
// class asks for once it has seen what each head attends to:
//
//   ablation      a head's context (its output before the output projection) set to zero,
//                 or to its mean over the positions of the same text
//   patching      a head's context, or the residual stream after a block at one position,
//                 taken from another run of equally many tokens (the clean prompt) into this
//                 one (the corrupted prompt)
//   logit lens    the final norm and the LM head applied to the residual after every block:
//                 what each layer would predict if the model stopped there
//   norm-weighted α_ij · ‖f_h(x_j)‖ (Kobayashi et al. 2020): the attention weight times the
//                 norm of the value vector j after head h's slice of the output projection
//
// An intervened run reuses the run it edits for every layer before the first edited one and
// recomputes the later layers over all rows, with the same block code as the clean forward:
// an empty intervention gives the clean run's bits. T tokens, L = n_layer, H = n_head,
// hd = head_dim, C = n_embd, V = vocab_size.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mhaviz/gpt_forward.hpp"

namespace mhaviz {

struct HeadIndex {
  int layer = 0, head = 0;
  bool operator==(const HeadIndex&) const = default;
};
struct ResidIndex {
  int layer = 0, position = 0;  // the residual after block `layer`, at `position`
  bool operator==(const ResidIndex&) const = default;
};

enum class AblationMode { Zero, Mean };

// What one run changes. Trace: the kind of run patches read (GptTrace here; a Qwen, Llama or
// Gemma model's HfTrace in hf_interventions.hpp).
template <class Trace>
struct InterventionOn {
  std::vector<HeadIndex> ablate;  // heads whose context is replaced
  AblationMode mode = AblationMode::Zero;
  // Patches read this run (T tokens like the edited one): a patched head's context at every
  // position, or a residual row. A head both ablated and patched is patched.
  const Trace* source = nullptr;
  std::vector<HeadIndex> patch_heads;
  std::vector<ResidIndex> patch_resid;

  bool empty() const { return ablate.empty() && patch_heads.empty() && patch_resid.empty(); }
  // The first layer an edit touches; n_layer when there is none.
  int first_layer(int n_layer) const {
    int first = n_layer;
    for (const HeadIndex& h : ablate) first = std::min(first, h.layer);
    for (const HeadIndex& h : patch_heads) first = std::min(first, h.layer);
    for (const ResidIndex& r : patch_resid) first = std::min(first, r.layer);
    return first;
  }
};
using Intervention = InterventionOn<GptTrace>;

// Throws std::invalid_argument naming the field and the value when a head, layer or position
// is out of range for a run of base's T tokens, or patches lack a source of T tokens.
void check_intervention(const GptConfig& c, const GptTrace& base, const Intervention& iv);

// base: the forward (gpt_forward) of model on some ids -> out: every tensor of the run with
// iv applied. Layers before iv.first_layer are base's (copied), later ones recomputed. out
// must not be base; its `model` is left null, so gpt_forward never reuses its rows as clean.
void gpt_forward_intervened(const GptModel& model, const GptTrace& base, const Intervention& iv, GptTrace& out);
GptTrace gpt_forward_intervened(const GptModel& model, const GptTrace& base, const Intervention& iv);

// What an intervention is judged by, at the last position's logits (V): log p(target) when
// vs < 0, else the logit difference logit[target] − logit[vs] (e.g. " Mary" vs " John").
struct TokenMetric {
  int target = 0;
  int vs = -1;
  double of(std::span<const float> logits) const;
};

// Told after each run of a sweep; return false to stop (the sweep then returns nullopt).
using SweepProgress = std::function<bool(int done, int total)>;

// A grid of one number per intervention, row-major (rows, cols).
struct InterventionGrid {
  int rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols)
  double clean = 0.0;         // the metric of the unedited run (patching: the clean prompt's)
  double corrupt = 0.0;       // patching: the corrupted prompt's metric; ablation: = clean
  float at(int r, int c) const { return values[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + c]; }
};

// clean: the forward of model -> (L, H): metric with head (l, h) ablated alone − metric of
// clean. Throws std::invalid_argument for a metric token outside [0, V).
std::optional<InterventionGrid> ablation_sweep(const GptModel& model, const GptTrace& clean, const TokenMetric& metric,
                                               AblationMode mode, const SweepProgress& progress = {});

enum class PatchPer { Head, LayerPosition };
// clean, corrupt: forwards of model on equally many tokens -> (L, H) for PatchPer::Head (the
// head's context at every position patched from clean into corrupt), (L, T) for
// LayerPosition (the residual after block l at position t). Each value is
// (metric(patched) − metric(corrupt)) / (metric(clean) − metric(corrupt)): 1 = fully
// restored, 0 = no effect. Throws std::invalid_argument when the lengths differ, a metric
// token is out of range, or both prompts give the same metric (nothing to restore).
std::optional<InterventionGrid> patch_sweep(const GptModel& model, const GptTrace& clean, const GptTrace& corrupt,
                                            const TokenMetric& metric, PatchPer per,
                                            const SweepProgress& progress = {});

// The logit lens of block `layer` (0 ≤ layer < L): final norm + LM head on its residual ->
// (T, V) logits. For the last block each row is bitwise gpt_logits of that position.
std::vector<float> lens_logits(const GptModel& model, const GptTrace& tr, int layer);

struct LogitLens {
  int layers = 0, tokens = 0, k = 0;
  std::vector<TokenProbability> top;  // (layers, tokens, k): softmax's k most likely, ties: lower id first
  int target = -1;                    // the token ranked below, or -1
  std::vector<int> rank;              // (layers, tokens): target's rank, 0 = most likely (empty without one)
  std::vector<float> target_p;        // (layers, tokens): target's probability
  const TokenProbability& at(int layer, int pos, int i) const {
    return top[(static_cast<std::size_t>(layer) * static_cast<std::size_t>(tokens) + static_cast<std::size_t>(pos)) *
                   static_cast<std::size_t>(k) +
               static_cast<std::size_t>(i)];
  }
};
// tr: a forward of model -> the lens of every block at every position, k ≥ 1 (at most V).
LogitLens logit_lens(const GptModel& model, const GptTrace& tr, int k, int target = -1);

// tr: a forward of model, 0 ≤ layer < L -> (1, H, T, T): weights[h, i, j] · ‖W_O[:, h] v[h, j]‖,
// where W_O[:, h] is the (C, hd) block of the output projection that head h's context
// multiplies (no bias: it is the same for every key). Hidden cells stay 0.
Tensor norm_weighted_attention(const GptModel& model, const GptTrace& tr, int layer);

// "5.1,6.9" -> heads (layer 5 head 1, layer 6 head 9); a ":mean" or ":zero" suffix sets mode.
// Throws std::invalid_argument("ablate: ...") naming the bad part.
Intervention parse_ablation(const std::string& spec);

}  // namespace mhaviz
