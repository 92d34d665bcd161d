// The model view's text box as the app shows it (app/gui/model_view.hpp), no window: GPT-2's
// tokens with the leading space visible, <|endoftext|> first on request, and the errors the
// worker gives for the same text (empty; longer than the context, naming both lengths).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model_view.hpp"

namespace mhaviz::gui {
namespace {

// UTF-8 of a code point below 0x800 (all GPT-2's byte characters are).
std::string utf8(int cp) {
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

// GPT-2's 256 byte tokens (printable bytes as themselves, the others from U+0100 on, in
// GPT-2's order), the merge "Ġ a" and the special token.
Tokenizer tiny() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<int> cs = bs;
  for (int b = 0, n = 0; b < 256; ++b) {
    if (std::find(bs.begin(), bs.end(), b) != bs.end()) continue;
    bs.push_back(b);
    cs.push_back(256 + n++);
  }
  std::string vocab = "{";
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::string ch = cs[i] == '"' ? "\\\"" : cs[i] == '\\' ? "\\\\" : utf8(cs[i]);
    vocab += "\"" + ch + "\": " + std::to_string(i) + ", ";
  }
  vocab +=
      "\"\xC4\xA0"
      "a\": 256, \"<|endoftext|>\": 257}";
  return Tokenizer::from_strings(vocab, "#version: 0.2\n\xC4\xA0 a\n", "tiny");
}

TEST(ModelViewText, ShowsTokensWithTheLeadingSpaceVisible) {
  const Tokenizer tok = tiny();
  const TextTokens t = tokenize_for_display(tok, "ab a", false, 16);
  ASSERT_EQ(t.tokens.size(), 3u);
  EXPECT_EQ(t.tokens[0], "a");
  EXPECT_EQ(t.tokens[1], "b");
  EXPECT_EQ(t.tokens[2],
            "\xE2\x90\xA3"
            "a");  // ␣a: one token, its space shown
  EXPECT_EQ(t.error, "");
}

TEST(ModelViewText, PrependsEndOfTextWhenAsked) {
  const Tokenizer tok = tiny();
  const TextTokens t = tokenize_for_display(tok, "a", true, 16);
  ASSERT_EQ(t.tokens.size(), 2u);
  EXPECT_EQ(t.tokens[0], "<|endoftext|>");
}

TEST(ModelViewText, ErrorsNameTheFieldAndBothLengths) {
  const Tokenizer tok = tiny();
  EXPECT_EQ(tokenize_for_display(tok, "", false, 16).error, "text: empty; type at least one token");
  const TextTokens t = tokenize_for_display(tok, "ab ab ab", false, 4);
  EXPECT_EQ(t.tokens.size(), 6u);  // still shown: the teacher sees what is too long
  EXPECT_EQ(t.error, "text: 6 tokens is longer than the model's context of 4");
  EXPECT_EQ(tokenize_for_display(tok, "ab ab", false, 4).error, "");
}

TEST(ModelViewText, HeadLabelsAreLayerDotHead) {
  EXPECT_EQ(head_label(0, 12), "0.0");
  EXPECT_EQ(head_label(61, 12), "5.1");
  EXPECT_EQ(head_label(143, 12), "11.11");
}

}  // namespace
}  // namespace mhaviz::gui
