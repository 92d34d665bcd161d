// Colormaps: anchor tables shared by the heatmap shader (uniforms), the CPU figure renderer
// (mhaviz render, captures) and the GUI (text contrast, colorbar ticks), so all agree exactly.
#pragma once

#include <array>
#include <span>
#include <string_view>

namespace mhaviz::figure {

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

// How values map to colours: one definition for the app's heatmaps and shader, its
// colorbar, and the figures, so a capture shows exactly the colours on screen.
struct ColorScale {
  float vmin = 0, vmax = 1;
  Colormap cmap = Colormap::Viridis;
  bool log = false;  // logarithmic from vmin > 0 to vmax
};
// lo, hi: extremes of the values shown (one that is not finite is ignored); min_pos: smallest
// value > 0 (0 if none). Signed values (scores) on the diverging map (diverging_for_signed, or
// the map picked) get a range symmetric about zero, [-max |v|, max |v|]; on a sequential map
// [lo, hi]. Weights start at zero, or (log_scale) at the floor: the smallest positive weight,
// but at most four decades below the largest (vmin = max(min_pos, hi / 10^4)).
ColorScale color_scale(float lo, float hi, float min_pos, bool signed_values, Colormap sequential,
                       bool diverging_for_signed, bool log_scale);
// Position on the scale (0..1, not clamped) of a value, and back; as shaders/heatmap.frag maps it.
float scale_t(const ColorScale& r, float v);
float scale_value(const ColorScale& r, float t);

}  // namespace mhaviz::figure
