// The KV cache's size against the context length, one line per variant of the memory table
// (kv_memory.hpp: MHA, GQA, MLA, and with a window MHA + SWA and GQA + SWA dashed in their
// base's colour), on a log2 context axis, as the book's plot_memory_estimates_*.py plot it.
// `mhaviz kv-memory --plot FILE` draws it.
#pragma once

#include "figure/figure.hpp"
#include "mhaviz/kv_memory.hpp"

namespace mhaviz::figure {

// Within o.canvas, for m's sizes from a short context to m.context. Uses o.canvas, o.type,
// o.dark, o.transparent, o.caption. Hit: "kv_memory_plot".
Figure build_kv_memory_figure(const KvModel& m, const Options& o);

}  // namespace mhaviz::figure
