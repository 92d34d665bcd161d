// The trainer's operations (ops.hpp). Products in the project's kernel (gemm.hpp) or Eigen;
// row loops over the pool; softmax by the project's softmax_row (the same bits on every CPU).
//
// Index
//   [SECTION] helpers
//   [SECTION] encoder
//   [SECTION] layernorm
//   [SECTION] matmul
//   [SECTION] attention
//   [SECTION] GELU and residual
//   [SECTION] cross-entropy
#include "train/ops.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"
#include "kernels/softmax.hpp"

namespace mhaviz::train::ops {
namespace {

// [SECTION] helpers

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using Map = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;

CMap cmat(const float* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return CMap(p, rows, cols, Eigen::OuterStride<>(ld));
}
Map mat(float* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return Map(p, rows, cols, Eigen::OuterStride<>(ld));
}

// a (rows, cols; row stride lda) -> out (cols, rows; row stride ldo), through a 16 x 16 block
// on the stack: element by element, the writes of a large matrix stride through memory a cache
// line each, and written in one loop nest GCC kept the indices in memory (a tenth of a step).
[[gnu::noinline]] void transpose(const float* a, std::int64_t rows, std::int64_t cols, std::int64_t lda, float* out,
                                 std::int64_t ldo) {
  constexpr std::int64_t kBlock = 16;
  float block[kBlock][kBlock];
  for (std::int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (std::int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const std::int64_t nr = std::min(kBlock, rows - r0), nc = std::min(kBlock, cols - c0);
      for (std::int64_t r = 0; r < nr; ++r)
        for (std::int64_t c = 0; c < nc; ++c) block[c][r] = a[(r0 + r) * lda + c0 + c];
      for (std::int64_t c = 0; c < nc; ++c)
        for (std::int64_t r = 0; r < nr; ++r) out[(c0 + c) * ldo + r0 + r] = block[c][r];
    }
}

// Work units for parallel_for: one per multiply-add, as parallel.hpp's threshold counts them
// (a second thread starts past about 32 K units of work in all).
std::int64_t row_work(std::int64_t per_row) { return std::max<std::int64_t>(1, per_row); }

}  // namespace

// [SECTION] encoder

void encoder_forward(float* out, const std::int32_t* ids, const float* wte, const float* wpe, std::int64_t N, int T,
                     int C) {
  detail::parallel_for(N, row_work(C), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t n = r0; n < r1; ++n) {
      const float* te = wte + static_cast<std::int64_t>(ids[n]) * C;
      const float* pe = wpe + (n % T) * C;
      for (int c = 0; c < C; ++c) out[n * C + c] = te[c] + pe[c];
    }
  });
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* ids, std::int64_t N, int T,
                      int C, int V) {
  std::fill_n(dwte, static_cast<std::int64_t>(V) * C, 0.0f);
  std::fill_n(dwpe, static_cast<std::int64_t>(T) * C, 0.0f);
  // Serial: rows sharing a token add into the same row of dwte (N·C adds, microseconds).
  for (std::int64_t n = 0; n < N; ++n) {
    float* te = dwte + static_cast<std::int64_t>(ids[n]) * C;
    float* pe = dwpe + (n % T) * C;
    const float* d = dout + n * C;
    for (int c = 0; c < C; ++c) {
      te[c] += d[c];
      pe[c] += d[c];
    }
  }
}

// [SECTION] layernorm

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* scale, const float* shift,
                       std::int64_t N, int C) {
  detail::parallel_for(N, row_work(4 * C), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t n = r0; n < r1; ++n) {
      const float* x = inp + n * C;
      double sum = 0;
      for (int c = 0; c < C; ++c) sum += x[c];
      const float m = static_cast<float>(sum / C);
      double var = 0;
      for (int c = 0; c < C; ++c) var += static_cast<double>(x[c] - m) * static_cast<double>(x[c] - m);
      const float rs = static_cast<float>(1.0 / std::sqrt(var / C + 1e-5));
      for (int c = 0; c < C; ++c) out[n * C + c] = (x[c] - m) * rs * scale[c] + shift[c];
      mean[n] = m;
      rstd[n] = rs;
    }
  });
}

void layernorm_backward(float* dinp, float* dscale, float* dshift, const float* dout, const float* inp,
                        const float* scale, const float* mean, const float* rstd, std::int64_t N, int C) {
  // dinp row by row; dscale and dshift column by column, so no two threads add into one value.
  detail::parallel_for(N, row_work(6 * C), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t n = r0; n < r1; ++n) {
      const float* x = inp + n * C;
      const float* d = dout + n * C;
      double dnorm_mean = 0, dnorm_norm_mean = 0;
      for (int c = 0; c < C; ++c) {
        const float norm = (x[c] - mean[n]) * rstd[n];
        dnorm_mean += d[c] * scale[c];
        dnorm_norm_mean += d[c] * scale[c] * norm;
      }
      const float a = static_cast<float>(dnorm_mean / C), b = static_cast<float>(dnorm_norm_mean / C);
      for (int c = 0; c < C; ++c) {
        const float norm = (x[c] - mean[n]) * rstd[n];
        dinp[n * C + c] += (d[c] * scale[c] - a - norm * b) * rstd[n];
      }
    }
  });
  detail::parallel_for(C, row_work(2 * N), [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      double ds = 0, dh = 0;
      for (std::int64_t n = 0; n < N; ++n) {
        const float norm = (inp[n * C + c] - mean[n]) * rstd[n];
        ds += dout[n * C + c] * norm;
        dh += dout[n * C + c];
      }
      dscale[c] = static_cast<float>(ds);
      dshift[c] = static_cast<float>(dh);
    }
  });
}

// [SECTION] matmul

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, std::int64_t N, int IC,
                    int OC, std::vector<float>& pack, bool kernel) {
  if (kernel) {
    pack.resize(static_cast<std::size_t>(detail::packed_size(OC, IC)));
    detail::pack_transposed_into(weight, OC, IC, pack.data());
    detail::gemm_packed(static_cast<int>(N), OC, IC, inp, IC, pack.data(), bias, out, OC);
    return;
  }
  Map y = mat(out, N, OC, OC);
  y.noalias() = cmat(inp, N, IC, IC) * cmat(weight, OC, IC, IC).transpose();
  if (bias) y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, std::int64_t N, int IC, int OC, std::vector<float>& trans, bool kernel) {
  if (dbias) {
    detail::parallel_for(OC, row_work(N), [&](std::int64_t o0, std::int64_t o1) {
      std::fill(dbias + o0, dbias + o1, 0.0f);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t o = o0; o < o1; ++o) dbias[o] += dout[n * OC + o];
    });
  }
  if (!kernel) {
    if (dinp) mat(dinp, N, IC, IC).noalias() = cmat(dout, N, OC, OC) * cmat(weight, OC, IC, IC);
    mat(dweight, OC, IC, IC).noalias() = cmat(dout, N, OC, OC).transpose() * cmat(inp, N, IC, IC);
    return;
  }
  // dinp = dout · weight: weight (OC, IC) is the row-major B operand as it is.
  if (dinp)
    detail::parallel_for(N, row_work(static_cast<std::int64_t>(IC) * OC / 64), [&](std::int64_t r0, std::int64_t r1) {
      detail::gemm_rowmajor(static_cast<int>(r1 - r0), IC, OC, dout + r0 * OC, OC, weight, IC, dinp + r0 * IC, IC,
                            false);
    });
  // dweight = doutᵀ · inp, or its transpose inpᵀ · dout: the kernel's A operand must be
  // row-major along N, so the narrower of dout and inp is transposed first (qkv's dout is
  // three times inp's width).
  const bool by_rows = OC <= IC;
  const int rows = by_rows ? OC : IC, cols = by_rows ? IC : OC;
  const float* a = by_rows ? dout : inp;
  const float* b = by_rows ? inp : dout;
  trans.resize(static_cast<std::size_t>(N * rows + (by_rows ? 0 : static_cast<std::int64_t>(IC) * OC)));
  float* at = trans.data();
  float* c = by_rows ? dweight : trans.data() + N * rows;
  detail::parallel_for(N / 16 + 1, row_work(16 * rows / 2), [&](std::int64_t b0, std::int64_t b1) {
    const std::int64_t n0 = b0 * 16, n1 = std::min(N, b1 * 16);
    if (n1 > n0) transpose(a + n0 * rows, n1 - n0, rows, rows, at + n0, N);
  });
  detail::parallel_for(rows, row_work(N * cols / 64), [&](std::int64_t r0, std::int64_t r1) {
    detail::gemm_rowmajor(static_cast<int>(r1 - r0), cols, static_cast<int>(N), at + r0 * N, N, b, cols, c + r0 * cols,
                          cols, false);
  });
  if (!by_rows) transpose(c, IC, OC, OC, dweight, IC);
}

// [SECTION] attention

namespace {

// Head h of sequence b: its queries, keys and values inside qkv (row stride 3C) and its
// context's place in the merged (B, T, C) output (row stride C).
struct HeadView {
  const float* q;
  const float* k;
  const float* v;
  std::int64_t merged;  // offset of row 0, column h·hd in a (B, T, C) buffer
};
HeadView head_view(const float* qkv, std::int64_t pair, int T, int C, int H) {
  const std::int64_t b = pair / H, h = pair % H, hd = C / H;
  const float* q = qkv + b * T * 3 * C + h * hd;
  return {q, q + C, q + 2 * C, b * T * C + h * hd};
}

float score_divisor(int hd) { return static_cast<float>(std::sqrt(static_cast<double>(hd))); }

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int H, bool kernel) {
  const int hd = C / H;
  const std::int64_t TT = static_cast<std::int64_t>(T) * T, ld = 3 * static_cast<std::int64_t>(C);
  const float divisor = score_divisor(hd);
  detail::parallel_for(static_cast<std::int64_t>(B) * H, row_work(2 * TT * hd), [&](std::int64_t p0, std::int64_t p1) {
    std::vector<float> kt(static_cast<std::size_t>(T) * hd),
        scratch(static_cast<std::size_t>(detail::softmax_scratch(T)));
    for (std::int64_t p = p0; p < p1; ++p) {
      const HeadView h = head_view(qkv, p, T, C, H);
      float* a = att + p * TT;
      if (kernel) {
        transpose(h.k, T, hd, ld, kt.data(), T);
        detail::gemm_rowmajor(T, T, hd, h.q, ld, kt.data(), T, a, T, false);
      } else {
        mat(a, T, T, T).noalias() = cmat(h.q, T, hd, ld) * cmat(h.k, T, hd, ld).transpose();
      }
      detail::softmax_causal(a, T, divisor);
      if (kernel)
        detail::gemm_rowmajor(T, hd, T, a, T, h.v, ld, out + h.merged, C, true);
      else
        mat(out + h.merged, T, hd, C).noalias() = cmat(a, T, T, T) * cmat(h.v, T, hd, ld);
    }
  });
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C, int H,
                        bool kernel) {
  const int hd = C / H;
  const std::int64_t TT = static_cast<std::int64_t>(T) * T, ld = 3 * static_cast<std::int64_t>(C);
  const float divisor = score_divisor(hd);
  detail::parallel_for(static_cast<std::int64_t>(B) * H, row_work(4 * TT * hd), [&](std::int64_t p0, std::int64_t p1) {
    std::vector<float> vt(static_cast<std::size_t>(T) * hd), datt(static_cast<std::size_t>(TT)),
        tr(static_cast<std::size_t>(TT));
    for (std::int64_t p = p0; p < p1; ++p) {
      const HeadView h = head_view(qkv, p, T, C, H);
      const float* a = att + p * TT;
      const float* dctx = dout + h.merged;
      // (h.q − qkv) is the head's offset in qkv: the same place in dqkv.
      float* dq = dqkv + (h.q - qkv);
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      if (kernel) {
        // datt = dctx · vᵀ; dv = attᵀ · dctx.
        transpose(h.v, T, hd, ld, vt.data(), T);
        detail::gemm_rowmajor(T, T, hd, dctx, C, vt.data(), T, datt.data(), T, false);
        transpose(a, T, T, T, tr.data(), T);
        detail::gemm_rowmajor(T, hd, T, tr.data(), T, dctx, C, dv, ld, false);
        detail::softmax_causal_backward(datt.data(), a, T, divisor);
        // dq = dscores · k (lower-triangular); dk = dscoresᵀ · q.
        detail::gemm_rowmajor(T, hd, T, datt.data(), T, h.k, ld, dq, ld, true);
        transpose(datt.data(), T, T, T, tr.data(), T);
        detail::gemm_rowmajor(T, hd, T, tr.data(), T, h.q, ld, dk, ld, false);
      } else {
        const CMap A = cmat(a, T, T, T), Dc = cmat(dctx, T, hd, C);
        Map D = mat(datt.data(), T, T, T);
        D.noalias() = Dc * cmat(h.v, T, hd, ld).transpose();
        mat(dv, T, hd, ld).noalias() = A.transpose() * Dc;
        detail::softmax_causal_backward(datt.data(), a, T, divisor);
        mat(dq, T, hd, ld).noalias() = D * cmat(h.k, T, hd, ld);
        mat(dk, T, hd, ld).noalias() = D.transpose() * cmat(h.q, T, hd, ld);
      }
    }
  });
}

// [SECTION] GELU and residual

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π), as torch.sqrt(torch.tensor(2 / π))
constexpr float kGeluCubic = 0.044715f;
}  // namespace

void gelu_forward(float* out, const float* inp, std::int64_t n) {
  detail::parallel_for(n, 16, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const float x = inp[i];
      out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + kGeluCubic * x * x * x)));
    }
  });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) {
  detail::parallel_for(n, 16, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const float x = inp[i];
      const float th = std::tanh(kGeluScale * (x + kGeluCubic * x * x * x));
      const float sech2 = 1.0f - th * th;
      const float local = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
      dinp[i] = local * dout[i];
    }
  });
}

void residual_forward(float* out, const float* a, const float* b, std::int64_t n) {
  detail::parallel_for(n, 1, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) out[i] = a[i] + b[i];
  });
}

void accumulate(float* acc, const float* x, std::int64_t n) {
  detail::parallel_for(n, 1, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) acc[i] += x[i];
  });
}

// [SECTION] cross-entropy

void crossentropy_forward(float* losses, float* probs, const float* logits, const std::int32_t* targets, std::int64_t N,
                          int V) {
  detail::parallel_for(N, row_work(8 * V), [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> scratch(static_cast<std::size_t>(detail::softmax_scratch(V)));
    for (std::int64_t n = r0; n < r1; ++n) {
      float* p = probs + n * V;
      detail::softmax_row(logits + n * V, V, 1.0f, scratch.data(), p);
      // −log p[t]; when p[t] > ½ as −log1p(−(the others' sum)), which keeps the digits a
      // nearly certain prediction's small loss has (1 − p[t] would round them away).
      const int t = targets[n];
      double others = 0;
      for (int j = 0; j < V; ++j)
        if (j != t) others += p[j];
      losses[n] = static_cast<float>(others < 0.5 ? -std::log1p(-others) : -std::log(static_cast<double>(p[t])));
    }
  });
}

void crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, float dloss, std::int64_t N,
                           int V) {
  detail::parallel_for(N, row_work(V), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t n = r0; n < r1; ++n) {
      for (int j = 0; j < V; ++j) dlogits[n * V + j] = probs[n * V + j] * dloss;
      dlogits[n * V + targets[n]] -= dloss;
    }
  });
}

}  // namespace mhaviz::train::ops
