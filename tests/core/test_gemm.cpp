// The kernel's products at the shapes where tiles end: rows and columns past every tile
// edge (AVX-512 12 × 32, AVX2 6 × 16 halves of 32), tiny shapes, one row, and the
// lower-triangular mode, against a loop in double, on each ISA the CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/gemm.hpp"
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

TEST_P(Gemm, EveryTileEdgeAgainstALoop) {
  std::mt19937 gen(5);
  int checked = 0;
  for (const int m : {1, 5, 6, 7, 12, 13, 25, 241})
    for (const int n : {1, 8, 15, 16, 17, 31, 32, 33, 70})
      for (const int k : {1, 3, 64}) {
        const std::vector<float> a = random_values(static_cast<std::size_t>(m) * k, gen);
        const std::vector<float> w = random_values(static_cast<std::size_t>(n) * k, gen);  // (n, k): a Linear's [out, in]
        const std::vector<float> bias = random_values(static_cast<std::size_t>(n), gen);
        // c = a · wᵀ + bias through the packed panels; rows of c padded to n + 3 (ldc).
        const std::vector<float> packed = detail::pack_transposed(w.data(), n, k);
        std::vector<float> c(static_cast<std::size_t>(m) * (n + 3), 7.0f);
        detail::gemm_packed(m, n, k, a.data(), k, packed.data(), bias.data(), c.data(), n + 3);
        // The same product with wᵀ row-major (k, n) as B, no bias.
        std::vector<float> wt(static_cast<std::size_t>(k) * n);
        for (int j = 0; j < n; ++j)
          for (int p = 0; p < k; ++p) wt[static_cast<std::size_t>(p) * n + j] = w[static_cast<std::size_t>(j) * k + p];
        std::vector<float> r(static_cast<std::size_t>(m) * n);
        detail::gemm_rowmajor(m, n, k, a.data(), k, wt.data(), n, r.data(), n, false);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) {
            double want = 0;
            for (int p = 0; p < k; ++p) want += static_cast<double>(a[static_cast<std::size_t>(i) * k + p]) * w[static_cast<std::size_t>(j) * k + p];
            const double tol = 1e-5 * (1 + std::sqrt(static_cast<double>(k)));
            ASSERT_NEAR(c[static_cast<std::size_t>(i) * (n + 3) + j], want + bias[static_cast<std::size_t>(j)], tol) << m << "x" << n << "x" << k;
            ASSERT_NEAR(r[static_cast<std::size_t>(i) * n + j], want, tol) << m << "x" << n << "x" << k;
          }
          for (int j = n; j < n + 3; ++j) ASSERT_EQ(c[static_cast<std::size_t>(i) * (n + 3) + j], 7.0f) << "wrote past column n";
        }
        ++checked;
      }
  EXPECT_EQ(checked, 8 * 9 * 3);
}

TEST_P(Gemm, LowerTriangularModeEqualsTheFullProduct) {
  std::mt19937 gen(9);
  for (const int m : {1, 6, 7, 13, 40}) {
    for (const int n : {5, 16, 33}) {
      // a (m, m) lower-triangular (attention weights under a causal mask): a tile's rows
      // may read the zeros just right of the diagonal, never the blocks past its last row.
      std::vector<float> a = random_values(static_cast<std::size_t>(m) * m, gen);
      for (int i = 0; i < m; ++i)
        for (int j = i + 1; j < m; ++j) a[static_cast<std::size_t>(i) * m + j] = j >= (i / 12 + 1) * 12 ? std::nanf("") : 0.0f;
      std::vector<float> clean = a;
      for (float& x : clean)
        if (std::isnan(x)) x = 0.0f;
      const std::vector<float> b = random_values(static_cast<std::size_t>(m) * n, gen);
      std::vector<float> c(static_cast<std::size_t>(m) * n), want(static_cast<std::size_t>(m) * n);
      detail::gemm_rowmajor(m, n, m, a.data(), m, b.data(), n, c.data(), n, true);
      detail::gemm_rowmajor(m, n, m, clean.data(), m, b.data(), n, want.data(), n, false);
      for (std::size_t e = 0; e < c.size(); ++e) {
        ASSERT_FALSE(std::isnan(c[e])) << "read above the diagonal, " << m << "x" << n;
        ASSERT_NEAR(c[e], want[e], 1e-5) << m << "x" << n;
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
