// Decoding through a KV cache: the lesson's module run as a decoder runs it, the first P rows
// at once (the prefill), then one row at a time, each new query reading the keys and values
// the cache kept of the rows before it instead of recomputing them (the book's
// ch04/03_kv-cache and its variants in 04_gqa, 05_mla, 06_swa). Its rows equal the full
// forward's bit for bit on the kernel backends (tests/core/test_kv_cache.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mhaviz/attention_mask.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

// One tensor a variant's cache keeps: per token, `heads` vectors of `width` values.
struct CachedTensor {
  std::string name;   // "k", "v" or "latent"
  std::string holds;  // the Trace tensor whose rows it keeps: "k_rotated", "k_normed", "k", "v" or "latent"
  int heads = 0;      // K/V heads G (1 for the latent)
  int width = 0;      // head_dim, or latent_dim
};

// What a config's cache holds, the one description the decoder allocates from, the dump
// writes and the app draws:
//   wrapper, weight_split, fused_qkv: k and v at every head (the keys after QK-norm and RoPE
//     when set: a cached key is never rotated again);
//   gqa: k and v at its G K/V heads (before repeat_interleave, which the attention does by
//     reading K/V head h / (H / G) in place);
//   mla: the latent alone, from which every step up-projects its keys and values.
// A sliding window W keeps the last W rows: a rolling buffer, older rows evicted.
struct KvCacheLayout {
  std::vector<CachedTensor> tensors;
  int window = 0;                           // rows kept (0: every row)
  static constexpr int kBytesPerValue = 4;  // float32, as the lesson computes
  std::int64_t values_per_token() const;    // Σ heads · width over the tensors (per batch item)
};
KvCacheLayout kv_cache_layout(const ModelConfig& c);

// One step of a decode, by absolute positions.
struct CacheStep {
  KeyRange queries;           // rows computed: [0, P) at the prefill, then [t, t + 1)
  KeyRange read;              // rows whose keys and values the step's queries read (the new ones included)
  KeyRange held;              // rows the cache holds after the step
  KeyRange evicted;           // rows dropped at this step: the window moved past them (empty without one)
  std::int64_t elements = 0;  // values held after the step, batch included
  std::int64_t bytes = 0;     // elements · KvCacheLayout::kBytesPerValue
};

struct DecodeTrace {
  int prefill = 0;
  KvCacheLayout layout;
  // The tensors the decode computed, each row at its position, named and shaped as the full
  // forward's: input, qkv, queries, keys, values, latent, q, k, v, q_normed, k_normed,
  // q_rotated, k_rotated, weights (0 outside the keys a row read), context, context_merged,
  // output, and the cost of the full forward. No scores (a cache never forms the scores of
  // keys after a query), no expanded copies (the attention reads K/V heads in place), no dropout.
  Trace trace;
  std::vector<CacheStep> steps;  // the prefill, then one per decoded row
  // The cache after the last step, one tensor per layout tensor: (b, heads, held rows, width).
  std::vector<Tensor> cache;

  // (b, heads, rows held after `step`, width) of layout tensor i.
  Shape cache_shape(const CacheStep& step, std::size_t i) const;
  // The trace tensor whose rows layout tensor i keeps, every position: (b, heads, T, width),
  // the latent (b, T, width). What the cache held after step s is its rows s.held.
  const Tensor& held_tensor(std::size_t i) const;
};

// The first refusal of a decode of this config from `prefill` rows of `tokens`, as a
// SessionError naming the field and the value: prefill outside [1, tokens] ("--decode-from"),
// dropout in training mode (its masks are drawn over whole (T, T) matrices, which a decoder
// never forms), no causal mask (row i would read later rows, which a cache does not hold yet).
void check_decode(const ModelConfig& c, int prefill, int tokens);

// input (b, T, d_in) -> the decode of its T rows through a cache, prefill rows first.
// Throws what check_decode throws.
DecodeTrace decode_with_cache(const Model& model, const Tensor& input, int prefill);

}  // namespace mhaviz
