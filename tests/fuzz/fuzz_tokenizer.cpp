// libFuzzer target: GPT-2's tokenizer. The first byte picks what the rest is:
//   even: text for encode() with a small byte-level vocabulary. Encoding never throws,
//         decoding gives the bytes back, and every token displays on one line;
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
  if (data[0] % 2 == 0) {
    check_round_trip(small(), rest);
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
