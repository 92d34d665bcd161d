// The KV cache's size: what a decoder keeps per token and layer to decode the next token
// without recomputing the past, for multi-head, grouped-query and latent attention and the
// sliding window, counted as the book's estimators count it (ch04/04_gqa, 05_mla, 06_swa
// memory_estimator_*.py), for the lesson's module or presets of real models.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/session.hpp"

namespace mhaviz {

struct KvModel {
  std::string name;  // a preset's name, "session" or "custom"
  int emb_dim = 0;   // d_model (shown only; head_dim says the head's width)
  int heads = 0;     // query heads
  int kv_heads = 0;  // K/V heads (== heads: MHA; 1: multi-query)
  int head_dim = 0;  // default: ceil(emb_dim / heads), as the book's estimators take it
  int layers = 0;
  int latent_dim = 0;        // MLA: values cached per token and layer (0: no MLA row)
  int window = 0;            // sliding window W (0: none)
  int sliding_every = 0;     // of every K layers, K - 1 slide and one attends to all (0: every layer slides)
  std::int64_t context = 0;  // tokens in the cache
  int batch = 1;
  int dtype_bytes = 2;
  std::string dtype = "bf16";
};

// One row of the table: a variant's cache for the whole model, in bytes.
struct KvRow {
  std::string variant;  // "MHA", "GQA", "MLA", "MHA + SWA", "GQA + SWA"
  std::string detail;   // "32 K/V heads of 128", "latent 576", "window 512 on 15 of 18 layers"
  std::int64_t bytes = 0;
};

// batch · context · head_dim · kv_heads · 2 (K and V) · bytes per element, per layer.
std::int64_t kv_bytes_per_layer(std::int64_t batch, std::int64_t context, int head_dim, int kv_heads, int dtype_bytes);
// Layers that slide and layers that attend to everything: whole blocks of sliding_every
// layers (K - 1 sliding, then one full), the remainder sliding first (the book's distribute_layers).
struct LayerSplit {
  int sliding = 0, full = 0;
};
LayerSplit split_layers(int layers, int sliding_every);

// MHA first, then GQA (kv_heads < heads), MLA (latent_dim > 0) and the windowed rows (window > 0).
std::vector<KvRow> kv_memory_table(const KvModel& m);

// The presets: gpt2-small, gpt2-xl, llama3.2-1b, qwen3-0.6b, gemma3-270m, deepseek-v3.
const std::vector<KvModel>& kv_presets();
// Bytes per element of "bf16", "fp16" or "fp32"; 0 for another name.
int kv_dtype_bytes(std::string_view dtype);

// The session's module as one layer: its heads, K/V heads, head_dim, latent and window; the
// context its context_length, the batch its batch.
KvModel kv_model_of(const Session& s);

// Throws SessionError naming the option ("--kv-heads: 5 does not divide --heads = 32").
void validate_kv_model(const KvModel& m);

// The table as text: a header line naming the configuration, one line per row (bytes, GB as
// the book prints them, n / 1000^3 with two decimals, and MHA / row), then a `key=value` line
// for scripts.
std::string kv_memory_text(const KvModel& m);

}  // namespace mhaviz
