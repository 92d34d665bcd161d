// The one heatmap of the figure library: every matrix of attention the app shows (the
// lesson's heads, the model view's thumbnails and its large head, the comparison's tiles) is
// described by a HeatmapSpec and drawn by draw_heatmap, with one range rule (value_range,
// scale_for), one label-thinning rule (plan_labels) and one colour bar. Internal to app/figure.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "figure/builder.hpp"

namespace mhaviz::figure::detail {

// [SECTION] Values and the range rule
// Stages 1-3 hold signed scores (a diverging map centred on 0); raw scores are drawn
// unmasked (stage 1 shows what q·kᵀ gives before the mask).
bool signed_stage(Stage st);
bool masked_stage(Stage st);

// Extremes of the finite values shown (hidden cells are -inf and never count).
struct ValueRange {
  float lo = 0.0f, hi = 0.0f, min_pos = 0.0f;  // min_pos: smallest value > 0 (0: none)
  bool empty = true;
  void add(float v);
  void merge(const ValueRange& o);
};
ValueRange value_range(std::span<const float> v);
// The colour scale of values in range r (figure/colormap.hpp color_scale with the options).
ColorScale scale_for(const ValueRange& r, bool signed_values, const Options& o);

// [SECTION] Token labels
// Rows and columns labelled with every step-th token, step from 1, 2, 4, 5, 8, 10, 16, 20, 25,
// 32 ... (easy to count), labels wider than ten letters abbreviated, column labels rotated
// when they do not fit their columns. show = false: cells too small for any label.
struct LabelPlan {
  bool show = false;
  bool vertical = false;
  float left = 0, top = 0;  // margins the labels take
  int step = 1;
};
LabelPlan plan_labels(const std::vector<std::string>& tokens, float cell, float size);
// The fewest tokens between labels (1, 2, 4, 5, 8, ...) that keep labels of this size legible
// on cells this large, each drawn up to 20% smaller than the size (token_labels): the floor
// under plan_labels' roomier spacing once a plan's cells came out smaller than it was made for.
int legible_step(float cell, float size);

// [SECTION] One heatmap
struct HeatmapSpec {
  int id = 0;  // HeatmapInfo::head
  int rows = 0, cols = 0;
  std::function<float(int, int)> value;    // (row, column) -> value
  std::function<CellMask(int, int)> mask;  // why a cell is hidden; null: every cell visible
  std::function<bool(int, int)> dropped;   // dropout zeroed the cell (a cross); null: none drawn
  ColorScale scale;
  const std::vector<std::string>* row_names = nullptr;  // tokens, or null
  const std::vector<std::string>* col_names = nullptr;
  bool numbers = false;         // values in cells when the widest fits
  bool hidden_numbers = false;  // hidden cells print -inf (the masked and scaled score stages)
};
// The values of a spec, row-major, hidden cells -inf: what HeatmapInfo holds.
std::vector<float> heatmap_values(const HeatmapSpec& h);
// Cells at (x0, y0), `cell` logical pixels each (whole pixels at one pixel or more), their
// numbers and dropout crosses when they fit, and the token labels of lp (rows on the left
// when row_labels, columns on top when col_labels). Returns the index of the HeatmapInfo.
int draw_heatmap(Builder& B, const HeatmapSpec& h, float x0, float y0, float cell, const LabelPlan& lp, bool row_labels,
                 bool col_labels);
// The largest cell size that holds rows x cols in a w x h box: whole pixels when at least one.
float fit_cell(float w, float h, int rows, int cols);

// [SECTION] Colour bar and legend
// A vertical bar at (x, y0), h tall, with five ticks; returns its width with the ticks.
float colorbar(Builder& B, const ColorScale& s, float x, float y0, float h, const std::string& title);
float colorbar_width(const Builder& B, const ColorScale& s);
// A swatch of the masked hatch with its meaning, at (x, y) (the top of the line); returns
// the x after it.
// window: the swatch of cells outside a sliding window, else of masked cells.
float mask_legend(Builder& B, float x, float y, const std::string& text, bool window = false);
// Why a lesson trace hides cell (i, j): the causal mask or the sliding window (none: Visible).
CellMask trace_mask(const Trace& tr, int i, int j);
// The picture's name for the rule that hides a cell.
CellMask cell_mask(MaskRule r);

}  // namespace mhaviz::figure::detail
