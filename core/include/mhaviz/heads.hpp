// Head detectors: how much a trained head's attention follows one of the patterns the
// interpretability literature names. Each score is a mean of attention weights, so it lies
// in [0, 1]: 1 when every qualifying row puts all its weight where the pattern says.
//
//   previous-token   row i (i >= 1): weight on key i - 1
//   first-token      row i (i >= 1): weight on key 0 (the "attention sink"); row 0 has
//                    nowhere else to look and is left out
//   duplicate-token  row i whose token occurred before: summed weight on the earlier
//                    keys j < i holding the same token
//   induction        row i: summed weight on keys j (1 <= j < i) whose previous token
//                    equals token i — "the token that followed this one last time";
//                    measured on a repeated random sequence (repeated_random_tokens),
//                    where every row of the second half qualifies
//
// A row qualifies when the pattern names at least one key for it; a head with no
// qualifying row has no score (std::nullopt), e.g. duplicate-token on text without a
// repeated token.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace mhaviz {

enum class HeadPattern { PreviousToken, FirstToken, DuplicateToken, Induction };
inline constexpr int kHeadPatternCount = 4;
inline constexpr HeadPattern kHeadPatterns[kHeadPatternCount] = {HeadPattern::PreviousToken, HeadPattern::FirstToken,
                                                                 HeadPattern::DuplicateToken, HeadPattern::Induction};

std::string_view head_pattern_name(HeadPattern p);  // "previous-token", "first-token", ...
bool parse_head_pattern(std::string_view name, HeadPattern& out);

// weights: one head's (T, T) attention weights, row-major (row = query, column = key);
// tokens: the T token ids. Returns the mean over qualifying rows, or nullopt.
std::optional<float> score_head(HeadPattern p, std::span<const float> weights, std::span<const int> tokens);

// weights: one layer's (n_head, T, T) attention weights. Returns n_head scores.
std::vector<std::optional<float>> score_layer(HeadPattern p, std::span<const float> weights, int n_head,
                                              std::span<const int> tokens);

// The induction probe: `prefix` (e.g. <|endoftext|>; none when negative) followed by n
// random ids in [lo, hi) drawn from the seed, then the same n ids again: 2n (+1) tokens.
std::vector<int> repeated_random_tokens(int n, int lo, int hi, std::uint64_t seed, int prefix = -1);

struct ScoredHead {
  int layer = 0, head = 0;
  float score = 0;
};
// scores[layer][head]; the k highest scores, highest first (ties: lower layer, then head).
std::vector<ScoredHead> top_heads(const std::vector<std::vector<std::optional<float>>>& scores, int k);

}  // namespace mhaviz
