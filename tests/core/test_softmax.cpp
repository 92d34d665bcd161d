// The row softmax (core/src/kernels/softmax.cpp) against softmax in double, and its scalar, SSE4.1,
// AVX2 and AVX-512 paths against each other bit for bit: row lengths past every 4- and 8-lane edge, rows with
// a wide spread (elements that underflow to exactly 0), ties, and rows that alias the output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/softmax.hpp"

namespace mhaviz::detail {
namespace {

std::vector<double> softmax_double(const std::vector<float>& s, float divisor) {
  double mx = -INFINITY, sum = 0.0;
  for (float x : s) mx = std::max(mx, static_cast<double>(x / divisor));
  std::vector<double> e(s.size());
  for (std::size_t j = 0; j < s.size(); ++j) sum += (e[j] = std::exp(static_cast<double>(s[j] / divisor) - mx));
  for (double& x : e) x /= sum;
  return e;
}

std::vector<float> run(SoftmaxPath path, const std::vector<float>& s, float divisor, float garbage) {
  const auto n = static_cast<std::int64_t>(s.size());
  std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(n)), garbage), w(s.size(), garbage);
  softmax_row_path(path, s.data(), n, divisor, scratch.data(), w.data());
  return w;
}

// The paths this CPU can run.
bool available(SoftmaxPath path) {
  return path == SoftmaxPath::Avx512 ? softmax_widest_available()
         : path == SoftmaxPath::Avx2 ? softmax_wide_available()
                                     : true;
}

// What softmax_row itself picks for the row.
std::vector<float> run(const std::vector<float>& s, float divisor, float garbage) {
  const auto n = static_cast<std::int64_t>(s.size());
  std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(n)), garbage), w(s.size(), garbage);
  softmax_row(s.data(), n, divisor, scratch.data(), w.data());
  return w;
}

std::vector<std::vector<float>> rows() {
  std::mt19937 gen(11);
  std::vector<std::vector<float>> out;
  for (int n = 1; n <= 70; ++n)
    for (float spread : {1.0f, 30.0f, 400.0f}) {
      std::uniform_real_distribution<float> u(-spread, spread);
      std::vector<float> s(static_cast<std::size_t>(n));
      for (float& x : s) x = u(gen);
      out.push_back(s);
    }
  out.push_back(std::vector<float>(9, 2.5f));         // all equal
  out.push_back({0.0f, -1e30f, 3.0f, -1e30f, 3.0f});  // ties, and elements far below
  out.push_back(std::vector<float>(1024, 0.0f));      // GPT-2's context
  out.back()[1023] = 1.0f;
  // Longer rows: several 16-lane chunks, then an 8-lane one or not, then a partial one.
  for (int n : {100, 137, 255, 263})
    for (float spread : {1.0f, 400.0f}) {
      std::uniform_real_distribution<float> u(-spread, spread);
      std::vector<float> s(static_cast<std::size_t>(n));
      for (float& x : s) x = u(gen);
      out.push_back(s);
    }
  return out;
}

// got = softmax(s / 8) within the exp's and the sums' float errors, summing to 1.
void expect_close_to_double(const std::vector<float>& s, const std::vector<float>& got) {
  const std::vector<double> want = softmax_double(s, 8.0f);
  float mx = -INFINITY;
  for (float x : s) mx = std::max(mx, x / 8.0f);
  const double eps = 1.2e-7, adds = static_cast<double>(s.size()) / 8;  // float additions per lane
  double sum = 0.0;
  for (std::size_t j = 0; j < s.size(); ++j) {
    // Relative: 4 ulps for exp, the float rounding of x − max (an absolute error of half
    // an ulp of |x − max| is that relative error in e^(x − max)), the lane sums; absolute:
    // FLT_MIN, below which results are 0.
    const double d = std::abs(static_cast<double>(s[j] / 8.0f) - mx);
    EXPECT_NEAR(got[j], want[j], want[j] * eps * (4 + d + adds) + 1.2e-38) << "n " << s.size() << " j " << j;
    sum += got[j];
  }
  EXPECT_NEAR(sum, 1.0, eps * (4 + adds)) << "n " << s.size();
}

TEST(Softmax, CloseToDoubleAndSumsToOne) {
  int checked = 0;
  for (const std::vector<float>& s : rows()) {
    expect_close_to_double(s, run(s, 8.0f, 7.0f));
    ++checked;
  }
  EXPECT_EQ(checked, 221);
}

// A CPU without FMA rounds the exp's products and sums apart, on its scalar and SSE paths
// alike (the AVX2 path needs FMA): both close to softmax in double, the same bits as each
// other, and within an ulp or two of the fused form where this CPU has it.
TEST(Softmax, UnfusedFormAgreesOnItsPathsAndWithTheFusedOne) {
  int differing = 0, checked = 0;
  float worst = 0.0f;
  for (const std::vector<float>& s : rows()) {
    const auto n = static_cast<std::int64_t>(s.size());
    std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(n)), 7.0f), a(s.size()), b(s.size());
    softmax_row_unfused(SoftmaxPath::Scalar, s.data(), n, ScoreScale::divide(8.0f), scratch.data(), a.data());
    softmax_row_unfused(SoftmaxPath::Sse, s.data(), n, ScoreScale::divide(8.0f), scratch.data(), b.data());
    differing += std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0;
    expect_close_to_double(s, a);
    const std::vector<float> fused = run(s, 8.0f, 7.0f);
    for (std::size_t j = 0; j < s.size(); ++j)
      if (softmax_fused() && fused[j] > 1e-30f) worst = std::max(worst, std::abs(a[j] - fused[j]) / fused[j]);
    ++checked;
  }
  EXPECT_EQ(differing, 0) << "of " << checked << " rows";
  EXPECT_LT(worst, 4 * 1.2e-7f);
  if (softmax_fused()) {
    EXPECT_GT(worst, 0.0f) << "the two forms gave the same bits on every row";
  }
}

TEST(Softmax, UnderflowIsExactlyZero) {
  const std::vector<float> got = run({0.0f, -100.0f, -1e30f}, 1.0f, 7.0f);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 0.0f);  // e^-100 is below FLT_MIN
  EXPECT_EQ(got[2], 0.0f);
}

TEST(Softmax, EveryPathGivesTheSameBits) {
  int differing = 0, checked = 0;
  for (const std::vector<float>& s : rows()) {
    const std::vector<float> a = run(SoftmaxPath::Scalar, s, 8.0f, 7.0f), b = run(SoftmaxPath::Sse, s, 8.0f, -3.0f);
    differing += std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0;
    for (SoftmaxPath path : {SoftmaxPath::Avx2, SoftmaxPath::Avx512}) {
      if (!available(path)) continue;
      const std::vector<float> c = run(path, s, 8.0f, 1e30f);
      differing += std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) != 0;
    }
    ++checked;
  }
  EXPECT_EQ(differing, 0) << "of " << checked << " rows";
  if (!softmax_wide_available()) GTEST_SKIP() << "this CPU has no AVX2: the scalar and SSE paths checked";
}

// A power-of-two divisor (8 at hd = 64) is applied as a product with its exact reciprocal,
// which must round as the quotient does; any other divisor stays a division. Either way the
// result equals scaling the scores first and softmaxing with a divisor of 1, on every path.
TEST(Softmax, ScalingGivesTheQuotientsBits) {
  std::vector<std::vector<float>> cases = rows();
  // Subnormal and huge scores (finite after every divisor here: 1.5e38 / 0.5 < FLT_MAX).
  cases.push_back({1e-40f, -3e-39f, 7e-45f, 1.0f, 1.5e38f, -1.5e38f, 0.1f, -0.0f, 5e-39f, 2.0f, 1e-38f, 3.0f, 0.7f,
                   9.0f, 1.5f, 1e38f});
  int differing = 0;
  for (const float divisor : {8.0f, 0.5f, 1024.0f, std::sqrt(2.0f), 3.0f, 7.937254f})
    for (const std::vector<float>& s : cases) {
      std::vector<float> divided(s.size());
      for (std::size_t j = 0; j < s.size(); ++j) divided[j] = s[j] / divisor;
      for (SoftmaxPath path : {SoftmaxPath::Scalar, SoftmaxPath::Sse, SoftmaxPath::Avx2, SoftmaxPath::Avx512}) {
        if (!available(path)) continue;
        const std::vector<float> a = run(path, s, divisor, 7.0f), b = run(path, divided, 1.0f, 7.0f);
        differing += std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0;
      }
    }
  EXPECT_EQ(differing, 0);
}

// The AVX2 path takes the max of the raw scores and scales it, the others scale first: the
// same bits wherever a scale could make ties of distinct scores (a quotient by 3 rounding two
// neighbouring floats to one), with signed zeros as the max, the max in the last partial chunk
// or in a full one, and for products (Gemma's query scale) as for quotients.
TEST(Softmax, TheMaxOfTheRawScoresScaledIsTheMaxOfTheScaledOnes) {
  float a = 1.0f;
  while (a / 3.0f != std::nextafter(a, 2.0f) / 3.0f) a = std::nextafter(a, 2.0f);
  const float b = std::nextafter(a, 2.0f);
  ASSERT_LT(a, b);
  std::vector<std::vector<float>> cases = rows();
  for (const std::size_t n : {9u, 16u, 21u, 40u})
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      std::vector<float> s(n, -2.0f);
      s[at] = b;
      s[(at + 5) % n] = a;
      cases.push_back(s);
      std::vector<float> zeros(n, -1.0f);
      zeros[at] = -0.0f;
      zeros[(at + 3) % n] = 0.0f;
      cases.push_back(zeros);
    }
  int differing = 0, checked = 0;
  for (const ScoreScale by : {ScoreScale::divide(3.0f), ScoreScale::divide(8.0f), ScoreScale::multiply(0.125f),
                              ScoreScale::multiply(0.0883883f), ScoreScale::multiply(3.0f)})
    for (const std::vector<float>& s : cases) {
      const auto n = static_cast<std::int64_t>(s.size());
      std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(n)), 7.0f), want(s.size()), got(s.size());
      softmax_row_path(SoftmaxPath::Scalar, s.data(), n, by, scratch.data(), want.data());
      for (SoftmaxPath path : {SoftmaxPath::Sse, SoftmaxPath::Avx2, SoftmaxPath::Avx512}) {
        if (!available(path)) continue;
        softmax_row_path(path, s.data(), n, by, scratch.data(), got.data());
        differing += std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0;
        ++checked;
      }
    }
  EXPECT_EQ(differing, 0) << "of " << checked;
}

// Scores that overflowed to +inf (a checkpoint can hold anything): inf − inf is NaN, which
// each path must take to the same bits, and the scalar path without undefined behaviour (the
// asan preset's clang UBSan checks the float-to-int conversion).
TEST(Softmax, InfiniteScoresGiveTheSameBitsOnEveryPath) {
  int differing = 0;
  for (const std::size_t n : {5u, 40u, 77u, 150u})
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      std::vector<float> s(n, 1.0f);
      s[at] = INFINITY;
      const std::vector<float> a = run(SoftmaxPath::Scalar, s, 8.0f, 7.0f);
      for (SoftmaxPath path : {SoftmaxPath::Sse, SoftmaxPath::Avx2, SoftmaxPath::Avx512}) {
        if (!available(path)) continue;
        const std::vector<float> c = run(path, s, 8.0f, 7.0f);
        differing += std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) != 0;
      }
    }
  EXPECT_EQ(differing, 0);
}

// NaN scores (inf · 0 in a product): which lane of the max keeps one depends on the order of
// the comparisons, so the AVX-512 path keeps the AVX2 path's order and gives its bits.
TEST(Softmax, NanScoresGiveTheAvx2PathsBitsInAvx512) {
  if (!softmax_widest_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  int differing = 0, nan_rows = 0;
  for (const std::size_t n : {64u, 77u, 150u, 1024u})
    for (const std::size_t at : {std::size_t{0}, std::size_t{9}, n / 2, n - 8, n - 1})
      for (const std::size_t other : {std::size_t{3}, n - 2}) {
        std::vector<float> s(n, 1.0f);
        s[at] = NAN;
        s[other] = 2.0f;
        const std::vector<float> a = run(SoftmaxPath::Avx2, s, 8.0f, 7.0f), b = run(SoftmaxPath::Avx512, s, 8.0f, 7.0f);
        differing += std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0;
        nan_rows += std::isnan(a[0]);
      }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(nan_rows, 0) << "no row's max was NaN: the order of the max was not exercised";
}

// The vector paths divide by a row's sum without a division where that gives the quotient's
// bits (x·(1/sum) corrected once), and divide where it may not (e^x below 2^-100, near
// FLT_MIN). Rows whose exps cover the whole float range, long enough for that step, and sums
// from 1 (one key far above the rest) to the row's length (all equal): every path must give
// the scalar path's bits, which divides. Maxima of zero and ties in any lane of the max pass.
TEST(Softmax, QuotientsWithoutDivisionKeepTheDivisionsBits) {
  std::mt19937 gen(29);
  int differing = 0, checked = 0;
  std::int64_t tiny = 0, normal = 0;
  for (const std::size_t n : {128u, 200u, 512u, 1024u, 1500u})
    for (const float range : {0.0f, 5.0f, 69.0f, 75.0f, 88.0f, 200.0f})
      for (int rep = 0; rep < 4; ++rep) {
        // Scaled scores (divisor 8) in [−range, 0], one of them 0: e^(s − max) spans [e^−range, 1].
        std::uniform_real_distribution<float> u(-8.0f * range, 0.0f);
        std::vector<float> s(n);
        for (float& x : s) x = u(gen);
        s[gen() % n] = 0.0f;
        if (rep == 3) s[gen() % n] = -0.0f;  // a zero max of either sign
        const std::vector<float> want = run(SoftmaxPath::Scalar, s, 8.0f, 7.0f);
        for (float w : want) {
          tiny += w > 0.0f && w < 0x1p-100f;
          normal += w >= 0x1p-100f;
        }
        for (SoftmaxPath path : {SoftmaxPath::Avx2, SoftmaxPath::Avx512}) {
          if (!available(path)) continue;
          const std::vector<float> got = run(path, s, 8.0f, 7.0f);
          differing += std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0;
          ++checked;
        }
      }
  EXPECT_EQ(differing, 0) << "of " << checked;
  EXPECT_GT(tiny, 0) << "no weight below 2^-100: the division the fast step leaves was not exercised";
  EXPECT_GT(normal, 50000);
}

TEST(Softmax, OutputMayAliasTheScores) {
  std::vector<float> s = rows()[40];
  const std::vector<float> want = run(s, 8.0f, 0.0f);
  std::vector<float> scratch(static_cast<std::size_t>(softmax_scratch(static_cast<std::int64_t>(s.size()))));
  softmax_row(s.data(), static_cast<std::int64_t>(s.size()), 8.0f, scratch.data(), s.data());
  EXPECT_EQ(std::memcmp(s.data(), want.data(), s.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace mhaviz::detail
