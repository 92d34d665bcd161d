#include "gemm.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>

#include "mhaviz/backend.hpp"
#include "parallel.hpp"

namespace mhaviz::detail {
namespace {

// Rows per tile: 12 rows × 2 registers = 24 accumulators, leaving registers for the
// two B loads and the broadcast of A out of AVX-512's 32.
constexpr int kTileRows = 12;
// Rows of A per block: 240 rows of a 768-wide A (720 KiB) stay in a 1 MiB L2 while
// the B panels stream past them.
constexpr int kRowBlock = 240;

// c (MR, cols) = a (MR, k; lda) · b (k, cols; ldb) + bias; cols in [1, kPanel].
// Partial panels load B masked (b may end right after its last valid column); full ones
// do not, as masked loads in the inner loop cost about two thirds of the speed.
template <int MR, bool Full>
__attribute__((target("avx512f"))) void tile(int k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                                            const float* bias, float* c, std::int64_t ldc, int cols) {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= kPanel ? 0xFFFF : cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
  __m512 lo[MR], hi[MR];
  for (int i = 0; i < MR; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
  for (int p = 0; p < k; ++p) {
    __m512 b0, b1;
    if constexpr (Full) {
      b0 = _mm512_loadu_ps(b + p * ldb);
      b1 = _mm512_loadu_ps(b + p * ldb + 16);
    } else {
      b0 = _mm512_maskz_loadu_ps(m0, b + p * ldb);
      b1 = _mm512_maskz_loadu_ps(m1, b + p * ldb + 16);
    }
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * lda + p]);
      lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
      hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
    }
  }
  if (bias) {
    const __m512 c0 = _mm512_maskz_loadu_ps(m0, bias), c1 = _mm512_maskz_loadu_ps(m1, bias + 16);
    for (int i = 0; i < MR; ++i) {
      lo[i] = _mm512_add_ps(lo[i], c0);
      hi[i] = _mm512_add_ps(hi[i], c1);
    }
  }
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(c + i * ldc, m0, lo[i]);
    _mm512_mask_storeu_ps(c + i * ldc + 16, m1, hi[i]);
  }
}

using TileFn = void (*)(int, const float*, std::int64_t, const float*, std::int64_t, const float*, float*, std::int64_t, int);
template <bool Full>
constexpr TileFn kTiles[kTileRows + 1] = {nullptr,          tile<1, Full>,  tile<2, Full>,  tile<3, Full>, tile<4, Full>,
                                          tile<5, Full>,    tile<6, Full>,  tile<7, Full>,  tile<8, Full>, tile<9, Full>,
                                          tile<10, Full>,   tile<11, Full>, tile<12, Full>};

// Where panel p of B starts and its row stride.
struct BView {
  const float* base;
  std::int64_t ldb;
  std::int64_t panel_step;  // floats from panel p to panel p + 1
};

// Columns [p0·kPanel, p1·kPanel) ∩ [0, n) of c = a · b + bias.
void panels(int m, int n, int k, const float* a, std::int64_t lda, BView b, const float* bias, float* c, std::int64_t ldc,
            bool lower, std::int64_t p0, std::int64_t p1) {
  for (int i0 = 0; i0 < m; i0 += kRowBlock) {
    const int i1 = std::min(m, i0 + kRowBlock);
    for (std::int64_t p = p0; p < p1; ++p) {
      const int j = static_cast<int>(p * kPanel), cols = std::min(kPanel, n - j);
      const float* bp = b.base + p * b.panel_step;
      for (int i = i0; i < i1; i += kTileRows) {
        const int rows = std::min(kTileRows, i1 - i), depth = lower ? std::min(k, i + rows) : k;
        (cols == kPanel ? kTiles<true> : kTiles<false>)[rows](depth, a + i * lda, lda, bp, b.ldb, bias ? bias + j : nullptr, c + i * ldc + j, ldc, cols);
      }
    }
  }
}

}  // namespace

bool avx512_available() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

std::vector<float> pack_transposed(const float* w, int n, int k) {
  const std::int64_t count = (n + kPanel - 1) / kPanel;
  std::vector<float> out(static_cast<std::size_t>(count * k * kPanel), 0.0f);
  for (std::int64_t p = 0; p < count; ++p)
    for (int col = 0; col < kPanel && p * kPanel + col < n; ++col) {
      const float* row = w + (p * kPanel + col) * k;
      float* dst = out.data() + p * k * kPanel + col;
      for (int r = 0; r < k; ++r) dst[static_cast<std::int64_t>(r) * kPanel] = row[r];
    }
  return out;
}

std::vector<float> unpack_transposed(const float* packed, int n, int k) {
  std::vector<float> w(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
  for (std::int64_t col = 0; col < n; ++col) {
    const float* src = packed + (col / kPanel) * k * kPanel + col % kPanel;
    for (int r = 0; r < k; ++r) w[static_cast<std::size_t>(col * k + r)] = src[static_cast<std::int64_t>(r) * kPanel];
  }
  return w;
}

void gemm_packed(int m, int n, int k, const float* a, std::int64_t lda, const float* packed, const float* bias, float* c,
                 std::int64_t ldc) {
  const BView b{packed, kPanel, static_cast<std::int64_t>(k) * kPanel};
  const std::int64_t count = (n + kPanel - 1) / kPanel;
  // Work units of 64 multiply-adds: parallel_for starts a second thread past ~8 M of them.
  parallel_for(count, std::max<std::int64_t>(1, static_cast<std::int64_t>(m) * k * kPanel / 64),
               [&](std::int64_t p0, std::int64_t p1) { panels(m, n, k, a, lda, b, bias, c, ldc, false, p0, p1); });
}

void gemm_rowmajor(int m, int n, int k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                   std::int64_t ldc, bool lower) {
  panels(m, n, k, a, lda, BView{b, ldb, kPanel}, nullptr, c, ldc, lower, 0, (n + kPanel - 1) / kPanel);
}

}  // namespace mhaviz::detail

namespace mhaviz {
namespace {
std::atomic<Backend>& chosen() {
  static std::atomic<Backend> b{detail::avx512_available() ? Backend::Avx512 : Backend::OpenBlas};
  return b;
}
}  // namespace

std::string_view backend_name(Backend b) { return b == Backend::Avx512 ? "avx512" : "openblas"; }

bool parse_backend(std::string_view name, Backend& out) {
  for (Backend b : {Backend::Avx512, Backend::OpenBlas})
    if (name == backend_name(b)) {
      out = b;
      return true;
    }
  return false;
}

bool backend_supported(Backend b) { return b == Backend::OpenBlas || detail::avx512_available(); }

Backend backend() { return chosen().load(std::memory_order_relaxed); }

bool set_backend(Backend b) {
  if (!backend_supported(b)) return false;
  chosen().store(b, std::memory_order_relaxed);
  return true;
}

}  // namespace mhaviz
