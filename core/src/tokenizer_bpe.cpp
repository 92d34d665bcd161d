// The BPE model of tokenizer_impl.hpp, step for step as the Hugging Face tokenizers library's
// BPE::merge_word and Word::merge_all (tokenizers/src/models/bpe/{model,word}.rs):
//   1. each character of the word is looked up in the vocabulary; one that is not there
//      becomes its bytes' "<0xNN>" tokens (byte_fallback, when all of them exist), else the
//      unknown token (consecutive ones fused into one with fuse_unk), else nothing;
//   2. every adjacent pair that a merge names goes into a min-heap ordered by (rank,
//      position); the top is merged unless it has expired (the symbols at its position no
//      longer make that merge's token), and the pairs the new symbol forms with its
//      neighbours go in.
// For a vocabulary learned by BPE this gives the same ids as GPT-2's loop (the lowest-ranked
// pair merged everywhere, left to right), since no merge involving a token ranks before the
// merge that made it.
#include <queue>

#include "tokenizer_impl.hpp"

namespace mhaviz::tok {

namespace {

struct Symbol {
  int id;
  int prev, next;  // neighbours' positions, -1 at the ends
  bool gone;       // merged into its left neighbour
};

struct Candidate {
  int rank;
  int pos;
  int new_id;
  // std::priority_queue puts the greatest on top: "greater" is lower rank, then lower position.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

std::uint64_t pair_key(int a, int b) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32 | static_cast<std::uint32_t>(b);
}

}  // namespace

void Bpe::tokenize(std::string_view word, std::vector<int>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {  // a word that is a token is that token, whatever the merges would make
    if (const auto it = vocab.find(std::string(word)); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // 1. Characters to symbols.
  std::vector<int> ids;
  ids.reserve(word.size());
  bool pending_unk = false;
  std::string ch;
  for (std::size_t i = 0; i < word.size();) {
    std::uint32_t cp = 0;
    const int valid = utf8_char(word, i, cp);
    const std::size_t len =
        valid > 0 ? static_cast<std::size_t>(valid) : 1;  // an invalid byte is a character of its own
    ch.assign(word.substr(i, len));
    i += len;
    if (const auto it = vocab.find(ch); it != vocab.end()) {
      if (pending_unk) ids.push_back(unk);
      pending_unk = false;
      ids.push_back(it->second);
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (const char c : ch) all = all && byte_ids[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        // As tokenizers does, an unknown token waiting to be fused stays waiting.
        for (const char c : ch) ids.push_back(byte_ids[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk >= 0) {
      if (pending_unk && !fuse_unk) ids.push_back(unk);
      pending_unk = true;
    }
  }
  if (pending_unk) ids.push_back(unk);

  // 2. Merges, lowest rank first.
  std::vector<Symbol> sym(ids.size());
  const int n = static_cast<int>(ids.size());
  std::priority_queue<Candidate> queue;
  for (int i = 0; i < n; ++i) {
    sym[static_cast<std::size_t>(i)] = {ids[static_cast<std::size_t>(i)], i - 1, i + 1 < n ? i + 1 : -1, false};
    if (i + 1 < n)
      if (const auto it = merges.find(pair_key(ids[static_cast<std::size_t>(i)], ids[static_cast<std::size_t>(i) + 1]));
          it != merges.end())
        queue.push({it->second.first, i, it->second.second});
  }
  auto push_pair = [&](int left) {
    const Symbol& a = sym[static_cast<std::size_t>(left)];
    if (a.next < 0) return;
    if (const auto it = merges.find(pair_key(a.id, sym[static_cast<std::size_t>(a.next)].id)); it != merges.end())
      queue.push({it->second.first, left, it->second.second});
  };
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& s = sym[static_cast<std::size_t>(top.pos)];
    if (s.gone || s.next < 0) continue;
    Symbol& right = sym[static_cast<std::size_t>(s.next)];
    const auto it = merges.find(pair_key(s.id, right.id));
    if (it == merges.end() || it->second.second != top.new_id) continue;  // expired
    s.id = top.new_id;
    right.gone = true;
    s.next = right.next;
    if (s.next >= 0) sym[static_cast<std::size_t>(s.next)].prev = top.pos;
    if (s.prev >= 0) push_pair(s.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : sym)
    if (!s.gone) out.push_back(s.id);
}

}  // namespace mhaviz::tok
