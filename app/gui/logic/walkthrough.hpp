// State of the animated walkthrough of the multi-head pipeline and of its "Compare variants"
// tab: wrapper vs weight split, and the attention variants (panel_walkthrough.cpp). Part of
// AppState; no function-local statics.
#pragma once

#include <array>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "figure/walk_figure.hpp"
#include "figure/walk_values.hpp"
#include "mhaviz/layout.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/trace.hpp"
#include "mhaviz/variant_compare.hpp"

namespace mhaviz::gui {

// The "Compare variants" tab's data, rebuilt when the trace changes (never per frame).
struct Comparison {
  std::uint64_t generation = ~std::uint64_t{0};  // compute.generation it was built for
  bool valid = false;
  std::string note;               // what is compared and how the pair was built, or why it could not be
  Trace wrapper, split;           // forward of the wrapper and of weight_split_from_wrapper
  double max_diff_weights = 0.0;  // max |wrapper - split| over every head's attention weights
  double max_diff_output = 0.0;
  int d_in = 0, tokens = 0, batch = 0, heads = 0, head_dim = 0;
  struct Row {
    int heads = 0;
    Cost wrapper, split, fused;
    double wrapper_ms = 0.0, split_ms = 0.0, fused_ms = 0.0;  // median forward() times (< 0: not timed)
    int samples = 0, per_sample = 0;                          // of the wrapper's timing (the others alike)
  };
  std::vector<Row> rows;  // the current size first, then growing num_heads
  // GQA, MQA, MLA and SWA against MHA at the session's size: equivalences and costs.
  VariantComparison variants;
};

struct Walkthrough {
  bool options_applied = false;  // --walkthrough applied on the first frame
  int tab = 0;                   // 0 = walkthrough, 1 = compare variants
  int compare_part = 0;          // the compare tab shows 0 = wrapper vs weight split, 1 = GQA, MQA, MLA, SWA
  int request_tab = -1;          // select this tab next frame (options, menu)

  // Position along the steps: an integer is a step shown still; a fraction is the
  // animation from step floor(pos) to the next.
  float pos = 0.0f;
  float target = 0.0f;  // pos moves towards it (step buttons and keys animate)
  bool playing = false;
  float speed = 1.0f;       // 1 = one transition in kTransitionSeconds
  double hold_until = 0.0;  // playing: time to leave the current step
  double last_time = 0.0;

  bool mistaken = false;     // "common mistake": merge by plain reshape, no transpose back
  int pane = 0;              // Q | K | V panes shown: 0 Q, 1 K, 2 V, 3 all
  bool values = true;        // numbers in cells when they fit
  bool show_weights = true;  // draw Wᵀ between X and Q in the projection step

  // Selected element: hovered this frame, else pinned by a click. step is an index in
  // the step list; flat is the element's index in that step's layout (batch item 0 layout).
  int hover_step = -1;
  std::int64_t hover_flat = -1;
  int pin_step = -1;
  std::int64_t pin_flat = -1;

  // Mistaken merge of the current trace and the output it leads to (cached per generation).
  std::uint64_t mistaken_generation = ~std::uint64_t{0};
  figure::Mistake mistake;

  figure::WalkPlan plan;  // every step's size on the canvas (rebuilt when the canvas or the sizes change)
  // The picture on screen and what it was built from (rebuilt while moving, else on change).
  figure::WalkPicture picture;
  figure::WalkInput picture_in;
  figure::Options picture_opts;
  std::uint64_t picture_generation = ~std::uint64_t{0};
  Comparison cmp;
  std::future<Comparison> cmp_job;  // computing off the UI thread (walk_compare.hpp)
  std::uint64_t cmp_job_generation = ~std::uint64_t{0};
  int cmp_job_heads = 0;
  int cmp_max_heads = 16;  // growth table: num_heads from 1 to this
};

}  // namespace mhaviz::gui
