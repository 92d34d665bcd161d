// The walkthrough figures' pieces (walk_scene.cpp: what each step draws and where, the plan;
// walk_paint.cpp: cells, labels, the animated move, operands, the chain strip;
// walk_picture.cpp: a whole picture; walk_inspect.cpp: the inspector's text). Internal to
// app/figure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "figure/builder.hpp"
#include "figure/walk_figure.hpp"
#include "figure/walk_values.hpp"

namespace mhaviz::figure::walk {

namespace lay = mhaviz::layout;
using detail::Builder;

enum class RowLabels { None, Tokens, Heads };
enum class BlockLabels { None, Tokens, Heads, Modules };

// One tensor drawn as a grid of cells (a step's result, or an operand beside it).
struct Grid {
  lay::Layout l;
  int pane_first = 0, pane_last = 0;  // panes drawn
  std::function<float(std::int64_t)> value;
  std::function<int(std::int64_t)> state;  // 0 normal, 1 masked (-inf), 2 dropped; may be empty
  Tint tint = Tint::Head;
  std::vector<std::string> pane_titles;  // one per pane
  RowLabels rows = RowLabels::Tokens;
  BlockLabels blocks = BlockLabels::None;
  bool col_heads = false;   // label column groups "head i" (Matrix split by head)
  bool col_tokens = false;  // label columns with the key tokens (T x T attention grids)
  // Merge grids: the context element (b, t, head, d) a cell holds; colours cells by that head
  // and tags them with its token, so a scrambled merge shows where each value came from.
  std::function<lay::HeadIndex(std::int64_t)> source;
  // Cells that differ from the correct merge (the mistake), outlined in red.
  std::function<bool(std::int64_t)> wrong;
  // gqa: the grid's heads are K/V heads ("kv 1"), or query heads that read the K/V head
  // reads(h) (labelled "head 2 ← kv 1"); read_hue: cells in that K/V head's hue (the expansion,
  // whose blocks are copies of it). wrong_block: a block the mistake pairs with the wrong K/V head.
  bool kv_heads = false;
  std::function<int(int)> reads;
  bool read_hue = false;
  int decimals = -1;  // numbers with this many decimals (the output as the book prints it); -1: format_value
  float vmax = 1.0f;  // largest |value| shown (Diverging, Weights)
  // Placement (logical pixels)
  float ox = 0, oy = 0;  // top-left of the cells
  float left = 0, top = 0;
  const char* op_after = nullptr;  // operator drawn between this grid and the next ("·", "=", "→")
};

struct Scene {
  std::vector<Grid> grids;
  int result = 0;  // index of the grid the step produces (the moving one)
};

// Everything a picture's pieces share: the input, the step list, the sizes of the step
// being drawn, and where primitives go (B: null while planning, when only sizes matter).
struct Frame {
  Frame(const WalkInput& input, const Options& options);
  // The scene's text size (labels, numbers, titles of grids) and what follows from it: the
  // operators', the gaps, the token labels' widths. The typography's label size, or smaller for
  // a step whose scene does not fit its canvas otherwise (plan_steps); the header keeps its own.
  void set_text(float size);
  const WalkInput& in;
  const Options& o;
  const Trace& tr;
  StepSource src;
  int b = 0;
  lay::Dims dims;  // batch 1: one batch item drawn
  std::vector<lay::Step> steps;
  float cs = 32.0f;       // cell size
  float gap_px = 18.0f;   // between blocks
  float pane_px = 24.0f;  // between panes
  float sfh = 13.0f;      // the walkthrough's text size (labels, numbers)
  float op_size = 17.0f;  // operators between grids
  std::int64_t lim_blocks = 0, lim_rows = 0, lim_cols = 0;
  int block_cols = 1;       // blocks side by side (chosen per step to make cells large)
  int title_lines = 1;      // lines a pane title may take (2 where one line would shrink the cells)
  float token_w = 0.0f;     // widest token label (capped)
  float key_w = 0.0f;       // widest token (key column labels)
  bool weights_fit = true;  // Wᵀ is drawn only when it fits without hiding columns
  bool strip_fit = true;    // the chain strip is drawn only when the scene beside it stays readable
  // Pane titles measured with the note of numbered key columns ("· columns: keys by
  // position"): always when drawing, and while planning at the size a step is about to get.
  bool title_notes = false;
  Builder* B = nullptr;
  detail::Theme th;
  int cells = 0;
  int legend_swatches = 0;
  WalkRecord* rec = nullptr;   // what the result and operand grids printed (tests)
  float right_limit = 1.0e9f;  // moving cells never swing past this x (the scene's canvas)
};

inline const std::vector<std::string>& tokens(const Frame& f) { return *f.in.tokens; }
inline int step_count(const Frame& f) { return static_cast<int>(f.steps.size()); }
float text_w(const Frame& f, const std::string& s, float size = 0.0f);  // size 0: f.sfh
// A pane title on at most f.title_lines lines: whole where it fits `room` (its pane's width in
// pixels), else broken at the space (or the run of spaces between a name and its shape) that
// leaves the narrower longest line.
std::vector<std::string> title_lines(const Frame& f, const std::string& t, float room);
const std::string& pane_title(const Grid& g, int pane);  // its own, else the grid's one title
// What a pane title of g says after its name where its key columns are numbered for want of
// room ("  · columns: keys by position"), as drawn (and planned with Frame::title_notes).
std::string title_note(const Frame& f, const Grid& g);
std::string title_note(const ColumnLabels& keys);  // the same from labels already made
// Numbers in cells: the size they are printed at in a cell of size cs, and whether the
// widest of `decimals` decimals (-1: format_value's) fits.
float number_size(const Frame& f, float cs, int decimals);
bool numbers_fit(const Frame& f, float cs, int decimals);

// [SECTION] Values of each step's tensor for the selected batch item
inline float at(const Tensor& t, std::int64_t i) {
  if (i < 0 || i >= t.numel()) return 0.0f;
  return t.data[static_cast<std::size_t>(i)];
}
inline int panes_drawn(const Grid& g) { return g.pane_last - g.pane_first + 1; }
inline float pane_shift(const Grid& g) {  // cell units removed from x for the first drawn pane
  return static_cast<float>(g.pane_first) * (lay::pane_width(g.l) + g.l.pane_gap);
}
inline bool pane_drawn(const Grid& g, int pane) { return pane >= g.pane_first && pane <= g.pane_last; }

struct Point {
  float x = 0, y = 0;
};

// How a cell is drawn.
struct Look {
  Color fill;
  Color text;
  std::string label;
  std::string tag;  // small corner text (source token of a merged value)
  int state = 0;
};

constexpr float kOpWidthFactor = 2.2f;  // operator column, in text heights
inline constexpr Color kSelect{255, 255, 255, 255};
inline constexpr Color kOperand{255, 214, 10, 255};
inline constexpr Color kWrong{255, 60, 50, 255};

// walk_scene.cpp
lay::Layout windowed(const Frame& f, lay::Layout l);
std::string shape_of(const Frame& f, const lay::Layout& l);
Grid result_grid(const Frame& f, lay::Step st);
Grid tensor_grid(const Frame& f, lay::Step layout_of, const Tensor* t, std::string title, Tint tint);
Grid layout_grid(const Frame& f, const lay::Layout& l, const Tensor* t, std::string title, Tint tint);
// The tensors attention reads: q, and k, v at the query heads (gqa: expanded, by the mistake's
// .repeat at the scores when it is on).
const Tensor& q_read(const Frame& f);
const Tensor& k_read(const Frame& f, lay::Step st);
const Tensor& v_read(const Frame& f);
bool weight_grid(const Frame& f, Grid& g, bool out_proj);
Scene build_scene(const Frame& f, int k);
Point grid_size(const Frame& f, const Grid& g);
Point scene_size(const Frame& f, const Scene& sc);
// Whether a pane's title runs into the next one's, in a grid of panes side by side (Q, K and V
// at once), at the frame's cell size.
bool pane_titles_collide(const Frame& f, const Scene& sc);
void place_scene(const Frame& f, Scene& sc, Point at);
Point to_px(const Frame& f, const Grid& g, lay::Point p);
// walk_plan.cpp
// Fills plan's per-step sizes; canvas_of(k): the space step k's scene gets (with the chain
// strip beside it or not, as f.strip_fit says).
void plan_steps(Frame& f, WalkPlan& plan, const std::function<Canvas(int)>& canvas_of);
void use_step(Frame& f, const WalkPlan& plan, int k);
// walk_paint.cpp
// The hue of a grid's head: gqa's query heads in their K/V head's family (group_rgb), the
// expansion's copies in their K/V head's own hue; else one hue per head.
Rgb grid_hue(const Frame& f, const Grid& g, int head);
// A head block's label: "head 2" ("h2"), gqa's "kv 1", or "head 2 ← kv 1" ("h2←kv1") for
// query heads that read a K/V head; the longest form no wider than width.
std::string head_label(const Frame& f, const Grid& g, std::int64_t head, float width);
Look look_of(const Frame& f, const Grid& g, const lay::Cell& c, std::int64_t flat);
// A cell at p: its fill (or the masked / dropped look), its number when it fits, its source
// tag; title: the SVG title naming the element; operand: a grid the step reads, not its result.
void draw_cell(Frame& f, Point p, float size, const Look& lk, float alpha, int decimals = -1,
               const std::string& title = {}, bool operand = false);
void draw_frame_labels(Frame& f, const Grid& g, float alpha, bool result, bool record);
float grid_vmax(const Frame& f, const Grid& g);
std::string token_name(const Frame& f, std::int64_t t);
void draw_grid(Frame& f, Grid& g, float alpha, bool result = false, bool record = false);
void draw_operator(Frame& f, const Grid& g, float alpha);
bool cells_rect(const Frame& f, const Grid& g, int pane, std::int64_t block, std::int64_t r0, std::int64_t r1,
                std::int64_t c0, std::int64_t c1, Point& a, Point& b);
void outline(const Frame& f, Point a, Point b, Color c, float th = 2.5f);
void draw_moving(Frame& fa, Frame& fb, Grid& from, Grid& to, lay::Move m, float u);
void highlight_operands(Frame& f, const Scene& sc, lay::Step st, std::int64_t flat);
std::vector<int> chain_of(const Frame& f, int k);
void draw_chain_strip(Frame& f, int k, Point at, float width, float height);
// walk_inspect.cpp
std::string index_text(const Frame& f, const lay::Layout& l, const lay::Cell& c);
std::string tensor_label(const Frame& f, lay::Step st, int pane);

// Calls fn(cell, flat, pixel) for every visible cell of the drawn panes.
template <class Fn>
void for_visible(const Frame& f, const Grid& g, Fn fn) {
  const lay::Axis ba = g.l.block_axis(), ra = g.l.row_axis(), ca = g.l.col_axis();
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane)
    for (std::int64_t bs = 0; bs < ba.slots(); ++bs) {
      const std::int64_t block = ba.index_at(bs);
      if (block < 0) continue;
      for (std::int64_t rs = 0; rs < ra.slots(); ++rs) {
        const std::int64_t row = ra.index_at(rs);
        if (row < 0) continue;
        for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
          const std::int64_t col = ca.index_at(cs);
          if (col < 0) continue;
          const lay::Cell c{pane, block, row, col};
          fn(c, lay::index_of(g.l, c), to_px(f, g, lay::slot_point(g.l, pane, bs, rs, cs)));
        }
      }
    }
}

}  // namespace mhaviz::figure::walk
