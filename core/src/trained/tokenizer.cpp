// GPT-2's byte-level BPE (tokenizer.hpp). Steps of encode():
//   1. split the text on "<|endoftext|>" (the special token, never merged with its neighbours);
//   2. split each part with GPT-2's pre-tokenizer pattern (PCRE2, Unicode classes);
//   3. map each piece's bytes to GPT-2's printable code points (bytes_to_unicode);
//   4. merge adjacent symbols, lowest merge rank first, until no ranked pair is left;
//   5. look each symbol up in the vocabulary.
// Loading checks that every byte and every merge result is in the vocabulary, so step 5
// cannot fail and encode() never throws on any input.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "mhaviz/tokenizer.hpp"

#include <pcre2.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace mhaviz {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view kEndOfText = "<|endoftext|>";
// GPT-2's pattern: contractions, letters, numbers, other symbols (each with an optional
// leading space), then whitespace not followed by a non-space, then any whitespace.
constexpr std::string_view kPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::uintmax_t kMaxFileBytes = 256u << 20;  // tokenizer.json of large vocabularies stays far below
constexpr std::size_t kCacheLimit = 1 << 16;           // words remembered before the cache starts afresh

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68
// bytes (controls, space, 0x7F-0xA0, 0xAD) for U+0100 onwards in byte order.
struct ByteMap {
  std::array<std::string, 256> to_unicode;             // byte -> its code point as UTF-8
  std::unordered_map<std::uint32_t, unsigned char> from;  // code point -> byte
  ByteMap() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const auto cp = static_cast<std::uint32_t>(printable ? b : 256 + next++);
      append_utf8(to_unicode[static_cast<std::size_t>(b)], cp);
      from[cp] = static_cast<unsigned char>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// Decodes one UTF-8 character at s[i]; returns its length (0: not a valid character).
int utf8_char(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  int len = c0 < 0x80 ? 1 : (c0 >> 5) == 0x6 ? 2 : (c0 >> 4) == 0xE ? 3 : (c0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + static_cast<std::size_t>(len) > s.size()) return 0;
  cp = len == 1 ? c0 : len == 2 ? (c0 & 0x1Fu) : len == 3 ? (c0 & 0x0Fu) : (c0 & 0x07u);
  for (int k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// A vocabulary token (byte-mapped code points) back to its raw bytes; nullopt when a code
// point is not one of the 256 of the byte map.
std::optional<std::string> token_bytes(std::string_view token) {
  std::string out;
  for (std::size_t i = 0; i < token.size();) {
    std::uint32_t cp = 0;
    const int len = utf8_char(token, i, cp);
    if (len == 0) return std::nullopt;
    const auto it = byte_map().from.find(cp);
    if (it == byte_map().from.end()) return std::nullopt;
    out += static_cast<char>(it->second);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

[[noreturn]] void fail(std::string_view source, const std::string& problem) {
  throw LoadError(one_line(std::string(source) + ": " + problem));
}

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path.string(), "does not exist");
  if (!fs::is_regular_file(path, ec)) fail(path.string(), "is not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) fail(path.string(), "cannot read its size (" + ec.message() + ")");
  if (size > kMaxFileBytes) fail(path.string(), std::to_string(size) + " bytes is over the limit of " + std::to_string(kMaxFileBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), "cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path.string(), "read error");
  return ss.str();
}

json parse_json(std::string_view text, std::string_view source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    std::string what = e.what();
    const auto pos = what.find("] ");
    fail(source, "not valid JSON (" + (pos == std::string::npos ? what : what.substr(pos + 2)) + ")");
  }
}

// "a b" of merges.txt, or ["a", "b"] of a newer tokenizer.json.
using Merge = std::pair<std::string, std::string>;

std::vector<Merge> parse_merges_txt(std::string_view text, std::string_view source) {
  std::vector<Merge> merges;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() || line.find(' ', sp + 1) != std::string_view::npos)
      fail(source, "line " + std::to_string(line_no) + " \"" + std::string(line.substr(0, 40)) + "\" is not two tokens separated by one space");
    merges.emplace_back(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
  }
  if (merges.empty()) fail(source, "holds no merges");
  return merges;
}

}  // namespace

// [SECTION] the tokenizer's state
struct Tokenizer::Impl {
  std::unordered_map<std::string, int> encoder;       // byte-mapped token -> id
  std::vector<std::string> bytes_of;                  // id -> raw bytes ("" for an unused id)
  std::unordered_map<std::string, int> ranks;         // "a b" -> merge rank
  int eot = -1;
  pcre2_code* pattern = nullptr;
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int>> cache;  // pre-tokenized piece -> ids

  ~Impl() { pcre2_code_free(pattern); }

  // Builds the state from a vocabulary object and merges; every problem names
  // `vocab_source` or `merges_source`.
  static std::unique_ptr<Impl> build(const json& vocab, std::string_view vocab_source, const std::vector<Merge>& merges,
                                     std::string_view merges_source);
  void bpe(const std::string& piece, std::vector<int>& out) const;
  void encode_part(std::string_view text, std::vector<int>& out) const;
};

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::build(const json& vocab, std::string_view vocab_source,
                                                        const std::vector<Merge>& merges, std::string_view merges_source) {
  auto impl = std::make_unique<Tokenizer::Impl>();
  if (!vocab.is_object()) fail(vocab_source, "expected an object of token -> id");
  if (vocab.empty()) fail(vocab_source, "holds no tokens");
  int max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) fail(vocab_source, "token \"" + it.key() + "\" has id " + it.value().dump() + ", not an integer");
    const auto id = it.value().get<std::int64_t>();
    if (id < 0 || id >= 1 << 24) fail(vocab_source, "token \"" + it.key() + "\" has id " + std::to_string(id) + ", outside [0, 2^24)");
    impl->encoder.emplace(it.key(), static_cast<int>(id));
    max_id = std::max(max_id, static_cast<int>(id));
  }
  impl->bytes_of.assign(static_cast<std::size_t>(max_id) + 1, std::string());
  std::vector<bool> used(impl->bytes_of.size(), false);
  for (const auto& [token, id] : impl->encoder) {
    if (used[static_cast<std::size_t>(id)]) fail(vocab_source, "id " + std::to_string(id) + " is given to two tokens");
    used[static_cast<std::size_t>(id)] = true;
    if (token == kEndOfText) {
      impl->eot = id;
      impl->bytes_of[static_cast<std::size_t>(id)] = token;
      continue;
    }
    const auto bytes = token_bytes(token);
    // Added tokens outside the byte map (e.g. "<pad>") decode to their own text.
    impl->bytes_of[static_cast<std::size_t>(id)] = bytes ? *bytes : token;
  }
  for (int b = 0; b < 256; ++b)
    if (!impl->encoder.count(byte_map().to_unicode[static_cast<std::size_t>(b)])) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      fail(vocab_source, std::string("has no token for byte ") + hex + " (\"" + byte_map().to_unicode[static_cast<std::size_t>(b)] +
                             "\"): not a byte-level BPE vocabulary");
    }
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    for (const std::string* part : {&a, &b})
      if (!impl->encoder.count(*part)) fail(merges_source, "merge " + std::to_string(r + 1) + " \"" + a + " " + b + "\" names \"" + *part + "\", which is not in the vocabulary");
    if (!impl->encoder.count(a + b)) fail(merges_source, "merge " + std::to_string(r + 1) + " \"" + a + " " + b + "\" makes \"" + a + b + "\", which is not in the vocabulary");
    impl->ranks.emplace(a + " " + b, static_cast<int>(r));  // a repeated merge keeps its first rank
  }
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl->pattern = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern.data()), kPattern.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
  if (!impl->pattern) throw std::logic_error("tokenizer: the pre-tokenizer pattern does not compile");
  pcre2_jit_compile(impl->pattern, PCRE2_JIT_COMPLETE);  // an interpreter fallback if JIT is unavailable
  return impl;
}

// [SECTION] encoding
void Tokenizer::Impl::bpe(const std::string& piece, std::vector<int>& out) const {
  {
    std::lock_guard lock(cache_mu);
    if (const auto it = cache.find(piece); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  // Symbols: the piece's bytes as byte-map code points.
  std::vector<std::string> sym;
  sym.reserve(piece.size());
  for (const char c : piece) sym.push_back(byte_map().to_unicode[static_cast<unsigned char>(c)]);
  std::string key;
  while (sym.size() > 1) {
    int best = std::numeric_limits<int>::max();
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
      key.assign(sym[i]).append(" ").append(sym[i + 1]);
      const auto it = ranks.find(key);
      if (it != ranks.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == std::numeric_limits<int>::max()) break;
    // Merge every occurrence of that pair, left to right, as GPT-2 does.
    const std::string first = sym[at], second = sym[at + 1];
    std::vector<std::string> merged;
    merged.reserve(sym.size());
    for (std::size_t i = 0; i < sym.size();) {
      if (i + 1 < sym.size() && sym[i] == first && sym[i + 1] == second) {
        merged.push_back(first + second);
        i += 2;
      } else {
        merged.push_back(std::move(sym[i]));
        ++i;
      }
    }
    sym = std::move(merged);
  }
  std::vector<int> ids;
  ids.reserve(sym.size());
  for (const std::string& s : sym) ids.push_back(encoder.at(s));  // present: checked when loaded
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard lock(cache_mu);
  if (cache.size() >= kCacheLimit) cache.clear();
  cache.emplace(piece, std::move(ids));
}

void Tokenizer::Impl::encode_part(std::string_view text, std::vector<int>& out) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(pattern, nullptr);
  if (!md) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(pattern, subject, text.size(), pos, 0, md, nullptr);
    // Bytes no alternative matches (invalid UTF-8: PCRE2_MATCH_INVALID_UTF never matches
    // across them) form a piece of their own, so every byte is encoded and decode() gives
    // the text back.
    const std::size_t start = rc >= 0 ? pcre2_get_ovector_pointer(md)[0] : text.size();
    const std::size_t end = rc >= 0 ? pcre2_get_ovector_pointer(md)[1] : text.size();
    if (start > pos) bpe(std::string(text.substr(pos, start - pos)), out);
    if (rc < 0) break;
    bpe(std::string(text.substr(start, end - start)), out);
    pos = end > start ? end : end + 1;  // the pattern never matches empty; guard all the same
  }
  pcre2_match_data_free(md);
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t hit = impl_->eot >= 0 ? text.find(kEndOfText, pos) : std::string_view::npos;
    const std::size_t end = hit == std::string_view::npos ? text.size() : hit;
    if (end > pos) impl_->encode_part(text.substr(pos, end - pos), out);
    if (hit == std::string_view::npos) break;
    out.push_back(impl_->eot);
    pos = hit + kEndOfText.size();
  }
  return out;
}

// [SECTION] decoding and display
std::string Tokenizer::decode_token(int id) const {
  if (id < 0 || id >= static_cast<int>(impl_->bytes_of.size()) ||
      (impl_->bytes_of[static_cast<std::size_t>(id)].empty()))
    throw std::out_of_range("token id " + std::to_string(id) + " is not in the vocabulary");
  return impl_->bytes_of[static_cast<std::size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  for (const int id : ids) out += decode_token(id);
  return out;
}

std::string Tokenizer::display_token(int id) const {
  const std::string bytes = decode_token(id);
  if (id == impl_->eot) return bytes;
  std::string out;
  const bool all_spaces = bytes.find_first_not_of(' ') == std::string::npos;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    std::uint32_t cp = 0;
    const int len = utf8_char(bytes, i, cp);
    char buf[8];
    if (c == ' ' && (i == 0 || all_spaces)) {
      out += "\xE2\x90\xA3";  // ␣: a leading space, visible
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (len == 0 || c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out.append(bytes, i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
      continue;
    }
    ++i;
  }
  return out;
}

int Tokenizer::vocab_size() const { return static_cast<int>(impl_->bytes_of.size()); }
int Tokenizer::eot_id() const { return impl_->eot; }

// [SECTION] loading
Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_strings(std::string_view vocab_json, std::string_view merges_txt, std::string_view source) {
  const std::string vsrc = std::string(source) + " vocab.json", msrc = std::string(source) + " merges.txt";
  if (vocab_json.empty()) fail(vsrc, "empty file");
  if (merges_txt.empty()) fail(msrc, "empty file");
  const json vocab = parse_json(vocab_json, vsrc);
  return Tokenizer(Impl::build(vocab, vsrc, parse_merges_txt(merges_txt, msrc), msrc));
}

Tokenizer Tokenizer::from_files(const fs::path& vocab_json, const fs::path& merges_txt) {
  const std::string vocab_text = read_text_file(vocab_json), merges_text = read_text_file(merges_txt);
  if (vocab_text.empty()) fail(vocab_json.string(), "empty file");
  if (merges_text.empty()) fail(merges_txt.string(), "empty file");
  const json vocab = parse_json(vocab_text, vocab_json.string());
  return Tokenizer(Impl::build(vocab, vocab_json.string(), parse_merges_txt(merges_text, merges_txt.string()), merges_txt.string()));
}

Tokenizer Tokenizer::from_tokenizer_json(const fs::path& tokenizer_json) {
  const std::string src = tokenizer_json.string();
  const std::string text = read_text_file(tokenizer_json);
  if (text.empty()) fail(src, "empty file");
  const json j = parse_json(text, src);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) fail(src, "has no \"model\" object");
  const json& model = j["model"];
  if (model.contains("type") && model["type"] != "BPE") fail(src, "model.type is " + model["type"].dump() + ", not \"BPE\"");
  if (!model.contains("vocab")) fail(src, "has no model.vocab");
  if (!model.contains("merges") || !model["merges"].is_array()) fail(src, "has no model.merges array");
  std::vector<Merge> merges;
  for (const json& m : model["merges"]) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
        fail(src, "merge " + std::to_string(merges.size() + 1) + " \"" + s + "\" is not two tokens separated by one space");
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(src, "merge " + std::to_string(merges.size() + 1) + " is " + m.dump() + ", not \"a b\" or [\"a\", \"b\"]");
    }
  }
  if (merges.empty()) fail(src, "model.merges is empty");
  return Tokenizer(Impl::build(model["vocab"], src + " model.vocab", merges, src + " model.merges"));
}

Tokenizer Tokenizer::from_folder(const fs::path& folder) {
  std::error_code ec;
  if (fs::exists(folder / "tokenizer.json", ec)) return from_tokenizer_json(folder / "tokenizer.json");
  const bool vocab = fs::exists(folder / "vocab.json", ec), merges = fs::exists(folder / "merges.txt", ec);
  if (!vocab && !merges)
    fail(folder.string(), "no tokenizer: neither tokenizer.json nor vocab.json + merges.txt (copy GPT-2's beside the model)");
  if (!vocab) fail((folder / "vocab.json").string(), "does not exist (merges.txt is there: the tokenizer needs both)");
  if (!merges) fail((folder / "merges.txt").string(), "does not exist (vocab.json is there: the tokenizer needs both)");
  return from_files(folder / "vocab.json", folder / "merges.txt");
}

}  // namespace mhaviz
