#include "kernels/rope.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/parallel.hpp"

namespace mhaviz::detail {

void rope(float* x, const RopeBlock& b, std::int64_t pos0, std::span<const double> inv_freq) {
  const int h = b.head_dim / 2;
  if (b.head_dim % 2 != 0 || static_cast<std::int64_t>(inv_freq.size()) != h)
    throw std::invalid_argument("rope: head_dim " + std::to_string(b.head_dim) + " with " +
                                std::to_string(inv_freq.size()) + " inverse frequencies");
  parallel_for(b.tokens, static_cast<std::int64_t>(b.heads) * b.head_dim * 4 + h * 40,
               [&](std::int64_t t0, std::int64_t t1) {
                 std::vector<float> cs(static_cast<std::size_t>(2 * h));  // cos | sin of one position
                 for (std::int64_t t = t0; t < t1; ++t) {
                   // 1. The position's angles, once for all heads.
                   const double p = static_cast<double>(pos0 + t);
                   for (int i = 0; i < h; ++i) {
                     const double a = p * inv_freq[static_cast<std::size_t>(i)];
                     cs[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(a));
                     cs[static_cast<std::size_t>(h + i)] = static_cast<float>(std::sin(a));
                   }
                   // 2. Rotate each head's pairs (i, i + h).
                   for (int hd = 0; hd < b.heads; ++hd) {
                     float* v = x + t * b.t_stride + hd * b.head_stride;
                     for (int i = 0; i < h; ++i) {
                       const float c = cs[static_cast<std::size_t>(i)], s = cs[static_cast<std::size_t>(h + i)];
                       const float x1 = v[i], x2 = v[i + h];
                       v[i] = x1 * c - x2 * s;
                       v[i + h] = x2 * c + x1 * s;
                     }
                   }
                 }
               });
}

}  // namespace mhaviz::detail
