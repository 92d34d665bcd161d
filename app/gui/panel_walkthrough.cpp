// The animated walkthrough of the multi-head pipeline (X -> Q/K/V -> view -> transpose ->
// scores -> mask -> softmax -> dropout -> context -> transpose back -> merge -> out_proj),
// and the wrapper vs weight-split comparison. Positions of every element come from
// core/layout (mhaviz/layout.hpp); values come from the Trace. Cells are draw-list
// rectangles, only for a window of rows and columns at large sizes (Introspection::Walk::cells).
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
#include "variant_edit.hpp"
#include "walk_spec.hpp"
#include "walk_transport.hpp"
#include "figure/walk_values.hpp"
#include "mhaviz/layout.hpp"

namespace mhaviz::gui {
namespace {

namespace lay = mhaviz::layout;


// [SECTION] Formatting
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Values as the seeds print them (4 decimals) in the inspector; cells use figure::format_value.
std::string num(float v, int decimals = 4) { return figure::format_number(v, decimals); }

std::string shape_text(const Shape& s) { return shape_string(s); }

// [SECTION] Colours: the walkthrough table's (figure/walk_values.hpp) as ImGui colours
ImVec4 rgba(ImU32 c) { return ImGui::ColorConvertU32ToFloat4(c); }
ImU32 u32(ImVec4 c) { return ImGui::ColorConvertFloat4ToU32(c); }
ImVec4 mix(ImVec4 a, ImVec4 b, float t) {
  return {a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t, a.w + (b.w - a.w) * t};
}
ImVec4 to_vec(figure::Rgb c, float a = 1.0f) { return {c.r, c.g, c.b, a}; }
figure::Rgb to_rgb(ImVec4 c) { return {c.x, c.y, c.z}; }
ImVec4 head_rgba(int head) { return to_vec(figure::head_rgb(head)); }

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
  bool col_heads = false;  // label column groups "head i" (Matrix split by head)
  bool col_tokens = false; // label columns with the key tokens (T x T attention grids)
  // Merge grids: the context element (b, t, head, d) a cell holds; colours cells by that head
  // and tags them with its token, so a scrambled merge shows where each value came from.
  std::function<lay::HeadIndex(std::int64_t)> source;
  float vmax = 1.0f;       // largest |value| shown (Diverging, Weights)
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
  float value_w = 30.0f;  // width of "-0.00" in the small font
  std::vector<float> step_cs;  // cell size of each step
  int block_cols = 1;          // blocks side by side (chosen per step to make cells large)
  std::vector<int> step_bcols;
  std::vector<std::array<std::int64_t, 3>> step_lims;  // window (blocks, rows, cols) of each step
  float token_w = 0.0f;        // widest token label (UI font, capped), measured once a frame
  float key_w = 0.0f;          // widest token in the small font (key column labels), measured once a frame
  bool weights_fit = true;     // Wᵀ is drawn only when it fits without hiding columns
  int cells = 0;
  int legend_swatches = 0;  // diverging legend drawn this frame (tests)
};

void set_cs(Frame& f, float cs) {
  f.cs = cs;
  f.values_fit = cs >= f.value_w + 4.0f && cs >= f.sfh + 2.0f;
}

// [SECTION] Values of each step's tensor for the selected batch item
float at(const Tensor& t, std::int64_t i) {
  if (i < 0 || i >= t.numel()) return 0.0f;
  return t.data[static_cast<std::size_t>(i)];
}

lay::Layout windowed(const Frame& f, lay::Layout l) {
  l.max_blocks = f.lim_blocks;
  l.max_rows = f.lim_rows;
  l.max_cols = f.lim_cols;
  l.block_gap = f.gap_px / f.cs;
  l.pane_gap = f.pane_px / f.cs;
  l.block_cols = f.block_cols;
  l.block_gap_x = f.pane_px / f.cs;
  return l;
}

// [SECTION] Scenes: what each step draws
std::string shape_of(const Frame& f, const lay::Layout& l) {
  Shape sh = l.shape();
  sh[0] = f.tr.batch;
  return shape_text(sh);
}

Grid result_grid(const Frame& f, lay::Step st) {
  Grid g;
  g.l = windowed(f, lay::step_layout(st, f.dims));
  const Variant v = f.tr.config.variant;
  const Frame* fp = &f;
  g.value = [fp, st](std::int64_t i) { return figure::step_value(fp->src, st, i); };
  if (st == lay::Step::Mask || st == lay::Step::Dropout) g.state = [fp, st](std::int64_t i) { return figure::step_state(fp->src, st, i); };
  if (g.l.panes == 3) {
    const int p = f.w.pane;
    g.pane_first = p == 3 ? 0 : p;
    g.pane_last = p == 3 ? 2 : p;
  }
  const std::string shp = shape_of(f, g.l);
  g.tint = figure::step_tint(st);
  for (int p = 0; p < g.l.panes; ++p) g.pane_titles.push_back(figure::pane_name(v, st, p, f.w.mistaken) + "  " + shp);
  switch (st) {
    case lay::Step::Input: break;
    case lay::Step::Project:
      if (v == Variant::Wrapper) {
        g.blocks = BlockLabels::Modules;
        for (int p = 0; p < 3; ++p)
          g.pane_titles[static_cast<std::size_t>(p)] = figure::pane_name(v, st, p, false) + "  " + std::to_string(f.tr.heads) + " x (" +
                                                       std::to_string(f.tr.batch) + ", " + std::to_string(f.tr.tokens) + ", " +
                                                       std::to_string(f.tr.head_dim) + ")";
      } else {
        g.col_heads = true;
      }
      break;
    case lay::Step::View:
    case lay::Step::TransposeBack:
      g.rows = RowLabels::Heads;
      g.blocks = BlockLabels::Tokens;
      break;
    case lay::Step::Transpose:
    case lay::Step::Chunk:
    case lay::Step::Context:
      g.blocks = BlockLabels::Heads;
      break;
    case lay::Step::Scores:
    case lay::Step::Mask:
    case lay::Step::Softmax:
    case lay::Step::Dropout:
      g.blocks = BlockLabels::Heads;
      g.col_tokens = true;
      break;
    case lay::Step::Merge:
      g.col_heads = true;
      if (f.w.mistaken && v != Variant::Wrapper) {
        g.source = [fp](std::int64_t i) {
          const lay::Cell c = lay::cell_of(lay::step_layout(lay::Step::Merge, fp->dims), i);
          return lay::mistaken_source(fp->b, c.row, c.col, fp->tr.tokens, fp->tr.heads, fp->tr.head_dim);
        };
      } else {
        g.source = [fp](std::int64_t i) {
          const lay::Cell c = lay::cell_of(lay::step_layout(lay::Step::Merge, fp->dims), i);
          return lay::split_column(fp->b, c.row, c.col, fp->tr.head_dim);
        };
      }
      break;
    case lay::Step::Concat: g.col_heads = true; break;
    case lay::Step::OutProj: break;
  }
  return g;
}

Grid tensor_grid(const Frame& f, lay::Step layout_of, const Tensor* t, std::string title, Tint tint) {
  Grid g;
  g.l = windowed(f, lay::step_layout(layout_of, f.dims));
  g.l.panes = 1;
  const std::int64_t per = g.l.pane_numel();
  const std::int64_t off = static_cast<std::int64_t>(f.b) * per;
  g.value = [t, off](std::int64_t i) { return at(*t, off + i); };
  g.tint = tint;
  g.pane_titles = {std::move(title)};
  if (g.l.kind == lay::Kind::HeadBlocks) g.blocks = BlockLabels::Heads;
  return g;
}

// Wᵀ of the projection shown (the pane's W, the fused qkv_layer, or each head's own W in the
// wrapper), drawn as (d_in, out) so that output column j is X times column j. Its columns are
// coloured by head: the weight split's W is the heads' matrices side by side.
bool weight_grid(const Frame& f, Grid& g) {
  const Trace& tr = f.tr;
  const Variant v = tr.config.variant;
  static constexpr const char* kW[3] = {"W_query", "W_key", "W_value"};
  const int pane = std::clamp(f.w.pane, 0, 2);
  const Model& m = f.s.compute.model;
  const int din = tr.d_in, hd = tr.head_dim, H = tr.heads;
  std::vector<const Linear*> ls;
  try {
    if (v == Variant::Wrapper) {
      for (int h = 0; h < H; ++h) ls.push_back(&m.layer("heads." + std::to_string(h) + "." + kW[pane]));
    } else {
      ls.push_back(&m.layer(v == Variant::FusedQkv ? "qkv_layer" : kW[pane]));
    }
  } catch (const std::exception&) {
    return false;
  }
  for (const Linear* l : ls)
    if (l->in != din) return false;  // the model is ahead of the trace
  if (v == Variant::Wrapper) {
    g.l.kind = lay::Kind::HeadBlocks;
    g.l.dims = {1, H, din, hd};
    g.blocks = BlockLabels::Modules;
    g.pane_titles = {std::string(kW[pane]) + "ᵀ of each head  (" + std::to_string(din) + ", " + std::to_string(hd) + ")"};
  } else {
    const int out = ls[0]->out;
    g.l.dims = {1, 1, din, out};
    g.l.head_cols = v == Variant::FusedQkv ? 3 * hd : hd;
    g.l.part_cols = v == Variant::FusedQkv ? hd : 0;
    g.col_heads = true;
    g.pane_titles = {(v == Variant::FusedQkv ? std::string("qkv_layer.weightᵀ") : std::string(kW[pane]) + ".weightᵀ") + "  (" +
                     std::to_string(din) + ", " + std::to_string(out) + ")"};
  }
  g.l.heads = H;
  g.l = windowed(f, g.l);
  g.rows = RowLabels::None;
  g.tint = Tint::Head;
  const lay::Layout l = g.l;
  g.value = [ls, l](std::int64_t flat) {
    const lay::Cell c = lay::cell_of(l, flat);
    const Linear* lin = ls[static_cast<std::size_t>(l.kind == lay::Kind::HeadBlocks ? c.block % l.dims[1] : 0)];
    // Wᵀ[i, j] = weight[j, i]
    return lin->weight[static_cast<std::size_t>(c.col * lin->in + c.row)];
  };
  return true;
}

Scene build_scene(const Frame& f, int k) {
  Scene sc;
  const lay::Step st = f.steps[static_cast<std::size_t>(k)];
  const Trace& tr = f.tr;
  Grid res = result_grid(f, st);
  switch (st) {
    case lay::Step::Project: {
      Grid x = tensor_grid(f, lay::Step::Input, &tr.input, figure::pane_name(tr.config.variant, lay::Step::Input, 0, false) + "  " + shape_text(tr.input.shape), Tint::Neutral);
      x.op_after = "→";
      sc.grids.push_back(std::move(x));
      if (f.w.show_weights && f.weights_fit && (f.w.pane != 3 || tr.config.variant == Variant::FusedQkv)) {
        Grid wt;
        if (weight_grid(f, wt)) {
          sc.grids.back().op_after = "·";
          wt.op_after = "=";
          sc.grids.push_back(std::move(wt));
        }
      }
      break;
    }
    case lay::Step::Scores: {
      Grid q = tensor_grid(f, lay::Step::Context, &tr.q, "q  " + shape_text(tr.q.shape), Tint::Head);
      q.op_after = "·";
      Grid kk = tensor_grid(f, lay::Step::Context, &tr.k, "k (kᵀ's columns)", Tint::Head);
      kk.op_after = "=";
      sc.grids.push_back(std::move(q));
      sc.grids.push_back(std::move(kk));
      break;
    }
    case lay::Step::Context: {
      Grid wg = tensor_grid(f, lay::Step::Softmax, &tr.weights_after_dropout(), figure::pane_name(tr.config.variant, lay::Step::Dropout, 0, false), Tint::Weights);
      wg.col_tokens = true;
      wg.op_after = "·";
      Grid vg = tensor_grid(f, lay::Step::Context, &tr.v, "v  " + shape_text(tr.v.shape), Tint::Head);
      vg.op_after = "=";
      sc.grids.push_back(std::move(wg));
      sc.grids.push_back(std::move(vg));
      break;
    }
    case lay::Step::OutProj: {
      Grid m = tensor_grid(f, tr.config.variant == Variant::Wrapper ? lay::Step::Concat : lay::Step::Merge, &tr.context_merged,
                           "merged  " + shape_text(tr.context_merged.shape), Tint::Head);
      m.col_heads = true;
      m.op_after = "→";
      sc.grids.push_back(std::move(m));
      break;
    }
    default: break;
  }
  sc.result = static_cast<int>(sc.grids.size());
  sc.grids.push_back(std::move(res));
  if (st == lay::Step::Merge && f.w.mistaken && tr.config.variant != Variant::Wrapper) {
    sc.grids.back().op_after = "vs";
    Grid ok = tensor_grid(f, lay::Step::Merge, &tr.context_merged, "correct: transpose(1, 2), then view", Tint::Head);
    ok.col_heads = true;
    const Frame* fp = &f;
    ok.source = [fp](std::int64_t i) {
      const lay::Cell c = lay::cell_of(lay::step_layout(lay::Step::Merge, fp->dims), i);
      return lay::split_column(fp->b, c.row, c.col, fp->tr.head_dim);
    };
    sc.grids.push_back(std::move(ok));
  }
  return sc;
}

// [SECTION] Geometry
int panes_drawn(const Grid& g) { return g.pane_last - g.pane_first + 1; }

float pane_shift(const Grid& g) {  // cell units removed from x for the first drawn pane
  return static_cast<float>(g.pane_first) * (lay::pane_width(g.l) + g.l.pane_gap);
}

ImVec2 grid_size(const Frame& f, const Grid& g) {
  lay::Layout t = g.l;
  t.panes = panes_drawn(g);
  const lay::Point e = lay::extent(t);
  return {e.x * f.cs, e.y * f.cs};
}

float left_margin(const Frame& f, const Grid& g) {
  if (g.rows == RowLabels::None) return 4.0f;
  float w = 0.0f;
  if (g.rows == RowLabels::Heads) {
    w = ImGui::CalcTextSize("head 00").x;
  } else {
    w = f.token_w;
  }
  return std::ceil(w * (f.sfh / ImGui::GetFontSize()) + 8.0f);
}

float top_margin(const Frame& f, const Grid& g) {
  float lines = 1.0f;  // pane titles
  if (g.col_heads || g.l.part_cols > 0) lines += 1.0f;
  if (g.blocks != BlockLabels::None) lines += 1.0f;  // the first block's label
  if (g.col_tokens) {  // key tokens, on staggered lines when they are wide (the shared rule)
    const int kl = figure::key_label_lines(f.key_w, f.cs);
    lines += static_cast<float>(kl <= figure::kMaxKeyLines ? kl : 1);
  }
  return std::ceil(lines * (f.sfh + 3.0f));
}

constexpr float kOpWidthFactor = 2.2f;  // operator column, in small-font heights

// Width and height of a scene at the frame's cell size.
ImVec2 scene_size(const Frame& f, const Scene& sc) {
  float w = 0, h = 0;
  for (std::size_t i = 0; i < sc.grids.size(); ++i) {
    const Grid& g = sc.grids[i];
    const ImVec2 gs = grid_size(f, g);
    w += left_margin(f, g) + gs.x;
    if (i + 1 < sc.grids.size()) w += f.sfh * kOpWidthFactor;
    h = std::max(h, top_margin(f, g) + gs.y);
  }
  return {w, h};
}

void place_scene(const Frame& f, Scene& sc, ImVec2 at_px) {
  float x = at_px.x;
  for (auto& g : sc.grids) {
    g.left = left_margin(f, g);
    g.top = top_margin(f, g);
    g.origin = ImVec2(std::floor(x + g.left), std::floor(at_px.y + g.top));
    x += g.left + grid_size(f, g).x + f.sfh * kOpWidthFactor;
  }
}

// Pixel top-left of a point (cell units) of a grid.
ImVec2 to_px(const Frame& f, const Grid& g, lay::Point p) {
  return {g.origin.x + (p.x - pane_shift(g)) * f.cs, g.origin.y + p.y * f.cs};
}

bool pane_drawn(const Grid& g, int pane) { return pane >= g.pane_first && pane <= g.pane_last; }

// [SECTION] Cells
struct Look {
  ImVec4 fill;
  ImVec4 text;
  std::string label;
  std::string tag;  // small corner text (source token of a merged value)
  int state = 0;
};

int cell_head(const Grid& g, const lay::Cell& c) {
  return g.source ? static_cast<int>(g.source(lay::index_of(g.l, c)).head) : lay::head_of(g.l, c);
}

Look look_of(const Frame& f, const Grid& g, const lay::Cell& c, std::int64_t flat) {
  Look lk;
  const float v = g.value(flat);
  lk.state = g.state ? g.state(flat) : 0;
  const ImVec4 bg = rgba(ImGui::GetColorU32(ImGuiCol_WindowBg));
  ImVec4 col = to_vec(figure::cell_rgb(g.tint, cell_head(g, c), lay::part_of(g.l, c), v, g.vmax, f.s.settings.dark, to_rgb(bg)));
  if (lk.state == 1) col = f.s.settings.dark ? ImVec4(0.16f, 0.16f, 0.17f, 1.0f) : ImVec4(0.80f, 0.80f, 0.80f, 1.0f);
  if (lk.state == 2) col = bg;
  lk.fill = col;
  const bool light_text = figure::luminance(to_rgb(col)) < 0.5f;
  lk.text = light_text ? ImVec4(1, 1, 1, 1) : ImVec4(0, 0, 0, 1);
  if (lk.state == 1) lk.text = f.s.settings.dark ? ImVec4(1.0f, 0.55f, 0.5f, 1.0f) : ImVec4(0.7f, 0.1f, 0.1f, 1.0f);
  if (lk.state == 2) lk.text = rgba(ImGui::GetColorU32(ImGuiCol_TextDisabled));
  lk.label = lk.state == 2 ? "0" : figure::format_value(v);
  if (g.source) lk.tag = "t" + std::to_string(g.source(flat).t);
  return lk;
}

void draw_cell(Frame& f, ImVec2 p, float size, const Look& lk, float alpha, ImFont* font) {
  if (alpha <= 0.01f) return;
  const float pad = size >= 10.0f ? 1.0f : 0.0f;
  ImVec4 fill = lk.fill;
  fill.w *= alpha;
  const ImVec2 a(p.x + pad, p.y + pad), b(p.x + size - pad, p.y + size - pad);
  if (lk.state == 2) {
    f.dl->AddRect(a, b, u32(ImVec4(0.5f, 0.5f, 0.5f, 0.6f * alpha)), 0.0f, 0, 1.0f);  // dropped: an empty slot
  } else {
    f.dl->AddRectFilled(a, b, u32(fill));
  }
  if (lk.state == 1) f.dl->AddRect(a, b, u32(ImVec4(0.9f, 0.3f, 0.25f, 0.9f * alpha)), 0.0f, 0, 1.5f);
  ++f.cells;
  if (f.w.values && size >= f.value_w + 4.0f && size >= f.sfh + 2.0f) {
    ImVec4 tc = lk.text;
    tc.w *= alpha;
    const ImVec2 ts = font->CalcTextSizeA(f.sfh, FLT_MAX, 0.0f, lk.label.c_str());
    f.dl->AddText(font, f.sfh, ImVec2(p.x + (size - ts.x) * 0.5f, p.y + (size - ts.y) * 0.5f), u32(tc), lk.label.c_str());
  }
  if (!lk.tag.empty() && size >= f.sfh * 2.4f) {
    ImVec4 tc = lk.text;
    tc.w *= alpha * 0.8f;
    f.dl->AddText(font, std::round(f.sfh * 0.72f), ImVec2(p.x + 3.0f, p.y + 1.0f), u32(tc), lk.tag.c_str());
  }
}

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

float grid_vmax(const Frame& f, const Grid& g) {
  float m = 0.0f;
  for_visible(f, g, [&](const lay::Cell&, std::int64_t flat, ImVec2) {
    const float v = g.value(flat);
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  });
  return m > 0.0f ? m : 1.0f;
}

std::string token_name(const Frame& f, std::int64_t t) {
  const auto& toks = f.s.compute.tokens;
  return t >= 0 && t < static_cast<std::int64_t>(toks.size()) ? toks[static_cast<std::size_t>(t)] : std::string();
}

void small_text(const Frame& f, ImVec2 p, ImU32 col, const std::string& s) {
  ImFont* font = ImGui::GetFont();
  f.dl->AddText(font, f.sfh, p, col, s.c_str());
}

float small_w(const Frame& f, const std::string& s) {
  ImFont* font = ImGui::GetFont();
  return font->CalcTextSizeA(f.sfh, FLT_MAX, 0.0f, s.c_str()).x;
}

// Titles, row labels, block labels, column-group labels and ellipses of a grid.
// rec: the test hooks (key labels of every grid; titles and block labels of the result only).
void draw_frame_labels(Frame& f, const Grid& g, float alpha, Introspection::Walk* rec = nullptr, bool result = false) {
  if (alpha <= 0.01f) return;
  const ImVec4 tc = rgba(ImGui::GetColorU32(ImGuiCol_Text));
  const ImVec4 dc = rgba(ImGui::GetColorU32(ImGuiCol_TextDisabled));
  const ImU32 text = u32(ImVec4(tc.x, tc.y, tc.z, alpha)), dim = u32(ImVec4(dc.x, dc.y, dc.z, alpha));
  const lay::Axis ba = g.l.block_axis(), ra = g.l.row_axis(), ca = g.l.col_axis();
  const float line = f.sfh + 3.0f;
  const float title_y = g.origin.y - g.top;
  const std::int64_t bcols = std::max<std::int64_t>(1, std::min<std::int64_t>(g.l.block_cols, ba.slots()));
  const figure::Measure measure = [&f](const std::string& t) { return small_w(f, t); };
  figure::ColumnLabels keys;
  if (g.col_tokens) keys = figure::column_labels(f.s.compute.tokens, f.cs, measure);
  // Pane titles.
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane) {
    const ImVec2 p = to_px(f, g, lay::slot_point(g.l, pane, 0, 0, 0));
    std::string t = pane < static_cast<int>(g.pane_titles.size()) ? g.pane_titles[static_cast<std::size_t>(pane)] : g.pane_titles.front();
    if (!keys.note.empty()) t += "  · columns: " + keys.note;
    small_text(f, ImVec2(p.x, title_y), text, t);
    if (rec && result) rec->titles.push_back(t);
  }
  // Column groups: "head i" (or q | k | v of a fused chunk) above the columns.
  if (g.col_heads || g.l.part_cols > 0) {
    for (int pane = g.pane_first; pane <= g.pane_last; ++pane) {
      std::int64_t start = -1;
      int cur = -2;
      auto flush = [&](std::int64_t end_slot) {
        if (start < 0) return;
        const ImVec2 a = to_px(f, g, lay::slot_point(g.l, pane, 0, 0, start));
        const float wpx = static_cast<float>(end_slot - start) * f.cs;
        std::string lab;
        if (g.l.part_cols > 0 && g.l.kind != lay::Kind::Matrix) lab = cur == 0 ? "q" : cur == 1 ? "k" : "v";
        else lab = (wpx >= small_w(f, "head 00") + 4.0f ? "head " : "h") + std::to_string(cur);
        if (small_w(f, lab) <= wpx + 2.0f) small_text(f, ImVec2(a.x + 2.0f, title_y + line), dim, lab);
        f.dl->AddLine(ImVec2(a.x + 1, title_y + line * 2 - 2), ImVec2(a.x + wpx - 1, title_y + line * 2 - 2), dim, 1.0f);
      };
      for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
        const std::int64_t col = ca.index_at(cs);
        int key = -1;
        if (col >= 0) {
          const lay::Cell c{pane, 0, 0, col};
          key = (g.l.part_cols > 0 && g.l.kind != lay::Kind::Matrix) ? lay::part_of(g.l, c) : lay::head_of(g.l, c);
        }
        if (key != cur) {
          flush(cs);
          start = key >= 0 ? cs : -1;
          cur = key;
        }
      }
      flush(ca.slots());
    }
  }
  // Block labels above each block, row labels to the left.
  // One form of label for every block, fitting a block's width (head_dim 1: one cell): the shared table's rule.
  std::vector<std::string> block_names;
  if (g.blocks == BlockLabels::Heads || g.blocks == BlockLabels::Tokens) {
    const float block_w = static_cast<float>(ca.slots()) * f.cs + (bcols > 1 ? g.l.block_gap_x * f.cs - 4.0f : 1.0e6f);
    block_names = figure::block_labels(g.blocks == BlockLabels::Heads ? lay::Kind::HeadBlocks : lay::Kind::TokenBlocks, g.l.dims[1],
                                       f.s.compute.tokens, block_w, measure);
  }
  for (std::int64_t bs = 0; bs < ba.slots(); ++bs) {
    const std::int64_t block = ba.index_at(bs);
    const ImVec2 p = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs, 0, 0));
    if (block < 0) {
      small_text(f, ImVec2(p.x, p.y), dim, "… " + std::to_string(g.l.blocks() - ba.limit) + " more");
      continue;
    }
    if (g.blocks != BlockLabels::None) {
      const std::int64_t inner = block % g.l.dims[1];
      std::string lab = g.blocks == BlockLabels::Modules ? "heads[" + std::to_string(inner) + "]: own W"
                                                         : block_names[static_cast<std::size_t>(inner)];
      ImU32 col = text;
      if (g.blocks == BlockLabels::Heads || g.blocks == BlockLabels::Modules) {
        ImVec4 hc = head_rgba(static_cast<int>(inner));
        hc.w = alpha;
        col = u32(hc);
      }
      small_text(f, ImVec2(p.x, p.y - line * (g.col_tokens && bs < bcols ? 1.0f + static_cast<float>(keys.lines) : 1.0f)), col, lab);
      if (rec && result) rec->block_labels.push_back(lab);
    }
    if (g.col_tokens && bs < bcols) {
      for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
        const std::int64_t col = ca.index_at(cs);
        if (col < 0 || col >= static_cast<std::int64_t>(keys.text.size())) continue;
        const std::string& lab = keys.text[static_cast<std::size_t>(col)];
        const float up = static_cast<float>(keys.lines - cs % keys.lines);  // staggered: column 0 on the top line
        const ImVec2 cp = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs, 0, cs));
        small_text(f, ImVec2(cp.x + (f.cs - small_w(f, lab)) * 0.5f, cp.y - line * up), dim, lab);
        if (rec && bs == 0) rec->key_labels.push_back(lab);
      }
    }
    if (g.rows == RowLabels::None || bs % bcols != 0) continue;
    for (std::int64_t rs = 0; rs < ra.slots(); ++rs) {
      const std::int64_t row = ra.index_at(rs);
      const ImVec2 rp = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs, rs, 0));
      if (f.cs < f.sfh * 0.8f && row >= 0 && rs % 2 == 1) continue;
      std::string lab = row < 0 ? "…" : g.rows == RowLabels::Heads ? "head " + std::to_string(row) : token_name(f, row);
      if (row < 0) lab = "…";
      while (!lab.empty() && small_w(f, lab) > g.left - 6.0f) lab.pop_back();
      ImU32 col = text;
      if (g.rows == RowLabels::Heads && row >= 0) {
        ImVec4 hc = head_rgba(static_cast<int>(row));
        hc.w = alpha;
        col = u32(hc);
      }
      small_text(f, ImVec2(rp.x - small_w(f, lab) - 5.0f, rp.y + (f.cs - f.sfh) * 0.5f), col, lab);
    }
  }
  // Ellipses of windowed rows and columns.
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane)
    for (std::int64_t bs = 0; bs < ba.slots(); ++bs) {
      if (ba.index_at(bs) < 0) continue;
      for (std::int64_t rs = 0; rs < ra.slots(); ++rs)
        for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
          if (!ra.ellipsis_at(rs) && !ca.ellipsis_at(cs)) continue;
          if (ra.ellipsis_at(rs) && cs % 3 != 0 && !ca.ellipsis_at(cs)) continue;
          if (ca.ellipsis_at(cs) && rs % 3 != 0 && !ra.ellipsis_at(rs)) continue;
          const ImVec2 p = to_px(f, g, lay::slot_point(g.l, pane, bs, rs, cs));
          const char* e = "…";
          const float tw = small_w(f, e);
          small_text(f, ImVec2(p.x + (f.cs - tw) * 0.5f, p.y + (f.cs - f.sfh) * 0.5f), dim, e);
        }
    }
}

void draw_grid(Frame& f, Grid& g, float alpha, Introspection::Walk* rec = nullptr, bool result = false) {
  if (alpha <= 0.01f) return;
  ImFont* font = ImGui::GetFont();
  if (g.tint == Tint::Diverging || g.tint == Tint::Weights) g.vmax = grid_vmax(f, g);
  for_visible(f, g, [&](const lay::Cell& c, std::int64_t flat, ImVec2 p) {
    const Look lk = look_of(f, g, c, flat);
    draw_cell(f, p, f.cs, lk, alpha, font);
    if (rec && result && c.pane == g.pane_first && rec->values.size() < 16) rec->values.push_back(lk.label);
  });
  draw_frame_labels(f, g, alpha, rec, result);
}

void draw_operator(Frame& f, const Grid& g, float alpha) {
  if (!g.op_after || alpha <= 0.01f) return;
  const ImVec2 gs = grid_size(f, g);
  const float x = g.origin.x + gs.x + f.sfh * 0.5f;
  const float y = g.origin.y + std::min(gs.y, f.cs * 3.0f) * 0.5f - ImGui::GetFontSize() * 0.5f;
  ImVec4 c = rgba(ImGui::GetColorU32(ImGuiCol_Text));
  c.w = alpha;
  f.dl->AddText(ImVec2(x, y), u32(c), g.op_after);
}

// Rectangle (pixels) around cells [c0, c1] (inclusive, same pane and block) of a grid, visible part only.
bool cells_rect(const Frame& f, const Grid& g, int pane, std::int64_t block, std::int64_t r0, std::int64_t r1, std::int64_t c0,
                std::int64_t c1, ImVec2& a, ImVec2& b) {
  const lay::Axis ba = g.l.block_axis(), ra = g.l.row_axis(), ca = g.l.col_axis();
  const std::int64_t bs = ba.slot(block);
  if (bs < 0 || !pane_drawn(g, pane)) return false;
  auto first_slot = [](const lay::Axis& ax, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i <= hi; ++i)
      if (ax.slot(i) >= 0) return ax.slot(i);
    return std::int64_t{-1};
  };
  auto last_slot = [](const lay::Axis& ax, std::int64_t lo, std::int64_t hi) {
    if (ax.slot(hi) >= 0) return ax.slot(hi);
    for (std::int64_t i = hi; i >= lo; --i)
      if (ax.slot(i) >= 0) return ax.windowed() && hi > i ? ax.slot(i) + 1 : ax.slot(i);
    return std::int64_t{-1};
  };
  const std::int64_t rs0 = first_slot(ra, r0, r1), rs1 = last_slot(ra, r0, r1);
  const std::int64_t cs0 = first_slot(ca, c0, c1), cs1 = last_slot(ca, c0, c1);
  if (rs0 < 0 || cs0 < 0) return false;
  a = to_px(f, g, lay::slot_point(g.l, pane, bs, rs0, cs0));
  b = to_px(f, g, lay::slot_point(g.l, pane, bs, rs1, cs1));
  b.x += f.cs;
  b.y += f.cs;
  return true;
}

void outline(const Frame& f, ImVec2 a, ImVec2 b, ImU32 col, float th = 2.5f) {
  f.dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(0, 0, 0, 200), 0.0f, 0, th + 2.0f);
  f.dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), col, 0.0f, 0, th);
}

constexpr ImU32 kSelect = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kOperand = IM_COL32(255, 214, 10, 255);

// [SECTION] The animated transition of the result grid between two steps
// fa / fb: the frames (cell sizes) of the steps before and after; elements travel from their
// static place in `from` to their static place in `to` (lay::progress gives how far).
void draw_moving(Frame& fa, Frame& fb, Grid& from, Grid& to, lay::Move m, float u) {
  ImFont* font = ImGui::GetFont();
  const float e = lay::ease(u);
  if (from.tint == Tint::Diverging || from.tint == Tint::Weights) from.vmax = grid_vmax(fa, from);
  if (to.tint == Tint::Diverging || to.tint == Tint::Weights) to.vmax = grid_vmax(fb, to);
  const float stagger = (m == lay::Move::Transpose || m == lay::Move::TransposeMerge) ? 0.35f : 0.2f;
  const float swing = m == lay::Move::Same ? 0.0f : 0.5f * std::max(grid_size(fa, from).x, grid_size(fb, to).x) + fb.cs;
  // Elements visible before: travel (or fade out when their new place is hidden).
  for_visible(fa, from, [&](const lay::Cell& c, std::int64_t flat, ImVec2 p0) {
    const std::int64_t g = lay::move_index(m, from.l, to.l, flat);
    const Look a = look_of(fa, from, c, flat);
    if (g < 0) return;
    const lay::Cell tc = lay::cell_of(to.l, g);
    if (!lay::visible(to.l, tc) || !pane_drawn(to, tc.pane)) {
      draw_cell(fa, p0, fa.cs, a, std::max(0.0f, 1.0f - 3.0f * e), font);  // leaves the window quickly
      return;
    }
    const ImVec2 p1 = to_px(fb, to, lay::point_of(to.l, tc));
    const float pr = lay::progress(to.l, tc, u, stagger);
    ImVec2 p(p0.x + (p1.x - p0.x) * pr, p0.y + (p1.y - p0.y) * pr);
    // Elements moving down swing out to the right on their way, so that rows do not pass
    // through each other (the transpose pulls a head's rows out and stacks them below).
    if (p1.y > p0.y + 0.5f * fb.cs) p.x += std::sin(pr * 3.14159265f) * swing;
    const Look b = look_of(fb, to, tc, g);
    Look mixd = pr < 0.5f ? a : b;
    mixd.fill = mix(a.fill, b.fill, pr);
    draw_cell(fa, p, fa.cs + (fb.cs - fa.cs) * pr, mixd, 1.0f, font);
  });
  // Elements that were hidden before appear in their new place.
  for_visible(fb, to, [&](const lay::Cell& c, std::int64_t flat, ImVec2 p1) {
    const std::int64_t src = lay::move_index_inverse(m, from.l, to.l, flat);
    if (src < 0) return;
    const lay::Cell sc = lay::cell_of(from.l, src);
    if (lay::visible(from.l, sc) && pane_drawn(from, sc.pane)) return;
    draw_cell(fa, p1, fb.cs, look_of(fb, to, c, flat), std::max(0.0f, 3.0f * e - 2.0f), font);
  });
  if (from.l.kind == to.l.kind && from.l.dims == to.l.dims && from.origin.x == to.origin.x && from.origin.y == to.origin.y) {
    // Same drawing, new values (mask, softmax, dropout): the labels stay; the title switches halfway.
    if (e < 0.5f) draw_frame_labels(fa, from, 1.0f);
    else draw_frame_labels(fb, to, 1.0f);
  } else {
    draw_frame_labels(fa, from, std::max(0.0f, 1.0f - 2.5f * e));  // labels leave, then the new ones come
    draw_frame_labels(fb, to, std::max(0.0f, 2.5f * e - 1.5f));
  }
}

// [SECTION] Selection (hover or pin) followed across steps
std::int64_t selected_in(const Frame& f, int k) {
  const Walkthrough& w = f.w;
  const int st = w.hover_step >= 0 ? w.hover_step : w.pin_step;
  const std::int64_t fl = w.hover_step >= 0 ? w.hover_flat : w.pin_flat;
  if (st < 0 || st >= static_cast<int>(f.steps.size()) || fl < 0) return -1;
  const lay::Layout l = lay::step_layout(f.steps[static_cast<std::size_t>(st)], f.dims);
  if (fl >= l.numel()) return -1;
  return lay::follow(f.steps, f.dims, w.mistaken, st, fl)[static_cast<std::size_t>(k)];
}

// "[b, t, j]" of an element of a step's layout, for the selected batch item.
std::string index_text(const Frame& f, const lay::Layout& l, const lay::Cell& c) {
  const std::int64_t b = f.b;
  if (l.kind == lay::Kind::Matrix) return lay::index_string({b, c.row, c.col});
  return lay::index_string({b, c.block % l.dims[1], c.row, c.col});
}

std::string tensor_label(const Frame& f, lay::Step st, int pane) {
  return figure::pane_name(f.tr.config.variant, st, pane, f.w.mistaken);
}

// [SECTION] Inspector: index paths, dot products, softmax rows, mask, dropout
std::string dot_terms(const std::vector<float>& a, const std::vector<float>& b, double& sum) {
  std::string s;
  sum = 0.0;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    if (i < 6) {
      if (i > 0) s += " + ";
      s += num(a[i]) + "×" + (b[i] < 0 ? "(" + num(b[i]) + ")" : num(b[i]));
    }
  }
  if (n > 6) s += " + … (" + std::to_string(n) + " terms)";
  return s;
}

std::vector<float> row_of(const std::vector<float>& w, std::int64_t row, std::int64_t n) {
  return {w.begin() + static_cast<std::ptrdiff_t>(row * n), w.begin() + static_cast<std::ptrdiff_t>((row + 1) * n)};
}

void text_line(const std::string& s) { ImGui::TextWrapped("%s", s.c_str()); }

void inspect_project(const Frame& f, const lay::Layout& l, const lay::Cell& c, float value) {
  const Variant v = f.tr.config.variant;
  const Model& m = f.s.compute.model;
  static constexpr const char* kW[3] = {"W_query", "W_key", "W_value"};
  std::string wname;
  std::int64_t t = 0, row = 0;
  if (v == Variant::Wrapper) {
    wname = "heads." + std::to_string(c.block % l.dims[1]) + "." + kW[c.pane];
    t = c.row;
    row = c.col;
  } else if (v == Variant::FusedQkv) {
    wname = "qkv_layer";
    t = c.row;
    row = c.col;
  } else {
    wname = kW[c.pane];
    t = c.row;
    row = c.col;
  }
  try {
    const Linear& lin = m.layer(wname);
    std::vector<float> x(static_cast<std::size_t>(f.tr.d_in));
    for (int i = 0; i < f.tr.d_in; ++i) x[static_cast<std::size_t>(i)] = f.tr.input.at({f.b, t, i});
    double sum = 0.0;
    const std::string terms = dot_terms(x, row_of(lin.weight, row, lin.in), sum);
    std::string bias;
    if (!lin.bias.empty()) {
      sum += static_cast<double>(lin.bias[static_cast<std::size_t>(row)]);
      bias = " + bias[" + std::to_string(row) + "] " + num(lin.bias[static_cast<std::size_t>(row)]);
    }
    text_line(tensor_label(f, lay::Step::Project, c.pane) + index_text(f, l, c) + " = X" + lay::index_string({f.b, t}).substr(0, lay::index_string({f.b, t}).size() - 1) +
              ", :] · " + wname + ".weight[" + std::to_string(row) + ", :]" + bias);
    text_line("= " + terms + (bias.empty() ? "" : " + " + num(lin.bias[static_cast<std::size_t>(row)])) + " = " + num(static_cast<float>(sum)) +
              "   (trace: " + num(value) + ")");
    if (v == Variant::WeightSplit) {
      const lay::HeadIndex hi = lay::split_column(f.b, c.row, c.col, f.tr.head_dim);
      text_line("Column j = " + std::to_string(c.col) + " belongs to head j / head_dim = " + std::to_string(c.col) + " / " +
                std::to_string(f.tr.head_dim) + " = " + std::to_string(hi.head) + " (d = j mod head_dim = " + std::to_string(hi.d) + ")");
    } else if (v == Variant::FusedQkv) {
      const std::int64_t hd = f.tr.head_dim, head = c.col / (3 * hd), part = (c.col % (3 * hd)) / hd;
      text_line("Column " + std::to_string(c.col) + ": head " + std::to_string(head) + "'s chunk [q | k | v], part " +
                (part == 0 ? "q" : part == 1 ? "k" : "v") + ", d = " + std::to_string(c.col % hd));
    } else {
      text_line("Head " + std::to_string(c.block % l.dims[1]) + " is its own module with its own " + kW[c.pane] +
                " (" + std::to_string(f.tr.head_dim) + " x " + std::to_string(f.tr.d_in) + ").");
    }
  } catch (const std::exception&) {
    text_line("(weights of this trace are not available)");
  }
}

void inspect_path(const Frame& f, int k, std::int64_t flat) {
  // The element's index in every layout of its chain.
  const auto path = lay::follow(f.steps, f.dims, f.w.mistaken, k, flat);
  std::string s;
  for (std::size_t i = 0; i < f.steps.size(); ++i) {
    if (path[i] < 0) continue;
    const lay::Step st = f.steps[i];
    if (st == lay::Step::Mask || st == lay::Step::Softmax || st == lay::Step::Dropout) continue;
    const lay::Layout l = lay::step_layout(st, f.dims);
    const lay::Cell c = lay::cell_of(l, path[i]);
    if (!s.empty()) s += "  →  ";
    s += tensor_label(f, st, c.pane) + index_text(f, l, c);
  }
  text_line(s);
  const lay::Step st = f.steps[static_cast<std::size_t>(k)];
  const lay::Layout l = lay::step_layout(st, f.dims);
  const lay::Cell c = lay::cell_of(l, flat);
  const int hd = f.tr.head_dim;
  if (st == lay::Step::View || st == lay::Step::Transpose || st == lay::Step::Project) {
    if (f.tr.config.variant == Variant::WeightSplit) {
      std::int64_t j = c.col, t = c.row;
      if (st == lay::Step::View) {
        j = c.row * hd + c.col;
        t = c.block;
      } else if (st == lay::Step::Transpose) {
        j = c.block * hd + c.col;
      }
      const lay::HeadIndex hi = lay::split_column(f.b, t, j, hd);
      text_line("head = j / head_dim = " + std::to_string(j) + " / " + std::to_string(hd) + " = " + std::to_string(hi.head) +
                ",  d = j mod head_dim = " + std::to_string(hi.d) + ".  The view keeps memory (same flat index); the transpose "
                "moves token " + std::to_string(t) + "'s row of head " + std::to_string(hi.head) + " into head " +
                std::to_string(hi.head) + "'s block.");
    }
  }
  if ((st == lay::Step::Merge && f.w.mistaken) && f.tr.config.variant != Variant::Wrapper) {
    const lay::HeadIndex bad = lay::mistaken_source(f.b, c.row, c.col, f.tr.tokens, f.tr.heads, hd);
    const lay::HeadIndex ok = lay::split_column(f.b, c.row, c.col, hd);
    text_line("The plain reshape puts context" + lay::index_string({bad.b, bad.head, bad.t, bad.d}) + " (token " +
              std::to_string(bad.t) + ", " + token_name(f, bad.t) + ") here; the correct merge has context" +
              lay::index_string({ok.b, ok.head, ok.t, ok.d}) + " (token " + std::to_string(ok.t) + ").");
  }
}

void inspect_softmax_row(const Frame& f, int head, int i) {
  const Trace& tr = f.tr;
  const int T = tr.tokens;
  const float scale = tr.scale();
  std::vector<float> sc(static_cast<std::size_t>(T));
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < T; ++j) {
    const float v = tr.masked(i, j) ? -std::numeric_limits<float>::infinity() : tr.scores.at({f.b, head, i, j}) * scale;
    sc[static_cast<std::size_t>(j)] = v;
    mx = std::max(mx, v);
  }
  double sum = 0.0;
  for (int j = 0; j < T; ++j) sum += std::isinf(sc[static_cast<std::size_t>(j)]) ? 0.0 : std::exp(static_cast<double>(sc[static_cast<std::size_t>(j)] - mx));
  ImGui::Text("Row inspector: head %d, query %d (%s).  weight = exp(s/√%d − max) / Σ,  max = %s,  Σ = %s", head, i,
              token_name(f, i).c_str(), tr.head_dim, num(mx).c_str(), num(static_cast<float>(sum)).c_str());
  const int shown = std::min(T, 10);
  if (ImGui::BeginTable("softmax_row", shown + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("key");
    for (int c = 0; c < shown; ++c) {
      const int j = c == shown - 1 ? T - 1 : c;
      ImGui::TableSetupColumn(token_name(f, j).substr(0, 8).c_str());
    }
    ImGui::TableHeadersRow();
    const char* names[4] = {"score", "score/√d", "exp(· − max)", "weight"};
    for (int r = 0; r < 4; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(names[r]);
      for (int c = 0; c < shown; ++c) {
        const int j = c == shown - 1 ? T - 1 : c;
        ImGui::TableNextColumn();
        const bool masked = tr.masked(i, j);
        const float s = sc[static_cast<std::size_t>(j)];
        std::string txt;
        switch (r) {
          case 0: txt = masked ? "-∞" : num(tr.scores.at({f.b, head, i, j})); break;
          case 1: txt = num(s); break;
          case 2: txt = masked ? "0" : num(static_cast<float>(std::exp(static_cast<double>(s - mx)))); break;
          default: txt = num(tr.weights.at({f.b, head, i, j})); break;
        }
        if (masked) ImGui::TextDisabled("%s", txt.c_str());
        else ImGui::TextUnformatted(txt.c_str());
      }
    }
    ImGui::EndTable();
  }
  if (T > shown) ImGui::TextDisabled("(first %d keys and the last of %d)", shown - 1, T);
}

void inspect(Frame& f, int k, std::int64_t flat) {
  const lay::Step st = f.steps[static_cast<std::size_t>(k)];
  const lay::Layout l = lay::step_layout(st, f.dims);
  const Trace& tr = f.tr;
  const int T = tr.tokens;
  std::int64_t masked_cells = 0;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) masked_cells += tr.masked(i, j) ? 1 : 0;
  // Always-on captions per step.
  switch (st) {
    case lay::Step::Mask:
      text_line("mask_bool = triu(ones(" + std::to_string(T) + ", " + std::to_string(T) + "), diagonal=1): " +
                std::to_string(masked_cells) + " of " + std::to_string(T * T) +
                " cells per head (key after query, j > i) become -∞ (outlined), so softmax gives them weight 0.");
      break;
    case lay::Step::Dropout:
      if (tr.dropout_applied()) {
        std::int64_t dropped = 0, n = 0;
        for (int h = 0; h < tr.heads; ++h)
          for (int i = 0; i < T; ++i)
            for (int j = 0; j <= (tr.config.causal ? i : T - 1); ++j) {
              ++n;
              dropped += tr.kept(f.b, h, i, j) ? 0 : 1;
            }
        text_line("p = " + fmt("%.2f", tr.config.dropout) + ": " + std::to_string(dropped) + " of " + std::to_string(n) +
                  " unmasked weights dropped (empty cells); survivors × 1/(1 − p) = " + fmt("%.4f", 1.0 / (1.0 - tr.config.dropout)) + ".");
      } else {
        text_line(std::string("No dropout drawn (") + (tr.config.training ? "p = 0" : "eval mode") +
                  "): the weights pass through unchanged. Set dropout in the model panel to see cells disappear.");
      }
      break;
    case lay::Step::Merge:
      if (f.w.mistaken) {
        text_line("Common mistake (seed 002): reshape (b, h, T, hd) → (b, T, h·hd) without the transpose back. Row 0 then holds head 0 "
                  "of tokens 0, 1, …: tokens are scrambled across heads. Red outlines: cells that differ from the correct merge.");
      } else {
        text_line("view(b, num_tokens, d_out): each token's h blocks of head_dim are laid side by side; column j = head·head_dim + d.");
      }
      break;
    case lay::Step::Concat:
      text_line("The wrapper concatenates the heads' outputs along the last dim: no view or transpose is needed.");
      break;
    default: break;
  }
  if (flat < 0) {
    if (st == lay::Step::Softmax && T > 0) inspect_softmax_row(f, std::clamp(f.s.view.head, 0, tr.heads - 1), T - 1);
    else ImGui::TextDisabled("Hover a cell to follow its element and see how it is computed; click to pin it.");
    return;
  }
  const lay::Cell c = lay::cell_of(l, flat);
  const float value = figure::step_value(f.src, st, flat);
  if (st != lay::Step::Project)  // the projection's first line already names the element
    ImGui::Text("%s%s = %s", tensor_label(f, st, c.pane).c_str(), index_text(f, l, c).c_str(), num(value).c_str());
  switch (st) {
    case lay::Step::Project: inspect_project(f, l, c, value); break;
    case lay::Step::Scores: {
      const std::int64_t head = c.block, i = c.row, j = c.col, hd = tr.head_dim;
      std::vector<float> q(static_cast<std::size_t>(hd)), kk(static_cast<std::size_t>(hd));
      for (std::int64_t d = 0; d < hd; ++d) {
        q[static_cast<std::size_t>(d)] = tr.q.at({f.b, head, i, d});
        kk[static_cast<std::size_t>(d)] = tr.k.at({f.b, head, j, d});
      }
      double sum = 0;
      const std::string terms = dot_terms(q, kk, sum);
      text_line("= q" + lay::index_string({f.b, head, i}).insert(lay::index_string({f.b, head, i}).size() - 1, ", :") + " · k" +
                lay::index_string({f.b, head, j}).insert(lay::index_string({f.b, head, j}).size() - 1, ", :") + " = " + terms + " = " +
                num(static_cast<float>(sum)));
      text_line("Row " + std::to_string(i) + " of q (query " + token_name(f, i) + ") times column " + std::to_string(j) +
                " of kᵀ (key " + token_name(f, j) + "), inside head " + std::to_string(head) + " only.");
      break;
    }
    case lay::Step::Context: {
      const std::int64_t head = c.block, t = c.row, d = c.col;
      std::vector<float> wr(static_cast<std::size_t>(T)), vc(static_cast<std::size_t>(T));
      const Tensor& wt = tr.weights_after_dropout();
      for (int j = 0; j < T; ++j) {
        wr[static_cast<std::size_t>(j)] = wt.at({f.b, head, t, j});
        vc[static_cast<std::size_t>(j)] = tr.v.at({f.b, head, j, d});
      }
      double sum = 0;
      const std::string terms = dot_terms(wr, vc, sum);
      text_line("= weights[" + std::to_string(f.b) + ", " + std::to_string(head) + ", " + std::to_string(t) + ", :] · v[" +
                std::to_string(f.b) + ", " + std::to_string(head) + ", :, " + std::to_string(d) + "] = " + terms + " = " +
                num(static_cast<float>(sum)));
      inspect_path(f, k, flat);
      break;
    }
    case lay::Step::OutProj: {
      const char* name = tr.config.variant == Variant::FusedQkv ? "linear_layer" : "out_proj";
      try {
        const Linear& lin = f.s.compute.model.layer(name);
        std::vector<float> x(static_cast<std::size_t>(lin.in));
        for (int i = 0; i < lin.in; ++i) x[static_cast<std::size_t>(i)] = tr.context_merged.at({f.b, c.row, i});
        double sum = 0;
        const std::string terms = dot_terms(x, row_of(lin.weight, c.col, lin.in), sum);
        const float bias = lin.bias.empty() ? 0.0f : lin.bias[static_cast<std::size_t>(c.col)];
        text_line("= merged[" + std::to_string(f.b) + ", " + std::to_string(c.row) + ", :] · " + name + ".weight[" +
                  std::to_string(c.col) + ", :] + bias = " + terms + " + " + num(bias) + " = " + num(static_cast<float>(sum + bias)));
        text_line(std::string(name) + " mixes all heads: every output column reads every head's columns.");
      } catch (const std::exception&) {
        text_line("(weights of this trace are not available)");
      }
      break;
    }
    default: break;
  }
  if (st == lay::Step::Mask) {
    text_line(tr.masked(static_cast<int>(c.row), static_cast<int>(c.col))
                  ? "Key " + std::to_string(c.col) + " comes after query " + std::to_string(c.row) + ": masked to -∞."
                  : "Key " + std::to_string(c.col) + " is not after query " + std::to_string(c.row) + ": kept.");
  }
  if (st == lay::Step::Softmax) inspect_softmax_row(f, static_cast<int>(c.block), static_cast<int>(c.row));
  if (st == lay::Step::Dropout && tr.dropout_applied()) {
    const int i = static_cast<int>(c.row), j = static_cast<int>(c.col), h = static_cast<int>(c.block);
    if (tr.masked(i, j)) text_line("Masked cell: weight 0 either way.");
    else if (tr.kept(f.b, h, i, j))
      text_line("Kept: " + num(tr.weights.at({f.b, h, i, j})) + " × " + fmt("%.4f", 1.0 / (1.0 - tr.config.dropout)) + " = " + num(value));
    else text_line("Dropped: " + num(tr.weights.at({f.b, h, i, j})) + " → 0");
  }
  if (st == lay::Step::View || st == lay::Step::Transpose || st == lay::Step::Chunk || st == lay::Step::TransposeBack ||
      st == lay::Step::Merge || st == lay::Step::Concat || st == lay::Step::Input)
    inspect_path(f, k, flat);
}

// [SECTION] Highlights of operands and the chain strip
void highlight_operands(Frame& f, const Scene& sc, lay::Step st, std::int64_t flat) {
  if (flat < 0) return;
  const Grid& res = sc.grids[static_cast<std::size_t>(sc.result)];
  const lay::Cell c = lay::cell_of(res.l, flat);
  ImVec2 a, b;
  auto row_hl = [&](const Grid& g, std::int64_t block, std::int64_t row) {
    if (cells_rect(f, g, 0, block, row, row, 0, g.l.dims[3] - 1, a, b)) outline(f, a, b, kOperand);
  };
  auto col_hl = [&](const Grid& g, std::int64_t block, std::int64_t col) {
    if (cells_rect(f, g, 0, block, 0, g.l.dims[2] - 1, col, col, a, b)) outline(f, a, b, kOperand);
  };
  switch (st) {
    case lay::Step::Project:
      row_hl(sc.grids[0], 0, c.row);
      if (sc.result == 2) {  // Wᵀ drawn: the column that makes the output column
        const Grid& wg = sc.grids[1];
        if (wg.l.kind == lay::Kind::HeadBlocks) col_hl(wg, c.block % wg.l.dims[1], c.col);
        else col_hl(wg, 0, c.col);
      }
      break;
    case lay::Step::Scores:
      row_hl(sc.grids[0], c.block, c.row);
      row_hl(sc.grids[1], c.block, c.col);
      break;
    case lay::Step::Context:
      row_hl(sc.grids[0], c.block, c.row);
      col_hl(sc.grids[1], c.block, c.col);
      break;
    case lay::Step::OutProj:
      row_hl(sc.grids[0], 0, c.row);
      break;
    case lay::Step::Softmax:
      if (cells_rect(f, res, 0, c.block, c.row, c.row, 0, res.l.dims[3] - 1, a, b)) outline(f, a, b, kOperand, 1.5f);
      break;
    default: break;
  }
  if (cells_rect(f, res, c.pane, c.block, c.row, c.row, c.col, c.col, a, b)) outline(f, a, b, kSelect);
}

// Chain of steps linked by moves (the same elements, rearranged) around step k.
std::vector<int> chain_of(const Frame& f, int k) {
  int lo = k, hi = k;
  auto moves = [&](int i) {  // move into step i
    const lay::Move m = lay::step_move(f.steps[static_cast<std::size_t>(i - 1)], f.steps[static_cast<std::size_t>(i)], f.w.mistaken);
    return m != lay::Move::None;
  };
  while (lo > 0 && moves(lo)) --lo;
  while (hi + 1 < static_cast<int>(f.steps.size()) && moves(hi + 1)) ++hi;
  std::vector<int> out;
  bool rearranges = false;
  for (int i = lo; i <= hi; ++i) {
    const lay::Step st = f.steps[static_cast<std::size_t>(i)];
    if (st == lay::Step::Mask || st == lay::Step::Softmax || st == lay::Step::Dropout) continue;
    if (i > lo) rearranges = true;
    out.push_back(i);
  }
  if (!rearranges) out.clear();
  return out;
}

// Small copies of every layout of the chain, stacked in a column, with the selected element
// outlined in each: the same element in every layout, and its index there.
void draw_chain_strip(Frame& f, int k, ImVec2 at_px, float width, float height) {
  const std::vector<int> chain = chain_of(f, k);
  if (chain.size() < 2) return;
  Frame mini = f;
  mini.cells = 0;
  mini.block_cols = 1;
  mini.values_fit = false;
  const float label_h = f.sfh + 4.0f;
  const float per_fixed = label_h * 2.0f + f.sfh * 0.8f;  // title, index line, arrow gap
  std::vector<Grid> gs;
  for (int i : chain) gs.push_back(result_grid(f, f.steps[static_cast<std::size_t>(i)]));
  for (const auto& g : gs) {
    if (g.l.numel() > 4096 && mini.lim_rows == 0) {  // never thousands of tiny cells
      mini.lim_blocks = 3;
      mini.lim_rows = 8;
      mini.lim_cols = 8;
    }
  }
  for (int iter = 0; iter < 3; ++iter) {
    float cells_h = 0.0f, max_cells_w = 0.0f, fixed_h = 0.0f, fixed_w = 0.0f;
    for (auto& g : gs) {
      g.l = windowed(mini, g.l);
      const float np = static_cast<float>(panes_drawn(g));
      max_cells_w = std::max(max_cells_w, np * static_cast<float>(g.l.col_axis().slots()));
      fixed_w = std::max(fixed_w, (np - 1.0f) * mini.pane_px);
      const float bl = static_cast<float>(g.l.block_axis().slots());
      cells_h += bl * static_cast<float>(g.l.row_axis().slots());
      fixed_h += (bl - 1.0f) * mini.gap_px + per_fixed;
    }
    mini.cs = std::floor(std::clamp(std::min((width - fixed_w - 8.0f) / std::max(1.0f, max_cells_w), (height - fixed_h) / std::max(1.0f, cells_h)), 2.0f, 16.0f));
    mini.gap_px = std::max(2.0f, std::floor(mini.cs * 0.5f));
    mini.pane_px = std::max(3.0f, mini.cs);
  }
  float y = at_px.y;
  const std::int64_t sel = selected_in(f, k);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled), text = ImGui::GetColorU32(ImGuiCol_Text);
  small_text(f, ImVec2(at_px.x, y), dim, "The same elements in each layout:");
  y += label_h;
  for (std::size_t n = 0; n < gs.size(); ++n) {
    Grid& g = gs[n];
    const int si = chain[n];
    const lay::Step st = f.steps[static_cast<std::size_t>(si)];
    const std::string lab = tensor_label(f, st, g.pane_first) + "  " + shape_of(f, g.l);
    small_text(f, ImVec2(at_px.x, y), si == k ? text : dim, (si == k ? "> " : "") + lab);
    g.origin = ImVec2(std::floor(at_px.x + 4.0f), std::floor(y + label_h));
    for_visible(mini, g, [&](const lay::Cell& c, std::int64_t flat, ImVec2 p) {
      Look lk = look_of(mini, g, c, flat);
      if (si != k) lk.fill.w = 0.7f;
      draw_cell(mini, p, mini.cs, lk, 1.0f, ImGui::GetFont());
    });
    const float gy = grid_size(mini, g).y;
    if (sel >= 0) {
      const std::int64_t e = lay::follow(f.steps, f.dims, f.w.mistaken, k, sel)[static_cast<std::size_t>(si)];
      if (e >= 0) {
        const lay::Cell c = lay::cell_of(g.l, e);
        ImVec2 a, b;
        if (pane_drawn(g, c.pane) && lay::visible(g.l, c) && cells_rect(mini, g, c.pane, c.block, c.row, c.row, c.col, c.col, a, b))
          outline(mini, a, b, kSelect, 2.0f);
        small_text(f, ImVec2(at_px.x, g.origin.y + gy + 2.0f), text, tensor_label(f, st, c.pane) + index_text(f, g.l, c));
      }
    }
    y = g.origin.y + gy + label_h;
    if (n + 1 < gs.size()) small_text(f, ImVec2(at_px.x + f.sfh * 2.0f, y - 2.0f), dim, "↓");
    y += f.sfh * 0.8f;
  }
  f.cells += mini.cells;
}

// [SECTION] Controls
int step_count(const Frame& f) { return static_cast<int>(f.steps.size()); }

void handle_keys(AppState& s, Walkthrough& w, int n) {
  const ImGuiIO& io = ImGui::GetIO();
  if (s.ui.dialog != Dialog::None || io.WantTextInput || io.KeyCtrl) return;
  // GLFW key codes index KeysDown in the 1.86 GLFW backend (ImGuiKey_Space would never fire).
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT, false)) next_step(w, n);
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT, false)) previous_step(w, n);
  if (ImGui::IsKeyPressed(GLFW_KEY_SPACE, false)) toggle_play(w, n);
  if (ImGui::IsKeyPressed(GLFW_KEY_HOME, false)) go_to(w, 0.0f, n);
  if (ImGui::IsKeyPressed(GLFW_KEY_END, false)) go_to(w, static_cast<float>(n - 1), n);
}

void draw_controls_row(AppState& s, Frame& f) {
  Walkthrough& w = f.w;
  const int n = step_count(f);
  const float fh = ImGui::GetFontSize();
  if (ImGui::Button("|<")) go_to(w, 0.0f, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("First step (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Back")) previous_step(w, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Previous step (←)");
  s.probe.widgets["walk_back"] = {ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y, ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y};
  ImGui::SameLine();
  if (ImGui::Button(w.playing ? "Pause ##play" : "Play  ##play", ImVec2(fh * 4.0f, 0))) toggle_play(w, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Play / pause (Space)");
  record_widget(s, "walk_play");
  ImGui::SameLine();
  if (ImGui::Button("Next >")) next_step(w, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Next step, animated (→)");
  record_widget(s, "walk_next");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(fh * 8.0f, ImGui::GetContentRegionAvail().x - fh * 26.0f));
  float pos = w.pos + 1.0f;
  char fmtbuf[64];
  std::snprintf(fmtbuf, sizeof fmtbuf, "step %.2f of %d", static_cast<double>(w.pos + 1.0f), n);
  if (ImGui::SliderFloat("##scrub", &pos, 1.0f, static_cast<float>(n), fmtbuf)) {
    w.pos = w.target = std::clamp(pos - 1.0f, 0.0f, static_cast<float>(n - 1));
    w.playing = false;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Scrub: fractions show the animation between two steps");
  record_widget(s, "walk_scrub");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(fh * 6.0f);
  ImGui::SliderFloat("speed", &w.speed, 0.25f, 4.0f, "%.2fx", ImGuiSliderFlags_Logarithmic);
  ImGui::SameLine();
  ImGui::Checkbox("numbers", &w.values);
  ImGui::SameLine();
  capture_button(s);
}

void draw_step_chips(AppState& s, Frame& f) {
  ImGui::SetWindowFontScale(0.85f);
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(4.0f, 2.0f));
  Walkthrough& w = f.w;
  const int n = step_count(f);
  const int cur = static_cast<int>(std::lround(w.target));
  for (int i = 0; i < n; ++i) {
    if (i > 0) ImGui::SameLine(0.0f, 4.0f);
    const lay::Step sti = f.steps[static_cast<std::size_t>(i)];
    const std::string shortname = sti == lay::Step::Input ? "X" : sti == lay::Step::Project ? "QKV" : sti == lay::Step::TransposeBack ? "back" : std::string(lay::step_name(sti));
    const std::string name = std::to_string(i + 1) + " " + shortname;
    const float bw = ImGui::CalcTextSize(name.c_str()).x + ImGui::GetStyle().FramePadding.x * 2.0f;
    if (i > 0 && ImGui::GetItemRectMax().x + bw + 4.0f > ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::NewLine();
    const bool on = i == cur;
    if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    if (ImGui::Button(name.c_str())) go_to(w, static_cast<float>(i), n);
    record_widget(s, ("walk_chip_" + std::to_string(i + 1)).c_str());
    if (on) ImGui::PopStyleColor();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", std::string(lay::step_title(f.steps[static_cast<std::size_t>(i)], f.tr.config.variant)).c_str());
  }
  ImGui::PopStyleVar();
  ImGui::SetWindowFontScale(1.0f);
}

void draw_options_row(AppState& s, Frame& f) {
  Walkthrough& w = f.w;
  const Variant v = f.tr.config.variant;
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("mode:");
  ImGui::SameLine();
  const Variant vs[3] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv};
  for (Variant x : vs) {
    ImGui::SameLine();
    if (ImGui::RadioButton(std::string(variant_name(x)).c_str(), v == x) && v != x) {
      ModelConfig& c = s.doc.session.model;
      c = with_variant(c, x);  // the Model panel's edit: keeps num_heads and head_dim
      s.ui.preferred_heads = c.num_heads;
      mark_model_dirty(s);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kVariantSwitchNote);
  }
  if (!f.steps.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("  show:");
    const char* names[4] = {"Q", "K", "V", "all"};
    for (int p = 0; p < 4; ++p) {
      ImGui::SameLine();
      ImGui::RadioButton(names[p], &w.pane, p);
    }
    ImGui::SameLine();
    ImGui::Checkbox("Wᵀ", &w.show_weights);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Draw the weight matrix (transposed) in the projection step: X · Wᵀ = Q\n(when it fits without hiding columns)");
  }
  if (f.tr.batch > 1) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.0f);
    int b = s.view.batch;
    if (ImGui::InputInt("batch", &b)) s.view.batch = std::clamp(b, 0, f.tr.batch - 1);
  }
  if (v != Variant::Wrapper) {
    ImGui::SameLine();
    const float before = w.pos;
    if (ImGui::Checkbox("mistake: merge w/o transpose back", &w.mistaken)) {
      // Stay on the same step (the step list loses or regains "transpose back").
      const auto old_steps = lay::steps_for(v, !w.mistaken);
      const lay::Step at_step = old_steps[static_cast<std::size_t>(std::clamp(static_cast<int>(std::lround(before)), 0, static_cast<int>(old_steps.size()) - 1))];
      const auto now_steps = lay::steps_for(v, w.mistaken);
      int idx = 0;
      for (int i = 0; i < static_cast<int>(now_steps.size()); ++i)
        if (now_steps[static_cast<std::size_t>(i)] == at_step || (at_step == lay::Step::TransposeBack && now_steps[static_cast<std::size_t>(i)] == lay::Step::Merge)) idx = i;
      w.pos = w.target = static_cast<float>(idx);
      w.hover_step = w.pin_step = -1;
    }
    record_widget(s, "walk_mistake");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Seed 002's reshape of (b, h, T, hd) straight to (b, T, h*hd): see the merge step");
  }
}

// Signed scores: the diverging map's swatches from -vmax through 0 to +vmax (figure/walk_values.hpp).
void draw_diverging_legend(Frame& f, float vmax) {
  const float fh = ImGui::GetFontSize();
  ImGui::TextDisabled("score colour:");
  int i = 0;
  for (const figure::Swatch& sw : figure::diverging_legend(vmax)) {
    ImGui::SameLine();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + fh * 0.15f), ImVec2(p.x + fh * 0.9f, p.y + fh * 1.05f), u32(to_vec(sw.color)));
    ImGui::Dummy(ImVec2(fh * 0.9f, fh));
    ImGui::SameLine(0.0f, fh * 0.25f);
    ImGui::TextUnformatted(sw.text.c_str());
    ++i;
  }
  f.legend_swatches = i;
}

// [SECTION] The walkthrough tab
// Cell size of every step (the largest that fits the canvas), and one window of blocks,
// rows and columns for all steps when a step would get cells too small to read.
void choose_scale(Frame& f, const ImVec2& avail) {
  const int n = step_count(f);
  const float fh = ImGui::GetFontSize();
  const float max_cs = std::floor(fh * 3.4f);
  auto fit_one = [&](int k) {
    // A scene's size is linear in the cell size: measure it at two.
    set_cs(f, 10.0f);
    const ImVec2 a = scene_size(f, build_scene(f, k));
    set_cs(f, 20.0f);
    const ImVec2 b = scene_size(f, build_scene(f, k));
    const float cw = (b.x - a.x) / 10.0f, ch = (b.y - a.y) / 10.0f;
    const float fw = a.x - cw * 10.0f, fhh = a.y - ch * 10.0f;
    float best = max_cs;
    if (cw > 0) best = std::min(best, (avail.x - fw) / cw);
    if (ch > 0) best = std::min(best, (avail.y - fhh) / ch);
    return std::floor(best);
  };
  const float want = std::max(10.0f, fh * 0.6f);  // below this, cells are too small to point at
  // Large sizes: a window of blocks, rows and columns with ellipses (per step: small steps
  // keep every cell; a transition fades out what the next window hides).
  const std::int64_t windows[4][3] = {{0, 0, 0}, {4, 10, 12}, {3, 8, 8}, {2, 6, 6}};
  f.step_cs.assign(static_cast<std::size_t>(n), 4.0f);
  f.step_bcols.assign(static_cast<std::size_t>(n), 1);
  f.step_lims.assign(static_cast<std::size_t>(n), {0, 0, 0});
  // Wᵀ in the projection step only when the step still fits without a window.
  f.weights_fit = true;
  for (int k = 0; k < n && f.w.show_weights; ++k) {
    if (f.steps[static_cast<std::size_t>(k)] != lay::Step::Project) continue;
    float best = -1.0f;
    for (int c = 1; c <= 4; ++c) {
      f.block_cols = c;
      best = std::max(best, fit_one(k));
    }
    f.weights_fit = best >= want;
  }
  for (int k = 0; k < n; ++k) {
    for (const auto& win : windows) {
      f.lim_blocks = win[0];
      f.lim_rows = win[1];
      f.lim_cols = win[2];
      // Blocks side by side when that gives larger cells (wide canvas, many short blocks).
      float best = -1.0f;
      int best_c = 1;
      for (int c = 1; c <= 4; ++c) {
        f.block_cols = c;
        const float v = fit_one(k);
        if (v > best + 0.5f) {
          best = v;
          best_c = c;
        }
      }
      f.step_cs[static_cast<std::size_t>(k)] = std::clamp(best, 4.0f, max_cs);
      f.step_bcols[static_cast<std::size_t>(k)] = best_c;
      f.step_lims[static_cast<std::size_t>(k)] = {win[0], win[1], win[2]};
      if (best >= want) break;
    }
  }
  f.block_cols = 1;
  f.lim_blocks = f.lim_rows = f.lim_cols = 0;
}

// Cell size, block columns and window of step k.
void use_step(Frame& f, int k) {
  const std::size_t i = static_cast<std::size_t>(k);
  set_cs(f, f.step_cs[i]);
  f.block_cols = f.step_bcols[i];
  f.lim_blocks = f.step_lims[i][0];
  f.lim_rows = f.step_lims[i][1];
  f.lim_cols = f.step_lims[i][2];
}

void update_mistaken(AppState& s) {
  Walkthrough& w = s.walkthrough;
  if (w.mistaken_generation == s.compute.generation) return;
  try {
    w.mistake = figure::make_mistake(s.compute.model, s.compute.trace);
  } catch (const std::exception&) {
    w.mistake = figure::Mistake{mistaken_merge(s.compute.trace), {}};  // the model is ahead of the trace
  }
  w.mistaken_generation = s.compute.generation;
}

void draw_walkthrough_tab(AppState& s) {
  const float fh = ImGui::GetFontSize();
  Walkthrough& w = s.walkthrough;
  const Trace& tr = s.compute.trace;
  update_mistaken(s);
  Frame f(s, w, tr);
  f.b = std::clamp(s.view.batch, 0, std::max(0, tr.batch - 1));
  f.src = {&tr, f.b, w.mistaken, &w.mistake};
  f.dims = f.src.dims();
  f.steps = lay::steps_for(tr.config.variant, w.mistaken && tr.config.variant != Variant::Wrapper);
  const int n = step_count(f);
  f.sfh = std::round(ImGui::GetFontSize() * 0.8f);
  f.gap_px = std::ceil(f.sfh + 6.0f);
  f.pane_px = std::ceil(f.sfh * 1.5f);
  w.pos = std::clamp(w.pos, 0.0f, static_cast<float>(n - 1));
  w.target = std::clamp(w.target, 0.0f, static_cast<float>(n - 1));
  handle_keys(s, w, n);
  if (advance(w, glfwGetTime(), n)) s.last_event_time = w.last_time;  // keep frames coming while animating

  draw_controls_row(s, f);
  draw_step_chips(s, f);
  draw_options_row(s, f);

  const int k = std::clamp(static_cast<int>(std::floor(w.pos)), 0, n - 1);
  const float u = w.pos - static_cast<float>(k);
  const bool moving = u > 1e-4f && k + 1 < n;
  const int shown = moving && u >= 0.5f ? k + 1 : k;
  const lay::Step st = f.steps[static_cast<std::size_t>(shown)];
  const Variant v = tr.config.variant;

  // Title, code and shape of the step (the one being entered while animating).
  ImGui::Separator();
  ImGui::Text("Step %d of %d:  %s", shown + 1, n, std::string(lay::step_title(st, v)).c_str());
  {
    Shape sh = lay::step_layout(st, f.dims).shape();
    sh[0] = tr.batch;
    const std::string shape_line = std::string(lay::step_shape(st, v)) + " = " +
                                   (v == Variant::Wrapper && (st == lay::Step::Project || st == lay::Step::Context)
                                        ? std::to_string(tr.heads) + " x (" + std::to_string(tr.batch) + ", " + std::to_string(tr.tokens) + ", " + std::to_string(tr.head_dim) + ")"
                                        : shape_text(sh));
    ImGui::SameLine(0.0f, fh * 1.5f);
    ImGui::TextDisabled("%s", shape_line.c_str());
    std::string extra = "num_heads = " + std::to_string(tr.heads) + ", head_dim = " + std::to_string(tr.head_dim);
    if (v == Variant::Wrapper && st == lay::Step::Project)
      extra = std::to_string(tr.heads) + " modules, each its own W_query, W_key, W_value (" + std::to_string(tr.head_dim) + " x " + std::to_string(tr.d_in) + ")";
    if (v == Variant::FusedQkv && st == lay::Step::Project) extra = "per head a [q | k | v] chunk of 3 * head_dim columns";
    if (st == lay::Step::Softmax) extra = "1/√head_dim = 1/√" + std::to_string(tr.head_dim) + " = " + num(tr.scale());
    ImGui::PushFont(s.ui.font_mono ? s.ui.font_mono : ImGui::GetFont());
    const ImVec4 code_col = s.settings.dark ? ImVec4(0.55f, 0.8f, 1.0f, 1.0f) : ImVec4(0.05f, 0.3f, 0.6f, 1.0f);
    ImGui::TextColored(code_col, "%s", std::string(lay::step_code(st, v)).c_str());
    ImGui::PopFont();
    ImGui::SameLine(0.0f, fh * 1.5f);
    ImGui::TextDisabled("%s", extra.c_str());
  }

  // Canvas, chain strip and inspector.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool has_chain = chain_of(f, shown).size() >= 2;
  const float strip_w = has_chain ? std::floor(std::clamp(avail.x * 0.3f, fh * 10.0f, fh * 17.0f)) : 0.0f;
  const bool matmul = st == lay::Step::Project || st == lay::Step::Scores || st == lay::Step::Context || st == lay::Step::OutProj;
  const float insp_h = st == lay::Step::Softmax ? fh * 9.5f : matmul ? fh * 5.8f : fh * 4.6f;
  const ImVec2 canvas_sz(avail.x - strip_w, std::max(fh * 6.0f, avail.y - insp_h));
  f.value_w = ImGui::GetFont()->CalcTextSizeA(f.sfh, FLT_MAX, 0.0f, "-0.00").x;
  for (const auto& t : s.compute.tokens) f.token_w = std::max(f.token_w, ImGui::CalcTextSize(t.c_str()).x);
  f.token_w = std::min(f.token_w, ImGui::CalcTextSize("abcdefgh").x);
  for (const auto& t : s.compute.tokens) f.key_w = std::max(f.key_w, small_w(f, t));
  choose_scale(f, ImVec2(canvas_sz.x - 8.0f, canvas_sz.y - 8.0f));
  use_step(f, k);
  const ImVec2 canvas = ImGui::GetCursorScreenPos();
  f.dl = ImGui::GetWindowDrawList();
  f.dl->PushClipRect(canvas, ImVec2(canvas.x + canvas_sz.x, canvas.y + canvas_sz.y), true);

  Scene cur = build_scene(f, k);
  place_scene(f, cur, ImVec2(canvas.x + 4.0f, canvas.y + 4.0f));
  w.hover_step = -1;
  w.hover_flat = -1;
  Introspection::Walk rec;
  if (!moving) {
    for (std::size_t i = 0; i < cur.grids.size(); ++i) {
      draw_grid(f, cur.grids[i], 1.0f, &rec, static_cast<int>(i) == cur.result);
      draw_operator(f, cur.grids[i], 1.0f);
    }
    // Mistake: outline cells that differ from the correct merge.
    if (st == lay::Step::Merge && w.mistaken && v != Variant::Wrapper) {
      const Grid& g = cur.grids[static_cast<std::size_t>(cur.result)];
      for_visible(f, g, [&](const lay::Cell&, std::int64_t flat, ImVec2 p) {
        const std::int64_t off = static_cast<std::int64_t>(f.b) * g.l.pane_numel() + flat;
        if (at(w.mistake.merged, off) != at(tr.context_merged, off))
          f.dl->AddRect(ImVec2(p.x + 1, p.y + 1), ImVec2(p.x + f.cs - 1, p.y + f.cs - 1), IM_COL32(255, 60, 50, 255), 0.0f, 0, 2.0f);
      });
    }
    // Hover: the result grid (and the correct merge next to the mistake).
    const ImVec2 m = ImGui::GetIO().MousePos;
    const bool inside = ImGui::IsWindowHovered() && m.x >= canvas.x && m.y >= canvas.y && m.x < canvas.x + canvas_sz.x &&
                        m.y < canvas.y + canvas_sz.y && !s.opts.ignore_mouse;
    if (inside) {
      const Grid& g = cur.grids[static_cast<std::size_t>(cur.result)];
      const lay::Point p{(m.x - g.origin.x) / f.cs + pane_shift(g), (m.y - g.origin.y) / f.cs};
      lay::Cell c;
      if (lay::cell_at(g.l, p, c) && pane_drawn(g, c.pane)) {
        w.hover_step = k;
        w.hover_flat = lay::index_of(g.l, c);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
          const bool same = w.pin_step == k && w.pin_flat == w.hover_flat;
          w.pin_step = same ? -1 : k;
          w.pin_flat = same ? -1 : w.hover_flat;
        }
      }
    }
    highlight_operands(f, cur, st, selected_in(f, k));
  } else {
    Frame fb = f;
    fb.cells = 0;
    use_step(fb, k + 1);
    Scene next = build_scene(fb, k + 1);
    place_scene(fb, next, ImVec2(canvas.x + 4.0f, canvas.y + 4.0f));
    const lay::Move mv = lay::step_move(f.steps[static_cast<std::size_t>(k)], f.steps[static_cast<std::size_t>(k + 1)], w.mistaken);
    const float e = lay::ease(u);
    // A new tensor (no element correspondence): cross-fade the scenes. Elements that move:
    // operands leave first, then the new ones come.
    const bool fade = mv == lay::Move::None;
    const float out_a = fade ? 1.0f - e : std::max(0.0f, 1.0f - 2.0f * e);
    const float in_a = fade ? e : std::max(0.0f, 2.0f * e - 1.0f);
    for (std::size_t i = 0; i < cur.grids.size(); ++i) {
      if (static_cast<int>(i) == cur.result && !fade) continue;
      draw_grid(f, cur.grids[i], out_a);
      draw_operator(f, cur.grids[i], out_a);
    }
    for (std::size_t i = 0; i < next.grids.size(); ++i) {
      if (static_cast<int>(i) == next.result && !fade) continue;
      draw_grid(fb, next.grids[i], in_a);
      draw_operator(fb, next.grids[i], in_a);
    }
    if (mv != lay::Move::None) {
      draw_moving(f, fb, cur.grids[static_cast<std::size_t>(cur.result)], next.grids[static_cast<std::size_t>(next.result)], mv, u);
    }
    f.cells += fb.cells;
  }
  f.dl->PopClipRect();
  ImGui::Dummy(canvas_sz);

  if (has_chain) {
    const ImVec2 sp(canvas.x + canvas_sz.x, canvas.y);
    f.dl->PushClipRect(sp, ImVec2(sp.x + strip_w, sp.y + canvas_sz.y), true);
    f.dl->AddLine(ImVec2(sp.x - 6.0f, sp.y), ImVec2(sp.x - 6.0f, sp.y + canvas_sz.y), ImGui::GetColorU32(ImGuiCol_Separator));
    draw_chain_strip(f, shown, ImVec2(sp.x + 4.0f, sp.y), strip_w - 8.0f, canvas_sz.y - 4.0f);
    f.dl->PopClipRect();
  }
  ImGui::Separator();
  if (!moving && figure::step_tint(st) == Tint::Diverging) draw_diverging_legend(f, cur.grids[static_cast<std::size_t>(cur.result)].vmax);
  if (!moving) inspect(f, k, selected_in(f, k));
  else ImGui::TextDisabled("%s", "Every element travels from its place in the old layout to its place in the new one.");
  // For tests (--layout-out / --state-out): position, target, playing, what was drawn this frame.
  rec.pos = w.pos;
  rec.target = w.target;
  rec.playing = w.playing;
  rec.cells = f.cells;
  rec.legend_swatches = f.legend_swatches;
  s.probe.walk = std::move(rec);
}

// [SECTION] Wrapper vs weight split
void rebuild_comparison(AppState& s) {
  Comparison& c = s.walkthrough.cmp;
  const Trace& tr = s.compute.trace;
  c = Comparison();
  c.generation = s.compute.generation;
  using clock = std::chrono::steady_clock;
  // Once per change (not per frame); a cheap forward is repeated and the fastest kept, so
  // that a cold cache does not decide the comparison.
  const auto time_forward = [](const Model& m, const Tensor& x, Trace& out) {
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = clock::now();
      forward(m, x, out);
      best = std::min(best, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
      if (best > 5.0) break;
    }
    return best;
  };
  try {
    const ModelConfig& cur = s.compute.model.config;
    Model wrapper;
    if (cur.variant == Variant::Wrapper) {
      wrapper = s.compute.model;
      c.note = "Weight-split model built from this wrapper's weights: the heads' W stacked row-wise, out_proj = identity.";
    } else {
      ModelConfig wc = cur;
      wc.variant = Variant::Wrapper;
      wc.d_out = tr.head_dim;
      wrapper = build_model(wc, tr.d_in);
      c.note = "This session is " + std::string(variant_name(cur.variant)) + ": a wrapper of " + std::to_string(tr.heads) +
               " heads of d_out = " + std::to_string(tr.head_dim) + " is initialised from seed " + std::to_string(cur.seed) +
               ", and the weight-split model is built from its weights (stacked W, out_proj = identity).";
    }
    wrapper.config.training = false;  // eval mode: no dropout, so both compute the same function
    Model split = weight_split_from_wrapper(wrapper);
    split.config.training = false;
    c.d_in = tr.d_in;
    c.tokens = tr.tokens;
    c.batch = tr.batch;
    c.heads = tr.heads;
    c.head_dim = tr.head_dim;
    Comparison::Row row0;
    row0.heads = tr.heads;
    row0.wrapper_ms = time_forward(wrapper, tr.input, c.wrapper);
    row0.split_ms = time_forward(split, tr.input, c.split);
    double dw = 0.0, dout = 0.0;
    for (std::size_t i = 0; i < c.wrapper.weights.data.size() && i < c.split.weights.data.size(); ++i)
      dw = std::max(dw, static_cast<double>(std::fabs(c.wrapper.weights.data[i] - c.split.weights.data[i])));
    for (std::size_t i = 0; i < c.wrapper.output.data.size() && i < c.split.output.data.size(); ++i)
      dout = std::max(dout, static_cast<double>(std::fabs(c.wrapper.output.data[i] - c.split.output.data[i])));
    c.max_diff_weights = dw;
    c.max_diff_output = dout;
    // Cost rows: this size, then growing num_heads at the same head_dim.
    auto cost_row = [&](int h, bool timed) {
      Comparison::Row r;
      r.heads = h;
      ModelConfig wc = wrapper.config;
      wc.num_heads = h;
      wc.d_out = tr.head_dim;
      ModelConfig sc = wc;
      sc.variant = Variant::WeightSplit;
      sc.d_out = h * tr.head_dim;
      ModelConfig fc = sc;
      fc.variant = Variant::FusedQkv;
      r.wrapper = forward_cost(wc, tr.d_in, tr.tokens, tr.batch);
      r.split = forward_cost(sc, tr.d_in, tr.tokens, tr.batch);
      r.fused = forward_cost(fc, tr.d_in, tr.tokens, tr.batch);
      if (timed) {
        Trace scratch;
        r.wrapper_ms = time_forward(build_model(wc, tr.d_in), tr.input, scratch);
        r.split_ms = time_forward(build_model(sc, tr.d_in), tr.input, scratch);
        r.fused_ms = time_forward(build_model(fc, tr.d_in), tr.input, scratch);
      } else {
        r.wrapper_ms = r.split_ms = r.fused_ms = -1.0;
      }
      return r;
    };
    Comparison::Row first = cost_row(tr.heads, false);
    first.wrapper_ms = row0.wrapper_ms;
    first.split_ms = row0.split_ms;
    {
      ModelConfig fc = wrapper.config;
      fc.variant = Variant::FusedQkv;
      fc.d_out = tr.heads * tr.head_dim;
      Trace scratch;
      first.fused_ms = time_forward(build_model(fc, tr.d_in), tr.input, scratch);
    }
    c.rows.push_back(first);
    // Growth: time only while a forward stays cheap (frames must stay fast).
    const double budget_flops = 4e8;
    for (int h : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64}) {
      if (h > s.walkthrough.cmp_max_heads) break;
      ModelConfig probe = wrapper.config;
      probe.num_heads = h;
      const bool timed = static_cast<double>(forward_cost(probe, tr.d_in, tr.tokens, tr.batch).flops) < budget_flops;
      c.rows.push_back(cost_row(h, timed));
    }
    c.valid = true;
  } catch (const std::exception& e) {
    c.valid = false;
    c.note = std::string("Cannot build the comparison: ") + e.what();
  }
}

std::string big(std::int64_t v) {
  char buf[32];
  if (v >= 1000000000) std::snprintf(buf, sizeof buf, "%.2f G", static_cast<double>(v) / 1e9);
  else if (v >= 1000000) std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(v) / 1e6);
  else if (v >= 10000) std::snprintf(buf, sizeof buf, "%.1f k", static_cast<double>(v) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

std::string ms_text(double ms) { return ms < 0 ? "not timed" : fmt(ms < 1.0 ? "%.3f ms" : "%.2f ms", ms); }

// A head's (T, T) weights as a small grid of cells.
void weights_tile(AppState& s, const Trace& t, int head, const char* title, float side) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int T = t.tokens;
  const int shown = std::min(T, 24);
  const float cs = std::floor(side / static_cast<float>(shown));
  ImGui::BeginGroup();
  ImGui::TextUnformatted(title);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec4 bg = rgba(ImGui::GetColorU32(ImGuiCol_WindowBg));
  const ImVec4 hc = head_rgba(head);
  ImFont* font = ImGui::GetFont();
  const float sfh = std::round(ImGui::GetFontSize() * 0.8f);
  const bool txt = cs >= font->CalcTextSizeA(sfh, FLT_MAX, 0.0f, "0.00").x + 4.0f;
  const int b = std::clamp(s.view.batch, 0, std::max(0, t.batch - 1));
  for (int i = 0; i < shown; ++i)
    for (int j = 0; j < shown; ++j) {
      const float wv = t.weights.at({b, head, i, j});
      const ImVec4 col = t.masked(i, j) ? ImVec4(0.2f, 0.2f, 0.2f, 1.0f) : mix(bg, hc, 0.15f + 0.85f * std::clamp(wv, 0.0f, 1.0f));
      const ImVec2 a(o.x + static_cast<float>(j) * cs, o.y + static_cast<float>(i) * cs);
      dl->AddRectFilled(ImVec2(a.x + 1, a.y + 1), ImVec2(a.x + cs - 1, a.y + cs - 1), u32(col));
      if (txt && !t.masked(i, j)) {
        const std::string v = fmt("%.2f", static_cast<double>(wv));
        dl->AddText(font, sfh, ImVec2(a.x + 3, a.y + (cs - sfh) * 0.5f),
                    figure::luminance(to_rgb(col)) < 0.5f ? IM_COL32(255, 255, 255, 255) : IM_COL32(0, 0, 0, 255), v.c_str());
      }
    }
  ImGui::Dummy(ImVec2(cs * static_cast<float>(shown), cs * static_cast<float>(shown)));
  if (T > shown) ImGui::TextDisabled("first %d of %d tokens", shown, T);
  ImGui::EndGroup();
}

void draw_compare_tab(AppState& s) {
  Walkthrough& w = s.walkthrough;
  Comparison& c = w.cmp;
  if (c.generation != s.compute.generation) rebuild_comparison(s);
  ImGui::TextWrapped("%s", c.note.c_str());
  if (!c.valid) return;
  const float fh = ImGui::GetFontSize();
  const int head = std::clamp(s.view.head, 0, std::max(0, c.heads - 1));
  ImGui::Separator();
  ImGui::AlignTextToFramePadding();
  ImGui::Text("Head %d of %d", head, c.heads);
  ImGui::SameLine();
  if (ImGui::ArrowButton("cmp_prev", ImGuiDir_Left)) s.view.head = std::max(0, head - 1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("cmp_next", ImGuiDir_Right)) s.view.head = std::min(c.heads - 1, head + 1);
  ImGui::SameLine();
  const bool exact = c.max_diff_weights == 0.0;
  ImGui::TextColored(c.max_diff_weights <= 1e-6 ? ImVec4(0.45f, 0.85f, 0.45f, 1.0f) : ImVec4(1.0f, 0.45f, 0.35f, 1.0f),
                     "max |wrapper − weight split| over all heads' weights = %.3g%s,  outputs = %.3g", c.max_diff_weights,
                     exact ? " (identical)" : "", c.max_diff_output);
  const float side = std::min(fh * 7.5f, (ImGui::GetContentRegionAvail().x - fh * 4.0f) * 0.5f);
  weights_tile(s, c.wrapper, head, "Wrapper: head's own module", side);
  ImGui::SameLine(0.0f, fh * 2.0f);
  weights_tile(s, c.split, head, "Weight split: q.view + transpose", side);

  ImGui::Separator();
  ImGui::Text("Cost of one forward: b = %d, num_tokens = %d, d_in = %d, num_heads = %d, head_dim = %d", c.batch, c.tokens, c.d_in,
              c.heads, c.head_dim);
  const Comparison::Row& r = c.rows.front();
  if (ImGui::BeginTable("cost", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("variant");
    ImGui::TableSetupColumn("matmul calls");
    ImGui::TableSetupColumn("FLOPs");
    ImGui::TableSetupColumn("parameters");
    ImGui::TableSetupColumn("forward time (measured)");
    ImGui::TableHeadersRow();
    const struct {
      const char* name;
      const Cost& cost;
      double ms;
    } lines[3] = {{"wrapper (h modules)", r.wrapper, r.wrapper_ms}, {"weight split", r.split, r.split_ms}, {"fused qkv", r.fused, r.fused_ms}};
    for (const auto& ln : lines) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ln.name);
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(ln.cost.matmul_calls));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(big(ln.cost.flops).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(big(ln.cost.parameters).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms_text(ln.ms).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::TextDisabled("Weight split adds out_proj (d_out² + d_out parameters); its identity here keeps the outputs equal.");

  ImGui::Spacing();
  ImGui::TextWrapped("As num_heads grows (head_dim = %d fixed): the wrapper makes 5 matmul calls per head, weight split 6 in all.", c.head_dim);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(fh * 6.0f);
  if (ImGui::SliderInt("up to heads", &w.cmp_max_heads, 4, 64)) c.generation = ~std::uint64_t{0};
  std::int64_t max_calls = 1;
  for (std::size_t i = 1; i < c.rows.size(); ++i) max_calls = std::max(max_calls, c.rows[i].wrapper.matmul_calls);
  if (ImGui::BeginTable("growth", 6, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("num_heads");
    ImGui::TableSetupColumn("wrapper calls");
    ImGui::TableSetupColumn("split calls");
    ImGui::TableSetupColumn("calls (bars: wrapper, split)", ImGuiTableColumnFlags_WidthFixed, fh * 12.0f);
    ImGui::TableSetupColumn("wrapper time");
    ImGui::TableSetupColumn("split time");
    ImGui::TableHeadersRow();
    for (std::size_t i = 1; i < c.rows.size(); ++i) {
      const auto& g = c.rows[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", g.heads);
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(g.wrapper.matmul_calls));
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(g.split.matmul_calls));
      ImGui::TableNextColumn();
      {
        ImDrawList* dl = ImGui::GetWindowDrawList();
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float wbar = fh * 12.0f;
        const float lh = ImGui::GetTextLineHeight();
        const float a = wbar * static_cast<float>(g.wrapper.matmul_calls) / static_cast<float>(max_calls);
        const float b = wbar * static_cast<float>(g.split.matmul_calls) / static_cast<float>(max_calls);
        dl->AddRectFilled(ImVec2(p.x, p.y + 1), ImVec2(p.x + a, p.y + lh * 0.5f - 1), u32(head_rgba(1)));
        dl->AddRectFilled(ImVec2(p.x, p.y + lh * 0.5f + 1), ImVec2(p.x + b, p.y + lh - 1), u32(head_rgba(0)));
        ImGui::Dummy(ImVec2(wbar, lh));
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms_text(g.wrapper_ms).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms_text(g.split_ms).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("FLOPs of the projections are the same; the wrapper pays for h times more, smaller calls. Times: forward() "
                      "measured by the core when the input changes, not every frame (\"not timed\": too large to time while you edit).");
  ImGui::PopTextWrapPos();
}

// [SECTION] Options (--walkthrough SPEC)
void apply_options(AppState& s) {
  Walkthrough& w = s.walkthrough;
  w.options_applied = true;
  if (s.opts.walkthrough.empty()) return;
  const WalkSpec spec = parse_walk_spec(s.opts.walkthrough);  // checked when the options were parsed
  w.open = true;
  w.mistaken = spec.mistake;
  if (spec.compare) w.request_tab = 1;
  w.playing = spec.play;
  w.values = spec.numbers;
  w.show_weights = spec.weights;
  w.pane = spec.pane;
  w.pin_flat = spec.pin;
  if (spec.heads > 0) w.cmp_max_heads = spec.heads;
  const Variant v = s.compute.have_trace ? s.compute.trace.config.variant : s.doc.session.model.variant;
  const auto steps = lay::steps_for(v, w.mistaken && v != Variant::Wrapper);
  int idx = 0;
  lay::Step st;
  if (lay::parse_step(spec.step, st)) {
    for (int i = 0; i < static_cast<int>(steps.size()); ++i)
      if (steps[static_cast<std::size_t>(i)] == st) idx = i;
  } else if (!spec.step.empty()) {
    idx = std::clamp(std::stoi(spec.step) - 1, 0, static_cast<int>(steps.size()) - 1);
  }
  w.pos = w.target = static_cast<float>(idx) + spec.fraction;
  if (w.pin_flat >= 0) w.pin_step = idx;
}

}  // namespace

// [SECTION] Entry points
bool walkthrough_active(AppState& s) {
  Walkthrough& w = s.walkthrough;
  if (!w.options_applied) apply_options(s);
  const ImGuiIO& io = ImGui::GetIO();
  if (s.ui.dialog == Dialog::None && !io.WantTextInput && !io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_W, false)) w.open = !w.open;
  return w.open;
}

void draw_walkthrough(AppState& s) {
  refresh(s);
  Walkthrough& w = s.walkthrough;
  if (!s.compute.have_trace) {
    ImGui::TextWrapped("Nothing to walk through: %s", s.compute.error.c_str());
    return;
  }
  w.last_time = w.last_time == 0.0 ? glfwGetTime() : w.last_time;
  if (ImGui::BeginTabBar("walkthrough_tabs")) {
    const ImGuiTabItemFlags f0 = w.request_tab == 0 ? ImGuiTabItemFlags_SetSelected : 0;
    const ImGuiTabItemFlags f1 = w.request_tab == 1 ? ImGuiTabItemFlags_SetSelected : 0;
    w.request_tab = -1;
    if (ImGui::BeginTabItem("Walkthrough", nullptr, f0)) {
      w.tab = 0;
      draw_walkthrough_tab(s);
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Wrapper vs weight split", nullptr, f1)) {
      w.tab = 1;
      ImGui::BeginChild("compare_scroll");  // the tables may be taller than the panel
      draw_compare_tab(s);
      ImGui::EndChild();
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
}

}  // namespace mhaviz::gui
