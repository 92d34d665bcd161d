// Head detectors on constructed attention patterns: a head built to follow one pattern
// scores 1 on it and about 0 on the others, and uniform attention scores what its row
// lengths say.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mhaviz/heads.hpp"

namespace mhaviz {
namespace {

// A (T, T) causal head whose row i puts all its weight on key target(i) (clamped to row 0's 0).
template <class F>
std::vector<float> one_hot_head(int T, F target) {
  std::vector<float> w(static_cast<std::size_t>(T) * T, 0.0f);
  for (int i = 0; i < T; ++i) w[static_cast<std::size_t>(i) * T + static_cast<std::size_t>(target(i))] = 1.0f;
  return w;
}

std::vector<float> uniform_head(int T) {
  std::vector<float> w(static_cast<std::size_t>(T) * T, 0.0f);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) w[static_cast<std::size_t>(i) * T + static_cast<std::size_t>(j)] = 1.0f / (i + 1);
  return w;
}

float score(HeadPattern p, const std::vector<float>& w, const std::vector<int>& tokens) {
  const auto s = score_head(p, w, tokens);
  EXPECT_TRUE(s.has_value()) << head_pattern_name(p);
  return s.value_or(-1.0f);
}

TEST(Heads, PreviousTokenHeadScoresOneThereAndNothingOnUnrelatedPatterns) {
  const std::vector<int> tokens{10, 11, 12, 13, 14, 15, 16, 17};  // no repeats
  const auto w = one_hot_head(8, [](int i) { return i == 0 ? 0 : i - 1; });
  EXPECT_FLOAT_EQ(score(HeadPattern::PreviousToken, w, tokens), 1.0f);
  // Only row 1's previous token is token 0.
  EXPECT_NEAR(score(HeadPattern::FirstToken, w, tokens), 1.0f / 7, 1e-6);
  EXPECT_FALSE(score_head(HeadPattern::DuplicateToken, w, tokens).has_value());
  EXPECT_FALSE(score_head(HeadPattern::Induction, w, tokens).has_value());
}

TEST(Heads, FirstTokenSinkScoresOneAndLeavesRowZeroOut) {
  const std::vector<int> tokens{50256, 1, 2, 3, 4, 5};
  const auto w = one_hot_head(6, [](int) { return 0; });
  EXPECT_FLOAT_EQ(score(HeadPattern::FirstToken, w, tokens), 1.0f);
  EXPECT_NEAR(score(HeadPattern::PreviousToken, w, tokens), 1.0f / 5, 1e-6);  // row 1 only
}

TEST(Heads, DuplicateTokenHeadFindsTheEarlierCopy) {
  //                          0  1  2  3  4  5  6
  const std::vector<int> tokens{7, 8, 9, 7, 5, 8, 6};
  // Rows 3 and 5 repeat tokens 0 and 1; the others look at themselves.
  const auto w = one_hot_head(7, [](int i) { return i == 3 ? 0 : i == 5 ? 1 : i; });
  EXPECT_FLOAT_EQ(score(HeadPattern::DuplicateToken, w, tokens), 1.0f);
  EXPECT_FLOAT_EQ(score(HeadPattern::PreviousToken, w, tokens), 0.0f);
  // Same rows attending to themselves instead: duplicate-token 0.
  const auto self = one_hot_head(7, [](int i) { return i; });
  EXPECT_FLOAT_EQ(score(HeadPattern::DuplicateToken, self, tokens), 0.0f);
}

TEST(Heads, InductionHeadOnTheRepeatedRandomProbe) {
  const int n = 20;
  const auto tokens = repeated_random_tokens(n, 1000, 30000, 7, /*prefix=*/50256);
  ASSERT_EQ(tokens.size(), static_cast<std::size_t>(2 * n + 1));
  const int T = static_cast<int>(tokens.size());
  // Second half, row i (token t_k) looks at the key after t_k's first occurrence: i - n + 1.
  const auto w = one_hot_head(T, [&](int i) { return i > n ? i - n + 1 : 0; });
  EXPECT_NEAR(score(HeadPattern::Induction, w, tokens), 1.0f, 1e-6);
  // A duplicate-token head on the same probe looks at i - n: induction ~0.
  const auto dup = one_hot_head(T, [&](int i) { return i > n ? i - n : 0; });
  EXPECT_NEAR(score(HeadPattern::DuplicateToken, dup, tokens), 1.0f, 1e-6);
  EXPECT_LT(score(HeadPattern::Induction, dup, tokens), 0.05f);
  EXPECT_LT(score(HeadPattern::Induction, uniform_head(T), tokens), 0.2f);
}

TEST(Heads, UniformAttentionScoresTheMeanOfOneOverRowLength) {
  const std::vector<int> tokens{1, 2, 3, 4};
  const auto w = uniform_head(4);
  const float expected = (1.0f / 2 + 1.0f / 3 + 1.0f / 4) / 3;
  EXPECT_NEAR(score(HeadPattern::PreviousToken, w, tokens), expected, 1e-6);
  EXPECT_NEAR(score(HeadPattern::FirstToken, w, tokens), expected, 1e-6);
}

TEST(Heads, ScoresStayInUnitIntervalOnRandomSoftmaxRows) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const auto tokens = repeated_random_tokens(9, 0, 5, 11);  // small range: many duplicates
  const int T = static_cast<int>(tokens.size());
  std::vector<float> w(static_cast<std::size_t>(T) * T, 0.0f);
  for (int i = 0; i < T; ++i) {
    float sum = 0;
    for (int j = 0; j <= i; ++j) sum += w[static_cast<std::size_t>(i) * T + j] = u(gen);
    for (int j = 0; j <= i; ++j) w[static_cast<std::size_t>(i) * T + j] /= sum;
  }
  for (HeadPattern p : kHeadPatterns) {
    const auto s = score_head(p, w, tokens);
    ASSERT_TRUE(s.has_value()) << head_pattern_name(p);
    EXPECT_GE(*s, 0.0f);
    EXPECT_LE(*s, 1.0f + 1e-6f);
  }
}

TEST(Heads, LayerScoresEachHeadAndTopHeadsRanks) {
  const std::vector<int> tokens{1, 2, 3, 4, 5};
  const int T = 5;
  auto prev = one_hot_head(T, [](int i) { return i == 0 ? 0 : i - 1; });
  auto sink = one_hot_head(T, [](int) { return 0; });
  std::vector<float> layer(prev);
  layer.insert(layer.end(), sink.begin(), sink.end());
  const auto scores = score_layer(HeadPattern::PreviousToken, layer, 2, tokens);
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_FLOAT_EQ(*scores[0], 1.0f);
  EXPECT_FLOAT_EQ(*scores[1], 0.25f);
  const auto top = top_heads({scores, {0.5f, std::nullopt}}, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].layer, 0);
  EXPECT_EQ(top[0].head, 0);
  EXPECT_EQ(top[1].layer, 1);
  EXPECT_EQ(top[1].head, 0);
  EXPECT_THROW(score_layer(HeadPattern::PreviousToken, layer, 3, tokens), std::invalid_argument);
}

TEST(Heads, NamesRoundTrip) {
  for (HeadPattern p : kHeadPatterns) {
    HeadPattern q{};
    ASSERT_TRUE(parse_head_pattern(head_pattern_name(p), q));
    EXPECT_EQ(p, q);
  }
  HeadPattern q{};
  EXPECT_FALSE(parse_head_pattern("induction-ish", q));
}

TEST(Heads, ProbeIsTheSameHalfTwiceAndDependsOnTheSeed) {
  const auto a = repeated_random_tokens(50, 0, 50000, 1);
  const auto b = repeated_random_tokens(50, 0, 50000, 2);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 50, a.begin() + 50));
  EXPECT_NE(a, b);
  for (int t : a) EXPECT_TRUE(t >= 0 && t < 50000);
}

}  // namespace
}  // namespace mhaviz
