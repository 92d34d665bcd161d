// The colormaps live in the figure library (app/figure), shared with `mhaviz render`, so
// that the GUI, the CLI and captures use one set of tables.
#pragma once

#include "figure/colormap.hpp"

namespace mhaviz::gui {

using figure::ColorScale;
using figure::Colormap;
using figure::kColormapCount;
using figure::Rgb;
using figure::color_scale;
using figure::colormap_anchors;
using figure::colormap_eval;
using figure::colormap_lut;
using figure::colormap_name;
using figure::colormap_title;
using figure::parse_colormap;
using figure::scale_t;
using figure::scale_value;

}  // namespace mhaviz::gui
