// Which characters the app's font atlas holds. It starts with Latin-1 and the UI's symbols;
// any other character the app is about to draw (a Russian or Chinese token, a path, a typed
// text) is noted, and the atlas is built again before the next frame with it: from the
// embedded DejaVu where it has the glyph, else merged from the installed font the figures
// draw it with (figure::fallback_font), so the screen shows what a capture shows. ImGui's
// characters are 16 bits here: beyond U+FFFF (most emoji) the screen keeps its '?'.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "figure/text.hpp"

namespace mhaviz::gui {

// Ranges as ImGui reads them: pairs of first and last code point, then a 0.
using GlyphRanges = std::vector<std::uint16_t>;

struct GlyphPlan {
  GlyphRanges sans, mono;  // from the embedded DejaVu faces
  struct Merged {
    figure::FontFile file;
    GlyphRanges ranges;
  };
  std::vector<Merged> sans_fallbacks, mono_fallbacks;  // merged into each face, in this order
  std::vector<std::uint32_t> unavailable;              // noted, but no font has them
};

class GlyphSet {
 public:
  // The atlas always holds Latin-1 and the symbols the UI and the stage titles use (dashes,
  // quotes, Greek, ‖, ellipsis, arrows, √, ∞, ᵀ, −, ≠, ≤, ≥, and ␣: GPT-2's leading space made
  // visible in tokens).
  GlyphSet();
  // Notes the text's characters; true when one of them is not in the atlas yet (build again).
  bool note(std::string_view text);
  bool pending() const { return pending_; }
  // What the next build holds: the base, then every character noted so far. Clears pending.
  GlyphPlan plan();
  const std::vector<std::uint32_t>& noted() const { return extra_; }

 private:
  bool in_base(std::uint32_t cp) const;
  GlyphRanges base_;
  std::vector<bool> seen_;            // by code point, U+0000 to U+FFFF
  std::vector<std::uint32_t> extra_;  // noted beyond the base, in the order seen
  bool pending_ = false;
};

}  // namespace mhaviz::gui
