// Text metrics and glyphs of the embedded DejaVu fonts (stb_truetype), shared by the
// figure layout and the rasteriser so that what is measured is what is drawn. A character
// DejaVu has no glyph for (Chinese, Japanese, Thai, ...) is drawn from an installed font that
// has one, as fontconfig finds it; the app's font atlas merges the same fonts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mhaviz::figure {

// Next code point of UTF-8 text at i (advances i); U+FFFD for a broken sequence.
std::uint32_t next_codepoint(std::string_view s, std::size_t& i);

// A font file's bytes (alive as long as the process) and its face's number in a collection.
struct FontFile {
  std::string_view bytes;
  int number = 0;
  std::string path;
};

// Whether the embedded DejaVu (sans or mono) has a glyph for code point cp.
bool embedded_has(std::uint32_t cp, bool mono);
// The installed font the figures draw cp from where DejaVu has no glyph for it; nullopt where
// DejaVu has one or no installed font does (DejaVu's missing-glyph box is drawn). Thread-safe.
std::optional<FontFile> fallback_font(std::uint32_t cp, bool mono = false);

float text_width(std::string_view s, float size, bool mono = false);
float text_ascent(float size, bool mono = false);  // baseline below the top of the line

// The text shortened with an ellipsis to fit max_w (whole code points).
std::string fit_text(const std::string& s, float size, float max_w, bool mono = false);

// The words of s (split at spaces) in lines no wider than max_w as `width` measures a line; a
// word wider than that is a line of its own. Never breaks inside a word ("0.1" stays whole).
std::vector<std::string> word_lines(const std::string& s, float max_w,
                                    const std::function<float(const std::string&)>& width);
// A path (or a line holding one) in lines no wider than max_w, broken after a '/' or a space,
// never inside a name; a name wider than max_w is a line of its own. Lines keep their '/' at
// the end and lose trailing spaces.
std::vector<std::string> path_lines(const std::string& s, float max_w,
                                    const std::function<float(const std::string&)>& width);
// word_lines at this font size, a word wider than max_w shortened with an ellipsis.
std::vector<std::string> wrap(const std::string& s, float size, float max_w);
// wrap on at most `most` lines (most >= 1), the last cut with an ellipsis where the words need more.
std::vector<std::string> wrap(const std::string& s, float size, float max_w, std::size_t most);

// Coverage (0..255) of text drawn with its baseline start at (x, y) in a w x h buffer,
// added with max(): glyph boxes may overlap.
void draw_text_coverage(std::vector<std::uint8_t>& cov, int w, int h, float x, float y, std::string_view s, float size,
                        bool mono);

}  // namespace mhaviz::figure
