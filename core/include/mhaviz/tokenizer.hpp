// BPE tokenizers: GPT-2's (vocab.json + merges.txt) and Hugging Face tokenizer.json files of
// BPE models as Qwen2/Qwen3, Llama 3 and Gemma 3 ship them (NFC and Replace normalizers,
// regex splits, byte-level or SentencePiece-style vocabularies with byte fallback, added and
// special tokens, the post-processor's template). Ids equal Hugging Face's fast tokenizers'
// on any UTF-8 text ("Hello world" -> GPT-2 [15496, 995]; "Your journey starts with one
// step" -> Qwen3 [7771, 11618, 8471, 448, 825, 3019]). Other kinds (WordPiece, Unigram) and
// steps not listed are a LoadError naming what is supported.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
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
  // A Hugging Face tokenizer.json of a BPE model. A file holding nothing but model.vocab and
  // model.merges is read as GPT-2's byte-level BPE.
  static Tokenizer from_tokenizer_json(const std::filesystem::path& tokenizer_json);
  // From text already in memory (tests, fuzzing); `source` names it in errors.
  static Tokenizer from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                std::string_view source = "vocab");
  static Tokenizer from_tokenizer_json_string(std::string_view text, std::string_view source = "tokenizer.json");
  // In a model folder: tokenizer.json if present, else vocab.json + merges.txt; a model
  // `mhaviz train` made without tokenizer files has its vocabulary in config.json: its
  // characters ("char_vocab"), else its tokens are plain ids (a synthetic task). A folder with
  // none of these files is refused, unless ids_without_files > 0 (a model folder saved or
  // copied without them): its tokens are then the ids 0 .. ids_without_files − 1, and a text
  // is refused naming the files that are missing.
  static Tokenizer from_folder(const std::filesystem::path& folder, int ids_without_files = 0);
  // The vocabulary of a model trained on a text by characters: id i is chars[i], one UTF-8
  // character each, all different. Throws LoadError naming `source`.
  static Tokenizer from_characters(const std::vector<std::string>& chars, std::string_view source);
  // The tokens of a synthetic task: ids 0 .. vocab_size − 1, written as numbers separated by
  // spaces ("5 17 3") and shown as their numbers. `reason` ends the refusal of other text.
  static Tokenizer of_ids(int vocab_size, std::string_view reason = "it was trained on a synthetic task");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of UTF-8 text. Added tokens in the text ("<|endoftext|>", "<|im_start|>") are
  // their ids; with `add_special_tokens` the post-processor's tokens are put around the text
  // (Llama 3.1's <|begin_of_text|>, Gemma 3's <bos>; GPT-2, Qwen and Llama 3 add none).
  // Invalid UTF-8 is encoded byte by byte by byte-level vocabularies, as byte tokens with
  // byte fallback; never an error.
  std::vector<int> encode(std::string_view text, bool add_special_tokens = true) const;
  // Why this tokenizer cannot encode text, in a few words ("'é' is not one of this model's
  // 65 characters"); empty when it can. The byte-level and byte-fallback BPEs encode any text;
  // the characters and ids of a model trained by `mhaviz train` do not.
  std::string refuse(std::string_view text) const;
  // The token's bytes as UTF-8 text (" world"; a token holding part of a multi-byte
  // character gives those raw bytes). Throws std::out_of_range for an unknown id.
  std::string decode_token(int id) const;
  // The tokens' bytes one after another; an id naming no token adds nothing (as Hugging Face's
  // decode leaves it out).
  std::string decode(const std::vector<int>& ids) const;
  // For display, on one line: byte-level vocabularies show a leading space as "␣";
  // SentencePiece-style ones show the token as spelled ("▁world") and a byte token as its
  // byte ("\n", "\xE6"); whitespace and control bytes are escaped ("\n"), bytes that are not
  // whole UTF-8 characters shown as "\xNN"; added tokens as their text.
  std::string display_token(int id) const;

  int vocab_size() const;  // 1 + the largest id of the vocabulary and the added tokens
  // Whether id names a token: tokenizer.json may leave ids out below vocab_size(), and a model's
  // vocabulary may be larger than its tokenizer's (padded rows), so a predicted id may name none.
  bool has_token(int id) const;
  int eot_id() const;                          // id of "<|endoftext|>", -1 when the vocabulary has none
  bool is_added(int id) const;                 // an added token (matched in the text before anything else)
  bool is_special(int id) const;               // an added token marked special
  int token_id(std::string_view token) const;  // id of a token or added token as spelled, -1 when absent
  // What encode(text, true) puts before and after the text's ids.
  const std::vector<int>& special_prefix() const;
  const std::vector<int>& special_suffix() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  // config.json of a model `mhaviz train` wrote ("attn_only" is its mark): its characters or
  // its ids; nullopt for any other config.json.
  static std::optional<Tokenizer> from_trained_config(const std::filesystem::path& config_json);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mhaviz
