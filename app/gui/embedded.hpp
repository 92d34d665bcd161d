// Files embedded at build time by cmake/Embed.cmake (see app/gui/CMakeLists.txt).
#pragma once

#include <string_view>
#include <vector>

namespace mhaviz {
std::string_view embedded_shader(std::string_view name);  // "heatmap.vert", "heatmap.frag"
const std::vector<std::string_view>& embedded_shader_names();
std::string_view embedded_font(std::string_view name);  // "DejaVuSans.ttf", "DejaVuSansMono.ttf"
const std::vector<std::string_view>& embedded_font_names();
}  // namespace mhaviz
