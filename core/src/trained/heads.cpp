// Head detectors: every pattern is "which keys does row i's pattern name", then the mean
// of the weight on those keys over the rows that name at least one (see heads.hpp).
#include "mhaviz/heads.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

namespace mhaviz {
namespace {

struct PatternName {
  HeadPattern pattern;
  std::string_view name;
};
constexpr PatternName kNames[kHeadPatternCount] = {{HeadPattern::PreviousToken, "previous-token"},
                                                   {HeadPattern::FirstToken, "first-token"},
                                                   {HeadPattern::DuplicateToken, "duplicate-token"},
                                                   {HeadPattern::Induction, "induction"}};

// Does pattern p name key j for query i (j <= i)?
bool names_key(HeadPattern p, std::span<const int> tokens, int i, int j) {
  switch (p) {
    case HeadPattern::PreviousToken:
      return j == i - 1;
    case HeadPattern::FirstToken:
      return i >= 1 && j == 0;
    case HeadPattern::DuplicateToken:
      return j < i && tokens[static_cast<std::size_t>(j)] == tokens[static_cast<std::size_t>(i)];
    case HeadPattern::Induction:
      return j >= 1 && j < i && tokens[static_cast<std::size_t>(j - 1)] == tokens[static_cast<std::size_t>(i)];
  }
  return false;
}

}  // namespace

std::string_view head_pattern_name(HeadPattern p) {
  for (const PatternName& n : kNames)
    if (n.pattern == p) return n.name;
  return "?";
}

bool parse_head_pattern(std::string_view name, HeadPattern& out) {
  for (const PatternName& n : kNames) {
    if (n.name == name) {
      out = n.pattern;
      return true;
    }
  }
  return false;
}

// weights (T, T), tokens (T) -> mean over qualifying rows of the weight on named keys.
std::optional<float> score_head(HeadPattern p, std::span<const float> weights, std::span<const int> tokens) {
  const std::size_t T = tokens.size();
  if (weights.size() != T * T) throw std::invalid_argument("score_head: weights hold " + std::to_string(weights.size()) +
                                                           " values, not " + std::to_string(T) + "^2");
  double total = 0;
  int rows = 0;
  for (int i = 0; i < static_cast<int>(T); ++i) {
    double on_named = 0;
    bool qualifies = false;
    for (int j = 0; j <= i; ++j) {
      if (!names_key(p, tokens, i, j)) continue;
      qualifies = true;
      on_named += weights[static_cast<std::size_t>(i) * T + static_cast<std::size_t>(j)];
    }
    if (!qualifies) continue;
    total += on_named;
    ++rows;
  }
  if (rows == 0) return std::nullopt;
  return static_cast<float>(total / rows);
}

// weights (n_head, T, T) -> n_head scores.
std::vector<std::optional<float>> score_layer(HeadPattern p, std::span<const float> weights, int n_head,
                                              std::span<const int> tokens) {
  const std::size_t TT = tokens.size() * tokens.size();
  if (n_head < 0 || weights.size() != TT * static_cast<std::size_t>(n_head))
    throw std::invalid_argument("score_layer: weights do not hold n_head (T, T) matrices");
  std::vector<std::optional<float>> out;
  out.reserve(static_cast<std::size_t>(n_head));
  for (int h = 0; h < n_head; ++h) out.push_back(score_head(p, weights.subspan(static_cast<std::size_t>(h) * TT, TT), tokens));
  return out;
}

std::vector<int> repeated_random_tokens(int n, int lo, int hi, std::uint64_t seed, int prefix) {
  if (n < 0 || hi <= lo) throw std::invalid_argument("repeated_random_tokens: empty range or negative length");
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> id(lo, hi - 1);
  std::vector<int> half(static_cast<std::size_t>(n));
  for (int& t : half) t = id(gen);
  std::vector<int> out;
  if (prefix >= 0) out.push_back(prefix);
  out.insert(out.end(), half.begin(), half.end());
  out.insert(out.end(), half.begin(), half.end());
  return out;
}

std::vector<ScoredHead> top_heads(const std::vector<std::vector<std::optional<float>>>& scores, int k) {
  std::vector<ScoredHead> all;
  for (int l = 0; l < static_cast<int>(scores.size()); ++l)
    for (int h = 0; h < static_cast<int>(scores[static_cast<std::size_t>(l)].size()); ++h)
      if (const auto& s = scores[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)]) all.push_back({l, h, *s});
  // Stable: equal scores keep (layer, head) order.
  std::stable_sort(all.begin(), all.end(), [](const ScoredHead& a, const ScoredHead& b) { return a.score > b.score; });
  if (k >= 0 && static_cast<std::size_t>(k) < all.size()) all.resize(static_cast<std::size_t>(k));
  return all;
}

}  // namespace mhaviz
