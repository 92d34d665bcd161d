// `mhaviz dump` output: every named tensor with its shape, as JSON.
#pragma once

#include <string>

#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/kv_cache.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/tokenizer.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

// {"format": "mhaviz-dump", "version": 1, "session": {...}, "cost": {...},
//  "tensors": {NAME: {"shape": [...], "data": [row-major, 9 significant digits]}}}
std::string dump_json(const Session& session, const Model& model, const Trace& trace);

// `mhaviz dump --decode-from P`: the same header and the tensors the decode through a KV cache
// computed (kv_cache.hpp: no attn_scores, no expanded K/V), then "cache.k", "cache.v" or
// "cache.latent", the cache after the last step (b, heads, rows, width); the header also holds
// "decode": {"prefill": P, "window": W, "bytes_per_value": 4,
//  "cache": [{"name", "holds", "heads", "width"}],
//  "steps": [{"queries", "read", "held", "evicted": [begin, end) positions,
//             "shapes": {name: (b, heads, rows held, width)}, "elements", "bytes"}]}.
std::string decode_dump_json(const Session& session, const Model& model, const DecodeTrace& decode);

// A trained GPT's forward (`mhaviz dump --model`):
// {"format": "mhaviz-gpt-dump", "version": 1, "model": {path, layout, n_layer, n_head, n_embd,
//  n_ctx, vocab_size, parameters}, "token_ids": [T], "tokens": [T display strings],
//  "next_token": {"position": T - 1, "top": [{"id", "token", "p"} x top_k]},
//  "tensors": {"layers.{L}.attn_weights": (1, n_head, T, T) for every L, "logits_last": (V)}}
// With `ablation` (trace is that ablated run, `mhaviz dump --ablate`) the header also holds
// "ablation": {"heads": ["L.H", ...], "mode": "zero" | "mean"}.
std::string gpt_dump_json(const GptModel& model, const Tokenizer& tokenizer, const GptTrace& trace, int top_k = 5,
                          const Intervention* ablation = nullptr);

}  // namespace mhaviz
