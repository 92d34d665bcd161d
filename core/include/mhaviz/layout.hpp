// Where every element of the multi-head pipeline is drawn, step by step: the walkthrough's
// grids (seed 004 draws them), the index path of an element across the view / transpose /
// merge steps, and the animation of elements from one drawing to the next.
//
// Shapes follow the seeds: b = batch, T = num_tokens, h = num_heads, hd = head_dim,
// D = d_out = h * hd (weight split and fused), d_in = input width.
//
//   step            tensor drawn                 shape             drawing (Kind)
//   Input           X                            (b, T, d_in)      Matrix
//   Project         Q | K | V = X·Wᵀ             (b, T, D)         Matrix, columns coloured by head
//                   wrapper: head i's Q_i ...    (b, h, T, hd)     HeadBlocks (one module per head)
//                   fused: qkv                   (b, T, 3D)        Matrix, per head [q | k | v]
//   View            .view(b, T, h, hd)           (b, T, h, hd)     TokenBlocks (fused: (b, T, h, 3hd))
//   Transpose       .transpose(1, 2)             (b, h, T, hd)     HeadBlocks  (fused: permute, (b, h, T, 3hd))
//   Chunk           fused: .chunk(3, dim=-1)     3 x (b, h, T, hd) HeadBlocks, q | k | v
//   Scores          q·kᵀ                         (b, h, T, T)      HeadBlocks
//   Mask            masked_fill(-inf)            (b, h, T, T)      HeadBlocks
//   Softmax         softmax(· / sqrt(hd))        (b, h, T, T)      HeadBlocks
//   Dropout         dropout(p), survivors / (1-p)(b, h, T, T)      HeadBlocks
//   Context         weights·v                    (b, h, T, hd)     HeadBlocks
//   TransposeBack   .transpose(1, 2)             (b, T, h, hd)     TokenBlocks
//   Merge           .contiguous().view(b, T, D)  (b, T, D)         Matrix
//                   mistake: reshape without the transpose back (seed 002)
//   Concat          wrapper: torch.cat(dim=-1)   (b, T, h*hd)      Matrix
//   OutProj         out_proj(merged)             (b, T, D)         Matrix
//
// The bonus variants and options add steps, and change what some steps draw (G = K/V heads):
//   gqa Project     keys | values                (b, T, G*hd)      Matrix, 2 panes (queries drawn beside)
//   gqa View        .view(b, T, G, hd)           (b, T, G, hd)     TokenBlocks, 2 panes
//   gqa Transpose   .transpose(1, 2)             (b, G, T, hd)     HeadBlocks, 2 panes
//   Expand          gqa: repeat_interleave(h/G)  (b, h, T, hd)     HeadBlocks, k | v
//                   mistake: .repeat (query head i reads K/V head i mod G)
//   QkNorm          RMSNorm(head_dim) of q       (b, h, T, hd)     HeadBlocks (k_normed beside it, at G heads)
//   Rope            q rotated, pairs (i, i+hd/2) (b, h, T, hd)     HeadBlocks (k_rotated beside it)
//   Latent          mla: latent = X·W_DKVᵀ       (b, T, latent_dim) Matrix (its Project: keys, values = W_UK, W_UV of
//   it) Mask            with a sliding window W the cells i - j >= W are hidden too
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/model.hpp"
#include "mhaviz/tensor.hpp"

namespace mhaviz::layout {

// [SECTION] Drawings of a tensor
enum class Kind {
  Matrix,       // dims (b, 1, R, C): one R x C matrix per batch item
  TokenBlocks,  // dims (b, T, h, X): one h x X block per token, rows = heads (seed 004 "Q reshaped")
  HeadBlocks,   // dims (b, h, T, X): one T x X block per head, rows = tokens (seed 004 "Q transformed")
};

// Indices shown along one axis: all when n <= limit + 1 (or limit <= 0); otherwise the first
// limit - 1, one ellipsis slot, and the last index. limit >= 2 when windowed. An ellipsis in
// place of one index would take the slot that index takes: 4 heads under a limit of 3 showed
// heads 0, 1, "… 1 more" and 3 in four slots.
struct Axis {
  std::int64_t n = 1;
  std::int64_t limit = 0;
  bool windowed() const { return limit > 1 && n > limit + 1; }
  std::int64_t slots() const { return windowed() ? limit + 1 : n; }
  std::int64_t slot(std::int64_t i) const;      // -1 when hidden
  std::int64_t index_at(std::int64_t s) const;  // -1 for the ellipsis slot or out of range
  bool ellipsis_at(std::int64_t s) const { return windowed() && s == limit - 1; }
};

struct Layout {
  Kind kind = Kind::Matrix;
  int panes = 1;                                 // same-shaped tensors side by side (Q | K | V)
  std::array<std::int64_t, 4> dims{1, 1, 1, 1};  // (n0, n1, rows, cols); block = i0 * n1 + i1
  int heads = 1;                                 // num_heads, for head_of
  int group = 1;             // heads per hue: gqa colours query head i as K/V head i / group (1: a hue per head)
  int head_cols = 0;         // Matrix: columns per head (0: the tensor is not split by head, e.g. X)
  int part_cols = 0;         // fused qkv: columns of one q|k|v part inside a head's chunk (0: none)
  float block_gap = 0.5f;    // cell units between rows of blocks
  float pane_gap = 1.5f;     // cell units between panes (panes sit side by side)
  int block_cols = 1;        // blocks per row of blocks (1: blocks stack vertically, as the seeds print them)
  float block_gap_x = 1.0f;  // cell units between blocks side by side
  std::int64_t max_blocks = 0, max_rows = 0, max_cols = 0;  // window (0: everything)

  std::int64_t blocks() const { return dims[0] * dims[1]; }
  std::int64_t pane_numel() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
  std::int64_t numel() const { return pane_numel() * panes; }
  Axis block_axis() const { return {blocks(), max_blocks}; }
  Axis row_axis() const { return {dims[2], max_rows}; }
  Axis col_axis() const { return {dims[3], max_cols}; }
  // The tensor's shape as PyTorch holds it (one pane): Matrix (b, R, C), else the 4 dims.
  Shape shape() const;
};

// A drawn cell: which pane, which block, row and column inside the block.
struct Cell {
  int pane = 0;
  std::int64_t block = 0, row = 0, col = 0;
  bool operator==(const Cell&) const = default;
};

// Position in cell units (x = columns, y = rows, gaps included), top-left corner of a cell.
struct Point {
  float x = 0.0f, y = 0.0f;
  bool operator==(const Point&) const = default;
};

// flat = pane * pane_numel + row-major index into dims. Precondition: 0 <= flat < numel.
Cell cell_of(const Layout& l, std::int64_t flat);
// Inverse of cell_of; -1 when the cell is outside the layout.
std::int64_t index_of(const Layout& l, const Cell& c);
bool visible(const Layout& l, const Cell& c);  // inside the window
// Where a visible cell is drawn (window applied). Hidden cells: the point of the nearest slot.
Point point_of(const Layout& l, const Cell& c);
// The visible cell whose square contains p; false over gaps, ellipses and outside.
bool cell_at(const Layout& l, Point p, Cell& out);
Point extent(const Layout& l);      // width and height of the drawing in cell units
float pane_width(const Layout& l);  // width of one pane in cell units (pane p starts at p * (pane_width + pane_gap))
// Head an element belongs to (colour); -1 when the tensor is not split by head.
int head_of(const Layout& l, const Cell& c);
// q / k / v part (0, 1, 2) of a fused qkv element; -1 otherwise.
int part_of(const Layout& l, const Cell& c);
// Point of the slot (block_slot, row_slot, col_slot) of a pane: for ellipses and labels.
Point slot_point(const Layout& l, int pane, std::int64_t block_slot, std::int64_t row_slot, std::int64_t col_slot);

// [SECTION] How elements travel between two drawings
enum class Move {
  None,            // no element correspondence (a new tensor is computed): cross-fade
  Same,            // same flat index: .view / .reshape of a contiguous tensor, or an elementwise step
  Transpose,       // (i0, i1, i2, i3) -> (i0, i2, i1, i3): .transpose(1, 2)
  Chunk,           // one pane (b, h, T, 3hd) -> three panes (b, h, T, hd): .chunk(3, dim=-1)
  TransposeMerge,  // (b, h, T, hd) -> (b, T, h*hd): transpose back then merge (wrapper torch.cat)
};
// Flat index in `to` of element `flat` of `from`; -1 for Move::None.
std::int64_t move_index(Move m, const Layout& from, const Layout& to, std::int64_t flat);
// Flat index in `from` of element `flat` of `to`; -1 for Move::None.
std::int64_t move_index_inverse(Move m, const Layout& from, const Layout& to, std::int64_t flat);

// Smoothstep; ease(0) = 0, ease(1) = 1 exactly.
float ease(float t);
// Where element `flat` of `from` is drawn at fraction t (0..1) of the animation to `to`:
// t = 0 is exactly its static point in `from`, t = 1 exactly its static point in `to`.
// stagger in [0, 1): later rows of `to` start later (the eye can follow one row at a time).
Point animate(const Layout& from, const Layout& to, Move m, std::int64_t flat, float t, float stagger = 0.0f);
// The eased fraction (0..1) of its path that an element whose place in `to` is `target` has
// travelled at time t: animate() = start + (end - start) * progress. 0 at t <= 0, 1 at t >= 1.
float progress(const Layout& to, const Cell& target, float t, float stagger = 0.0f);

// [SECTION] Steps of the walkthrough
enum class Step {
  Input,
  Project,
  View,
  Transpose,
  Chunk,
  Scores,
  Mask,
  Softmax,
  Dropout,
  Context,
  TransposeBack,
  Merge,
  Concat,
  OutProj,
  Expand,
  QkNorm,
  Rope,
  Latent
};
inline constexpr int kStepKinds = 18;

// What the walkthrough of a module draws: its variant, sizes and options (one description
// of the steps that the screen, the captures and the tests read).
struct Dims {
  Variant variant = Variant::WeightSplit;
  int b = 1, T = 1, d_in = 1, h = 1, hd = 1;
  int G = 0;       // gqa: K/V heads (num_kv_groups); 0: h
  int window = 0;  // sliding window W; 0: none
  bool causal = true;
  bool qk_norm = false;     // RMSNorm of q and k over head_dim after the split
  bool rope = false;        // RoPE on q and k (after QK-norm)
  int latent = 0;           // mla: latent_dim (W_DKV's output)
  double query_scalar = 0;  // scores · query_pre_attn_scalar^-0.5 (Gemma 3's layers); 0: / √head_dim
  int out = 0;              // out_proj's width when it is not d_out (a trained layer's out_dim); 0: d_out
  int d_out() const { return h * hd; }
  int out_width() const { return out > 0 ? out : d_out(); }
  int kv() const { return G > 0 ? G : h; }
  int group() const { return h / kv(); }  // query heads per K/V head
};
// The walkthrough's dims of a module with b batch items of T tokens of width d_in.
Dims dims_for(const ModelConfig& c, int b, int T, int d_in);

// The walkthrough's "common mistake": the merge without the transpose back (seed 002) for
// the split variants; `.repeat` in place of `.repeat_interleave` for gqa; none for the wrapper.
enum class MistakeKind { None, Merge, Repeat };
MistakeKind mistake_kind(const Dims& d);

std::string_view step_name(Step s);  // "input", "project", ... (for command lines)
bool parse_step(std::string_view name, Step& out);
std::string step_title(Step s, const Dims& d);            // "Q, K, V = X·Wᵀ", ...
std::string step_code(Step s, const Dims& d, int batch);  // the PyTorch line of the seeds; batch: the input's b
std::string_view step_shape(Step s, const Dims& d);  // "(b, num_tokens, num_heads, head_dim)", as the seeds write it

// The walkthrough of a module. mistaken: the mistake of mistake_kind(d) (a merge by plain
// reshape has no transpose back; the repeat mistake keeps every step).
std::vector<Step> steps_for(const Dims& d, bool mistaken = false);
// The first of q | k | v (0, 1, 2) that pane 0 of a step holds: 1 where gqa draws keys |
// values at G heads (queries beside them, in a grid of their own).
int first_part(Step s, const Dims& d);
// Query head h reads this K/V head: h / group (repeat_interleave), or h mod G (the repeat mistake).
int kv_head_read(const Dims& d, int h, bool repeat_mistake);

// The tensor(s) drawn at a step (no window set; the caller sets max_*).
// Scores/Mask/Softmax/Dropout: (b, h, T, T); Context: (b, h, T, hd); see the table above.
Layout step_layout(Step s, const Dims& d);
// The queries as a step that draws keys | values at G heads holds them (gqa's Project, View,
// Transpose): the weight split's layout of one pane.
Layout query_layout(Step s, const Dims& d);
// How elements travel from the step before `to` (in steps_for) into `to`.
Move step_move(Step from, Step to, bool mistaken = false);

// Flat index of one element in every step's layout, following the moves from step index
// `at` in both directions; -1 where the chain is broken by Move::None.
std::vector<std::int64_t> follow(const std::vector<Step>& steps, const Dims& d, bool mistaken, int at,
                                 std::int64_t flat);

// [SECTION] Index paths as the seeds write them
// Q[b, t, j] -> q[b, t, head, d] (view) -> q[b, head, t, d] (transpose): head = j / hd, d = j mod hd.
struct HeadIndex {
  std::int64_t b = 0, t = 0, head = 0, d = 0;
  bool operator==(const HeadIndex&) const = default;
};
HeadIndex split_column(std::int64_t b, std::int64_t t, std::int64_t j, std::int64_t hd);
std::int64_t merged_column(const HeadIndex& i, std::int64_t hd);  // j = head * hd + d
// The element of the correct merge (b, T, h*hd) that the mistaken reshape puts at [b, t, j]:
// it reads context[b, head, t', d] with p = t*h*hd + j, head = p / (T*hd), t' = (p / hd) mod T, d = p mod hd.
HeadIndex mistaken_source(std::int64_t b, std::int64_t t, std::int64_t j, std::int64_t T, std::int64_t h,
                          std::int64_t hd);
// "[0, 2, 4]"
std::string index_string(std::initializer_list<std::int64_t> idx);

}  // namespace mhaviz::layout
