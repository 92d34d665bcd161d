// The fast forward pass: products in the project's kernel (gemm.hpp, AVX-512 or AVX2) or, where the CPU
// lacks it or backend() says so, Eigen expressions that go to OpenBLAS; element-wise
// stages split over threads. reference.cpp holds the loop version it is tested against.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gemm.hpp"
#include "linear.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/trace.hpp"
#include "parallel.hpp"
#include "softmax.hpp"

namespace mhaviz {
namespace {

using detail::linear_into;

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

// Reuses the buffer's capacity: an unchanged shape costs no allocation or zeroing.
void reshape(Tensor& t, Shape shape) {
  t.shape = std::move(shape);
  t.data.resize(static_cast<std::size_t>(shape_numel(t.shape)));
}

// src: (b·T rows, row_stride) row-major; head h, feature d of a row lives at column
// offset + h*head_stride + d. Writes heads (b, h, T, hd), i.e. view(b, T, h, ·) followed by
// transpose(1, 2), and, when flat is not null, the same values as (b, T, h*hd), in one pass
// over src. Rows are split over threads when there are enough of them (GPT-2 at T = 1024).
void split_heads(const float* src, std::int64_t row_stride, std::int64_t offset, std::int64_t head_stride, int b, int T,
                 int H, int hd, float* heads, float* flat) {
  detail::parallel_for(static_cast<std::int64_t>(b) * T, std::max(1, H * hd / 4), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t bi = r / T, t = r % T;
      for (int h = 0; h < H; ++h) {
        const float* s = src + r * row_stride + offset + h * head_stride;
        std::copy(s, s + hd, heads + ((bi * H + h) * T + t) * hd);
        if (flat) std::copy(s, s + hd, flat + r * H * hd + static_cast<std::int64_t>(h) * hd);
      }
    }
  });
}

// src: (b, h, T, hd) -> dst: (b, T, h*hd), i.e. transpose(1, 2) then view(b, T, h*hd).
void merge_heads(const float* src, int b, int T, int H, int hd, float* dst) {
  detail::parallel_for(static_cast<std::int64_t>(b) * T, std::max(1, H * hd / 4), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t bi = r / T, t = r % T;
      for (int h = 0; h < H; ++h) {
        const float* s = src + ((bi * H + h) * T + t) * hd;
        std::copy(s, s + hd, dst + r * H * hd + static_cast<std::int64_t>(h) * hd);
      }
    }
  });
}

// Query rows per attention block on the kernel: a block's scores and weights (2 · 48 · T
// floats, 384 KiB at T = 1024) stay in L2 between the products and the softmax. A multiple
// of both tiles' rows (6, 12); 64 ended every block in a narrower tile, 72 crowded L2.
constexpr int kAttnRows = 48;

// Rows [r0, r1) of one (batch, head) pair: w = softmax(s / divisor) over the keys a row may
// see (up to its own position when causal) and exact zeros past them. s, w: (T, T);
// scratch: softmax_scratch(T) floats (softmax.hpp: the same bits on every CPU).
void softmax_rows(const float* s, float* w, int T, int r0, int r1, bool causal, float divisor, float* scratch) {
  for (int i = r0; i < r1; ++i) {
    const std::int64_t valid = causal ? i + 1 : T;
    float* row = w + static_cast<std::int64_t>(i) * T;
    detail::softmax_row(s + static_cast<std::int64_t>(i) * T, valid, divisor, scratch, row);
    std::fill(row + valid, row + T, 0.0f);
  }
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
      split_heads(tr.qkv.ptr(), 3 * c.d_out, static_cast<std::int64_t>(part) * hd, 3 * hd, b, T, H, hd, heads_out[part]->ptr(),
                  qkv_out[part]->ptr());
    }
  } else if (!model.qkv_stacked.weight.empty()) {
    tr.qkv = Tensor();
    // One GEMM into (N, 3M) scratch, then queries | keys | values are its column blocks.
    tr.workspace.resize(static_cast<std::size_t>(N * 3 * M));
    linear_into(model.qkv_stacked, input.ptr(), N, tr.workspace.data(), 3 * M, kernel);
    for (int part = 0; part < 3; ++part) {
      const float* src = tr.workspace.data() + static_cast<std::int64_t>(part) * M;
      split_heads(src, 3 * M, 0, hd, b, T, H, hd, heads_out[part]->ptr(), qkv_out[part]->ptr());
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
      split_heads(qkv_out[part]->ptr(), M, 0, hd, b, T, H, hd, heads_out[part]->ptr(), nullptr);
    }
  }

  // 3-4. Raw scores q·kᵀ per (batch, head), then softmax(masked scores / sqrt(hd)) row by
  // row; masked cells are exactly 0.
  reshape(tr.scores, {b, H, T, T});
  reshape(tr.weights, {b, H, T, T});
  reshape(tr.context, per_head);
  const float divisor = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  const bool causal = c.causal;
  const bool drop = c.training && c.dropout > 0.0;
  if (kernel) {
    // kᵀ of every pair as packed panels, not row-major (hd, T): rows T floats apart fall in
    // the same L1 set at T = 1024, and the tiles then ran at 60 % of their speed on AVX2.
    const std::int64_t packed = detail::packed_size(T, hd);
    // Into the stacked projection's scratch, split by now. Never shrunk: growing it back on
    // the next forward would zero 9 MiB at T = 1024.
    if (tr.workspace.size() < static_cast<std::size_t>(P * packed)) tr.workspace.resize(static_cast<std::size_t>(P * packed));
    detail::parallel_for(P, T * hd, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) detail::pack_transposed_into(tr.k.ptr() + p * T * hd, T, hd, tr.workspace.data() + p * packed);
    });
    // Work in blocks of kAttnRows query rows of one pair: the block's scores, their softmax
    // and, without dropout, the block's context (6), while its scores and weights are still
    // in L2. Dropout draws over every pair in order first, so then the context waits for it.
    const std::int64_t blocks = (T + kAttnRows - 1) / kAttnRows;
    detail::parallel_for(P * blocks, std::int64_t{kAttnRows} * T * hd / 32, [&](std::int64_t u0, std::int64_t u1) {
      std::vector<float> scratch(static_cast<std::size_t>(detail::softmax_scratch(T)));
      for (std::int64_t u = u0; u < u1; ++u) {
        const std::int64_t p = u / blocks;
        const int r0 = static_cast<int>(u % blocks) * kAttnRows, r1 = std::min(T, r0 + kAttnRows);
        float* s = tr.scores.ptr() + p * TT;
        float* w = tr.weights.ptr() + p * TT;
        detail::gemm_packed(r1 - r0, T, hd, tr.q.ptr() + (p * T + r0) * hd, hd, tr.workspace.data() + p * packed, nullptr,
                            s + std::int64_t{r0} * T, T);
        softmax_rows(s, w, T, r0, r1, causal, divisor, scratch.data());
        // Under the causal mask these rows are zero past column r1: the context needs keys
        // [0, r1) only, half the work at large T (zeros would add nothing to any sum).
        if (!drop)
          detail::gemm_rowmajor(r1 - r0, hd, causal ? r1 : T, w + std::int64_t{r0} * T, T, tr.v.ptr() + p * T * hd, hd,
                                tr.context.ptr() + (p * T + r0) * hd, hd, false);
      }
    });
  } else {
    for (std::int64_t p = 0; p < P; ++p) {
      CMap qp(tr.q.ptr() + p * T * hd, T, hd), kp(tr.k.ptr() + p * T * hd, T, hd);
      Map sp(tr.scores.ptr() + p * TT, T, T);
      sp.noalias() = qp * kp.transpose();
    }
    detail::parallel_for(P * T, T * 8, [&](std::int64_t r0, std::int64_t r1) {
      std::vector<float> scratch(static_cast<std::size_t>(detail::softmax_scratch(T)));
      for (std::int64_t r = r0; r < r1; ++r) {  // row i of pair p
        const std::int64_t p = r / T;
        const int i = static_cast<int>(r % T);
        softmax_rows(tr.scores.ptr() + p * TT, tr.weights.ptr() + p * TT, T, i, i + 1, causal, divisor, scratch.data());
      }
    });
  }

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
        tr.dropped.data[static_cast<std::size_t>(e)] = kept ? tr.weights.data[static_cast<std::size_t>(e)] * scale : 0.0f;
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
  const Tensor& wd = tr.weights_after_dropout();

  // 6. Context = weights · v per (batch, head), unless the blocks above made it. Under the
  // causal mask the weights are lower-triangular (dropout keeps zeros zero), so row block
  // [r0, r1) only needs keys [0, r1).
  if (kernel && drop) {
    detail::parallel_for(P, std::max<std::int64_t>(1, TT * hd / (causal ? 128 : 64)), [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p)
        detail::gemm_rowmajor(T, hd, T, wd.ptr() + p * TT, T, tr.v.ptr() + p * T * hd, hd, tr.context.ptr() + p * T * hd, hd,
                              causal);
    });
  } else if (!kernel) {
    const int block = causal ? 128 : T;
    for (std::int64_t p = 0; p < P; ++p) {
      CMap wp(wd.ptr() + p * TT, T, T), vp(tr.v.ptr() + p * T * hd, T, hd);
      Map cp(tr.context.ptr() + p * T * hd, T, hd);
      for (int r0 = 0; r0 < T; r0 += block) {
        const int rows = std::min(block, T - r0), keys = causal ? r0 + rows : T;
        cp.middleRows(r0, rows).noalias() = wp.block(r0, 0, rows, keys) * vp.topRows(keys);
      }
    }
  }

  // 7. Transpose back and merge: (b, h, T, hd) -> (b, T, h*hd). The wrapper's torch.cat is the same layout.
  reshape(tr.context_merged, {b, T, M});
  merge_heads(tr.context.ptr(), b, T, H, hd, tr.context_merged.ptr());

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
