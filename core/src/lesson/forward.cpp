// The fast forward pass: products in the project's kernel (gemm.hpp, AVX-512 or AVX2) or, where the CPU
// lacks it or backend() says so, Eigen expressions that go to OpenBLAS; element-wise
// stages split over threads. reference.cpp holds the loop version it is tested against.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/head_split.hpp"
#include "kernels/linear.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "lesson/forward_steps.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {
namespace detail {

void reshape(Tensor& t, Shape shape) {
  t.shape = std::move(shape);
  t.data.resize(static_cast<std::size_t>(shape_numel(t.shape)));
}

namespace {

// Steps 1-2 of mla but its keys and values: queries and the latent from the input (the
// stacked W_query | W_DKV when prepared).
void project_latent(const Model& model, const Tensor& input, Trace& tr, bool kernel) {
  const ModelConfig& c = model.config;
  const int b = tr.batch, T = tr.tokens, H = c.num_heads, hd = head_dim(c), M = merged_dim(c), L = c.latent_dim;
  const std::int64_t N = static_cast<std::int64_t>(b) * T;
  reshape(tr.latent, {b, T, L});
  if (!model.qkv_stacked.weight.empty()) {
    tr.workspace.resize(static_cast<std::size_t>(N * (M + L)));
    linear_into(model.qkv_stacked, input.ptr(), N, tr.workspace.data(), M + L, kernel);
    split_heads(tr.workspace.data(), M + L, 0, hd, b, T, H, hd, tr.q.ptr(), T, 0, tr.queries.ptr());
    split_heads(tr.workspace.data(), M + L, M, L, b, T, 1, L, tr.latent.ptr(), T, 0,
                nullptr);  // (b, 1, T, L) is (b, T, L)
  } else {
    linear_into(model.layer("W_query"), input.ptr(), N, tr.queries.ptr(), M, kernel);
    linear_into(model.layer("W_DKV"), input.ptr(), N, tr.latent.ptr(), L, kernel);
    split_heads(tr.queries.ptr(), M, 0, hd, b, T, H, hd, tr.q.ptr(), T, 0, nullptr);
  }
}

// Steps 1-2 of the other variants: queries (b, T, M) and keys, values (b, T, G*hd) and their
// heads, q (b, H, T, hd) and k, v (b, G, T, hd).
void project(const Model& model, const Tensor& input, Trace& tr, bool kernel) {
  const ModelConfig& c = model.config;
  const int b = tr.batch, T = tr.tokens, H = c.num_heads, G = kv_heads(c), hd = head_dim(c), M = merged_dim(c);
  const std::int64_t N = static_cast<std::int64_t>(b) * T;
  reshape(tr.k, {b, G, T, hd});
  reshape(tr.v, {b, G, T, hd});
  reshape(tr.keys, {b, T, G * hd});
  reshape(tr.values, {b, T, G * hd});
  Tensor* qkv_out[3] = {&tr.queries, &tr.keys, &tr.values};
  Tensor* heads_out[3] = {&tr.q, &tr.k, &tr.v};
  const int heads[3] = {H, G, G};
  if (c.variant == Variant::FusedQkv) {
    reshape(tr.qkv, {b, T, 3 * c.d_out});
    linear_into(model.layer("qkv_layer"), input.ptr(), N, tr.qkv.ptr(), 3 * c.d_out, kernel);
    // reshape (b, T, h, 3*hd) -> permute (b, h, T, 3*hd) -> chunk(3, dim=-1)
    for (int part = 0; part < 3; ++part) {
      split_heads(tr.qkv.ptr(), 3 * c.d_out, static_cast<std::int64_t>(part) * hd, 3 * hd, b, T, H, hd,
                  heads_out[part]->ptr(), T, 0, qkv_out[part]->ptr());
    }
    return;
  }
  tr.qkv = Tensor();
  if (!model.qkv_stacked.weight.empty() && kernel && M % kPanel == 0 && (G * hd) % kPanel == 0) {
    // queries | keys | values are the stack's column blocks, each computed into its tensor; the
    // split then writes only the heads (through a scratch they cost a third more writes: the
    // chapter-3 forward's split at T = 1024 took 0.5 ms against 0.2).
    const std::int64_t offset[3] = {0, M, M + static_cast<std::int64_t>(G) * hd};
    for (int part = 0; part < 3; ++part) {
      const int width = heads[part] * hd;
      linear_columns_into(model.qkv_stacked, input.ptr(), N, offset[part], width, qkv_out[part]->ptr(), width, kernel);
      split_heads(qkv_out[part]->ptr(), width, 0, hd, b, T, heads[part], hd, heads_out[part]->ptr(), T, 0, nullptr);
    }
    return;
  }
  if (!model.qkv_stacked.weight.empty()) {
    // One GEMM into (N, M + 2 G hd) scratch, then queries | keys | values are its column blocks.
    const int width = model.qkv_stacked.out;
    tr.workspace.resize(static_cast<std::size_t>(N * width));
    linear_into(model.qkv_stacked, input.ptr(), N, tr.workspace.data(), width, kernel);
    const std::int64_t offset[3] = {0, M, M + static_cast<std::int64_t>(G) * hd};
    for (int part = 0; part < 3; ++part)
      split_heads(tr.workspace.data() + offset[part], width, 0, hd, b, T, heads[part], hd, heads_out[part]->ptr(), T, 0,
                  qkv_out[part]->ptr());
    return;
  }
  static constexpr const char* kNames[3] = {"W_query", "W_key", "W_value"};
  for (int part = 0; part < 3; ++part) {
    const int width = heads[part] * hd;
    if (c.variant == Variant::Wrapper) {
      for (int h = 0; h < H; ++h)
        linear_into(model.layer("heads." + std::to_string(h) + "." + kNames[part]), input.ptr(), N,
                    qkv_out[part]->ptr() + static_cast<std::int64_t>(h) * hd, M, kernel);
    } else {
      linear_into(model.layer(kNames[part]), input.ptr(), N, qkv_out[part]->ptr(), width, kernel);
    }
    split_heads(qkv_out[part]->ptr(), width, 0, hd, b, T, heads[part], hd, heads_out[part]->ptr(), T, 0, nullptr);
  }
}

}  // namespace

void project_inputs(const Model& model, const Tensor& input, Trace& tr, bool kernel) {
  const ModelConfig& c = model.config;
  const int b = tr.batch, T = tr.tokens;
  reshape(tr.q, {b, c.num_heads, T, head_dim(c)});
  reshape(tr.queries, {b, T, merged_dim(c)});
  if (c.variant == Variant::Mla) {
    tr.qkv = Tensor();
    project_latent(model, input, tr, kernel);
  } else {
    tr.latent = Tensor();
    project(model, input, tr, kernel);
  }
}

void up_project(const Model& model, const Tensor& latent, Tensor& keys, Tensor& values, Tensor& k, Tensor& v,
                bool kernel) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(latent.shape[0]), T = static_cast<int>(latent.shape[1]);
  const int H = c.num_heads, hd = head_dim(c), M = merged_dim(c);
  const std::int64_t N = static_cast<std::int64_t>(b) * T;
  reshape(keys, {b, T, M});
  reshape(values, {b, T, M});
  reshape(k, {b, H, T, hd});
  reshape(v, {b, H, T, hd});
  linear_into(model.layer("W_UK"), latent.ptr(), N, keys.ptr(), M, kernel);
  linear_into(model.layer("W_UV"), latent.ptr(), N, values.ptr(), M, kernel);
  split_heads(keys.ptr(), M, 0, hd, b, T, H, hd, k.ptr(), T, 0, nullptr);
  split_heads(values.ptr(), M, 0, hd, b, T, H, hd, v.ptr(), T, 0, nullptr);
}

const Tensor& norm_rotate(const Model& model, const Tensor& x, const std::vector<float>& scale, std::int64_t pos0,
                          Tensor& normed, Tensor& rotated) {
  const ModelConfig& c = model.config;
  const int batch = static_cast<int>(x.shape[0]), heads = static_cast<int>(x.shape[1]);
  const int T = static_cast<int>(x.shape[2]), hd = static_cast<int>(x.shape[3]);
  const Tensor* out = &x;
  if (c.qk_norm) {
    reshape(normed, x.shape);
    // RMSNorm(head_dim, eps): each head's vector at each position is one row.
    detail::rms_norm(x.ptr(), normed.ptr(), x.numel() / hd, hd, scale.data(), c.qk_norm_eps, detail::RmsWeight::Plain);
    out = &normed;
  } else {
    normed = Tensor();
  }
  if (c.rope_base != 0.0) {
    rotated = *out;
    const std::vector<double> inv_freq = rope_inv_freq(c);
    const std::int64_t per_item = static_cast<std::int64_t>(heads) * T * hd;
    for (int bi = 0; bi < batch; ++bi)
      detail::rope(rotated.ptr() + bi * per_item, detail::RopeBlock::heads_major(T, heads, hd), pos0, inv_freq);
    out = &rotated;
  } else {
    rotated = Tensor();
  }
  return *out;
}

void merge_and_project(const Model& model, const Tensor& context, Tensor& merged, Tensor& output, bool kernel) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(context.shape[0]), R = static_cast<int>(context.shape[2]);
  const int H = c.num_heads, hd = head_dim(c), M = merged_dim(c);
  // (b, h, R, hd) -> (b, R, h*hd): the transpose back and the view. The wrapper's torch.cat is the same layout.
  reshape(merged, {b, R, M});
  merge_heads(context.ptr(), b, R, H, hd, R, 0, merged.ptr());
  if (c.variant == Variant::Wrapper) {
    output = merged;
    return;
  }
  const Linear& out = model.layer(c.variant == Variant::FusedQkv ? "linear_layer" : "out_proj");
  reshape(output, {b, R, output_dim(c)});
  linear_into(out, merged.ptr(), static_cast<std::int64_t>(b) * R, output.ptr(), output_dim(c), kernel);
}

}  // namespace detail

namespace {

using detail::linear_into;
using detail::reshape;

// keys_base.repeat_interleave(H / G, dim=1): (b, G, T, hd) -> (b, H, T, hd), query head h
// reading K/V head h / (H / G).
void repeat_interleave(const Tensor& src, int H, Tensor& dst) {
  const std::int64_t b = src.shape[0], G = src.shape[1], head = src.shape[2] * src.shape[3];
  reshape(dst, {b, H, src.shape[2], src.shape[3]});
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (int h = 0; h < H; ++h) {
      const float* s = src.ptr() + (bi * G + h / (H / G)) * head;
      std::copy(s, s + head, dst.ptr() + (bi * H + h) * head);
    }
}

}  // namespace

std::vector<double> rope_inv_freq(double base, int head_dim) {
  std::vector<double> f(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / head_dim);
  return f;
}

std::vector<double> rope_inv_freq(const ModelConfig& c) {
  return c.rope_inv_freq.empty() ? rope_inv_freq(c.rope_base, head_dim(c)) : c.rope_inv_freq;
}

// input (b, T, d_in) -> trace with every intermediate (see trace.hpp for shapes).
// Steps: 1 project, 2 split heads (2a QK-norm, 2b RoPE when set), 3 scores, 4 mask + scale + softmax, 5 dropout,
// 6 context, 7 merge, 8 output projection.
void forward(const Model& model, const Tensor& input, Trace& tr) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(input.shape[0]), T = static_cast<int>(input.shape[1]);
  const int H = c.num_heads, G = kv_heads(c), hd = head_dim(c);
  const std::int64_t TT = static_cast<std::int64_t>(T) * T;
  const std::int64_t P = static_cast<std::int64_t>(b) * H;  // (batch, head) pairs
  tr.config = c;
  tr.batch = b;
  tr.tokens = T;
  tr.d_in = model.d_in;
  tr.heads = H;
  tr.kv_heads = G;
  tr.head_dim = hd;
  tr.input = input;
  tr.cost = forward_cost(c, model.d_in, T, b);
  const bool kernel = backend() != Backend::OpenBlas;  // read once: one forward, one backend

  // 1-2. Projections and the split into heads (mla: keys and values up from the latent), then
  // 2a-2b QK-norm and RoPE at positions from 0.
  detail::project_inputs(model, input, tr, kernel);
  if (c.variant == Variant::Mla) detail::up_project(model, tr.latent, tr.keys, tr.values, tr.k, tr.v, kernel);
  const Tensor* q_att = &detail::norm_rotate(model, tr.q, model.q_norm, 0, tr.q_normed, tr.q_rotated);
  const Tensor* k_att = &detail::norm_rotate(model, tr.k, model.k_norm, 0, tr.k_normed, tr.k_rotated);
  if (c.variant == Variant::Gqa) {
    repeat_interleave(*k_att, H, tr.k_expanded);
    repeat_interleave(tr.v, H, tr.v_expanded);
  } else {
    tr.k_expanded = tr.v_expanded = Tensor();
  }

  // 3-4 (and 6 without dropout). Raw scores q·kᵀ of every cell, then softmax(masked scores /
  // sqrt(hd), or · query_pre_attn_scalar^-0.5) row by row with hidden cells exactly 0 (attention.hpp).
  reshape(tr.scores, {b, H, T, T});
  reshape(tr.weights, {b, H, T, T});
  reshape(tr.context, {b, H, T, hd});
  const bool drop = c.training && c.dropout > 0.0;
  detail::AttentionJob job =
      detail::per_head_job(b, H, T, hd, 0, q_att->ptr(), k_att->ptr(), tr.v.ptr(), tr.weights.ptr(),
                           drop ? nullptr : tr.context.ptr(), kernel);  // dropout draws over every pair first
  job.kv_heads = G;  // K/V heads read in place: the expanded copies are only shown
  job.mask = attention_mask(c);
  job.scale = detail::score_scale(c);
  job.raw_scores = tr.scores.ptr();
  // The workspace (the stacked projection's scratch where it went through one, split by now)
  // holds the packed keys.
  detail::attention(job, tr.workspace);

  // 5. Dropout in training mode, drawn in PyTorch's order from the generator state after init:
  // wrapper heads run one after another, each over (b, T, T); split variants over (b, h, T, T).
  if (drop) {
    reshape(tr.dropped, {b, H, T, T});
    tr.keep.assign(static_cast<std::size_t>(P * TT), 0);
    std::mt19937 gen = model.rng_after_init;
    const double keep_p = 1.0 - c.dropout;
    const float scale = 1.0f / static_cast<float>(keep_p);
    auto draw_pair = [&](std::int64_t p) {
      for (std::int64_t e = p * TT; e < (p + 1) * TT; ++e) {
        const bool kept = torch_uniform53(gen) < keep_p;
        tr.keep[static_cast<std::size_t>(e)] = kept ? 1 : 0;
        tr.dropped.data[static_cast<std::size_t>(e)] =
            kept ? tr.weights.data[static_cast<std::size_t>(e)] * scale : 0.0f;
      }
    };
    if (c.variant == Variant::Wrapper) {
      for (int h = 0; h < H; ++h)
        for (int bi = 0; bi < b; ++bi) draw_pair(static_cast<std::int64_t>(bi) * H + h);
    } else {
      for (std::int64_t p = 0; p < P; ++p) draw_pair(p);
    }
  } else {
    tr.dropped = Tensor();
    tr.keep.clear();
  }

  // 6. Context = dropped weights · v (dropout keeps zeros zero: the mask's key ranges hold).
  if (drop) {
    job.context = tr.context.ptr();
    detail::attention_context(job, tr.dropped.ptr());
  }

  // 7-8. Transpose back and merge, then the output projection (none in the wrapper).
  detail::merge_and_project(model, tr.context, tr.context_merged, tr.output, kernel);
}

Trace forward(const Model& model, const Tensor& input) {
  Trace tr;
  forward(model, input, tr);
  return tr;
}

// q (b, H, T, hd), k (b, G, T, hd) -> (b, H, T, T): the forward's own attention call with the
// trace's mask, so a pair it also computed has the trace's bits.
Tensor raw_scores(const Trace& tr, const Tensor& q, const Tensor& k) {
  const int b = tr.batch, H = static_cast<int>(q.shape[1]), T = tr.tokens, hd = tr.head_dim;
  Tensor scores({b, H, T, T});
  std::vector<float> weights(scores.data.size()), workspace;
  detail::AttentionJob job = detail::per_head_job(b, H, T, hd, 0, q.ptr(), k.ptr(), k.ptr(), weights.data(), nullptr,
                                                  backend() != Backend::OpenBlas);
  job.kv_heads = static_cast<int>(k.shape[1]);
  job.mask = tr.mask();
  job.scale = detail::score_scale(tr.config);
  job.raw_scores = scores.ptr();
  detail::attention(job, workspace);
  return scores;
}

RepeatMistake mistaken_repeat(const Trace& tr) {
  // .repeat(1, H / G, 1, 1) tiles the G heads: query head h gets K/V head h mod G.
  const Tensor& k_read = !tr.k_rotated.empty() ? tr.k_rotated : !tr.k_normed.empty() ? tr.k_normed : tr.k;
  const int H = tr.heads, G = tr.kv_heads;
  RepeatMistake m;
  for (auto [src, dst] : {std::pair{&k_read, &m.k_expanded}, std::pair{&tr.v, &m.v_expanded}}) {
    const std::int64_t head = src->shape[2] * src->shape[3];
    *dst = Tensor({tr.batch, H, src->shape[2], src->shape[3]});
    for (std::int64_t bi = 0; bi < tr.batch; ++bi)
      for (int h = 0; h < H; ++h) {
        const float* from = src->ptr() + (bi * G + h % G) * head;
        std::copy(from, from + head, dst->ptr() + (bi * H + h) * head);
      }
  }
  const Tensor& q_read = !tr.q_rotated.empty() ? tr.q_rotated : !tr.q_normed.empty() ? tr.q_normed : tr.q;
  m.scores = raw_scores(tr, q_read, m.k_expanded);
  return m;
}

}  // namespace mhaviz
