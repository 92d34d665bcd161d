#include "glyph_set.hpp"

#include <algorithm>
#include <map>

namespace mhaviz::gui {
namespace {

// Sorted code points as ranges of consecutive ones, 0-terminated.
GlyphRanges ranges_of(std::vector<std::uint32_t> cps, const GlyphRanges& first) {
  GlyphRanges out(first.begin(), first.end() - (first.empty() ? 0 : 1));
  std::sort(cps.begin(), cps.end());
  for (std::size_t i = 0; i < cps.size();) {
    std::size_t j = i;
    while (j + 1 < cps.size() && cps[j + 1] == cps[j] + 1) ++j;
    out.push_back(static_cast<std::uint16_t>(cps[i]));
    out.push_back(static_cast<std::uint16_t>(cps[j]));
    i = j + 1;
  }
  out.push_back(0);
  return out;
}

void plan_face(const std::vector<std::uint32_t>& cps, bool mono, const GlyphRanges& base, GlyphRanges& own,
               std::vector<GlyphPlan::Merged>& merged, std::vector<std::uint32_t>* unavailable) {
  std::vector<std::uint32_t> embedded;
  std::map<std::pair<std::string, int>, std::pair<figure::FontFile, std::vector<std::uint32_t>>> by_file;
  std::vector<std::pair<std::string, int>> order;
  for (const std::uint32_t cp : cps) {
    if (figure::embedded_has(cp, mono)) {
      embedded.push_back(cp);
    } else if (const auto f = figure::fallback_font(cp, mono)) {
      const auto key = std::make_pair(f->path, f->number);
      auto [it, fresh] = by_file.try_emplace(key, *f, std::vector<std::uint32_t>{});
      if (fresh) order.push_back(key);
      it->second.second.push_back(cp);
    } else if (unavailable != nullptr) {
      unavailable->push_back(cp);
    }
  }
  own = ranges_of(embedded, base);
  merged.clear();
  for (const auto& key : order) {
    const auto& [file, those] = by_file.at(key);
    merged.push_back({file, ranges_of(those, {})});
  }
}

}  // namespace

GlyphSet::GlyphSet()
    : base_{0x0020, 0x00FF, 0x0391, 0x03C9, 0x1D40, 0x1D40, 0x2013, 0x201D, 0x2026, 0x2026, 0x2190, 0x2193, 0x2212,
            0x2212, 0x221A, 0x221A, 0x221E, 0x221E, 0x2260, 0x2260, 0x2264, 0x2265, 0x2423, 0x2423, 0},
      seen_(0x10000, false) {}

bool GlyphSet::in_base(std::uint32_t cp) const {
  for (std::size_t i = 0; i + 1 < base_.size(); i += 2)
    if (cp >= base_[i] && cp <= base_[i + 1]) return true;
  return false;
}

bool GlyphSet::note(std::string_view text) {
  bool fresh = false;
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII: in every atlas
      ++i;
      continue;
    }
    const std::uint32_t cp = figure::next_codepoint(text, i);
    if (cp > 0xFFFF || seen_[cp]) continue;
    seen_[cp] = true;
    if (in_base(cp)) continue;
    extra_.push_back(cp);
    fresh = true;
  }
  pending_ = pending_ || fresh;
  return fresh;
}

GlyphPlan GlyphSet::plan() {
  GlyphPlan p;
  plan_face(extra_, false, base_, p.sans, p.sans_fallbacks, &p.unavailable);
  plan_face(extra_, true, base_, p.mono, p.mono_fallbacks, nullptr);
  pending_ = false;
  return p;
}

}  // namespace mhaviz::gui
