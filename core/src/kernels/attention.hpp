// The attention of every model in the core (the chapter-3 module, the trained GPTs): for each
// (batch, query head) pair, raw scores q·kᵀ, the mask (attention_mask.hpp), softmax of the
// scaled scores over the keys the mask leaves (softmax.hpp: the same bits on every CPU) and
// the context weights · v, in blocks of query rows while a block's scores are in L2.
//
// On the kernel (gemm.hpp) every element is one FMA chain over the keys in order, and keys a
// row does not see hold weight 0, which adds nothing to it: an element has the same bits
// whatever block, key range or query offset it was computed in. So rows [P, T) computed
// against the keys of a prefix-cached sequence equal the full computation's rows bit for bit.
// On OpenBLAS a product's bits depend on its shape: blocks there are kBlasRows query rows
// aligned to absolute positions, so a query offset that is a multiple of kBlasRows gives the
// full computation's blocks, and bits.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/softmax.hpp"
#include "mhaviz/attention_mask.hpp"
#include "mhaviz/key_panels.hpp"

namespace mhaviz::detail {

// Query rows per block on the kernel: the record's attn_rows (tuning.hpp), so that a block's
// scores and weights (2 · 48 · T floats, 384 KiB at T = 1024) stay in L2 between the
// products and the softmax. A multiple of every tile's rows (3, 6, 12).

// b sequences; H query heads reading G K/V heads (H % G == 0: query head h reads K/V head
// h / (H / G), grouped-query attention; G == H is multi-head attention); R query rows at
// positions q_pos + r against Tk keys at positions k_pos + j; head size hd. Every matrix is
// row-major with rows of hd (q, k, v, context) or Tk (scores, weights) floats.
struct AttentionJob {
  int batch = 1, heads = 1, kv_heads = 1;
  int rows = 0, keys = 0, head_dim = 0;
  std::int64_t q_pos = 0, k_pos = 0;
  // Pair p = b·H + h reads q + p·q_stride (R, hd) and K/V head g = b·G + h / (H / G) at
  // k + g·kv_stride, v + g·kv_stride (Tk, hd).
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  std::int64_t q_stride = 0, kv_stride = 0;
  AttentionMask mask;
  ScoreScale scale;
  // Pair p writes (R, Tk) at weights + p·out_stride: softmax over the visible keys, exactly 0
  // on hidden ones (a row that sees no key is all 0). When raw_scores is set, the same
  // layout there receives q·kᵀ of every cell, before mask and scale, hidden cells included
  // (what the lesson shows at stage 1); else only the visible keys' scores are computed.
  float* weights = nullptr;
  float* raw_scores = nullptr;
  std::int64_t out_stride = 0;
  // Pair p's context (R, hd) at context + p·context_stride; null: the caller changes the
  // weights first (dropout) and calls attention_context.
  float* context = nullptr;
  std::int64_t context_stride = 0;
  bool kernel = true;  // the caller's backend is not OpenBLAS (read once per forward)
  // Keys [0, keys_unchanged) are those the KeyPanels passed to attention() were packed from
  // (a forward into a trace recomputing from row P, with that layer's panels: P); 0 packs all.
  std::int64_t keys_unchanged = 0;
};

// A job over per-head tensors as both forwards hold them, q, k, v, context (b, H, T, hd) and
// weights (b, H, T, T): query rows [start, T) of every pair against keys [0, T) (rows below
// start are a prefix already computed). Mask, scale and raw scores are left to the caller.
AttentionJob per_head_job(int b, int H, int T, int hd, int start, const float* q, const float* k, const float* v,
                          float* weights, float* context, bool kernel);

// Runs the job: weights (and raw scores), and the context unless job.context is null.
// keys: the keys packed for the kernel (b·G·packed_size(Tk, hd) floats), reused between calls;
// panels holding only keys below job.keys_unchanged are not packed again.
void attention(const AttentionJob& job, KeyPanels& keys);
// The same with a buffer that holds no keys from one call to the next (keys_unchanged 0).
void attention(const AttentionJob& job, std::vector<float>& workspace);

// The context alone from weights laid out as job.weights (after dropout, which keeps zeros
// zero): context = weights · v over the keys the mask leaves each block.
void attention_context(const AttentionJob& job, const float* weights);

}  // namespace mhaviz::detail
