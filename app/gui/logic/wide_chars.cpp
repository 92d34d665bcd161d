#include "wide_chars.hpp"

#include <algorithm>

#include "figure/text.hpp"

namespace mhaviz::gui {
namespace {
constexpr std::uint32_t kFirstAlias = 0xFDD0, kAliases = 32;
}

std::uint32_t WideChars::alias(std::uint32_t cp) {
  if (cp <= 0xFFFF) return cp;
  const auto it = std::find(wide_.begin(), wide_.end(), cp);
  if (it != wide_.end()) return kFirstAlias + static_cast<std::uint32_t>(it - wide_.begin());
  if (wide_.size() == kAliases) return 0xFFFD;
  wide_.push_back(cp);
  return kFirstAlias + static_cast<std::uint32_t>(wide_.size() - 1);
}

std::string WideChars::shown(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t start = i;
    const std::uint32_t cp = figure::next_codepoint(text, i);
    const auto it = cp > 0xFFFF ? std::find(wide_.begin(), wide_.end(), cp) : wide_.end();
    if (it != wide_.end())
      append_utf8(out, kFirstAlias + static_cast<std::uint32_t>(it - wide_.begin()));
    else
      out.append(text.substr(start, i - start));
  }
  return out;
}

std::string WideChars::to_field(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0xF0) {  // up to U+FFFF (or a broken byte): as it is
      out += text[i++];
      continue;
    }
    const std::size_t start = i;
    const std::uint32_t cp = figure::next_codepoint(text, i);
    if (cp > 0xFFFF)
      append_utf8(out, alias(cp));
    else
      out.append(text.substr(start, i - start));
  }
  return out;
}

std::string WideChars::from_field(std::string_view field) const {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size();) {
    if (field[i] == '\0') {
      ++i;
      continue;
    }
    if (static_cast<unsigned char>(field[i]) != 0xEF) {  // the aliases' UTF-8 starts EF B7
      out += field[i++];
      continue;
    }
    const std::size_t start = i;
    const std::uint32_t cp = figure::next_codepoint(field, i);
    if (cp >= kFirstAlias && cp - kFirstAlias < wide_.size())
      append_utf8(out, wide_[cp - kFirstAlias]);
    else
      out.append(field.substr(start, i - start));
  }
  return out;
}

}  // namespace mhaviz::gui
