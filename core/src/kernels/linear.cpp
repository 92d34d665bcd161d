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

}  // namespace

void linear_into(const Linear& l, const float* x, std::int64_t n, float* y, std::int64_t ld, bool kernel) {
  const float* bias = l.bias.empty() ? nullptr : l.bias.data();
  if (!l.packed.empty() && (kernel || l.weight.empty())) {
    if (n >= kFewRows) {
      gemm_packed(static_cast<int>(n), l.out, l.in, x, l.in, l.packed.data(), bias, y, ld);
      return;
    }
    // Panel p holds output columns [p·kPanel, (p + 1)·kPanel), k·kPanel floats each (gemm.hpp).
    const std::int64_t count = (l.out + kPanel - 1) / kPanel, panel = static_cast<std::int64_t>(l.in) * kPanel;
    parallel_for(count, std::max<std::int64_t>(1, panel / 8), [&](std::int64_t p0, std::int64_t p1) {
      const std::int64_t j = p0 * kPanel, cols = std::min<std::int64_t>(l.out, p1 * kPanel) - j;
      gemm_packed(static_cast<int>(n), static_cast<int>(cols), l.in, x, l.in, l.packed.data() + p0 * panel,
                  bias ? bias + j : nullptr, y + j, ld);
    });
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
  if (l.weight.empty() && !l.packed.empty()) l.weight = linear_weight(l);
  std::vector<float>().swap(l.packed);
}

std::vector<float> linear_weight(const Linear& l) {
  if (!l.weight.empty() || l.packed.empty()) return l.weight;
  return unpack_transposed(l.packed.data(), l.out, l.in);
}

}  // namespace mhaviz::detail
