#include "figure/colormap.hpp"

#include <algorithm>
#include <cmath>

namespace mhaviz::figure {
namespace {

constexpr Rgb hex(unsigned v) {
  return {static_cast<float>((v >> 16) & 0xff) / 255.0f, static_cast<float>((v >> 8) & 0xff) / 255.0f,
          static_cast<float>(v & 0xff) / 255.0f};
}

// matplotlib's viridis, cividis and magma sampled at even steps; coolwarm (Moreland) for
// signed values, neutral at the centre.
constexpr std::array kViridis = {hex(0x440154), hex(0x482475), hex(0x414487), hex(0x355f8d),
                                 hex(0x2a788e), hex(0x21918c), hex(0x22a884), hex(0x44bf70),
                                 hex(0x7ad151), hex(0xbddf26), hex(0xfde725)};
constexpr std::array kCividis = {hex(0x00204d), hex(0x00336f), hex(0x39486b), hex(0x575d6d),
                                 hex(0x707173), hex(0x8a8779), hex(0xa69d75), hex(0xc4b56c),
                                 hex(0xe4cf5b), hex(0xfee838)};
constexpr std::array kMagma = {hex(0x000004), hex(0x140e36), hex(0x3b0f70), hex(0x641a80),
                               hex(0x8c2981), hex(0xb73779), hex(0xde4968), hex(0xf7705c),
                               hex(0xfe9f6d), hex(0xfecf92), hex(0xfcfdbf)};
constexpr std::array kDiverging = {hex(0x3b4cc0), hex(0x7b9ff9), hex(0xc0d4f5), hex(0xdddcdc),
                                   hex(0xf2cbb7), hex(0xee8468), hex(0xb40426)};

}  // namespace

std::string_view colormap_name(Colormap c) {
  switch (c) {
    case Colormap::Viridis: return "viridis";
    case Colormap::Cividis: return "cividis";
    case Colormap::Magma: return "magma";
    case Colormap::Diverging: return "diverging";
  }
  return "viridis";
}

std::string_view colormap_title(Colormap c) {
  switch (c) {
    case Colormap::Viridis: return "Viridis (colour-blind safe)";
    case Colormap::Cividis: return "Cividis (colour-blind safe)";
    case Colormap::Magma: return "Magma";
    case Colormap::Diverging: return "Diverging (blue - white - red)";
  }
  return "Viridis";
}

bool parse_colormap(std::string_view name, Colormap& out) {
  for (int i = 0; i < kColormapCount; ++i) {
    if (colormap_name(static_cast<Colormap>(i)) == name) {
      out = static_cast<Colormap>(i);
      return true;
    }
  }
  return false;
}

std::span<const Rgb> colormap_anchors(Colormap c) {
  switch (c) {
    case Colormap::Viridis: return kViridis;
    case Colormap::Cividis: return kCividis;
    case Colormap::Magma: return kMagma;
    case Colormap::Diverging: return kDiverging;
  }
  return kViridis;
}

Rgb colormap_eval(Colormap c, float t) {
  const auto a = colormap_anchors(c);
  t = std::clamp(t, 0.0f, 1.0f);
  const float x = t * static_cast<float>(a.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(x));
  if (i >= a.size() - 1) return a.back();
  const float f = x - static_cast<float>(i);
  return {a[i].r + (a[i + 1].r - a[i].r) * f, a[i].g + (a[i + 1].g - a[i].g) * f,
          a[i].b + (a[i + 1].b - a[i].b) * f};
}

std::array<unsigned char, 3> colormap_lut(Colormap c, int i) {
  const Rgb rgb = colormap_eval(c, static_cast<float>(std::clamp(i, 0, 255)) / 255.0f);
  const auto q = [](float v) { return static_cast<unsigned char>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); };
  return {q(rgb.r), q(rgb.g), q(rgb.b)};
}

ColorScale color_scale(float lo, float hi, float min_pos, bool signed_values, Colormap sequential,
                       bool diverging_for_signed, bool log_scale) {
  // An extreme that is not finite (a masked cell's -inf) says nothing about the range.
  if (!std::isfinite(lo)) lo = std::isfinite(hi) ? hi : 0.0f;
  if (!std::isfinite(hi)) hi = lo;
  if (!std::isfinite(min_pos)) min_pos = 0.0f;
  ColorScale out{lo, hi, sequential};
  // Signed values on the diverging map, whether the signed stages ask for it or it is the
  // map picked: zero is its neutral middle, so the range is as wide below zero as above,
  // whichever sign reaches further.
  if (signed_values && (diverging_for_signed || sequential == Colormap::Diverging)) {
    const float m = std::max(std::fabs(lo), std::fabs(hi));
    out = {-m, m, Colormap::Diverging};
  } else if (!signed_values) {
    out.vmin = std::min(0.0f, lo);  // weights: zero is the bottom of the scale
    if (log_scale && hi > 0.0f && min_pos > 0.0f) {
      out.vmin = std::max(min_pos, hi * 1e-4f);
      out.log = out.vmin < hi;
      if (!out.log) out.vmin = std::min(0.0f, lo);
    }
  }
  if (!(out.vmax > out.vmin)) {  // one value everywhere: a range around it
    out.vmin -= 0.5f;
    out.vmax += 0.5f;
  }
  return out;
}

float scale_t(const ColorScale& r, float v) {
  if (r.log) return v <= r.vmin ? 0.0f : std::log(v / r.vmin) / std::log(r.vmax / r.vmin);
  return (v - r.vmin) / (r.vmax - r.vmin);
}

float scale_value(const ColorScale& r, float t) {
  if (r.log) return r.vmin * std::pow(r.vmax / r.vmin, t);
  return r.vmin + t * (r.vmax - r.vmin);
}

}  // namespace mhaviz::figure
