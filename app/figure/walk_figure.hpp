// The walkthrough as figures: every step of the multi-head pipeline (X -> Q/K/V -> view ->
// transpose -> scores -> mask -> softmax -> dropout -> context -> transpose back -> merge ->
// out_proj) and every moment of the animation between two steps, built once, here, as a
// display list. The app draws it on screen (its panel adds the buttons and the inspector);
// `mhaviz render --view step` and the app's captures draw the same list on the CPU.
//
// Positions of every element come from core/layout (mhaviz/layout.hpp); values, names,
// colours and labels from the shared table (walk_values.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "figure/walk_values.hpp"
#include "mhaviz/layout.hpp"

namespace mhaviz::figure {

// What a walkthrough picture shows.
struct WalkInput {
  const Trace* trace = nullptr;
  const Model* model = nullptr;  // its W for the Wᵀ panes and the inspector (null: none drawn)
  const std::vector<std::string>* tokens = nullptr;
  const Mistake* mistake = nullptr;  // make_mistake of the trace; needed when mistaken
  int batch = 0;
  bool mistaken = false;  // the seeds' merge without the transpose back (not for the wrapper)
  int pane = 0;           // Q | K | V shown: 0 Q, 1 K, 2 V, 3 all
  bool numbers = true;    // numbers in cells when they fit
  bool weights = true;    // Wᵀ beside the projections (X · Wᵀ = Q, merged · W_outᵀ = output)
  // Position along the steps: an integer is a step shown still; a fraction is the
  // animation from step floor(pos) to the next.
  float pos = 0.0f;
  // The element followed (hovered or pinned): a step index and a flat index in that step's
  // layout (batch item 0); -1: none.
  int selected_step = -1;
  std::int64_t selected_flat = -1;
  bool operator==(const WalkInput&) const = default;
};

// The step list of an input (the mistake changes it), and the element followed at step k.
std::vector<layout::Step> walk_steps(const WalkInput& in);
std::int64_t walk_selected_in(const WalkInput& in, int k);

// Cell size, blocks side by side and window of every step for one canvas and typography:
// the largest cells that fit, with a window of rows and columns (ellipses) where a step would
// get cells too small to read or to hold their numbers. Built when one of its inputs changes
// (the app caches it), not every frame.
struct WalkPlan {
  struct Key {
    Canvas canvas;
    Typography type;
    int variant = -1, tokens = 0, d_in = 0, heads = 0, head_dim = 0, kv_heads = 0, pane = 0, steps = 0;
    bool weights = false, mistaken = false, numbers = false;
    bool operator==(const Key&) const = default;
  } key;
  std::vector<float> cs;                          // cell size of each step (logical pixels)
  std::vector<int> bcols;                         // blocks side by side
  std::vector<std::array<std::int64_t, 3>> lims;  // window (blocks, rows, cols) of each step
  std::vector<char> weights;                      // Wᵀ drawn beside a step's projection (it fits)
  std::vector<int> title_lines;                   // lines a pane title may take in each step
  std::vector<char> strip;                        // the chain strip beside a step (its cells stay readable)
  std::vector<float> text;                        // the scene's text size in each step (Frame::set_text)
  int builds = 0;                                 // times built (tests: cached, not per frame)
};
WalkPlan::Key walk_plan_key(const WalkInput& in, const Options& o);
// Rebuilds plan when its key differs from in/o's; true when it did.
bool update_walk_plan(WalkPlan& plan, const WalkInput& in, const Options& o);

// What a picture drew, for the tests (--layout-out / --state-out): pane titles of the step's
// result and of the grids it reads, block and key labels, the first cells as printed.
struct WalkRecord {
  int cells = 0;
  int legend_swatches = 0;
  std::vector<std::string> titles, block_labels, key_labels, values, operand_titles, operand_values;
  bool operator==(const WalkRecord&) const = default;
};

// The picture at in.pos (a figure of at most o.canvas) and where its result grid is, for the
// screen's hit tests: cell (pane, block, row, col) of `result` is at layout::point_of(result,
// cell) * cs + (ox, oy), shifted left by `shift` cell units (panes not drawn).
struct WalkPicture {
  Figure fig;
  bool moving = false;
  int step = 0;  // the step shown (the one being entered while moving)
  layout::Layout result;
  float ox = 0, oy = 0, cs = 1, shift = 0;
  int pane_first = 0, pane_last = 0;
  WalkRecord record;
  // The result cell under a figure point (false: none, or while moving).
  bool cell_at(float x, float y, layout::Cell& out) const;
};
WalkPicture walk_picture(const WalkInput& in, const WalkPlan& plan, const Options& o);

// A step as a still figure with its own plan: `mhaviz render --view step`, captures.
Figure walk_step_figure(const WalkInput& in, const Options& o);

// [SECTION] The inspector: how the followed element is computed, as text
struct Inspection {
  struct Line {
    std::string text;
    bool dim = false;
  };
  struct Table {  // the softmax row: header, then rows of cells (dim: masked)
    std::vector<std::string> header;
    std::vector<std::vector<Line>> rows;
  };
  struct Item {
    Line line;
    Table table;  // a table when its header is not empty
  };
  std::vector<Item> items;
  void text(std::string s) { items.push_back({{std::move(s), false}, {}}); }
  void dim(std::string s) { items.push_back({{std::move(s), true}, {}}); }
  Table& table() {
    items.push_back({});
    return items.back().table;
  }
};
// Step k with element `flat` followed (-1: none; the softmax step then explains the last row
// of head `softmax_head`).
Inspection inspect(const WalkInput& in, int k, std::int64_t flat, int softmax_head);

}  // namespace mhaviz::figure
