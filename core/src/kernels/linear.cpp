#include "kernels/linear.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <stdexcept>

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

// x (n, in) · the panels (float or BF16) + bias -> y (n, out; row stride ld).
template <class BT>
void packed_product(const Linear& l, const float* x, std::int64_t n, float* y, std::int64_t ld, const BT* panels,
                    const float* bias) {
  if (n >= kFewRows) {
    gemm_of(static_cast<int>(n), l.out, l.in, x, l.in, panels, bias, y, ld);
    return;
  }
  // Panel p holds output columns [p·kPanel, (p + 1)·kPanel), k·kPanel values each (gemm.hpp).
  const std::int64_t count = (l.out + kPanel - 1) / kPanel, panel = static_cast<std::int64_t>(l.in) * kPanel;
  parallel_for(count, std::max<std::int64_t>(1, panel / 8), [&](std::int64_t p0, std::int64_t p1) {
    const std::int64_t j = p0 * kPanel, cols = std::min<std::int64_t>(l.out, p1 * kPanel) - j;
    gemm_of(static_cast<int>(n), static_cast<int>(cols), l.in, x, l.in, panels + p0 * panel, bias ? bias + j : nullptr,
            y + j, ld);
  });
}

}  // namespace

void linear_into(const Linear& l, const float* x, std::int64_t n, float* y, std::int64_t ld, bool kernel) {
  const float* bias = l.bias.empty() ? nullptr : l.bias.data();
  if (!l.packed_bf16.empty()) {
    packed_product(l, x, n, y, ld, l.packed_bf16.data(), bias);
    return;
  }
  if (!l.packed.empty() && (kernel || l.weight.empty())) {
    packed_product(l, x, n, y, ld, l.packed.data(), bias);
    return;
  }
  CMap X(x, n, l.in);
  CMap W(l.weight.data(), l.out, l.in);
  StridedMap Y(y, n, l.out, Eigen::OuterStride<>(ld));
  Y.noalias() = X * W.transpose();
  if (bias) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, l.out);
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
