// Where a heatmap is in an image and how its colours read, as the JSON sidecars give it: one
// writer for `mhaviz render --cells-json`, the app's captures and its --screenshot sidecar.
#pragma once

#include <nlohmann/json.hpp>

#include "figure/colormap.hpp"

namespace mhaviz::figure {

struct HeatmapPlacement {
  int head = 0;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // image pixels
  int rows = 0, cols = 0;
  float vmin = 0, vmax = 1;
  Colormap cmap = Colormap::Viridis;
  bool log = false;
};
// {"head", "x0", "y0", "x1", "y1", "rows", "cols", "vmin", "vmax", "colormap", "log"}
nlohmann::json placement_json(const HeatmapPlacement& p);

}  // namespace mhaviz::figure
