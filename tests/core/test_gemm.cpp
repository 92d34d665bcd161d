// The kernel's products at every shape where a tile ends, on each ISA the CPU runs, against
// a loop in double. The AVX-512 tiles are 12 rows x 32 columns (two 16-lane masks), the AVX2
// ones 6 rows x 16 columns by default (each half of a 32-column panel); rows go in blocks of the
// record's size (240 rows of k = 17 under a 16 KiB record: test_tuning.cpp tries every other). So
// m = 1 ... 25 meets every row remainder of both tile heights, alone and after whole tiles;
// n = 1 ... 64 every column remainder of a panel and of each AVX2 half, in the first panel
// and the second; m around 240 the block edge. Both entry points (packed weights with a
// bias, row-major) run every shape; the row-major one's lower-triangular mode every m too.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"
#include "kernels/tuning.hpp"
#include "mhaviz/backend.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

// Skipped, visibly, on a CPU without the ISA (test::OnBackend).
class Gemm : public test::OnBackend {};

std::vector<float> random_values(std::size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
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

}  // namespace
}  // namespace mhaviz
