// Which keys each query of an attention may see: one description that every attention in
// the core applies (the chapter-3 module, the trained GPTs, their loop oracles) and that
// every reader asks. A hidden cell is never inferred from the value a tensor holds there
// (weights are 0 and kept raw scores are the plain q·kᵀ in hidden cells alike).
//
// Positions are absolute: query i and key j are positions in the sequence, whichever rows of
// a buffer hold them (rows [P, T) of a prefix-cached sequence are positions P … T − 1).
// The rules compose: a key is visible when every rule that is on lets it through.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace mhaviz {

// Keys [begin, end) by position; empty when begin >= end.
struct KeyRange {
  std::int64_t begin = 0, end = 0;
  bool empty() const { return begin >= end; }
  std::int64_t size() const { return empty() ? 0 : end - begin; }
};

// Keys hidden from every query of their sequence (Hugging Face's attention_mask == 0).
struct KeyPadding {
  std::span<const std::uint8_t> hidden;  // (batch, positions) row-major; nonzero: padding
  std::int64_t positions = 0;            // keys per batch element in `hidden`
  bool empty() const { return hidden.empty(); }
  // Key j (a position < positions) of batch element b is padding.
  bool operator()(int b, std::int64_t j) const {
    return !hidden.empty() && hidden[static_cast<std::size_t>(static_cast<std::int64_t>(b) * positions + j)] != 0;
  }
};

// Why a cell is hidden (padding aside): what a picture tells apart.
enum class MaskRule { Visible, Causal, Window };

struct AttentionMask {
  bool causal = false;  // key j visible to query i only when j <= i
  // Sliding window: W >= 1 shows key j to query i only when 0 <= i − j < W (the window
  // looks back from the query, so it is causal by itself); 0: no window.
  int window = 0;
  KeyPadding padding;

  // By causal and window alone (padding is per batch element: see hides).
  bool visible(std::int64_t i, std::int64_t j) const {
    if ((causal || window > 0) && j > i) return false;
    return window <= 0 || i - j < window;
  }
  // A key after the query is hidden by the causal rule (the window looks back only, so it
  // hides those too: Causal names them either way); one further back than W - 1 by the window.
  MaskRule hidden_by(std::int64_t i, std::int64_t j) const {
    if ((causal || window > 0) && j > i) return MaskRule::Causal;
    return window > 0 && i - j >= window ? MaskRule::Window : MaskRule::Visible;
  }
  bool hides(int b, std::int64_t i, std::int64_t j) const { return !visible(i, j) || padding(b, j); }
  // The keys of `present` that causal and window leave to query i: one range, since both
  // rules cut the row at its ends. Padding inside it is still to be asked. Both ends grow
  // with i, so a block of queries [i0, i1] needs keys [keys(i0).begin, keys(i1).end).
  KeyRange keys(std::int64_t i, KeyRange present) const {
    KeyRange r = present;
    if (causal || window > 0) r.end = std::min(r.end, i + 1);
    if (window > 0) r.begin = std::max(r.begin, i - window + 1);
    return r;
  }
};

}  // namespace mhaviz
