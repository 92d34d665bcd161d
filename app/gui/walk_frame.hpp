// The walkthrough panel's pieces (panel_walkthrough.cpp and the walk_*.cpp files it is split
// into): the frame context, grids and scenes they share, and their functions. Internal to app/gui.
#pragma once

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>
#include "app_state.hpp"
#include "figure/walk_values.hpp"
#include "mhaviz/layout.hpp"
#include "variant_edit.hpp"
#include "walk_spec.hpp"
#include "walk_transport.hpp"

namespace mhaviz::gui::walk {

namespace lay = mhaviz::layout;

// [SECTION] Formatting
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Values as the seeds print them (4 decimals) in the inspector; cells use figure::format_value.
inline std::string num(float v, int decimals = 4) { return figure::format_number(v, decimals); }

inline std::string shape_text(const Shape& s) { return shape_string(s); }

// [SECTION] Colours: the walkthrough table's (figure/walk_values.hpp) as ImGui colours
inline ImVec4 rgba(ImU32 c) { return ImGui::ColorConvertU32ToFloat4(c); }
inline ImU32 u32(ImVec4 c) { return ImGui::ColorConvertFloat4ToU32(c); }
inline ImVec4 mix(ImVec4 a, ImVec4 b, float t) {
  return {a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t, a.w + (b.w - a.w) * t};
}
inline ImVec4 to_vec(figure::Rgb c, float a = 1.0f) { return {c.r, c.g, c.b, a}; }
inline figure::Rgb to_rgb(ImVec4 c) { return {c.x, c.y, c.z}; }
inline ImVec4 head_rgba(int head) { return to_vec(figure::head_rgb(head)); }

// [SECTION] Frame context
using figure::Tint;
enum class RowLabels { None, Tokens, Heads };
enum class BlockLabels { None, Tokens, Heads, Modules };

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
  float vmax = 1.0f;  // largest |value| shown (Diverging, Weights)
  // Placement (pixels)
  ImVec2 origin{0, 0};  // top-left of the cells
  float left = 0, top = 0;
  const char* op_after = nullptr;  // operator drawn between this grid and the next ("·", "=", "→")
};

struct Scene {
  std::vector<Grid> grids;
  int result = 0;  // index of the grid the step produces (the moving one)
};

struct Frame {
  Frame(AppState& app, Walkthrough& walk, const Trace& trace) : s(app), w(walk), tr(trace) {}
  AppState& s;
  Walkthrough& w;
  const Trace& tr;
  figure::StepSource src;  // the values of every step (figure/walk_values.hpp)
  int b = 0;
  lay::Dims dims;  // batch 1: one batch item drawn
  std::vector<lay::Step> steps;
  float cs = 32.0f;       // cell size in pixels
  float gap_px = 18.0f;   // between blocks
  float pane_px = 24.0f;  // between panes
  float sfh = 14.0f;      // small font height
  std::int64_t lim_blocks = 0, lim_rows = 0, lim_cols = 0;
  ImDrawList* dl = nullptr;
  bool values_fit = false;
  float value_w = 30.0f;    // width of "-0.00" in the small font
  int block_cols = 1;       // blocks side by side (chosen per step to make cells large)
  float token_w = 0.0f;     // widest token label (UI font, capped), measured once a frame
  float key_w = 0.0f;       // widest token in the small font (key column labels), measured once a frame
  bool weights_fit = true;  // Wᵀ is drawn only when it fits without hiding columns (while planning)
  int cells = 0;
  int legend_swatches = 0;  // diverging legend drawn this frame (tests)
};

inline void set_cs(Frame& f, float cs) {
  f.cs = cs;
  f.values_fit = cs >= f.value_w + 4.0f && cs >= f.sfh + 2.0f;
}

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
inline int step_count(const Frame& f) { return static_cast<int>(f.steps.size()); }

// How a cell is drawn.
struct Look {
  ImVec4 fill;
  ImVec4 text;
  std::string label;
  std::string tag;  // small corner text (source token of a merged value)
  int state = 0;
};

constexpr float kOpWidthFactor = 2.2f;  // operator column, in small-font heights
constexpr ImU32 kSelect = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kOperand = IM_COL32(255, 214, 10, 255);

// The inspector's content, built as strings first (walk_inspector.cpp: inspect), then drawn
// (draw_inspection): what it says can be checked without drawing.
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

// walk_scene.cpp
lay::Layout windowed(const Frame& f, lay::Layout l);
std::string shape_of(const Frame& f, const lay::Layout& l);
Grid result_grid(const Frame& f, lay::Step st);
Grid tensor_grid(const Frame& f, lay::Step layout_of, const Tensor* t, std::string title, Tint tint);
bool weight_grid(const Frame& f, Grid& g);
Scene build_scene(const Frame& f, int k);
ImVec2 grid_size(const Frame& f, const Grid& g);
float left_margin(const Frame& f, const Grid& g);
float top_margin(const Frame& f, const Grid& g);
ImVec2 scene_size(const Frame& f, const Scene& sc);
void place_scene(const Frame& f, Scene& sc, ImVec2 at_px);
ImVec2 to_px(const Frame& f, const Grid& g, lay::Point p);
// Cell size of every step (the largest that fits the canvas), and one window of blocks,
// rows and columns for all steps when a step would get cells too small to read; cached in
// Walkthrough::plan on its inputs.
void choose_scale(Frame& f, const ImVec2& avail);
void use_step(Frame& f, int k);
// walk_draw.cpp
int cell_head(const Grid& g, const lay::Cell& c);
Look look_of(const Frame& f, const Grid& g, const lay::Cell& c, std::int64_t flat);
void draw_cell(Frame& f, ImVec2 p, float size, const Look& lk, float alpha, ImFont* font);
float grid_vmax(const Frame& f, const Grid& g);
std::string token_name(const Frame& f, std::int64_t t);
void small_text(const Frame& f, ImVec2 p, ImU32 col, const std::string& s);
float small_w(const Frame& f, const std::string& s);
void draw_frame_labels(Frame& f, const Grid& g, float alpha, Introspection::Walk* rec = nullptr, bool result = false);
void draw_grid(Frame& f, Grid& g, float alpha, Introspection::Walk* rec = nullptr, bool result = false);
void draw_operator(Frame& f, const Grid& g, float alpha);
bool cells_rect(const Frame& f, const Grid& g, int pane, std::int64_t block, std::int64_t r0, std::int64_t r1,
                std::int64_t c0, std::int64_t c1, ImVec2& a, ImVec2& b);
void outline(const Frame& f, ImVec2 a, ImVec2 b, ImU32 col, float th = 2.5f);
void draw_moving(Frame& fa, Frame& fb, Grid& from, Grid& to, lay::Move m, float u);
void highlight_operands(Frame& f, const Scene& sc, lay::Step st, std::int64_t flat);
std::vector<int> chain_of(const Frame& f, int k);
void draw_chain_strip(Frame& f, int k, ImVec2 at_px, float width, float height);
// walk_inspector.cpp
std::int64_t selected_in(const Frame& f, int k);
std::string index_text(const Frame& f, const lay::Layout& l, const lay::Cell& c);
std::string tensor_label(const Frame& f, lay::Step st, int pane);
std::string dot_terms(const std::vector<float>& a, const std::vector<float>& b, double& sum);
std::vector<float> row_of(const std::vector<float>& w, std::int64_t row, std::int64_t n);
void inspect_project(const Frame& f, const lay::Layout& l, const lay::Cell& c, float value, Inspection& out);
void inspect_path(const Frame& f, int k, std::int64_t flat, Inspection& out);
void inspect_softmax_row(const Frame& f, int head, int i, Inspection& out);
Inspection inspect(const Frame& f, int k, std::int64_t flat);
void draw_inspection(const Inspection& in);
// walk_controls.cpp
void handle_keys(AppState& s, Walkthrough& w, int n);
void draw_controls_row(AppState& s, Frame& f);
void draw_step_chips(AppState& s, Frame& f);
void draw_options_row(AppState& s, Frame& f);
void draw_diverging_legend(Frame& f, float vmax);
// panel_walk_compare.cpp
bool comparison_ready(AppState& s);
std::string big(std::int64_t v);
void weights_tile(AppState& s, const Trace& t, int head, const char* title, float side);
void draw_compare_tab(AppState& s);
// panel_walkthrough.cpp
void update_mistaken(AppState& s);
void draw_walkthrough_tab(AppState& s);
void apply_options(AppState& s);

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

}  // namespace mhaviz::gui::walk
