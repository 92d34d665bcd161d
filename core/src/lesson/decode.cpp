// Decoding through a KV cache (kv_cache.hpp). Steps of one decode step, rows [t0, t1):
// 1 the new rows' projections, heads, QK-norm and RoPE at their positions, by the full
// forward's own code (forward_steps.hpp); 2 the new keys and values (mla: the latent) appended
// to the cache; 3 mla: keys and values up-projected from the cached latent; 4 the attention of
// the new queries over the rows the cache holds, by the one attention routine; 5 merge and
// output projection of the new rows; 6 the rows placed at their positions in the decode's
// trace; 7 the window's eviction.
//
// Why the rows equal the full forward's bit for bit on the kernel: a Linear's row, RMSNorm's
// and RoPE's are the same sum whatever rows surround them (linear.hpp, rope.hpp), and an
// attention row is one FMA chain over its keys, which a hidden key (weight 0) leaves
// unchanged (attention.hpp): reading only the keys the cache kept gives the same bits. On
// OpenBLAS a product's bits follow its shape, so one row at a time differs in the last bits.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "kernels/attention.hpp"
#include "kernels/head_split.hpp"
#include "kernels/linear.hpp"
#include "lesson/forward_steps.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/kv_cache.hpp"
#include "mhaviz/session.hpp"

namespace mhaviz {

std::int64_t KvCacheLayout::values_per_token() const {
  std::int64_t n = 0;
  for (const CachedTensor& t : tensors) n += static_cast<std::int64_t>(t.heads) * t.width;
  return n;
}

KvCacheLayout kv_cache_layout(const ModelConfig& c) {
  KvCacheLayout l;
  l.window = c.sliding_window;
  if (c.variant == Variant::Mla) {
    l.tensors.push_back({"latent", "latent", 1, c.latent_dim});
    return l;
  }
  const char* key = c.rope_base != 0.0 ? "k_rotated" : c.qk_norm ? "k_normed" : "k";
  l.tensors.push_back({"k", key, kv_heads(c), head_dim(c)});
  l.tensors.push_back({"v", "v", kv_heads(c), head_dim(c)});
  return l;
}

Shape DecodeTrace::cache_shape(const CacheStep& step, std::size_t i) const {
  const CachedTensor& t = layout.tensors[i];
  return {trace.batch, t.heads, step.held.size(), t.width};
}

const Tensor& DecodeTrace::held_tensor(std::size_t i) const {
  const std::string& name = layout.tensors[i].holds;
  for (const auto& [n, t] : {std::pair{"k_rotated", &trace.k_rotated}, std::pair{"k_normed", &trace.k_normed},
                             std::pair{"k", &trace.k}, std::pair{"v", &trace.v}, std::pair{"latent", &trace.latent}})
    if (name == n) return *t;
  throw std::out_of_range("held_tensor: " + name);
}

void check_decode(const ModelConfig& c, int prefill, int tokens) {
  if (prefill < 1 || prefill > tokens)
    throw SessionError("--decode-from: " + std::to_string(prefill) + " is outside [1, " + std::to_string(tokens) +
                       "] (the session's tokens)");
  if (c.training && c.dropout > 0.0) {
    char p[32];
    std::snprintf(p, sizeof p, "%g", c.dropout);
    throw SessionError("model.dropout: " + std::string(p) +
                       " in training mode: decoding through a cache runs without dropout (its masks are drawn over "
                       "whole (T, T) matrices, which a decoder never forms); use --eval");
  }
  if (!c.causal)
    throw SessionError(
        "model.causal: false: decoding through a cache needs the causal mask (without it a row reads later rows, "
        "which the cache does not hold yet)");
}

namespace {

using detail::reshape;

// Rows [from, from + n) along `axis` of src -> rows [to, to + n) of dst, every other index
// alike; dst is shaped as src with `rows` there (allocated, zeros, on first use).
void copy_rows(const Tensor& src, std::int64_t from, Tensor& dst, std::int64_t to, std::int64_t n, int axis,
               std::int64_t rows) {
  if (src.empty()) return;
  Shape shape = src.shape;
  shape[static_cast<std::size_t>(axis)] = rows;
  if (dst.shape != shape) dst = Tensor(shape);
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= src.shape[static_cast<std::size_t>(d)];
  for (int d = axis + 1; d < src.rank(); ++d) inner *= src.shape[static_cast<std::size_t>(d)];
  const std::int64_t src_rows = src.shape[static_cast<std::size_t>(axis)];
  for (std::int64_t o = 0; o < outer; ++o)
    std::copy_n(src.ptr() + (o * src_rows + from) * inner, n * inner, dst.ptr() + (o * rows + to) * inner);
}

// The cache's storage: per layout tensor (b, heads, capacity, width), rows [0, held) in use,
// row 0 at position `begin`.
struct CacheStore {
  std::vector<Tensor> data;
  int capacity = 0, held = 0;
  std::int64_t begin = 0;

  // src: (b, heads, R, width), or the latent's (b, R, width) -> rows [held, held + R) of tensor i.
  void append(std::size_t i, const Tensor& src) {
    Tensor& t = data[i];
    const std::int64_t slabs = t.shape[0] * t.shape[1], width = t.shape[3], n = src.numel() / slabs;
    for (std::int64_t s = 0; s < slabs; ++s) std::copy_n(src.ptr() + s * n, n, t.ptr() + (s * capacity + held) * width);
  }
  // Keeps the last `keep` rows, moved to the front: the rolling buffer's eviction.
  void keep_last(int keep) {
    const int drop = held - keep;
    if (drop == 0) return;
    for (Tensor& t : data) {
      const std::int64_t width = t.shape[3], per = static_cast<std::int64_t>(capacity) * width;
      for (std::int64_t s = 0; s < t.shape[0] * t.shape[1]; ++s)
        std::memmove(t.ptr() + s * per, t.ptr() + s * per + drop * width,
                     static_cast<std::size_t>(keep * width) * sizeof(float));
    }
    begin += drop;
    held = keep;
  }
};

// What one step computes beyond the cache, reused from step to step.
struct StepBuffers {
  Trace rows;                                // the new rows' projections and heads (T = R)
  Tensor input, latent, keys, values, k, v;  // mla: the up-projection of the rows read
  Tensor k_normed, k_rotated, weights, context, merged, output;
  std::vector<float> workspace;
};

// Step 4: the new rows' queries (b, H, R, hd) over n keys of the K/V heads at k, v (rows of
// hd, heads kv_stride apart), the first at position k_pos -> weights (b, H, R, n), context.
void attend(const Model& model, const Tensor& q, std::int64_t q_pos, const float* k, const float* v,
            std::int64_t kv_stride, std::int64_t k_pos, int n, StepBuffers& s, bool kernel) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(q.shape[0]), H = c.num_heads, R = static_cast<int>(q.shape[2]), hd = head_dim(c);
  reshape(s.weights, {b, H, R, n});
  reshape(s.context, {b, H, R, hd});
  detail::AttentionJob job;
  job.batch = b;
  job.heads = H;
  job.kv_heads = kv_heads(c);
  job.rows = R;
  job.keys = n;
  job.head_dim = hd;
  job.q_pos = q_pos;
  job.k_pos = k_pos;
  job.q = q.ptr();
  job.k = k;
  job.v = v;
  job.q_stride = static_cast<std::int64_t>(R) * hd;
  job.kv_stride = kv_stride;
  job.mask = attention_mask(c);
  job.scale = detail::score_scale(c);
  job.weights = s.weights.ptr();
  job.out_stride = static_cast<std::int64_t>(R) * n;
  job.context = s.context.ptr();
  job.context_stride = static_cast<std::int64_t>(R) * hd;
  job.kernel = kernel;
  detail::attention(job, s.workspace);
}

// Step 6: the step's rows [t0, t0 + R) into the decode's trace; keys of mla from the last R of
// the rows it up-projected; weights at the columns of the keys read.
void place_rows(const StepBuffers& s, bool mla, std::int64_t t0, const KeyRange& read, Trace& tr) {
  const Trace& r = s.rows;
  const std::int64_t R = r.tokens, T = tr.tokens, skip = read.size() - R;
  for (const auto& [src, dst, axis] :
       {std::tuple{&r.queries, &tr.queries, 1}, std::tuple{&r.qkv, &tr.qkv, 1}, std::tuple{&r.latent, &tr.latent, 1},
        std::tuple{&r.q, &tr.q, 2}, std::tuple{&r.q_normed, &tr.q_normed, 2},
        std::tuple{&r.q_rotated, &tr.q_rotated, 2}, std::tuple{&s.context, &tr.context, 2},
        std::tuple{&s.merged, &tr.context_merged, 1}, std::tuple{&s.output, &tr.output, 1}})
    copy_rows(*src, 0, *dst, t0, R, axis, T);
  if (mla) {
    for (const auto& [src, dst, axis] :
         {std::tuple{&s.keys, &tr.keys, 1}, std::tuple{&s.values, &tr.values, 1}, std::tuple{&s.k, &tr.k, 2},
          std::tuple{&s.v, &tr.v, 2}, std::tuple{&s.k_normed, &tr.k_normed, 2}})
      copy_rows(*src, skip, *dst, t0, R, axis, T);
  } else {
    for (const auto& [src, dst, axis] :
         {std::tuple{&r.keys, &tr.keys, 1}, std::tuple{&r.values, &tr.values, 1}, std::tuple{&r.k, &tr.k, 2},
          std::tuple{&r.v, &tr.v, 2}, std::tuple{&r.k_normed, &tr.k_normed, 2},
          std::tuple{&r.k_rotated, &tr.k_rotated, 2}})
      copy_rows(*src, 0, *dst, t0, R, axis, T);
  }
  const std::int64_t n = read.size(), pairs = s.weights.shape[0] * s.weights.shape[1];
  for (std::int64_t p = 0; p < pairs; ++p)
    for (std::int64_t i = 0; i < R; ++i)
      std::copy_n(s.weights.ptr() + (p * R + i) * n, n, tr.weights.ptr() + (p * T + t0 + i) * T + read.begin);
}

}  // namespace

// input (b, T, d_in) -> DecodeTrace. Steps per block of new rows: see the top of the file.
DecodeTrace decode_with_cache(const Model& model, const Tensor& input, int prefill) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(input.shape[0]), T = static_cast<int>(input.shape[1]);
  check_decode(c, prefill, T);
  const int H = c.num_heads, hd = head_dim(c), W = c.sliding_window;
  const bool mla = c.variant == Variant::Mla, kernel = backend() != Backend::OpenBlas;
  DecodeTrace out;
  out.prefill = prefill;
  out.layout = kv_cache_layout(c);
  Trace& tr = out.trace;
  tr.config = c;
  tr.batch = b;
  tr.tokens = T;
  tr.d_in = model.d_in;
  tr.heads = H;
  tr.kv_heads = kv_heads(c);
  tr.head_dim = hd;
  tr.input = input;
  tr.cost = forward_cost(c, model.d_in, T, b);
  tr.weights = Tensor({b, H, T, T});

  // A step holds the rows kept so far and its new ones: the whole sequence without a window;
  // with one, at most W kept and one new, or the prefill's rows.
  CacheStore cache;
  cache.capacity = W > 0 ? std::min(T, std::max(prefill, W + 1)) : T;
  for (const CachedTensor& t : out.layout.tensors) cache.data.emplace_back(Shape{b, t.heads, cache.capacity, t.width});
  StepBuffers s;
  s.rows.batch = b;
  s.rows.head_dim = hd;
  for (int t0 = 0, t1 = prefill; t0 < T; t0 = t1, t1 = t0 + 1) {
    const int R = t1 - t0;
    // 1. The new rows, as the full forward computes them, at their positions.
    s.rows.tokens = R;
    copy_rows(input, t0, s.input, 0, R, 1, R);
    detail::project_inputs(model, s.input, s.rows, kernel);
    const Tensor& q = detail::norm_rotate(model, s.rows.q, model.q_norm, t0, s.rows.q_normed, s.rows.q_rotated);
    // 2. Into the cache, and the rows the new queries read: the window's last W + R - 1, the
    // earliest new query's window back to the newest row (all of them without a window).
    if (mla) {
      cache.append(0, s.rows.latent);  // (b, R, L) is (b, 1, R, L)
    } else {
      cache.append(0, detail::norm_rotate(model, s.rows.k, model.k_norm, t0, s.rows.k_normed, s.rows.k_rotated));
      cache.append(1, s.rows.v);
    }
    cache.held += R;
    const int n = W > 0 ? std::min(cache.held, W + R - 1) : cache.held, first = cache.held - n;
    const KeyRange read{cache.begin + first, cache.begin + cache.held};
    // 3-4. The attention over them; mla first up-projects the cached latent's rows.
    if (mla) {
      copy_rows(cache.data[0], first, s.latent, 0, n, 2, n);
      s.latent.shape = {b, n, c.latent_dim};
      detail::up_project(model, s.latent, s.keys, s.values, s.k, s.v, kernel);
      const Tensor& k = detail::norm_rotate(model, s.k, model.k_norm, read.begin, s.k_normed, s.k_rotated);
      attend(model, q, t0, k.ptr(), s.v.ptr(), static_cast<std::int64_t>(n) * hd, read.begin, n, s, kernel);
    } else {
      const std::int64_t at = static_cast<std::int64_t>(first) * hd;
      attend(model, q, t0, cache.data[0].ptr() + at, cache.data[1].ptr() + at,
             static_cast<std::int64_t>(cache.capacity) * hd, read.begin, n, s, kernel);
    }
    // 5-6. The new rows' output, and every tensor of theirs into the trace.
    detail::merge_and_project(model, s.context, s.merged, s.output, kernel);  // step 5
    place_rows(s, mla, t0, read, tr);
    // 7. The window keeps its last W rows; the others leave the cache.
    CacheStep step;
    step.queries = {t0, t1};
    step.read = read;
    const std::int64_t before = cache.begin;
    cache.keep_last(W > 0 ? std::min(cache.held, W) : cache.held);
    step.evicted = {before, cache.begin};
    step.held = {cache.begin, cache.begin + cache.held};
    step.elements = static_cast<std::int64_t>(b) * cache.held * out.layout.values_per_token();
    step.bytes = step.elements * KvCacheLayout::kBytesPerValue;
    out.steps.push_back(step);
  }
  for (std::size_t i = 0; i < cache.data.size(); ++i) {
    Tensor kept;
    copy_rows(cache.data[i], 0, kept, 0, cache.held, 2, cache.held);
    out.cache.push_back(std::move(kept));
  }
  return out;
}

}  // namespace mhaviz
