// One attention layer of a trained GPT as the chapter-3 module the rest of mhaviz
// explains: GPT-2's c_attn is Q | K | V across all heads, which is exactly the book's
// weight-split MultiHeadAttention (W_query, W_key, W_value, then out_proj), so a layer
// becomes a weight_split Model and its LayerNorm output becomes the input X. Every panel,
// the walkthrough and `render` then show that layer's real numbers with no new math.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "mhaviz/gpt.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/session.hpp"

namespace mhaviz {

// Layer `layer` of m (0-based) as a weight_split Model: d_in = d_out = n_embd,
// num_heads = n_head, W_query/W_key/W_value = the qkv rows of each part ([n_embd, n_embd]
// each, with bias when the GPT has one), out_proj = the layer's proj. Causal, no dropout,
// eval mode; context_length = n_ctx. Throws std::out_of_range for a layer past n_layer.
Model weight_split_from_gpt_layer(const GptModel& m, int layer);

// The session that feeds it: tokens (T display strings) and x = the layer's LayerNorm
// output (T, n_embd) row-major as the embeddings; batch 1, config from the model above.
Session gpt_layer_session(const GptModel& m, int layer, const std::vector<std::string>& tokens, std::span<const float> x);

}  // namespace mhaviz
