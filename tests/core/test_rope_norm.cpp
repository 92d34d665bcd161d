// The RoPE and RMSNorm kernels (core/src/kernels/rope.hpp, rms_norm.hpp) against the same
// formulas in double, in both layouts RoPE takes, at position offsets, in place.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"

namespace mhaviz::detail {
namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

std::vector<double> inv_freq(int head_dim, double theta) {
  std::vector<double> f(static_cast<std::size_t>(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) f[static_cast<std::size_t>(i)] = std::pow(theta, -2.0 * i / head_dim);
  return f;
}

// The book's apply_rope in double: x·cos + cat(−x2, x1)·sin, angles repeated for both halves.
double rope_double(const float* v, int i, int hd, double pos, const std::vector<double>& f) {
  const int h = hd / 2, k = i % h;
  const double a = pos * f[static_cast<std::size_t>(k)];
  const double rotated = i < h ? -static_cast<double>(v[i + h]) : static_cast<double>(v[i - h]);
  return v[i] * std::cos(a) + rotated * std::sin(a);
}

TEST(Rope, TokensMajorEqualsTheFormulaInDouble) {
  const int T = 37, H = 3, hd = 16;
  const std::int64_t pos0 = 1000;
  const std::vector<double> f = inv_freq(hd, 10000.0);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(T) * H * hd, 1);
  std::vector<float> y = x;
  rope(y.data(), RopeBlock::tokens_major(T, H, hd), pos0, f);
  double worst = 0.0;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < hd; ++i) {
        const std::size_t at = (static_cast<std::size_t>(t) * H + h) * hd;
        const double want = rope_double(x.data() + at, i, hd, static_cast<double>(pos0 + t), f);
        worst = std::max(worst, std::abs(y[at + i] - want));
      }
  EXPECT_LT(worst, 2e-6);  // float rounding of cos, sin and two products
  EXPECT_NE(x, y);
}

TEST(Rope, HeadsMajorEqualsTokensMajor) {
  const int T = 9, H = 4, hd = 8;
  const std::vector<double> f = inv_freq(hd, 500000.0);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(T) * H * hd, 2);
  std::vector<float> a = x, b(x.size());
  for (int t = 0; t < T; ++t)  // (T, H, hd) -> (H, T, hd)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < hd; ++i)
        b[(static_cast<std::size_t>(h) * T + t) * hd + i] = x[(static_cast<std::size_t>(t) * H + h) * hd + i];
  rope(a.data(), RopeBlock::tokens_major(T, H, hd), 5, f);
  rope(b.data(), RopeBlock::heads_major(T, H, hd), 5, f);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < hd; ++i)
        ASSERT_EQ(a[(static_cast<std::size_t>(t) * H + h) * hd + i], b[(static_cast<std::size_t>(h) * T + t) * hd + i]);
}

TEST(Rope, AnOffsetBlockEqualsTheRowsOfTheWholeAndPositionZeroIsTheIdentity) {
  const int T = 12, H = 2, hd = 32, P = 5;
  const std::vector<double> f = inv_freq(hd, 1e6);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(T) * H * hd, 3);
  std::vector<float> whole = x;
  rope(whole.data(), RopeBlock::tokens_major(T, H, hd), 0, f);
  std::vector<float> tail(x.begin() + static_cast<std::ptrdiff_t>(P) * H * hd, x.end());
  rope(tail.data(), RopeBlock::tokens_major(T - P, H, hd), P, f);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), whole.begin() + static_cast<std::ptrdiff_t>(P) * H * hd));
  EXPECT_TRUE(std::equal(x.begin(), x.begin() + H * hd, whole.begin()));  // cos 0 = 1, sin 0 = 0
}

TEST(Rope, RefusesAnOddHeadDimOrTheWrongNumberOfFrequencies) {
  std::vector<float> x(6, 1.0f);
  const std::vector<double> f = inv_freq(6, 1e4);
  EXPECT_THROW(rope(x.data(), RopeBlock::tokens_major(1, 1, 5), 0, f), std::invalid_argument);
  EXPECT_THROW(rope(x.data(), RopeBlock::tokens_major(1, 1, 4), 0, f), std::invalid_argument);
}

TEST(RmsNorm, BothFormsEqualTheFormulaInDoubleAlsoInPlace) {
  const int rows = 300, dim = 64;
  const double eps = 1e-6;
  const std::vector<float> x = random_floats(static_cast<std::size_t>(rows) * dim, 4);
  const std::vector<float> w = random_floats(static_cast<std::size_t>(dim), 5);
  for (const RmsWeight form : {RmsWeight::Plain, RmsWeight::OnePlus}) {
    std::vector<float> y(x.size()), z = x;
    rms_norm(x.data(), y.data(), rows, dim, w.data(), eps, form);
    rms_norm(z.data(), z.data(), rows, dim, w.data(), eps, form);
    EXPECT_EQ(y, z);
    double worst = 0.0;
    for (int r = 0; r < rows; ++r) {
      double ss = 0.0;
      for (int i = 0; i < dim; ++i)
        ss += static_cast<double>(x[static_cast<std::size_t>(r * dim + i)]) * x[static_cast<std::size_t>(r * dim + i)];
      const double rstd = 1.0 / std::sqrt(ss / dim + eps);
      for (int i = 0; i < dim; ++i) {
        const double wi = (form == RmsWeight::OnePlus ? 1.0 : 0.0) + w[static_cast<std::size_t>(i)];
        const double want = x[static_cast<std::size_t>(r * dim + i)] * rstd * wi;
        worst = std::max(worst, std::abs(y[static_cast<std::size_t>(r * dim + i)] - want) / (1.0 + std::abs(want)));
      }
    }
    EXPECT_LT(worst, 1e-6);
  }
}

TEST(RmsNorm, GemmaZeroWeightIsThePlainNormWithWeightOne) {
  const int rows = 3, dim = 10;
  const std::vector<float> x = random_floats(static_cast<std::size_t>(rows) * dim, 6);
  const std::vector<float> zeros(dim, 0.0f), ones(dim, 1.0f);
  std::vector<float> a(x.size()), b(x.size());
  rms_norm(x.data(), a.data(), rows, dim, zeros.data(), 1e-5, RmsWeight::OnePlus);
  rms_norm(x.data(), b.data(), rows, dim, ones.data(), 1e-5, RmsWeight::Plain);
  EXPECT_EQ(a, b);
  double ms = 0.0;  // unit mean square
  for (int i = 0; i < dim; ++i)
    ms += static_cast<double>(a[static_cast<std::size_t>(i)]) * a[static_cast<std::size_t>(i)];
  EXPECT_NEAR(ms / dim, 1.0, 1e-4);
}

}  // namespace
}  // namespace mhaviz::detail
