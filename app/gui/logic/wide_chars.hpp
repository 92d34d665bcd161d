// Characters beyond U+FFFF in ImGui's text fields. The ImGui here keeps a field's text in 16-bit
// characters: an emoji in a token became U+FFFD as soon as the field was edited (the token lost),
// and the field's byte count, taken before the change of width, left a NUL at the end of the
// text ("ab\0"). A field instead holds each such character as an alias, one of the 32
// noncharacters U+FDD0..U+FDEF (never assigned, meant for a program's internal use), and the
// text read back from the field has the character again. Typed and pasted characters take the
// same aliases (the app's key and clipboard callbacks), so an emoji can be typed into a token.
// The font atlas draws each alias as the character it stands for (rasterised as the figures draw
// it), so the fields, the token lists and the figures on screen show it as a capture does.
// Past 32 distinct such characters a field shows U+FFFD, as before.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/utf8.hpp"

namespace mhaviz::gui {

class WideChars {
 public:
  // cp itself up to U+FFFF; beyond, its alias (the same one every time), or U+FFFD once every
  // alias is taken.
  std::uint32_t alias(std::uint32_t cp);
  // Text for a field: every character beyond U+FFFF as its alias.
  std::string to_field(std::string_view text);
  // Text as the atlas draws it, without taking new aliases: a character beyond U+FFFF that has
  // none yet stays as it is (ImGui draws it as '?').
  std::string shown(std::string_view text) const;
  // A field's text back: aliases as the characters they stand for, and no NULs.
  std::string from_field(std::string_view field) const;
  // The characters aliased so far: chars()[i] is U+FDD0 + i (the atlas draws them there).
  const std::vector<std::uint32_t>& chars() const { return wide_; }

 private:
  std::vector<std::uint32_t> wide_;  // wide_[i]'s alias is U+FDD0 + i
};

}  // namespace mhaviz::gui
