#include "kernels/attention_reference.hpp"

#include <cmath>
#include <limits>

namespace mhaviz::detail {

ReferenceAttention attention_reference(const double* q, const double* k, int R, int Tk, int hd, std::int64_t q_pos,
                                       std::int64_t k_pos, const AttentionMask& mask, int batch, ScoreScale scale) {
  ReferenceAttention out;
  const auto cells = static_cast<std::size_t>(R) * static_cast<std::size_t>(Tk);
  out.scores.assign(cells, 0.0);
  out.weights.assign(cells, 0.0);
  for (int i = 0; i < R; ++i) {
    double* s = out.scores.data() + static_cast<std::size_t>(i) * Tk;
    double* w = out.weights.data() + static_cast<std::size_t>(i) * Tk;
    double mx = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < Tk; ++j) {
      double dot = 0.0;
      for (int d = 0; d < hd; ++d)
        dot += q[static_cast<std::size_t>(i) * hd + d] * k[static_cast<std::size_t>(j) * hd + d];
      s[j] = dot;
      if (!mask.hides(batch, q_pos + i, k_pos + j)) mx = std::max(mx, scale.apply(dot));
    }
    if (!std::isfinite(mx)) continue;  // no visible key
    double sum = 0.0;
    for (int j = 0; j < Tk; ++j)
      if (!mask.hides(batch, q_pos + i, k_pos + j)) sum += (w[j] = std::exp(scale.apply(s[j]) - mx));
    for (int j = 0; j < Tk; ++j) w[j] /= sum;
  }
  return out;
}

std::vector<double> context_reference(const std::vector<double>& weights, const double* v, int R, int Tk, int hd) {
  std::vector<double> ctx(static_cast<std::size_t>(R) * static_cast<std::size_t>(hd), 0.0);
  for (int i = 0; i < R; ++i)
    for (int d = 0; d < hd; ++d) {
      double acc = 0.0;
      for (int j = 0; j < Tk; ++j)
        acc += weights[static_cast<std::size_t>(i) * Tk + j] * v[static_cast<std::size_t>(j) * hd + d];
      ctx[static_cast<std::size_t>(i) * hd + d] = acc;
    }
  return ctx;
}

}  // namespace mhaviz::detail
