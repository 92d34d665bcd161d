// The attention variants side by side (core's variant_compare.hpp): each equivalence with its
// max |difference| in words, and the cost table, one row per variant and a bar per column
// (parameters, FLOPs, KV cache per token and at the context length) with its ratio to MHA.
// The walkthrough's "Compare variants" tab draws it, F12 captures it, and
// `mhaviz render SESSION --view variants` draws the same one.
#pragma once

#include "figure/figure.hpp"
#include "mhaviz/variant_compare.hpp"

namespace mhaviz::figure {

// Within o.canvas.width (taller when it needs to be). Uses o.canvas, o.type, o.dark,
// o.transparent, o.caption. Hits: "equivalence_K" per line, "cost_NAME" per row ("cost_GQA").
Figure build_variant_figure(const VariantComparison& c, const Options& o);

}  // namespace mhaviz::figure
