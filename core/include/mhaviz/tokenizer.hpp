// GPT-2's byte-level BPE tokenizer: the pre-tokenizer pattern (PCRE2, Unicode classes and
// a lookahead), bytes mapped to printable code points, then the ranked merges. Ids equal
// GPT-2's on any UTF-8 text ("Hello world" -> [15496, 995]).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/load_error.hpp"

namespace mhaviz {

class Tokenizer {
 public:
  // vocab.json (token string -> id) and merges.txt (a "#version" line, then "a b" per
  // merge, highest priority first). Throws LoadError naming the file and the problem.
  static Tokenizer from_files(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt);
  // A Hugging Face tokenizer.json holding model.vocab and model.merges of a BPE model.
  static Tokenizer from_tokenizer_json(const std::filesystem::path& tokenizer_json);
  // From text already in memory (tests, fuzzing); `source` names it in errors.
  static Tokenizer from_strings(std::string_view vocab_json, std::string_view merges_txt, std::string_view source = "vocab");
  // In a model folder: tokenizer.json if present, else vocab.json + merges.txt.
  static Tokenizer from_folder(const std::filesystem::path& folder);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of UTF-8 text; "<|endoftext|>" in the text is the special token (50256 in
  // GPT-2). Invalid UTF-8 is encoded byte by byte as GPT-2 does, never an error.
  std::vector<int> encode(std::string_view text) const;
  // The token's bytes as UTF-8 text (" world"; a token holding part of a multi-byte
  // character gives those raw bytes). Throws std::out_of_range for an unknown id.
  std::string decode_token(int id) const;
  std::string decode(const std::vector<int>& ids) const;
  // For display: the leading space shown as "␣" and other whitespace and control bytes
  // escaped ("\n"), bytes that are not whole UTF-8 characters as "\xNN".
  std::string display_token(int id) const;

  int vocab_size() const;
  int eot_id() const;  // id of "<|endoftext|>", -1 when the vocabulary has none

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mhaviz
