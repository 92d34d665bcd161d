// The interventions of gpt_interventions.hpp on a Qwen3, Qwen2, Llama or Gemma 3 forward
// (hf_model.hpp): ablation, activation patching, the logit lens and norm-weighted attention,
// with the same meaning, the same grids and the same metrics as on GPT-2.
//
// A head is a query head (H of them; with grouped-query attention several share a K/V head):
// its context is the (T, hd) rows weights · v of its own weights, before the heads are merged
// and o_proj reads them, and that is what ablation and head patching replace. The residual
// after block l is the stream after the block's last add (Gemma: after its post-feedforward
// norm's output is added). The lens is the model's final RMSNorm and LM head (tied or not) on
// it. As on GPT-2, an intervened run reuses the run it edits for every layer before the first
// edited one and recomputes the later layers over all rows with the clean forward's code, so an
// empty intervention gives the clean run's bits. T tokens, L = num_hidden_layers, H =
// num_attention_heads, G = num_key_value_heads, hd = head_dim, C = hidden_size, V = vocab_size.
#pragma once

#include <optional>
#include <vector>

#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/hf_model.hpp"

namespace mhaviz {

using HfIntervention = InterventionOn<HfTrace>;

// Throws std::invalid_argument naming the field and the value (as check_intervention on a GPT).
void check_intervention(const HfModel& m, const HfTrace& base, const HfIntervention& iv);

// base: hf_forward of model -> out: every tensor of the run with iv applied; layers before
// iv.first_layer are base's (copied), later ones recomputed over every row. out must not be
// base; it names no model, so hf_forward never keeps its rows.
void hf_forward_intervened(const HfModel& m, const HfTrace& base, const HfIntervention& iv, HfTrace& out);
HfTrace hf_forward_intervened(const HfModel& m, const HfTrace& base, const HfIntervention& iv);

// clean -> (L, H): metric with query head (l, h) ablated alone − metric of clean.
std::optional<InterventionGrid> ablation_sweep(const HfModel& m, const HfTrace& clean, const TokenMetric& metric,
                                               AblationMode mode, const SweepProgress& progress = {});
// clean, corrupt: forwards on equally many tokens -> (L, H) or (L, T), as patch_sweep on a GPT.
std::optional<InterventionGrid> patch_sweep(const HfModel& m, const HfTrace& clean, const HfTrace& corrupt,
                                            const TokenMetric& metric, PatchPer per,
                                            const SweepProgress& progress = {});

// The final norm and the LM head on block layer's residual -> (T, V); for the last block each
// row is bitwise hf_logits of that position.
std::vector<float> lens_logits(const HfModel& m, const HfTrace& tr, int layer);
LogitLens logit_lens(const HfModel& m, const HfTrace& tr, int k, int target = -1);

// 0 ≤ layer < L -> (1, H, T, T): weights[h, i, j] · ‖W_O[:, h] v[g, j]‖, with W_O[:, h] the
// (C, hd) columns of o_proj that query head h's context multiplies and g = h / (H / G) the
// K/V head it reads (no bias: it is the same for every key). Hidden cells stay 0.
Tensor norm_weighted_attention(const HfModel& m, const HfTrace& tr, int layer);

}  // namespace mhaviz
