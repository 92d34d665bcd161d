// The vocabularies of models `mhaviz train` makes without tokenizer files: a text's
// characters (config.json's "char_vocab") and a synthetic task's plain ids. No merges,
// normalizers or pre-tokenizers: a character is its token, a number its id.
#include <charconv>
#include <string>
#include <vector>

#include "tokenizer_impl.hpp"

namespace mhaviz {

Tokenizer Tokenizer::from_characters(const std::vector<std::string>& chars, std::string_view source) {
  if (chars.empty()) tok::fail(source, "char_vocab is empty");
  auto impl = std::make_unique<Impl>();
  impl->small = Impl::Small::Characters;
  for (std::size_t i = 0; i < chars.size(); ++i) {
    const std::string& c = chars[i];
    std::uint32_t cp = 0;
    if (c.empty() || tok::utf8_char(c, 0, cp) != static_cast<int>(c.size()))
      tok::fail(source, "char_vocab entry " + std::to_string(i) + " is not one UTF-8 character");
    if (!impl->bpe.vocab.emplace(c, static_cast<int>(i)).second)
      tok::fail(source, "char_vocab holds \"" + c + "\" twice (ids " + std::to_string(impl->bpe.vocab.at(c)) + " and " +
                            std::to_string(i) + ")");
  }
  impl->token_of = chars;
  impl->bytes_of = chars;
  impl->added_kind.assign(chars.size(), 0);
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::of_ids(int vocab_size, std::string_view reason) {
  auto impl = std::make_unique<Impl>();
  impl->small = Impl::Small::Ids;
  impl->ids_reason = reason;
  for (int i = 0; i < vocab_size; ++i) {
    impl->token_of.push_back(std::to_string(i));
    impl->bytes_of.push_back(" " + std::to_string(i));  // decode() writes the ids apart
    impl->bpe.vocab.emplace(impl->token_of.back(), i);
  }
  impl->added_kind.assign(static_cast<std::size_t>(vocab_size), 0);
  return Tokenizer(std::move(impl));
}

namespace {

// The whitespace-separated words of text, as [begin, end) offsets.
std::vector<std::pair<std::size_t, std::size_t>> words(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    const std::size_t b = i;
    while (i < text.size() && !(text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i > b) out.emplace_back(b, i);
  }
  return out;
}

// A character's length at s[i], invalid bytes one at a time.
std::size_t char_length(std::string_view s, std::size_t i) {
  std::uint32_t cp = 0;
  const int n = tok::utf8_char(s, i, cp);
  return n > 0 ? static_cast<std::size_t>(n) : 1;
}

}  // namespace

void Tokenizer::Impl::encode_small(std::string_view text, std::vector<int>& out) const {
  if (small == Small::Ids) {
    for (const auto& [b, e] : words(text)) {
      const auto it = bpe.vocab.find(std::string(text.substr(b, e - b)));
      out.push_back(it == bpe.vocab.end() ? -1 : it->second);
    }
    return;
  }
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = char_length(text, i);
    const auto it = bpe.vocab.find(std::string(text.substr(i, n)));
    out.push_back(it == bpe.vocab.end() ? -1 : it->second);
    i += n;
  }
}

std::string Tokenizer::Impl::refuse_small(std::string_view text) const {
  const std::string count = std::to_string(token_of.size());
  if (small == Small::Ids) {
    for (const auto& [b, e] : words(text)) {
      const std::string w(text.substr(b, e - b));
      if (!bpe.vocab.contains(w))
        return "\"" + w + "\" is not a token of this model: its tokens are the numbers 0 to " +
               std::to_string(token_of.size() - 1) + ", separated by spaces (" + ids_reason + ")";
    }
    return {};
  }
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = char_length(text, i);
    const std::string c(text.substr(i, n));
    if (!bpe.vocab.contains(c)) return "\"" + c + "\" is not one of this model's " + count + " characters";
    i += n;
  }
  return {};
}

}  // namespace mhaviz
