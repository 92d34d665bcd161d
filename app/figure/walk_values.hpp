// What each walkthrough step shows: its values, the names of its tensors, how its cells are
// coloured, its labels and how numbers are printed. No ImGui and no drawing: the app's
// walkthrough panel (app/gui) and the CPU figure renderer (`mhaviz render --view step`,
// captures) both read this one table, so the screen and a capture cannot disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "figure/colormap.hpp"
#include "mhaviz/layout.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz::figure {

// [SECTION] Numbers
// A value with `decimals` decimals, as the seeds print them; masked scores "-inf" as PyTorch
// prints them; a value that rounds to zero prints without a sign ("0.00", never "-0.00").
std::string format_number(float v, int decimals);
// A value in a cell: two decimals below 10, one below 100, none above (format_number).
std::string format_value(float v);

// [SECTION] The tensors a step reads
// The seeds' common mistake (merge by plain reshape, no transpose back) and what it does to
// the output: out_proj applied to the scrambled merge, so the wrong result is shown.
// gqa's mistake instead: .repeat in place of .repeat_interleave, and the mis-paired scores.
struct Mistake {
  Tensor merged;         // (b, T, h*hd) mistaken_merge(trace)
  Tensor output;         // (b, T, d_out) out_proj(merged); empty when the model has no out_proj
  RepeatMistake repeat;  // gqa: mistaken_repeat(trace); empty otherwise
  // Not a mistake but computed beside it, for the same reason (the trace does not hold it):
  // with RoPE, the raw scores q·kᵀ of the q and k before the rotation (raw_scores), which the
  // scores step shows beside the rotated ones.
  Tensor scores_without_rope;
};
// Throws std::out_of_range when the model has no out_proj but the variant needs one.
Mistake make_mistake(const Model& model, const Trace& trace);
// The same without a model: every tensor but the mistake's output.
Mistake trace_mistake(const Trace& trace);

struct StepSource {
  const Trace* trace = nullptr;
  int batch = 0;                     // batch item shown
  bool mistaken = false;             // the mistake on (ignored for the wrapper: it concatenates)
  const Mistake* mistake = nullptr;  // required when mistaken and the variant is not the wrapper
  bool wrong() const;                // the merge mistake applies to this trace
  bool repeat_wrong() const;         // gqa's repeat mistake applies to this trace
  layout::Dims dims() const;         // batch 1: one batch item is laid out
};

// Value of element `flat` of step st's layout (layout::step_layout(st, dims())).
float step_value(const StepSource& s, layout::Step st, std::int64_t flat);
// 0 normal, 1 masked (-inf) by the causal mask, 2 zeroed by dropout, 3 masked (-inf) by the
// sliding window (drawn in the heatmap's blue-grey window hatch).
int step_state(const StepSource& s, layout::Step st, std::int64_t flat);
// The K/V head query head h reads in step st (gqa: the expansion and what follows it, by
// .repeat_interleave or, with the mistake, .repeat); -1 where no K/V head is read.
int kv_read(const StepSource& s, layout::Step st, int h);

// [SECTION] Names: one per tensor, as the seeds' code names it
// Title of pane `pane` of a step ("queries", "queries.view", "attn_weights after dropout").
std::string pane_name(Variant v, layout::Step st, int pane, bool mistaken);
int pane_count(Variant v, layout::Step st);

// [SECTION] Colours
// Neutral: input and output (one colour); Head: the head an element belongs to; Diverging:
// signed scores on the diverging map, symmetric around 0; Weights: non-negative attention
// weights, the head's colour from the background (0) to full (the largest weight shown).
enum class Tint { Neutral, Head, Diverging, Weights };
Tint step_tint(layout::Step st);
// One hue per head (Tableau 10, colour-blind friendly order), repeating every 10 heads.
Rgb head_rgb(int head);
// gqa: query head `head` in the hue of its K/V head head / group, lighter for each later head
// of the group, so the heads that share a K/V head read as one family. group 1: head_rgb.
Rgb group_rgb(int head, int group, bool dark);
Rgb neutral_rgb(bool dark);
Rgb mix_rgb(Rgb a, Rgb b, float t);
float luminance(Rgb c);
// Fill of a cell. head: the element's head (-1 none); part: q/k/v part of a fused chunk
// (-1 none); vmax: largest |value| shown (Diverging, Weights); bg: the background.
Rgb cell_rgb(Tint t, int head, int part, float value, float vmax, bool dark, Rgb bg);
// The same with the element's hue given (null: none), as group_rgb colours gqa's heads.
Rgb cell_rgb_hue(Tint t, const Rgb* hue, int part, float value, float vmax, bool dark, Rgb bg);
// The legend of a Diverging step: swatches from -vmax through 0 to +vmax with their values.
struct Swatch {
  Rgb color;
  std::string text;
};
std::vector<Swatch> diverging_legend(float vmax);

// [SECTION] Labels that fit
using Measure = std::function<float(const std::string&)>;
// Labels of the blocks of a step, one per block index (TokenBlocks: "token 0: Your", "0: Your",
// "Your", "t0"; HeadBlocks: "head 0", "h0"): the longest form in which every label is no
// wider than `width`, so neighbouring blocks read alike; empty strings when none fits.
std::vector<std::string> block_labels(layout::Kind kind, std::int64_t count, const std::vector<std::string>& tokens,
                                      float width, const Measure& m);
// Column labels of a T x T attention grid (the key tokens). Every token fits its column:
// one line. Else every token fits in `lines` columns: that many staggered lines (column j on
// line j mod lines), up to kMaxKeyLines. Else the key positions (0, 1, ...) and `note` says
// so; never one column a name and its neighbour a number.
inline constexpr int kMaxKeyLines = 3;
struct ColumnLabels {
  std::vector<std::string> text;  // one per column ("" = none)
  int lines = 1;                  // 1 to kMaxKeyLines
  std::string note;               // "keys by position" when indices are shown
};
// Lines needed for labels at most `widest` wide in columns `cell` wide, `gap` (a space) at least
// between two on a line (kMaxKeyLines + 1: too wide). At 2 px apart, "sleep" and "cat" read as
// one word.
int key_label_lines(float widest, float cell, float gap);
ColumnLabels column_labels(const std::vector<std::string>& tokens, float cell, const Measure& m);

}  // namespace mhaviz::figure
