// The kernel's products at every shape where a tile ends, on each ISA the CPU runs, against
// a loop in double. The AVX-512 tiles are 12 rows x 32 columns (two 16-lane masks), the AVX2
// ones 6 rows x 16 columns by default (each half of a 32-column panel); rows go in blocks of the
// record's size (240 rows of k = 17 under a 16 KiB record: test_tuning.cpp tries every other). So
// m = 1 ... 25 meets every row remainder of both tile heights, alone and after whole tiles;
// n = 1 ... 64 every column remainder of a panel and of each AVX2 half, in the first panel
// and the second; m around 240 the block edge. Both entry points (packed weights with a
// bias, row-major) run every shape; the row-major one's lower-triangular mode every m too.
// Weights held as BF16 panels give the bits of float panels of the same values.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/linear.hpp"
#include "kernels/parallel.hpp"
#include "kernels/tuning.hpp"
#include "mhaviz/backend.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

// Skipped, visibly, on a CPU without the ISA (test::OnBackend).
class Gemm : public test::OnBackend {};

using test::random_values;

// Runs check(note) under the default record, then (unless it failed fatally) under one whose
// depth blocks of 48 rows split a product's chains, note saying which. The default record comes
// back whatever happens, so a failed check leaves no record to the tests after it.
template <class Check>
void with_and_without_depth_blocks(Check check) {
  struct Reset {
    ~Reset() { detail::reset_tuning(); }
  } reset;
  check(std::string());
  if (::testing::Test::HasFatalFailure()) return;
  detail::set_tuning(detail::active_isa(), {0, 48, 0, 48});
  check(std::string(", depth blocks of 48"));
}

// c = a · wᵀ (+ bias) in double, (m, n), for a (m, k) and w (n, k).
std::vector<double> loop_product(const std::vector<float>& a, const std::vector<float>& w, const float* bias, int m,
                                 int n, int k) {
  std::vector<double> c(static_cast<std::size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = bias ? bias[j] : 0.0;
      for (int p = 0; p < k; ++p)
        sum += static_cast<double>(a[static_cast<std::size_t>(i) * k + p]) * w[static_cast<std::size_t>(j) * k + p];
      c[static_cast<std::size_t>(i) * n + j] = sum;
    }
  return c;
}

// One shape through both entry points; false (with a failure recorded) at the first wrong
// element, or at a write past column n of a row padded to n + 3.
bool product_matches(int m, int n, int k, std::mt19937& gen) {
  const std::vector<float> a = random_values(static_cast<std::size_t>(m) * k, gen);
  const std::vector<float> w = random_values(static_cast<std::size_t>(n) * k, gen);  // (n, k): a Linear's [out, in]
  const std::vector<float> bias = random_values(static_cast<std::size_t>(n), gen);
  const std::vector<double> want = loop_product(a, w, bias.data(), m, n, k);
  const std::vector<double> want_nobias = loop_product(a, w, nullptr, m, n, k);
  const double tol = 1e-5 * (1 + std::sqrt(static_cast<double>(k)));
  const std::vector<float> packed = detail::pack_transposed(w.data(), n, k);
  std::vector<float> c(static_cast<std::size_t>(m) * (n + 3), 7.0f);
  detail::gemm_packed(m, n, k, a.data(), k, packed.data(), bias.data(), c.data(), n + 3);
  // The same product with wᵀ row-major (k, n) as B, no bias.
  std::vector<float> wt(static_cast<std::size_t>(k) * n);
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p) wt[static_cast<std::size_t>(p) * n + j] = w[static_cast<std::size_t>(j) * k + p];
  std::vector<float> r(static_cast<std::size_t>(m) * (n + 3), 7.0f);
  detail::gemm_rowmajor(m, n, k, a.data(), k, wt.data(), n, r.data(), n + 3, false);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * (n + 3) + j, o = static_cast<std::size_t>(i) * n + j;
      if (std::fabs(c[e] - want[o]) > tol || std::fabs(r[e] - want_nobias[o]) > tol) {
        ADD_FAILURE() << m << "x" << n << "x" << k << " at (" << i << ", " << j << "): packed " << c[e]
                      << ", row-major " << r[e] << ", want " << want[o] << " / " << want_nobias[o];
        return false;
      }
    }
    for (int j = n; j < n + 3; ++j)
      if (c[static_cast<std::size_t>(i) * (n + 3) + j] != 7.0f ||
          r[static_cast<std::size_t>(i) * (n + 3) + j] != 7.0f) {
        ADD_FAILURE() << m << "x" << n << "x" << k << ": row " << i << " written past column n";
        return false;
      }
  }
  return true;
}

TEST_P(Gemm, EveryTileEdgeAgainstALoop) {
  std::mt19937 gen(5);
  int checked = 0;
  for (int m = 1; m <= 25; ++m)
    for (int n = 1; n <= 64; ++n)
      for (const int k : {1, 17}) {
        ASSERT_TRUE(product_matches(m, n, k, gen));
        ++checked;
      }
  detail::set_tuning(detail::active_isa(), {16, 0, 0, 48});  // 16 KiB: 240 rows of k = 17
  for (const int m : {239, 240, 241, 245, 252, 253})         // the 240-row block's edge
    for (const int n : {1, 17, 32, 33})
      for (const int k : {1, 17}) {
        ASSERT_TRUE(product_matches(m, n, k, gen));
        ++checked;
      }
  detail::reset_tuning();
  EXPECT_EQ(checked, 25 * 64 * 2 + 6 * 4 * 2);
}

TEST_P(Gemm, LowerTriangularModeAtEveryTileEdge) {
  std::mt19937 gen(9);
  for (int m = 1; m <= 25; ++m) {
    for (const int n : {1, 5, 15, 16, 17, 31, 32, 33}) {
      // a (m, m) lower-triangular (attention weights under a causal mask): a tile's rows
      // may read the zeros just right of the diagonal, never the blocks past its last row.
      std::vector<float> a = random_values(static_cast<std::size_t>(m) * m, gen);
      for (int i = 0; i < m; ++i)
        for (int j = i + 1; j < m; ++j)
          a[static_cast<std::size_t>(i) * m + j] = j >= (i / 12 + 1) * 12 ? std::nanf("") : 0.0f;
      const std::vector<float> b = random_values(static_cast<std::size_t>(m) * n, gen);
      std::vector<float> c(static_cast<std::size_t>(m) * n);
      detail::gemm_rowmajor(m, n, m, a.data(), m, b.data(), n, c.data(), n, true);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int p = 0; p <= i; ++p)
            want +=
                static_cast<double>(a[static_cast<std::size_t>(i) * m + p]) * b[static_cast<std::size_t>(p) * n + j];
          const float got = c[static_cast<std::size_t>(i) * n + j];
          ASSERT_FALSE(std::isnan(got)) << "read above the diagonal, " << m << "x" << n;
          ASSERT_NEAR(got, want, 1e-5 * (1 + std::sqrt(static_cast<double>(m))))
              << m << "x" << n << " at (" << i << ", " << j << ")";
        }
    }
  }
}

// The forward packs each head's keys into a buffer it reuses: what was there before must
// not show through the columns past n, which the tiles read with every panel.
TEST(Packing, IntoAReusedBufferEqualsAFreshPack) {
  std::mt19937 gen(13);
  for (const int n : {1, 31, 32, 33, 100})
    for (const int k : {1, 64}) {
      const std::vector<float> w = random_values(static_cast<std::size_t>(n) * k, gen);
      const std::vector<float> fresh = detail::pack_transposed(w.data(), n, k);
      ASSERT_EQ(static_cast<std::int64_t>(fresh.size()), detail::packed_size(n, k));
      std::vector<float> reused(fresh.size(), std::nanf(""));
      detail::pack_transposed_into(w.data(), n, k, reused.data());
      EXPECT_EQ(reused, fresh) << n << "x" << k;
      EXPECT_EQ(detail::unpack_transposed(reused.data(), n, k), w) << n << "x" << k;
    }
}

// BF16 weights rounded from random floats, as stored bytes (little-endian bit patterns) from
// an odd offset, as a safetensors file may place them; and the same values widened.
struct Bf16Weights {
  std::vector<unsigned char> bytes;  // 1 + 2·n·k: the tensor starts at bytes[1]
  std::vector<float> widened;        // (n, k)
};
Bf16Weights random_bf16(int n, int k, std::mt19937& gen) {
  Bf16Weights w;
  const std::vector<float> v = random_values(static_cast<std::size_t>(n) * k, gen);
  w.bytes.assign(1 + 2 * v.size(), 0xAB);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    const std::uint16_t h = static_cast<std::uint16_t>(bits >> 16);  // truncated: any BF16 value will do
    w.bytes[1 + 2 * i] = static_cast<unsigned char>(h & 0xFF);
    w.bytes[2 + 2 * i] = static_cast<unsigned char>(h >> 8);
    const std::uint32_t wide = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    w.widened.push_back(f);
  }
  return w;
}

// BF16 panels give the bits of float panels of the widened weights: through gemm_packed_bf16
// (tiles that widen in registers below the row count where a panel is widened once, and the
// widened panel from there on) and through linear_into (a few rows split over the panels).
TEST_P(Gemm, Bf16PanelsGiveTheBitsOfTheWidenedWeights) {
  std::mt19937 gen(21);
  int checked = 0;
  for (const int n : {1, 15, 16, 17, 31, 32, 33, 64, 65, 300})
    for (const int k : {1, 17, 64}) {
      const Bf16Weights w = random_bf16(n, k, gen);
      const std::vector<std::uint16_t> half = detail::pack_transposed_bf16(w.bytes.data() + 1, n, k);
      const std::vector<float> full = detail::pack_transposed(w.widened.data(), n, k);
      ASSERT_EQ(static_cast<std::int64_t>(half.size()), detail::packed_size(n, k));
      ASSERT_EQ(detail::unpack_transposed_bf16(half.data(), n, k), w.widened) << n << "x" << k;
      const std::vector<float> bias = random_values(static_cast<std::size_t>(n), gen);
      Linear l;
      l.in = k;
      l.out = n;
      l.bias = bias;
      l.packed_bf16 = half;
      Linear f = l;
      f.packed_bf16.clear();
      f.packed = full;
      for (const int m : {1, 2, 5, 11, 12, 13, 15, 16, 17, 23, 24, 25, 30, 239, 240, 241}) {
        const std::vector<float> a = random_values(static_cast<std::size_t>(m) * k, gen);
        std::vector<float> got(static_cast<std::size_t>(m) * n), want(got.size());
        detail::gemm_packed_bf16(m, n, k, a.data(), k, half.data(), bias.data(), got.data(), n);
        detail::gemm_packed(m, n, k, a.data(), k, full.data(), bias.data(), want.data(), n);
        ASSERT_EQ(got, want) << "gemm " << m << "x" << n << "x" << k;
        detail::linear_into(l, a.data(), m, got.data(), n, true);
        detail::linear_into(f, a.data(), m, want.data(), n, true);
        ASSERT_EQ(got, want) << "linear " << m << "x" << n << "x" << k;
        ++checked;
      }
      EXPECT_EQ(detail::linear_weight(l), w.widened);
    }
  EXPECT_EQ(checked, 10 * 3 * 16);
  // Deep and long: each panel widened once per 8 MiB of A's rows (672 rows of 3072), so 700
  // rows cross that block's edge as well as the record's row blocks.
  const int m = 700, n = 40, k = 3072;
  const Bf16Weights w = random_bf16(n, k, gen);
  const std::vector<std::uint16_t> half = detail::pack_transposed_bf16(w.bytes.data() + 1, n, k);
  const std::vector<float> full = detail::pack_transposed(w.widened.data(), n, k);
  const std::vector<float> a = random_values(static_cast<std::size_t>(m) * k, gen);
  std::vector<float> got(static_cast<std::size_t>(m) * n), want(got.size());
  detail::gemm_packed_bf16(m, n, k, a.data(), k, half.data(), nullptr, got.data(), n);
  detail::gemm_packed(m, n, k, a.data(), k, full.data(), nullptr, want.data(), n);
  EXPECT_EQ(got, want);
}

// A row's bits do not depend on the rows around it: one row (an edit's, which runs two whole
// panels at a time: gemm.cpp's row_two_panels, depth blocks or none) equals its row of a
// product of 13, float and BF16 panels, with a bias or none, through gemm_packed and
// linear_into, at widths with an odd panel or a partial one left over, and under a record
// whose depth blocks (48 rows) split the 13 rows' chains.
TEST_P(Gemm, OneRowGivesTheBitsOfItsRowInAnyProduct) {
  std::mt19937 gen(33);
  const int m = 13;
  int checked = 0;
  with_and_without_depth_blocks([&](const std::string& note) {
    for (const int n : {32, 64, 65, 96, 100, 160, 300})
      for (const int k : {1, 17, 64, 1024}) {
        SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(k) + note);
        const Bf16Weights w = random_bf16(n, k, gen);
        const std::vector<float> a = random_values(static_cast<std::size_t>(m) * k, gen);
        const std::vector<float> bias = random_values(static_cast<std::size_t>(n), gen);
        Linear half;
        half.in = k;
        half.out = n;
        half.packed_bf16 = detail::pack_transposed_bf16(w.bytes.data() + 1, n, k);
        Linear full = half;
        full.packed_bf16.clear();
        full.packed = detail::pack_transposed(w.widened.data(), n, k);
        for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
          std::vector<float> all(static_cast<std::size_t>(m) * n), one(static_cast<std::size_t>(n));
          detail::gemm_packed(m, n, k, a.data(), k, full.packed.data(), b, all.data(), n);
          for (int r = 0; r < m; r += 6) {
            const float* row = a.data() + static_cast<std::size_t>(r) * k;
            const std::vector<float> want(all.begin() + r * n, all.begin() + (r + 1) * n);
            detail::gemm_packed(1, n, k, row, k, full.packed.data(), b, one.data(), n);
            ASSERT_EQ(one, want) << "float panels, row " << r;
            detail::gemm_packed_bf16(1, n, k, row, k, half.packed_bf16.data(), b, one.data(), n);
            ASSERT_EQ(one, want) << "BF16 panels, row " << r;
            for (Linear* l : {&full, &half}) {
              l->bias = b ? bias : std::vector<float>{};
              detail::linear_into(*l, row, 1, one.data(), n, true);
              ASSERT_EQ(one, want) << (l == &half ? "BF16" : "float") << " Linear, row " << r;
            }
            ++checked;
          }
        }
      }
  });
  EXPECT_EQ(checked, 2 * 7 * 4 * 2 * 3);
}

// A product of a few rows over row-major B (attention's values for one query row of each head
// sharing them) goes through B's rows in blocks, every panel of a block before the next
// (gemm.cpp, stream_rows): each of its rows has the bits of that row in a product of 13 rows,
// which goes panel by panel through the whole depth. B's rows one after another (the next block
// fetched) and further apart, partial panels, depths around the block, a record with depth
// blocks of its own; nothing past n written.
TEST_P(Gemm, FewRowsOverRowMajorBGiveTheBitsOfTheirRowsInAProductOfMany) {
  std::mt19937 gen(37);
  const int many = 13;
  int checked = 0;
  with_and_without_depth_blocks([&](const std::string& note) {
    for (const int n : {32, 100, 128, 300})
      for (const int k : {1, 31, 32, 33, 100, 1024})
        for (const int extra : {0, 5}) {
          const int ldb = n + extra, ldc = n + 3;
          SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(k) + ", B rows " + std::to_string(ldb) + " apart" +
                       note);
          const std::vector<float> a = random_values(static_cast<std::size_t>(many) * k, gen);
          const std::vector<float> b = random_values(static_cast<std::size_t>(k) * ldb, gen);
          std::vector<float> all(static_cast<std::size_t>(many) * ldc);
          detail::gemm_rowmajor(many, n, k, a.data(), k, b.data(), ldb, all.data(), ldc, false);
          for (int m = 1; m <= 6; ++m) {
            const int r0 = many - m;  // the last m rows: their bits do not depend on the tile they fall in
            std::vector<float> few(static_cast<std::size_t>(m) * ldc, 7.0f);
            detail::gemm_rowmajor(m, n, k, a.data() + static_cast<std::size_t>(r0) * k, k, b.data(), ldb, few.data(),
                                  ldc, false);
            for (int i = 0; i < m; ++i) {
              const float* want = all.data() + static_cast<std::size_t>(r0 + i) * ldc;
              const float* got = few.data() + static_cast<std::size_t>(i) * ldc;
              ASSERT_EQ(std::memcmp(got, want, static_cast<std::size_t>(n) * sizeof(float)), 0)
                  << m << " rows, row " << i;
              for (int j = n; j < ldc; ++j) ASSERT_EQ(got[j], 7.0f) << "past n, " << m << " rows, row " << i;
            }
            ++checked;
          }
        }
  });
  EXPECT_EQ(checked, 2 * 4 * 6 * 2 * 6);
}

// Rows of A a multiple of 2 KiB apart (k = 1024, 3072: Qwen3's products) are copied a line
// further apart before the tiles read them (gemm.cpp, rows_for_tiles): the same bits as the
// same rows read in place at a stride that is not copied, float and BF16 panels, across row
// blocks and the BF16 widening's 8 MiB blocks, with A's rows longer than k too.
TEST_P(Gemm, RowsFourKiBApartGiveTheBitsOfRowsReadInPlace) {
  std::mt19937 gen(31);
  const int n = 136;  // five panels, the last one partial
  struct Case {
    int m, k, lda;
  };
  for (const Case c : {Case{2, 1024, 1024}, Case{13, 1024, 1024}, Case{100, 3072, 3072}, Case{700, 3072, 3072},
                       Case{37, 1000, 2048}, Case{50, 512, 512}}) {
    SCOPED_TRACE(std::to_string(c.m) + " rows of " + std::to_string(c.k) + ", " + std::to_string(c.lda) + " apart");
    const std::vector<float> aliased = random_values(static_cast<std::size_t>(c.m) * c.lda, gen);
    const int padded_lda = c.lda + 8;  // 32 bytes more: not a multiple of 2 KiB, read in place
    std::vector<float> padded(static_cast<std::size_t>(c.m) * padded_lda);
    for (int i = 0; i < c.m; ++i)
      std::copy_n(aliased.data() + static_cast<std::size_t>(i) * c.lda, c.k,
                  padded.data() + static_cast<std::size_t>(i) * padded_lda);
    const Bf16Weights w = random_bf16(n, c.k, gen);
    const std::vector<std::uint16_t> half = detail::pack_transposed_bf16(w.bytes.data() + 1, n, c.k);
    const std::vector<float> full = detail::pack_transposed(w.widened.data(), n, c.k);
    const std::vector<float> bias = random_values(static_cast<std::size_t>(n), gen);
    std::vector<float> got(static_cast<std::size_t>(c.m) * n), want(got.size());
    detail::gemm_packed(c.m, n, c.k, aliased.data(), c.lda, full.data(), bias.data(), got.data(), n);
    detail::gemm_packed(c.m, n, c.k, padded.data(), padded_lda, full.data(), bias.data(), want.data(), n);
    ASSERT_EQ(got, want) << "float panels";
    detail::gemm_packed_bf16(c.m, n, c.k, aliased.data(), c.lda, half.data(), nullptr, got.data(), n);
    detail::gemm_packed_bf16(c.m, n, c.k, padded.data(), padded_lda, half.data(), nullptr, want.data(), n);
    ASSERT_EQ(got, want) << "BF16 panels";
  }
}

// Several Linears of one input in one loop over their panels (an edit's q, k and v) give the
// bits of each alone, float and BF16 panels mixed, biases or none, below and past the row
// count where the loop is fused.
TEST_P(Gemm, LinearsOfOneInputTogetherGiveTheBitsOfEachAlone) {
  std::mt19937 gen(23);
  const int k = 96;
  std::vector<Linear> ls(3);
  const int outs[] = {200, 33, 64};
  for (int i = 0; i < 3; ++i) {
    ls[static_cast<std::size_t>(i)].in = k;
    ls[static_cast<std::size_t>(i)].out = outs[i];
    const Bf16Weights w = random_bf16(outs[i], k, gen);
    if (i == 1)
      ls[1].packed = detail::pack_transposed(w.widened.data(), outs[i], k);
    else
      ls[static_cast<std::size_t>(i)].packed_bf16 = detail::pack_transposed_bf16(w.bytes.data() + 1, outs[i], k);
    if (i != 2) ls[static_cast<std::size_t>(i)].bias = random_values(static_cast<std::size_t>(outs[i]), gen);
  }
  for (const int n : {1, 2, 7, 15, 16, 17, 40}) {
    const std::vector<float> x = random_values(static_cast<std::size_t>(n) * k, gen);
    std::vector<std::vector<float>> together(3), alone(3);
    for (int i = 0; i < 3; ++i) {
      together[static_cast<std::size_t>(i)].assign(static_cast<std::size_t>(n) * outs[i], 7.0f);
      alone[static_cast<std::size_t>(i)].assign(static_cast<std::size_t>(n) * outs[i], 8.0f);
      detail::linear_into(ls[static_cast<std::size_t>(i)], x.data(), n, alone[static_cast<std::size_t>(i)].data(),
                          outs[i], true);
    }
    const Linear* ptrs[] = {&ls[0], &ls[1], &ls[2]};
    float* const outs_p[] = {together[0].data(), together[1].data(), together[2].data()};
    detail::linears_into(ptrs, x.data(), n, outs_p, true);
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(together[static_cast<std::size_t>(i)], alone[static_cast<std::size_t>(i)])
          << "n " << n << ", Linear " << i;
  }
}

// A column block of a Linear's product (the lesson's stacked q | k | v, each block written
// into its own tensor) has the bits of those columns of the whole product: blocks on panel
// edges (computed on their panels alone, the last one partial) and off them (through the
// whole product), float and BF16 panels, with a bias, below and past the few-row count.
TEST_P(Gemm, AColumnBlockOfALinearGivesTheBitsOfTheWholeProduct) {
  std::mt19937 gen(29);
  const int k = 80, out = 200;
  Linear f, h;
  f.in = h.in = k;
  f.out = h.out = out;
  const Bf16Weights w = random_bf16(out, k, gen);
  f.packed = detail::pack_transposed(w.widened.data(), out, k);
  h.packed_bf16 = detail::pack_transposed_bf16(w.bytes.data() + 1, out, k);
  f.bias = h.bias = random_values(static_cast<std::size_t>(out), gen);
  const std::pair<int, int> blocks[] = {{0, 64}, {64, 96}, {160, 40}, {5, 60}, {190, 10}};
  int compared = 0;
  for (const Linear* l : {&f, &h})
    for (const int n : {1, 7, 16, 40}) {
      const std::vector<float> x = random_values(static_cast<std::size_t>(n) * k, gen);
      std::vector<float> whole(static_cast<std::size_t>(n) * out);
      detail::linear_into(*l, x.data(), n, whole.data(), out, true);
      for (const auto& [col, cols] : blocks) {
        const int ld = cols + 3;  // a row stride of its own
        std::vector<float> got(static_cast<std::size_t>(n) * ld, 9.0f);
        detail::linear_columns_into(*l, x.data(), n, col, cols, got.data(), ld, true);
        for (int r = 0; r < n; ++r) {
          const float* want = whole.data() + static_cast<std::ptrdiff_t>(r) * out + col;
          const float* row = got.data() + static_cast<std::ptrdiff_t>(r) * ld;
          EXPECT_EQ(std::memcmp(row, want, static_cast<std::size_t>(cols) * sizeof(float)), 0)
              << (l == &f ? "float" : "BF16") << " n " << n << " columns " << col << "+" << cols << " row " << r;
          EXPECT_EQ(row[cols], 9.0f) << "past the block, n " << n << " columns " << col << "+" << cols;
          ++compared;
        }
      }
    }
  EXPECT_EQ(compared, 2 * (1 + 7 + 16 + 40) * 5);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Gemm, ::testing::Values(Backend::Avx512, Backend::Avx2), test::backend_label);

}  // namespace
}  // namespace mhaviz

namespace mhaviz {
namespace {

// A serial thread's loops never leave it: one call over the whole range, on this thread; the
// flag is the thread's own, and the pool serves the others again when it is off.
TEST(Parallel, ASerialThreadRunsItsLoopsAlone) {
  const auto threads_of = [] {
    std::mutex mu;
    std::set<std::thread::id> ids;
    int calls = 0;
    detail::parallel_for(1 << 12, 1 << 12, [&](std::int64_t, std::int64_t) {
      std::lock_guard lk(mu);
      ids.insert(std::this_thread::get_id());
      ++calls;
    });
    return std::pair{ids, calls};
  };
  set_thread_serial(true);
  const auto [alone, calls] = threads_of();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(alone, std::set<std::thread::id>{std::this_thread::get_id()});
  set_thread_serial(false);
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_GT(threads_of().second, 1);
  }
}

// A shared loop visits every item once, in chunks that tile the range, and a thread held up
// (the caller, stalled in its first chunk until the others are done) leaves its share to the
// others: with the even split of parallel_for it would have kept half.
TEST(Parallel, ASharedLoopsItemsGoToTheThreadsThatAreFree) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: the loop runs inline";
  constexpr std::int64_t n = 1000;
  std::vector<std::atomic<int>> seen(n);
  std::atomic<std::int64_t> done{0}, by_caller{0};
  const std::thread::id caller = std::this_thread::get_id();
  bool first = true;
  detail::parallel_for_shared(n, 1 << 12, [&](std::int64_t b, std::int64_t e) {
    if (std::this_thread::get_id() == caller && first) {
      first = false;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done.load() + (e - b) < n && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (std::int64_t i = b; i < e; ++i) seen[static_cast<std::size_t>(i)]++;
    if (std::this_thread::get_id() == caller) by_caller += e - b;
    done += e - b;
  });
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)].load(), 1) << "item " << i;
  EXPECT_LE(by_caller.load(), n / 4) << "the stalled caller kept more than its first chunk";
}

}  // namespace
}  // namespace mhaviz
