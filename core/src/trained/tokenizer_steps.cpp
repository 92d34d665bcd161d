// The tokenizer's text steps (tokenizer_impl.hpp): UTF-8, GPT-2's byte map, patterns,
// normalizers, pre-tokenizers and the added-token matcher. Each follows the Hugging Face
// tokenizers library's semantics, named where it is not obvious.
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "mhaviz/load_error.hpp"
#include "tokenizer_impl.hpp"

namespace mhaviz::tok {

// [SECTION] UTF-8 and GPT-2's byte map
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

namespace {

// Printable Latin-1 bytes stand for themselves, the other 68 bytes (controls, space,
// 0x7F-0xA0, 0xAD) for U+0100 onwards in byte order.
struct ByteMap {
  std::array<std::string, 256> to_char;
  std::unordered_map<std::uint32_t, unsigned char> from;
  ByteMap() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const auto cp = static_cast<std::uint32_t>(printable ? b : 256 + next++);
      append_utf8(to_char[static_cast<std::size_t>(b)], cp);
      from[cp] = static_cast<unsigned char>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::array<std::string, 256>& byte_chars() { return byte_map().to_char; }

std::optional<std::string> byte_level_bytes(std::string_view token) {
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

std::optional<unsigned char> byte_fallback_byte(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
  int v = 0;
  for (const char c : token.substr(3, 2)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + d;
  }
  return static_cast<unsigned char>(v);
}

// [SECTION] patterns
Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

namespace {

// Unicode's White_Space code points as a class body: what \s means in Oniguruma (the
// tokenizers library's engine) and in Rust's regex (tiktoken, Llama 3's own). PCRE2's \s also
// takes U+180E, a format character since Unicode 6.3: Llama 3's pattern then took "'s" of
// "a\u180E's" as one contraction, where Hugging Face (and @lenml/tokenizers) take U+180E and
// the apostrophe as one symbol run and the s as a word.
constexpr std::string_view kWhiteSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// `re` with \s as kWhiteSpace in and out of classes and \S as its complement outside one
// (inside one, where no tokenizer file puts it, PCRE2's \S stays). Escapes, \Q…\E quoting
// and POSIX [:name:] items are stepped over whole.
std::string with_white_space(std::string_view re) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      const char e = re[i + 1];
      if (e == 'Q') {  // quoted up to \E, copied as is
        const std::size_t end = re.find("\\E", i + 2);
        const std::size_t stop = end == std::string_view::npos ? re.size() : end + 2;
        out.append(re.substr(i, stop - i));
        i = stop - 1;
      } else if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
        ++i;
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
        ++i;
      } else {
        out += c;
        out += e;
        ++i;
      }
      continue;
    }
    if (in_class && c == '[' && i + 1 < re.size() && re[i + 1] == ':') {  // [:name:]
      const std::size_t end = re.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(re.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      // A ']' first in the class (after an optional '^') is a literal.
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

}  // namespace

Pattern Pattern::regex(std::string_view pattern, std::string_view source) {
  const auto compile = [](std::string_view re, int& err, PCRE2_SIZE& offset) {
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(),
                         PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
  };
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = compile(with_white_space(pattern), err, offset);
  if (!code) {
    // The file's own pattern, so the message's offset points into what the file says.
    int plain_err = 0;
    PCRE2_SIZE plain_offset = 0;
    if (pcre2_code* plain = compile(pattern, plain_err, plain_offset))
      pcre2_code_free(plain);
    else
      err = plain_err, offset = plain_offset;
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw LoadError(std::string(source) + ": the regex \"" + std::string(pattern.substr(0, 80)) +
                    "\" does not compile (" + reinterpret_cast<const char*>(msg) + " at offset " +
                    std::to_string(offset) + ")");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // the interpreter runs it where JIT is unavailable
  Pattern p;
  p.re_ = std::shared_ptr<pcre2_code>(code, pcre2_code_free);
  return p;
}

std::vector<Span> Pattern::find(std::string_view text) const {
  std::vector<Span> out;
  if (!re_) {
    if (literal_.empty()) return out;
    for (std::size_t pos = text.find(literal_); pos != std::string_view::npos;
         pos = text.find(literal_, pos + literal_.size()))
      out.emplace_back(pos, pos + literal_.size());
    return out;
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re_.get(), nullptr);
  if (!md) throw std::bad_alloc();
  // Matched on the text as node's Unicode classes it; the spans are the same bytes of text.
  const std::string swapped = with_stand_ins(text);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(swapped.empty() ? text.data() : swapped.data());
  // Empty matches count, as in tokenizers' find_matches on Oniguruma: a regex that can match
  // nothing ("", "a*") splits between characters. One at the end of the match before is passed
  // over by searching again a character on (a byte on would start inside a character, where
  // PCRE2 refuses to match and the rest of the text went unsplit).
  std::size_t last_end = std::string_view::npos;
  for (std::size_t pos = 0; pos <= text.size();) {
    if (pcre2_match(re_.get(), subject, text.size(), pos, 0, md, nullptr) < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[1] == ov[0] && ov[1] == last_end) {
      if (ov[1] >= text.size()) break;
      std::uint32_t cp = 0;
      const int len = utf8_char(text, ov[1], cp);
      pos = ov[1] + static_cast<std::size_t>(len > 0 ? len : 1);
      continue;
    }
    out.emplace_back(ov[0], ov[1]);
    last_end = pos = ov[1];
  }
  pcre2_match_data_free(md);
  return out;
}

Pattern gpt2_pattern() {
  // Contractions, letters, numbers, other symbols (each with an optional leading space),
  // then whitespace not followed by a non-space, then any whitespace.
  static const Pattern p = Pattern::regex(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "GPT-2's pattern");
  return p;
}

// [SECTION] normalizers
namespace {

std::string unicode_normalize(std::string_view text, int options) {
  std::string out;
  // Runs of valid UTF-8 are normalized; an invalid byte stays as it is between them.
  auto flush = [&](std::size_t begin, std::size_t end) {
    if (begin == end) return;
    if (const auto newer = normalize_newer(text.substr(begin, end - begin), (options & UTF8PROC_COMPOSE) != 0,
                                           (options & UTF8PROC_COMPAT) != 0)) {
      out += *newer;
      return;
    }
    utf8proc_uint8_t* dst = nullptr;
    const auto n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + begin),
                     static_cast<utf8proc_ssize_t>(end - begin), &dst, static_cast<utf8proc_option_t>(options));
    if (n < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
    out.append(reinterpret_cast<const char*>(dst), static_cast<std::size_t>(n));
    std::free(dst);
  };
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    const int len = utf8_char(text, i, cp);
    if (len > 0) {
      i += static_cast<std::size_t>(len);
      continue;
    }
    flush(run, i);
    out += text[i];
    run = ++i;
  }
  flush(run, text.size());
  return out;
}

}  // namespace

std::string normalize(const std::vector<Normalizer>& steps, std::string text) {
  using K = Normalizer::Kind;
  for (const Normalizer& n : steps) {
    switch (n.kind) {
      case K::NFC: text = unicode_normalize(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE); break;
      case K::NFD: text = unicode_normalize(text, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE); break;
      case K::NFKC: text = unicode_normalize(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case K::NFKD: text = unicode_normalize(text, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
      case K::Replace: {
        std::string out;
        std::size_t prev = 0;
        for (const auto& [b, e] : n.pattern.find(text)) {
          out.append(text, prev, b - prev).append(n.content);
          prev = e;
        }
        text = out.append(text, prev, std::string::npos);
        break;
      }
      case K::Prepend:
        if (!text.empty()) text.insert(0, n.content);  // tokenizers' Prepend skips empty text
        break;
    }
  }
  return text;
}

// [SECTION] pre-tokenizers
namespace {

using Flagged = std::vector<std::pair<Span, bool>>;  // pieces covering a text, true for a match

// Matches and the gaps between them, in order (tokenizers' Pattern::find_matches).
Flagged with_gaps(const std::vector<Span>& matches, std::size_t size) {
  Flagged out;
  std::size_t prev = 0;
  for (const Span& m : matches) {
    if (m.first > prev) out.push_back({{prev, m.first}, false});
    out.push_back({m, true});
    prev = m.second;
  }
  if (prev < size) out.push_back({{prev, size}, false});
  return out;
}

// tokenizers' NormalizedString::split: which pieces a behavior keeps and joins.
std::vector<Span> apply_behavior(const Flagged& pieces, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& [span, m] : pieces) out.push_back(span);
      break;
    case SplitBehavior::Removed:
      for (const auto& [span, m] : pieces)
        if (!m) out.push_back(span);
      break;
    case SplitBehavior::Contiguous:
      for (const auto& [span, m] : pieces) {
        if (m == previous_match && !out.empty())
          out.back().second = span.second;
        else
          out.push_back(span);
        previous_match = m;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& [span, m] : pieces) {
        if (m && !previous_match && !out.empty())
          out.back().second = span.second;
        else
          out.push_back(span);
        previous_match = m;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->second && !previous_match && !out.empty())
          out.back().first = it->first.first;
        else
          out.push_back(it->first);
        previous_match = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

// One character at a time: each digit (Rust's char::is_numeric: Nd, Nl, No) a match, the
// text between digits one gap; an invalid byte is a non-digit.
Flagged digit_pieces(std::string_view text) {
  std::vector<Span> digits;
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    const int valid = utf8_char(text, i, cp);
    const std::size_t len = valid > 0 ? static_cast<std::size_t>(valid) : 1;
    if (valid > 0) {
      const auto cat = general_category(cp);
      if (cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO)
        digits.emplace_back(i, i + len);
    }
    i += len;
  }
  return with_gaps(digits, text.size());
}

void split_into(std::string_view text, const std::vector<Span>& spans, std::vector<std::string>& out) {
  for (const auto& [b, e] : spans)
    if (e > b) out.emplace_back(text.substr(b, e - b));
}

}  // namespace

std::vector<std::string> pre_tokenize(const std::vector<PreTokenizer>& steps, std::string text) {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.push_back(std::move(text));
  for (const PreTokenizer& step : steps) {
    std::vector<std::string> next;
    next.reserve(pieces.size());
    for (std::string& piece : pieces) {
      switch (step.kind) {
        case PreTokenizer::Kind::Split: {
          Flagged f = with_gaps(step.pattern.find(piece), piece.size());
          if (step.invert)
            for (auto& p : f) p.second = !p.second;
          split_into(piece, apply_behavior(f, step.behavior), next);
          break;
        }
        case PreTokenizer::Kind::Digits:
          split_into(piece,
                     apply_behavior(digit_pieces(piece),
                                    step.individual_digits ? SplitBehavior::Isolated : SplitBehavior::Contiguous),
                     next);
          break;
        case PreTokenizer::Kind::ByteLevel: {
          if (step.add_prefix_space && piece.front() != ' ') piece.insert(0, " ");
          std::vector<std::string> words;
          if (step.use_regex)
            split_into(piece,
                       apply_behavior(with_gaps(step.pattern.find(piece), piece.size()), SplitBehavior::Isolated),
                       words);
          else
            words.push_back(std::move(piece));
          for (const std::string& w : words) {
            std::string mapped;
            mapped.reserve(w.size() * 2);
            for (const char c : w) mapped += byte_chars()[static_cast<unsigned char>(c)];
            next.push_back(std::move(mapped));
          }
          break;
        }
      }
    }
    pieces = std::move(next);
  }
  return pieces;
}

// [SECTION] added tokens
namespace {

bool is_white_space(std::uint32_t cp) {  // Unicode White_Space, as Rust's char::is_whitespace and regex's \s
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_word_char(std::uint32_t cp) {  // regex's \w: letters, marks, decimal digits, connector punctuation
  const auto cat = general_category(cp);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_ME) || cat == UTF8PROC_CATEGORY_ND ||
         cat == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D;
}

// The code point that ends text[0, end) (0 when none or invalid).
std::uint32_t char_before(std::string_view text, std::size_t end, std::size_t& begin) {
  begin = end;
  for (std::size_t k = 1; k <= 4 && k <= end; ++k) {
    std::uint32_t cp = 0;
    if (utf8_char(text, end - k, cp) == static_cast<int>(k)) {
      begin = end - k;
      return cp;
    }
  }
  return 0;
}

}  // namespace

AddedMatcher::AddedMatcher(const std::vector<AddedToken>* tokens, std::vector<std::pair<std::string, int>> patterns)
    : tokens_(tokens) {
  for (const auto& [text, index] : patterns) {
    if (text.empty()) continue;
    int node = 0;
    for (const char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      int n = child(node, c);
      if (n < 0) {
        n = static_cast<int>(nodes_.size());
        auto& next = nodes_[static_cast<std::size_t>(node)].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(c, 0)), {c, n});
        nodes_.emplace_back();
      }
      node = n;
    }
    nodes_[static_cast<std::size_t>(node)].token = index;
    first_[static_cast<unsigned char>(text[0])] = true;
  }
}

int AddedMatcher::child(int node, unsigned char c) const {
  const auto& next = nodes_[static_cast<std::size_t>(node)].next;
  const auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(c, 0));
  return it != next.end() && it->first == c ? it->second : -1;
}

std::vector<std::pair<int, Span>> AddedMatcher::split(std::string_view text) const {
  std::vector<std::pair<int, Span>> out;
  std::size_t done = 0;  // text before this is already in `out`
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!first_[static_cast<unsigned char>(text[i])]) continue;
    // The longest token starting at i (leftmost-longest: the first i with any match wins).
    int token = -1;
    std::size_t stop = i;
    for (std::size_t k = i, node = 0; k < text.size();) {
      const int n = child(static_cast<int>(node), static_cast<unsigned char>(text[k]));
      if (n < 0) break;
      node = static_cast<std::size_t>(n);
      ++k;
      if (nodes_[node].token >= 0) {
        token = nodes_[node].token;
        stop = k;
      }
    }
    if (token < 0) continue;
    const AddedToken& t = (*tokens_)[static_cast<std::size_t>(token)];
    std::size_t start = i;
    std::uint32_t cp = 0;
    std::size_t at = 0;
    if (t.single_word) {
      const bool word_before = start > 0 && is_word_char(char_before(text, start, at));
      const bool word_after = stop < text.size() && utf8_char(text, stop, cp) > 0 && is_word_char(cp);
      if (word_before || word_after) continue;  // not a word of its own: ordinary text
    }
    if (t.lstrip)  // take the whitespace before it, but not what an earlier token already took
      while (start > done && is_white_space(char_before(text, start, at)) && at < start) start = at;
    if (t.rstrip)
      for (int len = 0; stop < text.size() && (len = utf8_char(text, stop, cp)) > 0 && is_white_space(cp);)
        stop += static_cast<std::size_t>(len);
    if (start > done) out.push_back({-1, {done, start}});
    out.push_back({token, {start, stop}});
    done = stop;
    i = stop - 1;
  }
  if (done < text.size()) out.push_back({-1, {done, text.size()}});
  return out;
}

}  // namespace mhaviz::tok

namespace mhaviz {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace mhaviz
