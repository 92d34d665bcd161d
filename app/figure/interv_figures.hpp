// Figures of the interventions on a trained model (gpt_interventions.hpp, hf_interventions.hpp), shared by `mhaviz
// render --model --view sweep | patch | lens` and the app: the ablation sweep's layers × heads
// grid, a patching grid (layers × heads, or layers × positions), and the logit-lens table
// (layers × positions, the top token and its probability in each cell). Each is one labelled
// heatmap with its colour bar, built by build_grid_figure.
#pragma once

#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/tokenizer.hpp"

namespace mhaviz::figure {

// A grid of one number per cell, rows and columns named, drawn as a heatmap.
struct GridView {
  std::string title, subtitle, caption;
  int rows = 0, cols = 0;
  std::vector<float> values;                      // (rows, cols), row-major
  std::vector<std::string> row_names, col_names;  // rows, cols
  std::vector<std::string> cell_text;  // (rows, cols) drawn in the cells instead of the numbers; empty: numbers
  bool value_under_text = false;       // with cell_text: the value under it where the cell has room
  std::string bar_title;               // above the colour bar
  // Signed values (changes, patching effects) on the diverging map centred on 0, at least
  // [-1, 1]; else a sequential map from 0 to 1 (probabilities).
  bool signed_values = true;
  // A column of text beside the grid, one line per row, under side_title (the lens's rank of
  // a chosen token after each layer); empty: none. marked_col: a column framed (the position
  // that column is of); -1: none.
  std::string side_title;
  std::vector<std::string> side_text;  // rows, or empty
  int marked_col = -1;
};

// The figure within o.canvas (title, subtitle, the labelled grid, its side column, the colour
// bar, the caption when o.caption). Hits "grid_R_C" for every cell; one heatmap (id 0). Throws
// std::invalid_argument when the sizes of values, names or cell_text do not match.
Figure build_grid_figure(const GridView& g, const Options& o);

// The ablation sweep of metric on tokens (the clean run's display strings).
// m: a GPT or a Qwen, Llama or Gemma model (the caption's line).
GridView sweep_view(const GptModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    AblationMode mode, const std::vector<std::string>& tokens, const std::string& path);
GridView sweep_view(const HfModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    AblationMode mode, const std::vector<std::string>& tokens, const std::string& path);
// A patching grid: per head (L, H) or per layer × position (L, T, columns the corrupted
// text's tokens, the positions where it differs from the clean one marked with *).
GridView patch_view(const GptModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    PatchPer per, const std::vector<std::string>& clean, const std::vector<std::string>& corrupt,
                    const std::string& path);
GridView patch_view(const HfModel& m, const InterventionGrid& g, const Tokenizer& tok, const TokenMetric& metric,
                    PatchPer per, const std::vector<std::string>& clean, const std::vector<std::string>& corrupt,
                    const std::string& path);
// A model view made to show norm-weighted attention (its weights already replaced): the title
// says so ("Norm-weighted (α·‖f(x)‖): " before it) and the colour bar is titled α·‖f(x)‖, on
// screen, in captures and in render alike.
void make_norm_weighted(ModelView& v);

// The lens table: cell (l, t) coloured by the top token's probability, its text the token.
// With lens.target ≥ 0 and 0 ≤ position < T: that column framed and, beside the table, the
// target's rank (1 = the most likely) and probability there after each layer.
GridView lens_view(const GptModel& m, const LogitLens& lens, const Tokenizer& tok,
                   const std::vector<std::string>& tokens, const std::string& path, int position = -1);
GridView lens_view(const HfModel& m, const LogitLens& lens, const Tokenizer& tok,
                   const std::vector<std::string>& tokens, const std::string& path, int position = -1);
// "rank 3 · 2.1%": the side column's line for a rank from 0 and a probability.
std::string rank_text(int rank, float p);

}  // namespace mhaviz::figure
