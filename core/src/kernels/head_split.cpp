#include "kernels/head_split.hpp"

#include <algorithm>

#include "kernels/parallel.hpp"

namespace mhaviz::detail {
namespace {

// A row's work for parallel_for: one unit per float copied. Counted at a quarter of that, the
// chapter-3 forward's three splits and one merge at T = 128 (128 × 768 floats each) stayed on
// one thread, 22–32 µs each; on two, right after a product while the pool's worker still
// spins, 9–20 µs, and the whole forward ran 1–3% faster (AMD Zen 4, AVX2 and AVX-512 tiles).
std::int64_t row_work(int H, int hd) { return std::max(1, H * hd); }

}  // namespace

void split_heads(const float* src, std::int64_t row_stride, std::int64_t offset, std::int64_t head_stride, int b, int R,
                 int H, int hd, float* heads, int T, int t0, float* flat) {
  parallel_for(static_cast<std::int64_t>(b) * R, row_work(H, hd), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t bi = r / R, t = t0 + r % R;
      for (int h = 0; h < H; ++h) {
        const float* s = src + r * row_stride + offset + h * head_stride;
        std::copy(s, s + hd, heads + ((bi * H + h) * T + t) * hd);
        if (flat) std::copy(s, s + hd, flat + r * H * hd + static_cast<std::int64_t>(h) * hd);
      }
    }
  });
}

void merge_heads(const float* heads, int b, int R, int H, int hd, int T, int t0, float* dst) {
  parallel_for(static_cast<std::int64_t>(b) * R, row_work(H, hd), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t bi = r / R, t = t0 + r % R;
      for (int h = 0; h < H; ++h) {
        const float* s = heads + ((bi * H + h) * T + t) * hd;
        std::copy(s, s + hd, dst + r * H * hd + static_cast<std::int64_t>(h) * hd);
      }
    }
  });
}

}  // namespace mhaviz::detail
