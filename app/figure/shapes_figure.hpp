// The strip under the centre view: the shapes of the main tensors along the pipeline, what
// the module costs, as one figure (the app's strip; the model view has its own items).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "figure/figure.hpp"

namespace mhaviz::figure {

struct ShapesStrip {
  struct Item {
    std::string name;   // "x", "Q,K,V", ... (accent colour); the hit is "shape_" + name
    std::string shape;  // "(2, 6, 3)"
    std::string tip;    // what the dimensions are, as the seeds write them (the tooltip)
  };
  std::vector<Item> items;       // joined by arrows, wrapped at the canvas's width
  std::string first;             // the second line's first note (its hit: "parameters")
  std::vector<std::string> notes;  // the rest of the second line, dimmer
};

// The lesson's strip: x -> (qkv) -> Q,K,V -> q,k,v -> scores -> weights -> context -> merged -> output,
// the parameter count, head_dim, matmul calls, FLOPs and the forward's time.
ShapesStrip lesson_shapes(const Trace& t, std::int64_t parameters, double forward_ms, bool stale);

// "124,439,808"
std::string thousands(std::int64_t v);

// The strip at o.canvas.width (o.type, o.dark); its height is what the items need.
Figure shapes_figure(const ShapesStrip& s, const Options& o);

}  // namespace mhaviz::figure
