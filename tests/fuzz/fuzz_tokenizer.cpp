// libFuzzer target: the tokenizers. The first byte picks what the input is:
//   '{':  the whole input is a tokenizer.json for from_tokenizer_json_string(). Either a
//         LoadError of one line, or a tokenizer whose encode() of fixed texts never throws,
//         gives ids below vocab_size() that decode and display on one line;
//   even: the rest is text for encode() with a small byte-level vocabulary (decoding gives
//         the bytes back) and with a small SentencePiece-style tokenizer.json (NFC, spaces
//         to "▁", byte fallback, added tokens, a BOS template): never throws, every token
//         displays on one line;
//   odd:  vocab.json and merges.txt (split at the first NUL) for from_strings(). Either a
//         LoadError of one line, or a tokenizer whose encode() of a fixed text round-trips.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "mhaviz/tokenizer.hpp"

namespace {

[[noreturn]] void broken(const char* what) {
  __builtin_trap();
  (void)what;
}

// GPT-2's 256 byte tokens (printable Latin-1 as themselves, the rest from U+0100 on), a few
// merges, and <|endoftext|>: the same form as the test checkpoints' tokenizer.
const mhaviz::Tokenizer& small() {
  static const mhaviz::Tokenizer t = [] {
    std::string vocab = "{";
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : 256 + extra++;
      char buf[32];
      std::snprintf(buf, sizeof buf, "\"\\u%04x\": %d, ", cp, b);
      vocab += buf;
    }
    vocab += R"("\u0120t": 256, "he": 257, "\u0120the": 258, "in": 259, "<|endoftext|>": 260})";
    return mhaviz::Tokenizer::from_strings(vocab, "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\ni n\n", "fuzz");
  }();
  return t;
}

// Gemma-like: characters a, b, ▁, merges "a b" and "▁ a", the 256 byte tokens, two added
// tokens, NFC then " " -> "▁", and a template adding <s>.
const mhaviz::Tokenizer& sentencepiece_like() {
  static const mhaviz::Tokenizer t = [] {
    std::string vocab = R"({"<unk>": 0, "<s>": 1, "a": 2, "b": 3, "\u2581": 4, "ab": 5, "\u2581a": 6)";
    for (int b = 0; b < 256; ++b) {
      char buf[32];
      std::snprintf(buf, sizeof buf, ", \"<0x%02X>\": %d", b, 7 + b);
      vocab += buf;
    }
    vocab += "}";
    const std::string json = R"({"version": "1.0", "added_tokens": [
      {"id": 1, "content": "<s>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
      {"id": 263, "content": "<x>", "special": false, "normalized": true, "lstrip": true, "rstrip": true, "single_word": true}],
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
      "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\p{N}"}, "behavior": "Isolated", "invert": false},
      "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                         "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
      "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, "vocab": )" +
                             vocab + R"(, "merges": ["a b", "\u2581 a"]}})";
    return mhaviz::Tokenizer::from_tokenizer_json_string(json, "fuzz");
  }();
  return t;
}

void check_ids(const mhaviz::Tokenizer& t, std::string_view text) {
  for (const bool special : {true, false})
    for (const int id : t.encode(text, special)) {
      if (id < 0 || id >= t.vocab_size()) broken("id");
      (void)t.decode_token(id);
      const std::string shown = t.display_token(id);
      if (shown.empty() || shown.find('\n') != std::string::npos) broken("display");
    }
}

void check_round_trip(const mhaviz::Tokenizer& t, std::string_view text) {
  const std::vector<int> ids = t.encode(text);
  if (t.decode(ids) != text) broken("round trip");
  for (const int id : ids) {
    const std::string shown = t.display_token(id);
    if (shown.empty() || shown.find('\n') != std::string::npos) broken("display");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == '{') {
    try {
      const auto t = mhaviz::Tokenizer::from_tokenizer_json_string(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
      check_ids(t, "Every effort moves you <|endoftext|> caf\xC3\xA9 \xF0\x9F\x9A\x80 \xFF 123");
      check_ids(t, "");
    } catch (const mhaviz::LoadError& e) {
      const std::string_view msg = e.what();
      if (msg.empty() || msg.find('\n') != std::string_view::npos || msg.rfind("fuzz", 0) != 0) broken("message");
    }
    return 0;
  }
  if (data[0] % 2 == 0) {
    check_round_trip(small(), rest);
    check_ids(sentencepiece_like(), rest);
    return 0;
  }
  const std::size_t nul = rest.find('\0');
  try {
    const auto t = mhaviz::Tokenizer::from_strings(rest.substr(0, nul), nul == std::string_view::npos ? "" : rest.substr(nul + 1), "fuzz");
    check_round_trip(t, "Every effort moves you <|endoftext|> caf\xC3\xA9 \xF0\x9F\x9A\x80 \xFF");
  } catch (const mhaviz::LoadError& e) {
    const std::string_view msg = e.what();
    if (msg.empty() || msg.find('\n') != std::string_view::npos || msg.rfind("fuzz ", 0) != 0) broken("message");
  }
  return 0;
}
