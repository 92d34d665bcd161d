// The tokenizer (tokenizer.hpp): the pipeline of tokenizer_impl.hpp, built from GPT-2's
// vocab.json + merges.txt here or from a Hugging Face tokenizer.json (tokenizer_json.cpp);
// encoding, decoding and the display form of tokens.
// Loading checks that every byte (byte-level vocabularies) and every merge's parts and
// result are in the vocabulary, so encode() never throws on any input.
#include "mhaviz/tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "tokenizer_impl.hpp"

namespace mhaviz {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::uintmax_t kMaxFileBytes = 256u << 20;  // Gemma 3's tokenizer.json (33 MB) stays far below
constexpr std::size_t kCacheLimit = 1 << 16;          // words remembered before the cache starts afresh
constexpr std::size_t kCacheWordBytes = 256;  // longer words (a SentencePiece-style text is one word) are not kept

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) tok::fail(path.string(), "does not exist");
  if (!fs::is_regular_file(path, ec)) tok::fail(path.string(), "is not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) tok::fail(path.string(), "cannot read its size (" + ec.message() + ")");
  if (size > kMaxFileBytes)
    tok::fail(path.string(), std::to_string(size) + " bytes is over the limit of " + std::to_string(kMaxFileBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) tok::fail(path.string(), "cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) tok::fail(path.string(), "read error");
  return ss.str();
}

json parse_json(std::string_view text, std::string_view source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    std::string what = e.what();
    const auto pos = what.find("] ");
    tok::fail(source, "not valid JSON (" + (pos == std::string::npos ? what : what.substr(pos + 2)) + ")");
  }
}

using Merge = std::pair<std::string, std::string>;

// "a b" per line after an optional "#version" line.
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
    if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
      tok::fail(source, "line " + std::to_string(line_no) + " \"" + std::string(line.substr(0, 40)) +
                            "\" is not two tokens separated by one space");
    merges.emplace_back(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
  }
  if (merges.empty()) tok::fail(source, "holds no merges");
  return merges;
}

// GPT-2 from vocab.json + merges.txt: "<|endoftext|>" the one added token, the byte-level
// pre-tokenizer with GPT-2's pattern, and the BPE model.
std::unique_ptr<Tokenizer::Impl> build_gpt2(const json& vocab, std::string_view vocab_source,
                                            const std::vector<Merge>& merges, std::string_view merges_source) {
  auto impl = std::make_unique<Tokenizer::Impl>();
  impl->set_vocab(vocab, vocab_source);
  impl->check_byte_level(vocab_source);
  impl->set_merges(merges, merges_source, true);
  if (const auto it = impl->bpe.vocab.find(std::string(kEndOfText)); it != impl->bpe.vocab.end())
    impl->added.push_back({std::string(kEndOfText), it->second, true, false, false, false, false});
  tok::PreTokenizer byte_level;
  byte_level.kind = tok::PreTokenizer::Kind::ByteLevel;
  byte_level.use_regex = true;
  byte_level.pattern = tok::gpt2_pattern();
  impl->pre_tokenizers.push_back(byte_level);
  impl->finish(true, {}, false);
  return impl;
}

// The bytes of one token for display: "␣" for a leading space (`show_space`), whitespace
// and control bytes escaped ("\n"), bytes that are not whole UTF-8 characters as "\xNN".
std::string escape_for_display(const std::string& bytes, bool show_space) {
  std::string out;
  const bool all_spaces = bytes.find_first_not_of(' ') == std::string::npos;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    std::uint32_t cp = 0;
    const int len = tok::utf8_char(bytes, i, cp);
    char buf[8];
    if (show_space && c == ' ' && (i == 0 || all_spaces)) {
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

}  // namespace

namespace tok {

[[noreturn]] void fail(std::string_view source, const std::string& problem) {
  std::string s = std::string(source) + ": " + problem;
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 400) s = s.substr(0, 397) + "...";  // a token of a broken file can be long
  throw LoadError(s);
}

}  // namespace tok

// [SECTION] building the state
void Tokenizer::Impl::set_vocab(const json& vocab, std::string_view source) {
  if (!vocab.is_object()) tok::fail(source, "expected an object of token -> id");
  if (vocab.empty()) tok::fail(source, "holds no tokens");
  int max_id = -1;
  bpe.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      tok::fail(source, "token \"" + it.key() + "\" has id " + it.value().dump() + ", not an integer");
    const auto id = it.value().get<std::int64_t>();
    if (id < 0 || id >= 1 << 24)
      tok::fail(source, "token \"" + it.key() + "\" has id " + std::to_string(id) + ", outside [0, 2^24)");
    bpe.vocab.emplace(it.key(), static_cast<int>(id));
    max_id = std::max(max_id, static_cast<int>(id));
  }
  token_of.assign(static_cast<std::size_t>(max_id) + 1, std::string());
  std::vector<bool> used(token_of.size(), false);
  for (const auto& [token, id] : bpe.vocab) {
    if (used[static_cast<std::size_t>(id)]) tok::fail(source, "id " + std::to_string(id) + " is given to two tokens");
    used[static_cast<std::size_t>(id)] = true;
    token_of[static_cast<std::size_t>(id)] = token;
  }
  bpe.byte_ids.fill(-1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (const auto it = bpe.vocab.find(name); it != bpe.vocab.end())
      bpe.byte_ids[static_cast<std::size_t>(b)] = it->second;
  }
}

void Tokenizer::Impl::check_byte_level(std::string_view source) const {
  for (int b = 0; b < 256; ++b)
    if (!bpe.vocab.count(tok::byte_chars()[static_cast<std::size_t>(b)])) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      tok::fail(source, std::string("has no token for byte ") + hex + " (\"" +
                            tok::byte_chars()[static_cast<std::size_t>(b)] + "\"): not a byte-level BPE vocabulary");
    }
}

void Tokenizer::Impl::set_merges(const std::vector<Merge>& merges, std::string_view source, bool first_rank_wins) {
  bpe.merges.reserve(merges.size());
  std::string joined;
  for (std::size_t k = 0; k < merges.size(); ++k) {
    // emplace keeps the first value of a key: walking backwards keeps the last rank.
    const std::size_t r = first_rank_wins ? k : merges.size() - 1 - k;
    const auto& [a, b] = merges[r];
    const auto ia = bpe.vocab.find(a), ib = bpe.vocab.find(b);
    for (const auto& [part, it] : {std::pair{&a, ia}, std::pair{&b, ib}})
      if (it == bpe.vocab.end())
        tok::fail(source, "merge " + std::to_string(r + 1) + " \"" + a + " " + b + "\" names \"" + *part +
                              "\", which is not in the vocabulary");
    joined.assign(a).append(b);
    const auto made = bpe.vocab.find(joined);
    if (made == bpe.vocab.end())
      tok::fail(source, "merge " + std::to_string(r + 1) + " \"" + a + " " + b + "\" makes \"" + joined +
                            "\", which is not in the vocabulary");
    const std::uint64_t key = static_cast<std::uint64_t>(static_cast<std::uint32_t>(ia->second)) << 32 |
                              static_cast<std::uint32_t>(ib->second);
    bpe.merges.emplace(key, std::pair<int, int>{static_cast<int>(r), made->second});
  }
}

void Tokenizer::Impl::finish(bool decode_byte_level,
                             const std::vector<std::pair<std::string, std::string>>& decode_replace,
                             bool decode_byte_fallback) {
  byte_level = decode_byte_level;
  std::vector<std::pair<std::string, int>> raw, normalized;
  for (std::size_t k = 0; k < added.size(); ++k) {
    const tok::AddedToken& t = added[k];
    if (static_cast<std::size_t>(t.id) >= token_of.size()) token_of.resize(static_cast<std::size_t>(t.id) + 1);
    token_of[static_cast<std::size_t>(t.id)] = t.content;
    // A normalized token is looked for in normalized text, so by its normalized content.
    if (t.normalized)
      normalized.emplace_back(tok::normalize(normalizers, t.content), static_cast<int>(k));
    else
      raw.emplace_back(t.content, static_cast<int>(k));
    if (t.content == kEndOfText) eot = t.id;
  }
  added_raw = tok::AddedMatcher(&added, std::move(raw));
  added_normalized = tok::AddedMatcher(&added, std::move(normalized));
  bytes_of.assign(token_of.size(), std::string());
  for (std::size_t id = 0; id < token_of.size(); ++id) {
    std::string t = token_of[id];
    if (t.empty()) continue;
    if (decode_byte_fallback)
      if (const auto b = tok::byte_fallback_byte(t)) {
        bytes_of[id] = std::string(1, static_cast<char>(*b));
        continue;
      }
    for (const auto& [from, to] : decode_replace)
      for (std::size_t pos = t.find(from); pos != std::string::npos; pos = t.find(from, pos + to.size()))
        t.replace(pos, from.size(), to);
    const auto bytes = decode_byte_level ? tok::byte_level_bytes(t) : std::nullopt;
    bytes_of[id] = bytes ? *bytes : t;  // tokens outside the byte map ("<pad>") decode to their own text
  }
  // Added tokens go through the decoder as every other token does (Gemma lists "▁▁" both in
  // its vocabulary and as an added token).
  added_kind.assign(token_of.size(), 0);
  for (const tok::AddedToken& t : added) added_kind[static_cast<std::size_t>(t.id)] = t.special ? 2 : 1;
}

// [SECTION] encoding
void Tokenizer::Impl::encode_word(const std::string& word, std::vector<int>& out) const {
  const bool keep = word.size() <= kCacheWordBytes;
  if (keep) {
    std::lock_guard lock(cache_mu);
    if (const auto it = cache.find(word); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> ids;
  bpe.tokenize(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (!keep) return;
  std::lock_guard lock(cache_mu);
  if (cache.size() >= kCacheLimit) cache.clear();
  cache.emplace(word, std::move(ids));
}

void Tokenizer::Impl::encode(std::string_view text, bool add_special_tokens, std::vector<int>& out) const {
  if (small != Small::No) return encode_small(text, out);
  if (add_special_tokens) out.insert(out.end(), prefix.begin(), prefix.end());
  auto pieces = [](const tok::AddedMatcher& m, std::string_view s) {
    return m.empty() ? std::vector<std::pair<int, tok::Span>>{{-1, {0, s.size()}}} : m.split(s);
  };
  for (const auto& [token, span] : pieces(added_raw, text)) {
    if (token >= 0) {
      out.push_back(added[static_cast<std::size_t>(token)].id);
      continue;
    }
    const std::string normal =
        tok::normalize(normalizers, std::string(text.substr(span.first, span.second - span.first)));
    for (const auto& [token2, span2] : pieces(added_normalized, normal)) {
      if (token2 >= 0) {
        out.push_back(added[static_cast<std::size_t>(token2)].id);
        continue;
      }
      for (const std::string& word :
           tok::pre_tokenize(pre_tokenizers, normal.substr(span2.first, span2.second - span2.first)))
        encode_word(word, out);
    }
  }
  if (add_special_tokens) out.insert(out.end(), suffix.begin(), suffix.end());
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int> out;
  impl_->encode(text, add_special_tokens, out);
  return out;
}

// [SECTION] decoding and display
std::string Tokenizer::decode_token(int id) const {
  if (!has_token(id)) throw std::out_of_range("token id " + std::to_string(id) + " is not in the vocabulary");
  return impl_->bytes_of[static_cast<std::size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  for (const int id : ids)
    if (has_token(id)) out += decode_token(id);
  return out;
}

std::string Tokenizer::display_token(int id) const {
  const std::string bytes = decode_token(id);
  if (is_special(id)) return escape_for_display(bytes, false);
  if (impl_->byte_level) return escape_for_display(bytes, true);
  // SentencePiece-style vocabularies: the token as the model spells it ("▁world"); a byte
  // token as its byte ("\n", "\xE6").
  const std::string& token = impl_->token_of[static_cast<std::size_t>(id)];
  return escape_for_display(tok::byte_fallback_byte(token) ? bytes : token, false);
}

bool Tokenizer::is_added(int id) const {
  return id >= 0 && id < static_cast<int>(impl_->added_kind.size()) &&
         impl_->added_kind[static_cast<std::size_t>(id)] != 0;
}

bool Tokenizer::is_special(int id) const {
  return id >= 0 && id < static_cast<int>(impl_->added_kind.size()) &&
         impl_->added_kind[static_cast<std::size_t>(id)] == 2;
}

int Tokenizer::token_id(std::string_view token) const {
  for (const tok::AddedToken& t : impl_->added)
    if (t.content == token) return t.id;
  const auto it = impl_->bpe.vocab.find(std::string(token));
  return it == impl_->bpe.vocab.end() ? -1 : it->second;
}

const std::vector<int>& Tokenizer::special_prefix() const { return impl_->prefix; }
const std::vector<int>& Tokenizer::special_suffix() const { return impl_->suffix; }
int Tokenizer::vocab_size() const { return static_cast<int>(impl_->token_of.size()); }

bool Tokenizer::has_token(int id) const {
  return id >= 0 && id < vocab_size() && !impl_->token_of[static_cast<std::size_t>(id)].empty();
}
int Tokenizer::eot_id() const { return impl_->eot; }

// [SECTION] loading
Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_strings(std::string_view vocab_json, std::string_view merges_txt, std::string_view source) {
  const std::string vsrc = std::string(source) + " vocab.json", msrc = std::string(source) + " merges.txt";
  if (vocab_json.empty()) tok::fail(vsrc, "empty file");
  if (merges_txt.empty()) tok::fail(msrc, "empty file");
  const json vocab = parse_json(vocab_json, vsrc);
  return Tokenizer(build_gpt2(vocab, vsrc, parse_merges_txt(merges_txt, msrc), msrc));
}

Tokenizer Tokenizer::from_files(const fs::path& vocab_json, const fs::path& merges_txt) {
  const std::string vocab_text = read_text_file(vocab_json), merges_text = read_text_file(merges_txt);
  if (vocab_text.empty()) tok::fail(vocab_json.string(), "empty file");
  if (merges_text.empty()) tok::fail(merges_txt.string(), "empty file");
  const json vocab = parse_json(vocab_text, vocab_json.string());
  return Tokenizer(
      build_gpt2(vocab, vocab_json.string(), parse_merges_txt(merges_text, merges_txt.string()), merges_txt.string()));
}

Tokenizer Tokenizer::from_tokenizer_json_string(std::string_view text, std::string_view source) {
  if (text.empty()) tok::fail(source, "empty file");
  return Tokenizer(parse_tokenizer_json(parse_json(text, source), source));
}

Tokenizer Tokenizer::from_tokenizer_json(const fs::path& tokenizer_json) {
  return from_tokenizer_json_string(read_text_file(tokenizer_json), tokenizer_json.string());
}

Tokenizer Tokenizer::from_folder(const fs::path& folder, int ids_without_files) {
  std::error_code ec;
  if (fs::exists(folder / "tokenizer.json", ec)) return from_tokenizer_json(folder / "tokenizer.json");
  const bool vocab = fs::exists(folder / "vocab.json", ec), merges = fs::exists(folder / "merges.txt", ec);
  if (!vocab && !merges && fs::exists(folder / "config.json", ec)) {
    if (auto trained = from_trained_config(folder / "config.json")) return std::move(*trained);
  }
  if (!vocab && !merges && ids_without_files > 0)
    return of_ids(ids_without_files,
                  "the folder has no tokenizer.json, nor vocab.json + merges.txt: copy the files the model "
                  "was published with beside it to type text");
  if (!vocab && !merges)
    tok::fail(folder.string(),
              "no tokenizer: neither tokenizer.json nor vocab.json + merges.txt (copy the files the model was "
              "published with beside it)");
  if (!vocab)
    tok::fail((folder / "vocab.json").string(), "does not exist (merges.txt is there: the tokenizer needs both)");
  if (!merges)
    tok::fail((folder / "merges.txt").string(), "does not exist (vocab.json is there: the tokenizer needs both)");
  return from_files(folder / "vocab.json", folder / "merges.txt");
}

std::optional<Tokenizer> Tokenizer::from_trained_config(const fs::path& config_json) {
  const std::string source = config_json.string();
  const json j = parse_json(read_text_file(config_json), source);
  if (!j.is_object() || !j.contains("attn_only")) return std::nullopt;
  if (const auto it = j.find("char_vocab"); it != j.end()) {
    if (!it->is_array()) tok::fail(source, "char_vocab is not a list of characters");
    std::vector<std::string> chars;
    for (const json& c : *it) {
      if (!c.is_string()) tok::fail(source, "char_vocab holds " + c.dump() + ", not a character");
      chars.push_back(c.get<std::string>());
    }
    return from_characters(chars, source);
  }
  const auto v = j.find("vocab_size");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() < 1 || v->get<std::int64_t>() > (1 << 20))
    tok::fail(source, "vocab_size is not a positive integer: " + (v == j.end() ? std::string("missing") : v->dump()));
  return of_ids(static_cast<int>(v->get<std::int64_t>()));
}

std::string Tokenizer::refuse(std::string_view text) const {
  return impl_->small == Impl::Small::No ? std::string() : impl_->refuse_small(text);
}

}  // namespace mhaviz
