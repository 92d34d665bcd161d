#include "kernels/gemm.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/parallel.hpp"
#include "kernels/tuning.hpp"
#include "mhaviz/backend.hpp"

namespace mhaviz::detail {
namespace {

// Rows per tile: 12 rows × 2 registers = 24 accumulators, leaving registers for the
// two B loads and the broadcast of A out of AVX-512's 32. Row blocks, depth blocks and the
// AVX2 tile's shape are the process's record (tuning.hpp).
constexpr int kTileRows = 12;

// 16 BF16 values (bit patterns) widened to float32: a BF16 value is the high half of its
// float32, so this is exact.
__attribute__((target("avx512f"), always_inline)) inline __m512 widen16(const std::uint16_t* b) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  // The zero-masking forms: GCC 12 warns that the plain ones' undefined pass-through may be
  // used uninitialised. With every lane on they are the same instructions.
  const __m512i w = _mm512_maskz_cvtepu16_epi32(0xFFFF, h);
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, w, 16));
}

// 8 BF16 values widened to float32, as widen16.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 widen8(const std::uint16_t* b) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Cache lines a tile fetches ahead for the product's next panel: at most two per step of
// its depth k, line p and line p + k at step p.
struct Prefetch {
  const char* at = nullptr;
  int lines = 0;
};
inline void prefetch_step(const Prefetch& pf, int p, int k) {
  _mm_prefetch(pf.at + 64 * static_cast<std::int64_t>(p), _MM_HINT_T1);
  if (p + k < pf.lines) _mm_prefetch(pf.at + 64 * static_cast<std::int64_t>(p + k), _MM_HINT_T1);
}

// c (MR, cols) = a (MR, k; lda) · b (k, cols; ldb) + bias; cols in [1, kPanel]. carry: the
// sums go on from c's values (a depth block after the first) instead of from zero; a float
// stored and loaded again is the same float, so each element's FMA chain is unchanged.
// Partial panels load B masked (b may end right after its last valid column); full ones
// do not, as masked loads in the inner loop cost about two thirds of the speed.
// BT: the type B is stored in, float or BF16 bit patterns (std::uint16_t). BF16 B comes only
// from packed panels, which are whole (zero past n), so it is always read in full.
// pf: pf.lines cache lines from pf.at to fetch into L2 along the way, one or two per step of p
// (the next panel's slice, Prefetch above); they change no result.
template <int MR, bool Full, class BT>
__attribute__((target("avx512f"))) void tile(int k, const float* a, std::int64_t lda, const BT* b, std::int64_t ldb,
                                             const float* bias, float* c, std::int64_t ldc, int cols, bool carry,
                                             Prefetch pf) {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= kPanel ? 0xFFFF : cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
  __m512 lo[MR], hi[MR];
  for (int i = 0; i < MR; ++i) {
    lo[i] = carry ? _mm512_maskz_loadu_ps(m0, c + i * ldc) : _mm512_setzero_ps();
    hi[i] = carry ? _mm512_maskz_loadu_ps(m1, c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (int p = 0; p < k; ++p) {
    if (p < pf.lines) prefetch_step(pf, p, k);
    __m512 b0, b1;
    if constexpr (std::is_same_v<BT, std::uint16_t>) {
      b0 = widen16(b + p * ldb);
      b1 = widen16(b + p * ldb + 16);
    } else if constexpr (Full) {
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

template <class BT>
using TileFn = void (*)(int, const float*, std::int64_t, const BT*, std::int64_t, const float*, float*, std::int64_t,
                        int, bool, Prefetch);
template <bool Full, class BT>
constexpr TileFn<BT> kTiles[kTileRows + 1] = {
    nullptr,           tile<1, Full, BT>, tile<2, Full, BT>, tile<3, Full, BT>, tile<4, Full, BT>,  tile<5, Full, BT>,
    tile<6, Full, BT>, tile<7, Full, BT>, tile<8, Full, BT>, tile<9, Full, BT>, tile<10, Full, BT>, tile<11, Full, BT>,
    tile<12, Full, BT>};

// The AVX2 + FMA tile: c (MR, cols) for cols in [1, 8·NV], NV registers of a row inside a
// 32-column panel: 6 × 16 (two halves of a panel) or 3 × 32 (tuning.hpp's kAvx2Tiles), 12
// accumulators either way. Each element is the same chain of FMAs over p, in the same order,
// as in the AVX-512 tile, so both kernels and every shape give the same bits.

// Lanes < cols of register v are on: maskload/maskstore read the sign bit of each 32-bit
// lane. A function of its own with the tile's target: a lambda inside the tile would not
// inherit the target and fails to build when the rest of the project is compiled for x86-64-v2.
__attribute__((target("avx2,fma"), always_inline)) inline __m256i lane_mask(int cols, int v) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8 * v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <int MR, int NV, bool Full, class BT>
__attribute__((target("avx2,fma"))) void tile2(int k, const float* a, std::int64_t lda, const BT* b, std::int64_t ldb,
                                               const float* bias, float* c, std::int64_t ldc, int cols, bool carry,
                                               Prefetch pf) {
  // Masks are made where they are used (lane_mask): live across the loop they would take
  // registers the 12 accumulators, the B rows and the broadcast need, and spill the accumulators.
  // Every loop over rows unrolled early: GCC 12 at -O3 otherwise keeps the accumulator
  // arrays in memory and stores all twelve registers on every step of p (a third of the speed).
  __m256 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[i][v] = !carry ? _mm256_setzero_ps()
                  : Full ? _mm256_loadu_ps(c + i * ldc + 8 * v)
                         : _mm256_maskload_ps(c + i * ldc + 8 * v, lane_mask(cols, v));
  for (int p = 0; p < k; ++p) {
    if (p < pf.lines) prefetch_step(pf, p, k);
    __m256 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if constexpr (std::is_same_v<BT, std::uint16_t>)
        bv[v] = widen8(b + p * ldb + 8 * v);
      else
        bv[v] =
            Full ? _mm256_loadu_ps(b + p * ldb + 8 * v) : _mm256_maskload_ps(b + p * ldb + 8 * v, lane_mask(cols, v));
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i * lda + p);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m256i m = lane_mask(cols, v);
    const __m256 cb = bias ? _mm256_maskload_ps(bias + 8 * v, m) : _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      if (bias) acc[i][v] = _mm256_add_ps(acc[i][v], cb);
      if (Full)
        _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
      else
        _mm256_maskstore_ps(c + i * ldc + 8 * v, m, acc[i][v]);
    }
  }
}

template <bool Full, class BT>
constexpr TileFn<BT> kTiles2x16[7] = {nullptr,
                                      tile2<1, 2, Full, BT>,
                                      tile2<2, 2, Full, BT>,
                                      tile2<3, 2, Full, BT>,
                                      tile2<4, 2, Full, BT>,
                                      tile2<5, 2, Full, BT>,
                                      tile2<6, 2, Full, BT>};
template <bool Full, class BT>
constexpr TileFn<BT> kTiles2x32[4] = {nullptr, tile2<1, 4, Full, BT>, tile2<2, 4, Full, BT>, tile2<3, 4, Full, BT>};

// One row against two whole packed panels at once (c: 64 columns, bias: 64 or null): the
// one-row tiles' work, each element the same FMA chain from zero with the bias added after,
// with twice as many independent chains in flight. A row's chains are as long as the
// product is deep, and one panel's alone (2 AVX-512 or 4 AVX2 registers) wait on the FMA's
// latency more than on memory once reads run fast.
template <class BT>
__attribute__((target("avx512f"))) void row_two_panels_avx512(int k, const float* a, const BT* b, std::int64_t step,
                                                              const float* bias, float* c) {
  __m512 acc[4];
  for (__m512& x : acc) x = _mm512_setzero_ps();
  const BT* b1 = b + step;
  for (int p = 0; p < k; ++p) {
    const __m512 ap = _mm512_set1_ps(a[p]);
    const BT* r0 = b + static_cast<std::int64_t>(p) * kPanel;
    const BT* r1 = b1 + static_cast<std::int64_t>(p) * kPanel;
    if constexpr (std::is_same_v<BT, std::uint16_t>) {
      acc[0] = _mm512_fmadd_ps(ap, widen16(r0), acc[0]);
      acc[1] = _mm512_fmadd_ps(ap, widen16(r0 + 16), acc[1]);
      acc[2] = _mm512_fmadd_ps(ap, widen16(r1), acc[2]);
      acc[3] = _mm512_fmadd_ps(ap, widen16(r1 + 16), acc[3]);
    } else {
      acc[0] = _mm512_fmadd_ps(ap, _mm512_loadu_ps(r0), acc[0]);
      acc[1] = _mm512_fmadd_ps(ap, _mm512_loadu_ps(r0 + 16), acc[1]);
      acc[2] = _mm512_fmadd_ps(ap, _mm512_loadu_ps(r1), acc[2]);
      acc[3] = _mm512_fmadd_ps(ap, _mm512_loadu_ps(r1 + 16), acc[3]);
    }
  }
  for (int v = 0; v < 4; ++v) {
    if (bias) acc[v] = _mm512_add_ps(acc[v], _mm512_loadu_ps(bias + 16 * v));
    _mm512_storeu_ps(c + 16 * v, acc[v]);
  }
}

template <class BT>
__attribute__((target("avx2,fma"))) void row_two_panels_avx2(int k, const float* a, const BT* b, std::int64_t step,
                                                             const float* bias, float* c) {
  __m256 acc[8];
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) acc[v] = _mm256_setzero_ps();
  const BT* b1 = b + step;
  for (int p = 0; p < k; ++p) {
    const __m256 ap = _mm256_broadcast_ss(a + p);
    const BT* r0 = b + static_cast<std::int64_t>(p) * kPanel;
    const BT* r1 = b1 + static_cast<std::int64_t>(p) * kPanel;
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      if constexpr (std::is_same_v<BT, std::uint16_t>) {
        acc[v] = _mm256_fmadd_ps(ap, widen8(r0 + 8 * v), acc[v]);
        acc[4 + v] = _mm256_fmadd_ps(ap, widen8(r1 + 8 * v), acc[4 + v]);
      } else {
        acc[v] = _mm256_fmadd_ps(ap, _mm256_loadu_ps(r0 + 8 * v), acc[v]);
        acc[4 + v] = _mm256_fmadd_ps(ap, _mm256_loadu_ps(r1 + 8 * v), acc[4 + v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) {
    if (bias) acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(bias + 8 * v));
    _mm256_storeu_ps(c + 8 * v, acc[v]);
  }
}

// The AVX2 tile for `rows` rows of a shape's height (or fewer) and a slice of hc columns.
template <class BT>
TileFn<BT> avx2_tile(const TileShape& shape, int rows, int hc) {
  const bool full = hc == 8 * shape.vectors;
  if (shape.vectors == 4) return (full ? kTiles2x32<true, BT> : kTiles2x32<false, BT>)[rows];
  return (full ? kTiles2x16<true, BT> : kTiles2x16<false, BT>)[rows];
}

// Where panel p of B starts and its row stride.
template <class BT>
struct BView {
  const BT* base;
  std::int64_t ldb;
  std::int64_t panel_step;  // elements from panel p to panel p + 1
};

// From this many rows on, a BF16 panel is widened once into a float32 scratch panel that
// every row tile then reads: widening in each tile costs two conversions per two B loads,
// against 2·rows FMAs, a sixth of the 12-row tile's time. Below it the tiles widen in
// registers, and a product of one row reads each BF16 weight once, at its stored width.
constexpr int kWidenRows = 24;
// Bytes of A's rows one widened BF16 panel serves before the next block of rows (panels()):
// re-read from L3 for every panel, so well within a desktop's L3 when two threads share it.
constexpr std::int64_t kWidenBlockBytes = std::int64_t{8} << 20;

// A BF16 panel (k, kPanel) widened into out (k, kPanel) floats.
template <bool Wide>
void widen_panel(const std::uint16_t* panel, int k, float* out);
template <>
__attribute__((target("avx512f"))) void widen_panel<true>(const std::uint16_t* panel, int k, float* out) {
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(k) * kPanel; i += 16)
    _mm512_storeu_ps(out + i, widen16(panel + i));
}
template <>
__attribute__((target("avx2,fma"))) void widen_panel<false>(const std::uint16_t* panel, int k, float* out) {
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(k) * kPanel; i += 8)
    _mm256_storeu_ps(out + i, widen8(panel + i));
}

// Rows [i0, i1) of columns [j, j + cols) of c = a · (panel bp) + bias, a pointing at row i0:
// depth blocks of the panel (each element's sum carried in c between them, bias added after
// the last), then the tiles of the rows, in AVX-512 tiles (Wide) or in AVX2 tiles over each
// slice of the panel as wide as the record's tile shape.
// next, next_bytes: the panel that follows (null: none). Every (depth block, row tile) fetches
// an equal slice of it into L2 while it computes, so the next panel's first tile finds its
// weights there instead of waiting on memory: a forward's weights are read once, and waiting
// cost its products about a tenth of their speed (256 rows: 250 against 290 GFLOP/s).
// carry: c holds the sums of an earlier part of the depth (stream_rows), which go on from there.
template <bool Wide, class BT>
void panel_rows(const KernelTuning& t, int i0, int i1, int j, int cols, int k, const float* a, std::int64_t lda,
                const BT* bp, std::int64_t ldb, const float* bias, float* c, std::int64_t ldc, bool lower,
                const void* next = nullptr, std::int64_t next_bytes = 0, bool carry = false) {
  const TileShape shape = Wide ? TileShape{kTileRows, 4} : kAvx2Tiles[t.avx2_tile];
  const int R = shape.rows;
  const int kb = t.depth_block > 0 ? t.depth_block : std::max(k, 1);
  // The next panel's lines in equal slices, one per (depth block, row tile) in the order they
  // run: `per` each, and one more where the remainder's running sum crosses `slices` (no
  // division per tile: with AVX2's short depth blocks two of them took 3% of a forward).
  const std::int64_t slices = (i1 - i0 + R - 1) / R * ((k + kb - 1) / kb), lines = next ? (next_bytes + 63) / 64 : 0,
                     per = slices > 0 ? lines / slices : 0, extra = slices > 0 ? lines % slices : 0;
  std::int64_t l1 = 0, carried = 0;
  for (int d0 = 0; d0 < k; d0 += kb) {
    for (int i = i0; i < i1; i += R) {
      const std::int64_t l0 = l1;
      l1 += per;
      if ((carried += extra) >= slices) {
        carried -= slices;
        ++l1;
      }
      const int rows = std::min(R, i1 - i), depth = lower ? std::min(k, i + rows) : k;
      if (d0 >= depth) continue;
      const int d1 = std::min(depth, d0 + kb);
      const float* tb = bias && d1 == depth ? bias + j : nullptr;  // after the last depth block
      const float* ta = a + static_cast<std::int64_t>(i - i0) * lda + d0;
      // This tile's slice [l0, l1): up to two lines per step of its depth, the rest after it.
      const Prefetch pf = next ? Prefetch{static_cast<const char*>(next) + 64 * l0,
                                          static_cast<int>(std::min<std::int64_t>(l1 - l0, 2 * (d1 - d0)))}
                               : Prefetch{};
      if constexpr (Wide) {
        (cols == kPanel ? kTiles<true, BT> : kTiles<false, BT>)[rows](d1 - d0, ta, lda, bp + d0 * ldb, ldb, tb,
                                                                      c + i * ldc + j, ldc, cols, carry || d0 > 0, pf);
      } else {
        // A tile of up to three rows takes the panel whole (3 × 32) whatever the record's
        // shape: in 6 × 16 halves one row (an edit's) would read every panel twice (the BF16
        // edit of Qwen3-0.6B: 85 → 75 ms); attention's values for one row of each query head
        // sharing a K/V head (rows 512 bytes apart) would take eight strided passes instead of
        // four (28 layers: 4.3 → 3.7 ms); and a block's last two rows would have four chains
        // of FMAs waiting on its latency (3% of the chapter-3 forward's samples at T = 128).
        const TileShape fit = rows <= 3 ? TileShape{3, 4} : shape;
        const int fw = 8 * fit.vectors;
        for (int h = 0; h < kPanel && h < cols; h += fw) {
          const int hc = std::min(fw, cols - h);
          avx2_tile<BT>(fit, rows, hc)(d1 - d0, ta, lda, bp + d0 * ldb + h, ldb, tb ? tb + h : nullptr,
                                       c + i * ldc + j + h, ldc, hc, carry || d0 > 0, h == 0 ? pf : Prefetch{});
        }
      }
      for (std::int64_t l = l0 + pf.lines; l < l1; ++l)
        _mm_prefetch(static_cast<const char*>(next) + 64 * l, _MM_HINT_T1);
    }
  }
}

// A's rows [i0, i1) as the tiles read them: in place, unless their stride is a multiple of
// kAliasBytes. Rows 4 KiB apart (k = 1024, 2048 or 3072 floats: Qwen3's products, GPT-2's MLP
// down-projection) all fall in one set of the L1 cache, and a tile's rows then evict each other
// and the panel: one thread, 240 × k · k × 1024 ran at 97 GFLOP/s for k = 1024 against 107 for
// k = 1040 (AMD Zen 4, AVX-512 and AVX2 tiles alike). Such rows are copied into `copy`, rows a
// line more than k apart, where at least kCopyPanels panels read them: the copy reads each row
// once, the tiles once per panel. Copied, Qwen3-0.6B's products at T = 256 ran 8–15% faster
// (256 × 1024 · 1024 × 3072: 93 → 98–106 GFLOP/s; 256 × 3072 · 3072 × 1024: 70–88 → 96–100;
// one thread); attention's weights · v (rows T floats apart, two panels) gained nothing.
constexpr std::int64_t kAliasBytes = 2048;
constexpr int kRowPad = 16;
constexpr std::int64_t kCopyPanels = 4;

struct Rows {
  const float* a;
  std::int64_t lda;
};

Rows rows_for_tiles(const float* a, std::int64_t lda, int i0, int i1, int k, std::int64_t panels,
                    std::vector<float>& copy) {
  const float* first = a + static_cast<std::int64_t>(i0) * lda;
  if (i1 - i0 < 2 || panels < kCopyPanels || lda * static_cast<std::int64_t>(sizeof(float)) % kAliasBytes != 0)
    return {first, lda};
  const std::int64_t stride = (k + 15) / 16 * 16 + kRowPad;
  if (copy.size() < static_cast<std::size_t>((i1 - i0) * stride))
    copy.resize(static_cast<std::size_t>((i1 - i0) * stride));
  for (int i = i0; i < i1; ++i)
    std::copy_n(first + static_cast<std::int64_t>(i - i0) * lda, k,
                copy.data() + static_cast<std::int64_t>(i - i0) * stride);
  return {copy.data(), stride};
}

// Keys per block of stream_rows: 32 rows of a head's values (hd 128) are 16 KiB, in L1 with the
// tiles' rows of A.
constexpr int kStreamDepth = 32;
// Products of up to this many rows over row-major B go by stream_rows: one row tile in either
// kernel, bound by reading B.
constexpr int kStreamRows = 6;

// Columns [p0·kPanel, p1·kPanel) ∩ [0, n) of c (m ≤ kStreamRows rows) = a · b + bias for a
// row-major b: kStreamDepth rows of b at a time, every panel of them before the next rows,
// which are fetched into L2 meanwhile (when the block's rows lie one after another, as a head's
// values do). Attention's context for one query row of each head sharing a K/V head reads the
// head's values so: panel after panel through all the keys, each panel a 128-byte slice of every
// 512-byte row (hd 128), the values took four strided passes that the prefetchers did not follow.
// 28 layers × 8 K/V heads of Qwen3-0.6B's values at T = 1024, two query rows each, one thread,
// cold: 7.5–8.5 ms so against 5.5–6.2 by blocks, a read of the same 112 MiB 3.7–4.3 (AMD Zen 4,
// AVX2). Each element's sum goes on through c between blocks: the same chain of FMAs.
template <bool Wide>
void stream_rows(const KernelTuning& t, int m, int n, int k, const float* a, std::int64_t lda, BView<float> b,
                 const float* bias, float* c, std::int64_t ldc, std::int64_t p0, std::int64_t p1) {
  const std::int64_t j0 = p0 * kPanel, j1 = std::min<std::int64_t>(n, p1 * kPanel), panels = p1 - p0;
  const bool contiguous = b.ldb == j1 - j0;
  for (int d0 = 0; d0 < k; d0 += kStreamDepth) {
    const int d1 = std::min(k, d0 + kStreamDepth), d2 = std::min(k, d1 + kStreamDepth);
    // The next block's rows, in equal slices over this block's panels.
    const char* next = contiguous ? reinterpret_cast<const char*>(b.base + d1 * b.ldb + j0) : nullptr;
    const std::int64_t lines = next ? ((d2 - d1) * b.ldb * static_cast<std::int64_t>(sizeof(float)) + 63) / 64 : 0;
    for (std::int64_t p = p0; p < p1; ++p) {
      const int j = static_cast<int>(p * kPanel), cols = std::min(kPanel, n - j);
      const std::int64_t l0 = lines * (p - p0) / panels, l1 = lines * (p - p0 + 1) / panels;
      panel_rows<Wide, float>(t, 0, m, j, cols, d1 - d0, a + d0, lda, b.base + d0 * b.ldb + p * b.panel_step, b.ldb,
                              d1 == k ? bias : nullptr, c, ldc, false, l1 > l0 ? next + 64 * l0 : nullptr,
                              64 * (l1 - l0), d0 > 0);
    }
  }
}

// Columns [p0·kPanel, p1·kPanel) ∩ [0, n) of c = a · b + bias: row blocks of A, then panels,
// then panel_rows. A BF16 product of kWidenRows rows or more goes by blocks of rows as large as
// kWidenBlockBytes, then panels, each widened once per block.
template <bool Wide, class BT>
void panels(const KernelTuning& t, int m, int n, int k, const float* a, std::int64_t lda, BView<BT> b,
            const float* bias, float* c, std::int64_t ldc, bool lower, std::int64_t p0, std::int64_t p1) {
  const int rb = row_block_rows(t, k);
  // The widened panel of a long BF16 product, and A's rows where copied (rows_for_tiles), one
  // per thread.
  thread_local std::vector<float> widened, copied;
  // Packed panels lie one after another: the next one is fetched while this one computes.
  // (Row-major B, attention's values, steps kPanel columns to its next panel.)
  const std::int64_t panel_bytes = static_cast<std::int64_t>(k) * kPanel * sizeof(BT);
  const bool packed = b.ldb == kPanel && b.panel_step == static_cast<std::int64_t>(k) * kPanel;
  if constexpr (std::is_same_v<BT, std::uint16_t>) {
    // A long BF16 product widens each panel once for up to kWidenBlockBytes of A's rows, which
    // then stream past it from L3: widened once per row block instead, Qwen3-0.6B's down_proj
    // at T = 256 (blocks of 36 rows) widened each panel 8 times. Its BF16 products at T = 256
    // ran 3–5% faster so, at T = 1024 (12 MiB of A) 3–8% (AMD Zen 4, 32 MiB of L3).
    if (m >= kWidenRows) {
      const int wb = std::max<int>(rb, static_cast<int>(kWidenBlockBytes / (4 * std::max(k, 1)) / 12 * 12));
      for (int i0 = 0; i0 < m; i0 += wb) {
        const int i1 = std::min(m, i0 + wb);
        const Rows rows = rows_for_tiles(a, lda, i0, i1, k, p1 - p0, copied);
        for (std::int64_t p = p0; p < p1; ++p) {
          const int j = static_cast<int>(p * kPanel), cols = std::min(kPanel, n - j);
          const BT* bp = b.base + p * b.panel_step;
          const BT* next = packed && p + 1 < p1 ? bp + b.panel_step : nullptr;
          widened.resize(static_cast<std::size_t>(k) * kPanel);
          widen_panel<Wide>(bp, k, widened.data());
          panel_rows<Wide, float>(t, i0, i1, j, cols, k, rows.a, rows.lda, widened.data(), kPanel, bias, c, ldc, lower,
                                  next, panel_bytes);
        }
      }
      return;
    }
  }
  // A few rows over row-major B (attention's values for one row of each head): stream_rows.
  if constexpr (std::is_same_v<BT, float>) {
    if (!packed && !lower && m <= kStreamRows && k > kStreamDepth) {
      stream_rows<Wide>(t, m, n, k, a, lda, b, bias, c, ldc, p0, p1);
      return;
    }
  }
  // A product of one row (an edit's) streams its panels, one after another in memory, once:
  // the core's own stream prefetcher follows it, and fetching the next panel as well only
  // took miss buffers its loads needed. Qwen3-0.6B's 28 layers of one-row BF16 products, in
  // turns with a read of their 840 MiB: 1.11–1.20 times the read with the next panel fetched,
  // 1.02–1.09 without; 1.40–1.45 against 1.15–1.25 when this machine's reads ran at 50 GB/s
  // (AMD Zen 4, AVX2 and AVX-512 alike). Two rows or more of BF16 panels gain from it (two:
  // 1.17–1.23 times the read with it, 1.40–1.48 without), and four rows or more of float panels
  // on AVX2 (whose 6 × 16 tiles pass over each panel twice). Float panels of up to three rows
  // (tiles reading each panel row whole on both kernels: attention's keys for one query row of
  // each head sharing them) do not: 28 layers × 8 K/V heads of Qwen3-0.6B's keys at T = 1024,
  // one thread, cold, two rows 5.5–6.8 ms with it and 4.2–4.4 without, three rows 5.9–6.3 and
  // 4.6–4.7, a read of the same 112 MiB taking 4.0–4.3.
  const bool fetch_next = packed && m > 1 && !(std::is_same_v<BT, float> && m <= 3);
  // One row goes two whole panels at a time (row_two_panels): in turns with the read as above,
  // 1.20–1.36 times a 50 GB/s read with one panel at a time, 1.12–1.20 with two; level at
  // 33 GB/s (BF16, AVX2; float panels level). Whatever the record's depth block: it keeps a
  // panel's block in L1 for the row tiles that share it, and one row is one tile; its sums
  // carried through c between blocks are the same floats as the unbroken chain's.
  const bool two_panels = packed && m == 1 && !lower;
  for (int i0 = 0; i0 < m; i0 += rb) {
    const int i1 = std::min(m, i0 + rb);
    const Rows rows = rows_for_tiles(a, lda, i0, i1, k, p1 - p0, copied);
    for (std::int64_t p = p0; p < p1; ++p) {
      const int j = static_cast<int>(p * kPanel), cols = std::min(kPanel, n - j);
      const BT* bp = b.base + p * b.panel_step;
      if (two_panels && p + 1 < p1 && n - j >= 2 * kPanel) {
        (Wide ? row_two_panels_avx512<BT> : row_two_panels_avx2<BT>)(k, rows.a, bp, b.panel_step,
                                                                     bias ? bias + j : nullptr, c + j);
        ++p;
        continue;
      }
      const BT* next = fetch_next && p + 1 < p1 ? bp + b.panel_step : nullptr;
      panel_rows<Wide, BT>(t, i0, i1, j, cols, k, rows.a, rows.lda, bp, b.ldb, bias, c, ldc, lower, next, panel_bytes);
    }
  }
}

// The AVX-512 tiles unless the backend asks for AVX2 or the CPU lacks AVX-512F (the two
// give the same bits, so which one a product runs in never changes a result).
bool wide() { return avx512_available() && backend() != Backend::Avx2; }

KernelTuning tuning_now() { return active_tuning(wide() ? Isa::Avx512 : Isa::Avx2); }

// Whether a product of this kind runs in the AVX-512 tiles, with the record t it reads.
bool wide_for(Tiles tiles, const KernelTuning& t) { return wide() && !(tiles == Tiles::Attention && t.attn_avx2); }

template <class BT>
void run_panels(const KernelTuning& t, bool avx512, int m, int n, int k, const float* a, std::int64_t lda, BView<BT> b,
                const float* bias, float* c, std::int64_t ldc, bool lower, std::int64_t p0, std::int64_t p1) {
  (avx512 ? panels<true, BT> : panels<false, BT>)(t, m, n, k, a, lda, b, bias, c, ldc, lower, p0, p1);
}

// gemm_packed_tuned over panels of either type.
template <class BT>
void gemm_panels(const KernelTuning& t, bool avx512, int m, int n, int k, const float* a, std::int64_t lda,
                 const BT* packed, const float* bias, float* c, std::int64_t ldc) {
  const BView<BT> b{packed, kPanel, static_cast<std::int64_t>(k) * kPanel};
  const std::int64_t count = (n + kPanel - 1) / kPanel;
  // Work units of 64 multiply-adds: parallel_for starts a second thread past ~8 M of them.
  parallel_for_shared(count, std::max<std::int64_t>(1, static_cast<std::int64_t>(m) * k * kPanel / 64),
                      [&](std::int64_t p0, std::int64_t p1) {
                        run_panels(t, avx512, m, n, k, a, lda, b, bias, c, ldc, false, p0, p1);
                      });
}

// Panels of w (n, k) row-major, element (col, r) read by get(col, r); columns past n zero.
template <class T, class Get>
std::vector<T> pack_panels(int n, int k, Get get) {
  std::vector<T> out(static_cast<std::size_t>(packed_size(n, k)), T{});
  for (std::int64_t col = 0; col < n; ++col) {
    T* dst = out.data() + (col / kPanel) * k * kPanel + col % kPanel;
    for (int r = 0; r < k; ++r) dst[static_cast<std::int64_t>(r) * kPanel] = get(col, r);
  }
  return out;
}

}  // namespace

bool avx512_available() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

bool avx2_available() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

bool kernel_available() { return avx512_available() || avx2_available(); }

std::int64_t packed_size(int n, int k) { return (n + kPanel - 1) / kPanel * static_cast<std::int64_t>(k) * kPanel; }

void pack_transposed_into(const float* w, int n, int k, float* out, int first) {
  const std::int64_t count = (n + kPanel - 1) / kPanel;
  for (std::int64_t p = first / kPanel; p < count; ++p) {
    const int cols = static_cast<int>(std::min<std::int64_t>(kPanel, n - p * kPanel));
    float* panel = out + p * k * kPanel;
    for (int col = static_cast<int>(std::max<std::int64_t>(0, first - p * kPanel)); col < cols; ++col) {
      const float* row = w + (p * kPanel + col) * k;
      for (int r = 0; r < k; ++r) panel[static_cast<std::int64_t>(r) * kPanel + col] = row[r];
    }
    if (cols < kPanel)  // columns past n are zero: the tiles read whole panels
      for (int r = 0; r < k; ++r)
        std::fill_n(panel + static_cast<std::int64_t>(r) * kPanel + cols, kPanel - cols, 0.0f);
  }
}

std::vector<float> pack_transposed(const float* w, int n, int k) {
  std::vector<float> out(static_cast<std::size_t>(packed_size(n, k)));
  pack_transposed_into(w, n, k, out.data());
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

void gemm_packed_tuned(const KernelTuning& t, int m, int n, int k, const float* a, std::int64_t lda,
                       const float* packed, const float* bias, float* c, std::int64_t ldc, Tiles tiles) {
  gemm_panels(t, wide_for(tiles, t), m, n, k, a, lda, packed, bias, c, ldc);
}

void gemm_packed(int m, int n, int k, const float* a, std::int64_t lda, const float* packed, const float* bias,
                 float* c, std::int64_t ldc, Tiles tiles) {
  tune_before(static_cast<std::int64_t>(m) * n * k);
  const KernelTuning t = tuning_now();
  gemm_panels(t, wide_for(tiles, t), m, n, k, a, lda, packed, bias, c, ldc);
}

void gemm_packed_bf16(int m, int n, int k, const float* a, std::int64_t lda, const std::uint16_t* packed,
                      const float* bias, float* c, std::int64_t ldc) {
  tune_before(static_cast<std::int64_t>(m) * n * k);
  gemm_panels(tuning_now(), wide(), m, n, k, a, lda, packed, bias, c, ldc);
}

std::vector<std::uint16_t> pack_transposed_bf16(const unsigned char* w, int n, int k) {
  return pack_panels<std::uint16_t>(n, k, [&](std::int64_t col, int r) {
    std::uint16_t v;
    std::memcpy(&v, w + 2 * (col * k + r), 2);  // safetensors offsets need not be even
    return v;
  });
}

std::vector<float> unpack_transposed_bf16(const std::uint16_t* packed, int n, int k) {
  std::vector<float> w(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
  for (std::int64_t col = 0; col < n; ++col) {
    const std::uint16_t* src = packed + (col / kPanel) * k * kPanel + col % kPanel;
    for (int r = 0; r < k; ++r) {
      const std::uint32_t bits = static_cast<std::uint32_t>(src[static_cast<std::int64_t>(r) * kPanel]) << 16;
      std::memcpy(&w[static_cast<std::size_t>(col * k + r)], &bits, 4);
    }
  }
  return w;
}

void gemm_rowmajor(int m, int n, int k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                   std::int64_t ldc, bool lower, Tiles tiles) {
  const KernelTuning t = tuning_now();
  run_panels(t, wide_for(tiles, t), m, n, k, a, lda, BView<float>{b, ldb, kPanel}, nullptr, c, ldc, lower, 0,
             (n + kPanel - 1) / kPanel);
}

}  // namespace mhaviz::detail

namespace mhaviz {
namespace {
std::atomic<Backend>& chosen() {
  static std::atomic<Backend> b{detail::avx512_available() ? Backend::Avx512
                                : detail::avx2_available() ? Backend::Avx2
                                                           : Backend::OpenBlas};
  return b;
}
}  // namespace

std::string_view backend_name(Backend b) {
  return b == Backend::Avx512 ? "avx512" : b == Backend::Avx2 ? "avx2" : "openblas";
}

bool parse_backend(std::string_view name, Backend& out) {
  for (Backend b : {Backend::Avx512, Backend::Avx2, Backend::OpenBlas})
    if (name == backend_name(b)) {
      out = b;
      return true;
    }
  return false;
}

bool backend_supported(Backend b) {
  return b == Backend::OpenBlas || (b == Backend::Avx512 ? detail::avx512_available() : detail::avx2_available());
}

Backend backend() { return chosen().load(std::memory_order_relaxed); }

bool set_backend(Backend b) {
  if (!backend_supported(b)) return false;
  chosen().store(b, std::memory_order_relaxed);
  return true;
}

}  // namespace mhaviz
