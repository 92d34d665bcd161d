// The tokenizer's internals, shared by tokenizer.cpp (the public class, GPT-2's vocab.json +
// merges.txt), tokenizer_json.cpp (Hugging Face's tokenizer.json), tokenizer_steps.cpp
// (normalizers, pre-tokenizers, added tokens) and tokenizer_bpe.cpp (the BPE model).
//
// One pipeline, in the order of Hugging Face's fast tokenizers (tokenizers/src/tokenizer):
//   1. added tokens whose `normalized` is false are cut out of the raw text;
//   2. each remaining piece is normalized (NFC, Replace, ...), then added tokens whose
//      `normalized` is true are cut out of it;
//   3. the pre-tokenizers split each remaining piece into words (regex splits, byte-level);
//   4. the BPE model turns each word into ids;
//   5. the post-processor's template adds its special tokens around the result.
// GPT-2's vocab.json + merges.txt is the same pipeline: "<|endoftext|>" as the one added
// token, the byte-level pre-tokenizer with GPT-2's pattern, and BPE.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mhaviz/utf8.hpp"

namespace mhaviz::tok {

// Throws LoadError "source: problem" on one line (at most 400 characters).
[[noreturn]] void fail(std::string_view source, const std::string& problem);

// [SECTION] UTF-8 and GPT-2's byte map
// Decodes one UTF-8 character at s[i]; returns its length (0: not a valid character there).
int utf8_char(std::string_view s, std::size_t i, std::uint32_t& cp);
using mhaviz::append_utf8;
// GPT-2's bytes_to_unicode: byte -> its printable code point as UTF-8 ("Ġ" for the space).
const std::array<std::string, 256>& byte_chars();
// A byte-level token ("Ġworld") back to its raw bytes; nullopt when a character is not one
// of the byte map's 256.
std::optional<std::string> byte_level_bytes(std::string_view token);
// "<0x0A>" -> 0x0A (the byte-fallback tokens, spelled as Hugging Face's `format!("<{b:#04X}>")`).
std::optional<unsigned char> byte_fallback_byte(std::string_view token);

// [SECTION] Unicode as the reference tokenizers see it (tokenizer_unicode.cpp)
// The reference tokenizers run in node, whose ICU has a newer Unicode than Debian 12's PCRE2
// (Unicode 14) and utf8proc (15): letters, digits, marks and symbols assigned since (CJK
// extensions, new scripts, Egyptian hieroglyphs) are unassigned to those, and a regex's \p{L}
// left them out of words that node's took them into. unicode_newer.inc (scripts/unicode_delta.sh)
// lists every code point whose category differs.
// cp's general category as node has it.
utf8proc_category_t general_category(std::uint32_t cp);
// text with every code point PCRE2 would class otherwise than node replaced by a stand-in of
// node's category and the same UTF-8 length (invalid bytes kept): a regex's spans on the result
// are the reference's spans on text. Empty when text holds none (almost always).
std::string with_stand_ins(std::string_view text);
// NFC (compose), NFD, NFKC (compose, compat) or NFKD of valid UTF-8 text as node gives it, where
// text holds a code point whose combining class or decompositions utf8proc does not know (the
// marks and composites of scripts Unicode added since); nullopt where it holds none, and
// utf8proc's result is node's.
std::optional<std::string> normalize_newer(std::string_view text, bool compose, bool compat);

// [SECTION] patterns
using Span = std::pair<std::size_t, std::size_t>;  // [begin, end) byte offsets

// A literal string or a PCRE2 regex (Unicode classes; invalid UTF-8 is never matched).
class Pattern {
 public:
  Pattern() = default;
  static Pattern literal(std::string text);
  // Throws LoadError naming `source` when the regex does not compile.
  static Pattern regex(std::string_view re, std::string_view source);
  // Non-overlapping matches, leftmost first, empty ones included (but none at the end of the
  // match before), as tokenizers finds them.
  std::vector<Span> find(std::string_view text) const;

 private:
  std::string literal_;
  std::shared_ptr<pcre2_code> re_;
};

// [SECTION] normalizers and pre-tokenizers
struct Normalizer {
  enum class Kind { NFC, NFD, NFKC, NFKD, Replace, Prepend };
  Kind kind = Kind::NFC;
  Pattern pattern;      // Replace
  std::string content;  // Replace: the replacement; Prepend: the prefix
};
// Applies the steps in order. Unicode normalization leaves invalid UTF-8 bytes as they are
// and normalizes the valid runs between them.
std::string normalize(const std::vector<Normalizer>& steps, std::string text);

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct PreTokenizer {
  enum class Kind { Split, ByteLevel, Digits };
  Kind kind = Kind::Split;
  Pattern pattern;                                   // Split; ByteLevel with use_regex: GPT-2's
  SplitBehavior behavior = SplitBehavior::Isolated;  // Split
  bool invert = false;                               // Split
  bool add_prefix_space = false;                     // ByteLevel
  bool use_regex = false;                            // ByteLevel
  bool individual_digits = false;                    // Digits
};
// GPT-2's pre-tokenizer pattern (also ByteLevel's with use_regex).
Pattern gpt2_pattern();
// Splits `text` into words through the steps in order (each step splits every piece of the
// previous one; empty pieces are dropped). A ByteLevel step maps every byte to byte_chars().
std::vector<std::string> pre_tokenize(const std::vector<PreTokenizer>& steps, std::string text);

// [SECTION] added tokens
struct AddedToken {
  std::string content;
  int id = 0;
  bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

// Finds added tokens in text as Hugging Face's AddedVocabulary does: leftmost-longest
// matches of their contents (a trie), then single_word / lstrip / rstrip.
class AddedMatcher {
 public:
  AddedMatcher() = default;
  // `patterns[k]` is what token k is matched by (its content, or its normalized content).
  AddedMatcher(const std::vector<AddedToken>* tokens, std::vector<std::pair<std::string, int>> patterns);
  bool empty() const { return nodes_.size() <= 1; }
  // Pieces covering text in order: (index into tokens, span) for a token, (-1, span) between.
  std::vector<std::pair<int, Span>> split(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int>> next;  // sorted by byte
    int token = -1;                                   // index into tokens_ ending here
  };
  int child(int node, unsigned char c) const;
  const std::vector<AddedToken>* tokens_ = nullptr;
  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_{};
};

// [SECTION] the BPE model
struct Bpe {
  std::unordered_map<std::string, int> vocab;                     // token -> id
  std::unordered_map<std::uint64_t, std::pair<int, int>> merges;  // (a << 32 | b) -> (rank, id of a+b)
  int unk = -1;                                                   // id of unk_token, -1: none
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::array<int, 256> byte_ids{};  // id of "<0xNN>", -1 when absent

  // Appends the ids of one pre-tokenized word (Hugging Face's BPE::tokenize: characters
  // looked up, unknown ones by byte fallback or unk, then Word::merge_all).
  void tokenize(std::string_view word, std::vector<int>& out) const;
};

}  // namespace mhaviz::tok

// [SECTION] the tokenizer's state
#include <mutex>
#include <nlohmann/json_fwd.hpp>

#include "mhaviz/tokenizer.hpp"

namespace mhaviz {

struct Tokenizer::Impl {
  tok::Bpe bpe;
  std::vector<std::string> token_of;  // id -> the token as the vocabulary spells it ("" for an unused id)
  std::vector<std::string> bytes_of;  // id -> its decoded bytes
  std::vector<tok::AddedToken> added;
  std::vector<unsigned char> added_kind;          // id -> 0 model token, 1 added token, 2 special added token
  tok::AddedMatcher added_raw, added_normalized;  // tokens matched before / after normalization
  std::vector<tok::Normalizer> normalizers;
  std::vector<tok::PreTokenizer> pre_tokenizers;
  std::vector<int> prefix, suffix;  // what the post-processor's template puts around the text
  bool byte_level = false;          // tokens are GPT-2 byte-map characters
  // A vocabulary of `mhaviz train` (tokenizer_small.cpp): characters looked up one by one in
  // bpe.vocab, or ids written as numbers; no merges, normalizers or pre-tokenizers.
  enum class Small : unsigned char { No, Characters, Ids } small = Small::No;
  // Ids: why a model's tokens are plain ids, said when a text is refused.
  std::string ids_reason;
  int eot = -1;  // "<|endoftext|>", -1 when absent
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int>> cache;  // pre-tokenized word -> ids

  // [SECTION] building (tokenizer.cpp); every problem is a LoadError naming `source`
  // vocab: an object of token -> id.
  void set_vocab(const nlohmann::json& vocab, std::string_view source);
  // Ranks merges in order; a pair given twice keeps its first rank (GPT-2's merges.txt) or
  // its last (tokenizers builds a map from the list).
  void set_merges(const std::vector<std::pair<std::string, std::string>>& merges, std::string_view source,
                  bool first_rank_wins);
  // Byte-level vocabularies must hold every one of the 256 byte characters.
  void check_byte_level(std::string_view source) const;
  // Added tokens, ids, matchers and each token's decoded bytes; `decode_byte_level`: tokens
  // are byte-map characters, `decode_replace`: (from, to) replacements ("▁" -> " "),
  // `decode_byte_fallback`: "<0xNN>" is byte NN.
  void finish(bool decode_byte_level, const std::vector<std::pair<std::string, std::string>>& decode_replace,
              bool decode_byte_fallback);

  void encode(std::string_view text, bool add_special_tokens, std::vector<int>& out) const;
  // The Small vocabularies' encode and refusal (tokenizer_small.cpp): an unknown character or
  // word is id -1 in encode, and named by refuse_small.
  void encode_small(std::string_view text, std::vector<int>& out) const;
  std::string refuse_small(std::string_view text) const;
  void encode_word(const std::string& word, std::vector<int>& out) const;
};

// tokenizer_json.cpp: the state of a Hugging Face tokenizer.json, parsed.
std::unique_ptr<Tokenizer::Impl> parse_tokenizer_json(const nlohmann::json& j, std::string_view source);

}  // namespace mhaviz
