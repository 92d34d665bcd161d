// The fast forward pass: products in the project's kernel (gemm.hpp, AVX-512 or AVX2) or, where the CPU
// lacks it or backend() says so, Eigen expressions that go to OpenBLAS; element-wise
// stages split over threads. reference.cpp holds the loop version it is tested against.
#include <cmath>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/head_split.hpp"
#include "kernels/linear.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {
namespace {

using detail::linear_into;
using detail::split_heads;

// Reuses the buffer's capacity: an unchanged shape costs no allocation or zeroing.
void reshape(Tensor& t, Shape shape) {
  t.shape = std::move(shape);
  t.data.resize(static_cast<std::size_t>(shape_numel(t.shape)));
}

}  // namespace

// input (b, T, d_in) -> trace with every intermediate (see trace.hpp for shapes).
// Steps: 1 project, 2 split heads, 3 scores, 4 mask + scale + softmax, 5 dropout,
// 6 context, 7 merge, 8 output projection.
void forward(const Model& model, const Tensor& input, Trace& tr) {
  const ModelConfig& c = model.config;
  const int b = static_cast<int>(input.shape[0]), T = static_cast<int>(input.shape[1]);
  const int H = c.num_heads, hd = head_dim(c), M = merged_dim(c);
  const std::int64_t N = static_cast<std::int64_t>(b) * T, TT = static_cast<std::int64_t>(T) * T;
  const std::int64_t P = static_cast<std::int64_t>(b) * H;  // (batch, head) pairs
  tr.config = c;
  tr.batch = b;
  tr.tokens = T;
  tr.d_in = model.d_in;
  tr.heads = H;
  tr.head_dim = hd;
  tr.input = input;
  tr.cost = forward_cost(c, model.d_in, T, b);
  const bool kernel = backend() != Backend::OpenBlas;  // read once: one forward, one backend

  // 1-2. Projections and the split into heads.
  const Shape per_head{b, H, T, hd};
  reshape(tr.q, per_head);
  reshape(tr.k, per_head);
  reshape(tr.v, per_head);
  reshape(tr.queries, {b, T, M});
  reshape(tr.keys, {b, T, M});
  reshape(tr.values, {b, T, M});
  Tensor* qkv_out[3] = {&tr.queries, &tr.keys, &tr.values};
  Tensor* heads_out[3] = {&tr.q, &tr.k, &tr.v};
  if (c.variant == Variant::FusedQkv) {
    reshape(tr.qkv, {b, T, 3 * c.d_out});
    linear_into(model.layer("qkv_layer"), input.ptr(), N, tr.qkv.ptr(), 3 * c.d_out, kernel);
    // reshape (b, T, h, 3*hd) -> permute (b, h, T, 3*hd) -> chunk(3, dim=-1)
    for (int part = 0; part < 3; ++part) {
      split_heads(tr.qkv.ptr(), 3 * c.d_out, static_cast<std::int64_t>(part) * hd, 3 * hd, b, T, H, hd,
                  heads_out[part]->ptr(), T, 0, qkv_out[part]->ptr());
    }
  } else if (!model.qkv_stacked.weight.empty()) {
    tr.qkv = Tensor();
    // One GEMM into (N, 3M) scratch, then queries | keys | values are its column blocks.
    tr.workspace.resize(static_cast<std::size_t>(N * 3 * M));
    linear_into(model.qkv_stacked, input.ptr(), N, tr.workspace.data(), 3 * M, kernel);
    for (int part = 0; part < 3; ++part) {
      const float* src = tr.workspace.data() + static_cast<std::int64_t>(part) * M;
      split_heads(src, 3 * M, 0, hd, b, T, H, hd, heads_out[part]->ptr(), T, 0, qkv_out[part]->ptr());
    }
  } else {
    tr.qkv = Tensor();
    static constexpr const char* kNames[3] = {"W_query", "W_key", "W_value"};
    for (int part = 0; part < 3; ++part) {
      if (c.variant == Variant::Wrapper) {
        for (int h = 0; h < H; ++h)
          linear_into(model.layer("heads." + std::to_string(h) + "." + kNames[part]), input.ptr(), N,
                      qkv_out[part]->ptr() + static_cast<std::int64_t>(h) * hd, M, kernel);
      } else {
        linear_into(model.layer(kNames[part]), input.ptr(), N, qkv_out[part]->ptr(), M, kernel);
      }
      split_heads(qkv_out[part]->ptr(), M, 0, hd, b, T, H, hd, heads_out[part]->ptr(), T, 0, nullptr);
    }
  }

  // 3-4 (and 6 without dropout). Raw scores q·kᵀ of every cell, then softmax(masked scores /
  // sqrt(hd)) row by row with hidden cells exactly 0 (attention.hpp).
  reshape(tr.scores, {b, H, T, T});
  reshape(tr.weights, {b, H, T, T});
  reshape(tr.context, per_head);
  const bool drop = c.training && c.dropout > 0.0;
  detail::AttentionJob job =
      detail::per_head_job(b, H, T, hd, 0, tr.q.ptr(), tr.k.ptr(), tr.v.ptr(), tr.weights.ptr(),
                           drop ? nullptr : tr.context.ptr(), kernel);  // dropout draws over every pair first
  job.mask = attention_mask(c);
  job.raw_scores = tr.scores.ptr();
  // The stacked projection's scratch, split by now, holds the packed keys.
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

  // 7. Transpose back and merge: (b, h, T, hd) -> (b, T, h*hd). The wrapper's torch.cat is the same layout.
  reshape(tr.context_merged, {b, T, M});
  detail::merge_heads(tr.context.ptr(), b, T, H, hd, T, 0, tr.context_merged.ptr());

  // 8. Output projection (none in the wrapper).
  if (c.variant == Variant::Wrapper) {
    tr.output = tr.context_merged;
  } else {
    const Linear& out = model.layer(c.variant == Variant::WeightSplit ? "out_proj" : "linear_layer");
    reshape(tr.output, {b, T, c.d_out});
    linear_into(out, tr.context_merged.ptr(), N, tr.output.ptr(), c.d_out, kernel);
  }
}

Trace forward(const Model& model, const Tensor& input) {
  Trace tr;
  forward(model, input, tr);
  return tr;
}

}  // namespace mhaviz
