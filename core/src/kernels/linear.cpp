#include "kernels/linear.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"

namespace mhaviz::detail {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const RowMat>;
using StridedMap = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;

// Below this many rows a product is bound by reading the weights, and gemm_packed keeps
// it on one thread: the panels are split over threads here instead (a GPT edit at the
// last position multiplies one row by every weight).
constexpr std::int64_t kFewRows = 16;

void gemm_of(int m, int n, int k, const float* a, std::int64_t lda, const float* b, const float* bias, float* c,
             std::int64_t ldc) {
  gemm_packed(m, n, k, a, lda, b, bias, c, ldc);
}
void gemm_of(int m, int n, int k, const float* a, std::int64_t lda, const std::uint16_t* b, const float* bias, float* c,
             std::int64_t ldc) {
  gemm_packed_bf16(m, n, k, a, lda, b, bias, c, ldc);
}

// True when l's product runs on its panels (float or BF16).
bool on_panels(const Linear& l, bool kernel) {
  return !l.packed_bf16.empty() || (!l.packed.empty() && (kernel || l.weight.empty()));
}

// Output columns [p0·kPanel, p1·kPanel) ∩ [0, end) of x · Wᵀ + b, from l's panels (float or
// BF16) on the calling thread, into y (n rows, row stride ld) whose column 0 is output column
// `first` (a multiple of kPanel ≤ p0·kPanel). Panel p holds output columns
// [p·kPanel, (p + 1)·kPanel), in·kPanel values (gemm.hpp).
void panel_range(const Linear& l, const float* x, std::int64_t n, float* y, std::int64_t ld, std::int64_t p0,
                 std::int64_t p1, std::int64_t first = 0, std::int64_t end = -1) {
  const std::int64_t j = p0 * kPanel, at = p0 * l.in * kPanel;
  const std::int64_t cols = std::min<std::int64_t>(end < 0 ? l.out : end, p1 * kPanel) - j;
  const float* bias = l.bias.empty() ? nullptr : l.bias.data() + j;
  float* out = y + (j - first);
  if (!l.packed_bf16.empty())
    gemm_of(static_cast<int>(n), static_cast<int>(cols), l.in, x, l.in, l.packed_bf16.data() + at, bias, out, ld);
  else
    gemm_of(static_cast<int>(n), static_cast<int>(cols), l.in, x, l.in, l.packed.data() + at, bias, out, ld);
}

std::int64_t panel_count(const Linear& l) { return (l.out + kPanel - 1) / kPanel; }

}  // namespace

void linear_into(const Linear& l, const float* x, std::int64_t n, float* y, std::int64_t ld, bool kernel) {
  if (on_panels(l, kernel)) {
    if (n >= kFewRows) {
      panel_range(l, x, n, y, ld, 0, panel_count(l));  // gemm_packed splits the panels over threads
      return;
    }
    const std::int64_t per_panel = static_cast<std::int64_t>(l.in) * kPanel;
    parallel_for_shared(panel_count(l), std::max<std::int64_t>(1, per_panel / 8),
                        [&](std::int64_t p0, std::int64_t p1) { panel_range(l, x, n, y, ld, p0, p1); });
    return;
  }
  const float* bias = l.bias.empty() ? nullptr : l.bias.data();
  CMap X(x, n, l.in);
  CMap W(l.weight.data(), l.out, l.in);
  StridedMap Y(y, n, l.out, Eigen::OuterStride<>(ld));
  Y.noalias() = X * W.transpose();
  if (bias) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, l.out);
}

void linear_columns_into(const Linear& l, const float* x, std::int64_t n, std::int64_t col, std::int64_t cols, float* y,
                         std::int64_t ld, bool kernel) {
  if (!on_panels(l, kernel) || col % kPanel != 0) {
    // Through a full-width scratch: the same values as linear_into's columns.
    std::vector<float> all(static_cast<std::size_t>(n * l.out));
    linear_into(l, x, n, all.data(), l.out, kernel);
    for (std::int64_t r = 0; r < n; ++r) std::copy_n(all.data() + r * l.out + col, cols, y + r * ld);
    return;
  }
  const std::int64_t p0 = col / kPanel, p1 = (col + cols + kPanel - 1) / kPanel;
  if (n >= kFewRows) {
    panel_range(l, x, n, y, ld, p0, p1, col, col + cols);  // gemm_packed splits the panels over threads
    return;
  }
  const std::int64_t per_panel = static_cast<std::int64_t>(l.in) * kPanel;
  parallel_for_shared(p1 - p0, std::max<std::int64_t>(1, per_panel / 8), [&](std::int64_t a, std::int64_t b) {
    panel_range(l, x, n, y, ld, p0 + a, p0 + b, col, col + cols);
  });
}

void linears_into(std::span<const Linear* const> ls, const float* x, std::int64_t n, std::span<float* const> ys,
                  bool kernel) {
  const bool fused = n < kFewRows && std::all_of(ls.begin(), ls.end(), [&](const Linear* l) {
                       return on_panels(*l, kernel) && l->in == ls.front()->in;
                     });
  if (!fused) {
    for (std::size_t i = 0; i < ls.size(); ++i) linear_into(*ls[i], x, n, ys[i], ls[i]->out, kernel);
    return;
  }
  // Panel q of the loop is panel q − first[i] of Linear i, for first[i] ≤ q < first[i + 1].
  std::vector<std::int64_t> first{0};
  for (const Linear* l : ls) first.push_back(first.back() + panel_count(*l));
  const std::int64_t per_panel = static_cast<std::int64_t>(ls.front()->in) * kPanel;
  parallel_for_shared(first.back(), std::max<std::int64_t>(1, per_panel / 8), [&](std::int64_t q0, std::int64_t q1) {
    for (std::size_t i = 0; i < ls.size(); ++i) {
      const std::int64_t a = std::max(q0, first[i]), b = std::min(q1, first[i + 1]);
      if (a < b) panel_range(*ls[i], x, n, ys[i], ls[i]->out, a - first[i], b - first[i]);
    }
  });
}

void pack_linear(Linear& l, bool drop_weight) {
  if (l.packed.empty()) {
    if (l.weight.empty()) throw std::logic_error("pack_linear: " + l.name + " has no weight");
    l.packed = pack_transposed(l.weight.data(), l.out, l.in);
  }
  if (drop_weight) std::vector<float>().swap(l.weight);
}

void unpack_linear(Linear& l) {
  if (l.weight.empty()) l.weight = linear_weight(l);
  std::vector<float>().swap(l.packed);
  std::vector<std::uint16_t>().swap(l.packed_bf16);
}

std::vector<float> linear_weight(const Linear& l) {
  if (!l.weight.empty()) return l.weight;
  if (!l.packed_bf16.empty()) return unpack_transposed_bf16(l.packed_bf16.data(), l.out, l.in);
  if (!l.packed.empty()) return unpack_transposed(l.packed.data(), l.out, l.in);
  return l.weight;
}

}  // namespace mhaviz::detail
