// Colormaps: anchor tables shared by the heatmap shader (uniforms) and the CPU
// (text contrast, colorbar ticks, capture sidecars), so both agree exactly.
#pragma once

#include <array>
#include <span>
#include <string_view>

namespace mhaviz::gui {

enum class Colormap { Viridis, Cividis, Magma, Diverging };
inline constexpr int kColormapCount = 4;

struct Rgb {
  float r, g, b;  // 0..1
};

std::string_view colormap_name(Colormap c);  // "viridis", ...
std::string_view colormap_title(Colormap c);  // "Viridis (colour-blind safe)", ...
bool parse_colormap(std::string_view name, Colormap& out);
// Evenly spaced anchors from t = 0 to t = 1 (at most 16).
std::span<const Rgb> colormap_anchors(Colormap c);
// Linear interpolation between anchors.
Rgb colormap_eval(Colormap c, float t);
// The 256-entry 8-bit table the heatmap shader samples (entry i is t = i / 255).
std::array<unsigned char, 3> colormap_lut(Colormap c, int i);

}  // namespace mhaviz::gui
