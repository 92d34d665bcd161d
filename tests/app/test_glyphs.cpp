// Characters the embedded DejaVu has no glyph for: the figures draw them from an installed font
// (fontconfig; the test setup installs fonts-droid-fallback), and the app's atlas plans the
// same fonts (GlyphSet). Before, the screen drew "Привет" as "??????" and every figure drew
// 日本語 as DejaVu's missing-glyph boxes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "figure/text.hpp"
#if MHAVIZ_TEST_GUI_LOGIC
#include "glyph_set.hpp"
#include "wide_chars.hpp"
#endif

namespace mhaviz::figure {
namespace {

constexpr std::uint32_t kNichi = 0x65E5;       // 日, in no DejaVu face
constexpr std::uint32_t kUnassigned = 0x0378;  // no character, in no font

std::vector<std::uint8_t> coverage(const std::string& s) {
  std::vector<std::uint8_t> cov(64 * 40, 0);
  draw_text_coverage(cov, 64, 40, 4.0f, 30.0f, s, 24.0f, false);
  return cov;
}

TEST(Glyphs, DejaVuDrawsLatinCyrillicAndGreekItself) {
  for (const std::uint32_t cp : {0x41u, 0x41Fu, 0x141u, 0x3A9u, 0x2581u}) {
    EXPECT_TRUE(embedded_has(cp, false)) << cp;
    EXPECT_FALSE(fallback_font(cp).has_value()) << cp;
  }
  EXPECT_FALSE(embedded_has(kNichi, false));
  EXPECT_FALSE(embedded_has(kNichi, true));
}

TEST(Glyphs, ACharacterDejaVuLacksComesFromAnInstalledFont) {
  const auto f = fallback_font(kNichi);
  ASSERT_TRUE(f.has_value()) << "no installed font has U+65E5 (scripts/dev.sh test installs fonts-droid-fallback)";
  EXPECT_FALSE(f->bytes.empty());
  EXPECT_FALSE(f->path.empty());
  // The same face for the next character of the script, without asking fontconfig again.
  const auto g = fallback_font(0x672C);  // 本
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->path, f->path);
  EXPECT_EQ(g->bytes.data(), f->bytes.data());
  EXPECT_FALSE(fallback_font(kUnassigned).has_value());
}

TEST(Glyphs, FiguresDrawThatFontsGlyphNotTheMissingGlyphBox) {
  // DejaVu's box is the same for every character it lacks; 日 and 本 drawn from a CJK font differ
  // from it and from each other, and are measured as drawn.
  const std::vector<std::uint8_t> box = coverage("\xCD\xB8");  // U+0378
  const std::vector<std::uint8_t> nichi = coverage("\xE6\x97\xA5"), hon = coverage("\xE6\x9C\xAC");
  EXPECT_NE(nichi, box);
  EXPECT_NE(hon, box);
  EXPECT_NE(nichi, hon);
  EXPECT_GT(std::count_if(nichi.begin(), nichi.end(), [](std::uint8_t c) { return c > 128; }), 20);
  EXPECT_GT(text_width("\xE6\x97\xA5\xE6\x9C\xAC", 24.0f), 30.0f);
  EXPECT_NEAR(text_width("\xE6\x97\xA5\xE6\x9C\xAC", 24.0f), 2.0f * text_width("\xE6\x97\xA5", 24.0f), 1e-3f);
}

}  // namespace
}  // namespace mhaviz::figure

#if MHAVIZ_TEST_GUI_LOGIC
namespace mhaviz::gui {
namespace {

bool covers(const GlyphRanges& r, std::uint32_t cp) {
  for (std::size_t i = 0; i + 1 < r.size(); i += 2)
    if (cp >= r[i] && cp <= r[i + 1]) return true;
  return false;
}

TEST(GlyphSet, LatinOneAndTheUiSymbolsNeedNoBuild) {
  GlyphSet g;
  EXPECT_FALSE(g.note("Your journey starts with one step"));
  EXPECT_FALSE(g.note("\xC3\xBC\xC3\xA9 \xE2\x80\x94 \xE2\x88\x9A \xE2\x90\xA3"));  // üé — √ ␣
  EXPECT_FALSE(g.pending());
  const GlyphPlan p = g.plan();
  EXPECT_TRUE(covers(p.sans, 'A'));
  EXPECT_TRUE(covers(p.sans, 0xFC));
  EXPECT_TRUE(p.sans_fallbacks.empty());
  EXPECT_EQ(p.sans.back(), 0);
}

TEST(GlyphSet, NewCharactersAreBuiltFromDejaVuOrMergedFromTheFiguresFont) {
  GlyphSet g;
  EXPECT_TRUE(g.note("\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xC5\x81\xC3\xB3\xC5\xBA"));  // Привет Łóź
  EXPECT_TRUE(g.note("\xE6\x97\xA5\xE6\x9C\xAC"));                                                   // 日本
  EXPECT_TRUE(g.pending());
  EXPECT_FALSE(g.note("\xE6\x97\xA5"));      // noted already
  EXPECT_FALSE(g.note("\xF0\x9F\x98\x80"));  // 😀: beyond ImGui's 16-bit characters
  EXPECT_TRUE(g.note("\xCD\xB8"));           // U+0378: noted, in no font
  const GlyphPlan p = g.plan();
  EXPECT_FALSE(g.pending());
  for (const std::uint32_t cp : {0x41Fu, 0x440u, 0x442u, 0x141u, 0x17Au}) {
    EXPECT_TRUE(covers(p.sans, cp)) << cp;
    EXPECT_TRUE(covers(p.mono, cp)) << cp;
  }
  EXPECT_FALSE(covers(p.sans, 0x65E5));
  ASSERT_EQ(p.sans_fallbacks.size(), 1u);
  EXPECT_EQ(p.sans_fallbacks[0].file.path, figure::fallback_font(0x65E5)->path);
  EXPECT_TRUE(covers(p.sans_fallbacks[0].ranges, 0x65E5));
  EXPECT_TRUE(covers(p.sans_fallbacks[0].ranges, 0x672C));
  EXPECT_FALSE(covers(p.sans_fallbacks[0].ranges, 0x41F));
  EXPECT_EQ(p.sans_fallbacks[0].ranges.back(), 0);
  ASSERT_EQ(p.mono_fallbacks.size(), 1u);
  EXPECT_EQ(p.unavailable, std::vector<std::uint32_t>{0x0378});
}

}  // namespace
}  // namespace mhaviz::gui
#endif

#if MHAVIZ_TEST_GUI_LOGIC
namespace mhaviz::gui {
namespace {

TEST(WideChars, AFieldHoldsCharactersBeyondU_FFFFAsAliasesAndGivesThemBack) {
  WideChars w;
  const std::string text = "ab \xF0\x9F\x98\x80 \xE6\x97\xA5 \xF0\x9F\x8E\x89\xF0\x9F\x98\x80";  // ab 😀 日 🎉😀
  const std::string field = w.to_field(text);
  // 😀 and 🎉 as U+FDD0 and U+FDD1, everything else as it was.
  EXPECT_EQ(field, "ab \xEF\xB7\x90 \xE6\x97\xA5 \xEF\xB7\x91\xEF\xB7\x90");
  EXPECT_EQ(w.from_field(field), text);
  // An edit of the field (a character typed at the end, as on_char sends it) comes back whole.
  std::string typed = field;
  append_utf8(typed, w.alias(0x1F389));  // 🎉 typed: the alias it already has
  append_utf8(typed, w.alias(0x1F680));  // 🚀 typed: a new alias
  EXPECT_EQ(w.from_field(typed), text + "\xF0\x9F\x8E\x89\xF0\x9F\x9A\x80");
  // The NUL ImGui left at the end of a text whose width changed is dropped.
  EXPECT_EQ(w.from_field(std::string("ab\0", 3)), "ab");
  // Text without such characters is unchanged both ways, broken bytes included.
  const std::string plain = "Privet \xD0\x9F \xE6\x97\xA5 \xF0\x9F";
  EXPECT_EQ(w.to_field(plain), plain);
  EXPECT_EQ(w.from_field(plain), plain);
  // An alias no character has yet is left as it is.
  EXPECT_EQ(w.from_field("\xEF\xB7\xAF"), "\xEF\xB7\xAF");
  // shown() uses the aliases there are and takes no new one (a tooltip's text).
  EXPECT_EQ(w.shown("\xF0\x9F\x98\x80 \xF0\x9F\x8C\x8D"), "\xEF\xB7\x90 \xF0\x9F\x8C\x8D");  // 😀 🌍
  EXPECT_EQ(w.chars().size(), 3u);
}

TEST(WideChars, PastThirtyTwoDistinctCharactersAFieldShowsTheReplacementCharacter) {
  WideChars w;
  for (std::uint32_t i = 0; i < 32; ++i) EXPECT_EQ(w.alias(0x1F600 + i), 0xFDD0 + i);
  EXPECT_EQ(w.alias(0x1F600 + 32), 0xFFFDu);
  EXPECT_EQ(w.alias(0x1F600), 0xFDD0u);
  EXPECT_EQ(w.alias(0x65E5), 0x65E5u);
}

}  // namespace
}  // namespace mhaviz::gui
#endif
