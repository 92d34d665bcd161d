// The Train view's figure: a training run's curves as plots drawn with the figure library
// (no plotting library in Debian 12), and beside them every head's attention pattern on the
// probe (the model view's grid, model_figure.cpp). The app draws it on screen; F12 and
// `mhaviz render --train-log` draw the very same display list.
//
//   the loss     every step's mean cross-entropy, and its two parts where the task has them:
//                the positions predicting the segment's first occurrence and those predicting
//                its copy (the repeated half), so that the phase change shows as the copy's
//                curve falling away from the first's; ln V (chance) as a dashed line
//   detectors    one small plot per pattern (previous-token, induction, duplicate-token,
//                first-token): every head's score on the probe over the steps, a line per head
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "mhaviz/heads.hpp"

namespace mhaviz::figure {

struct TrainCurves {
  int n_layer = 0, n_head = 0, vocab = 0;  // vocab > 0: the chance line at ln vocab
  std::int64_t total_steps = 0;            // the x axis ends here (or at the last step, if later)
  // Every step trained: its number (1, 2, …) and the batch's losses before the update; NaN
  // where a step has no such part (the text task has no first occurrence or copy).
  std::vector<std::int64_t> steps;
  std::vector<float> loss, loss_first, loss_repeat;
  // Every probe: the steps done when it was measured and the detectors' scores,
  // (n_layer · n_head · kHeadPatternCount) each, index (layer · n_head + head) · kHeadPatternCount
  // + pattern (kHeadPatterns order), NaN where a head has no score.
  std::vector<std::int64_t> eval_steps;
  std::vector<std::vector<float>> eval_scores;
  std::int64_t marker = -1;  // a step marked on every plot (the scrubber's); -1: none
  std::string title;         // "Training: induction · 2 layers × 4 heads, attention-only"
  std::string caption;       // the run's settings (captures)
  void add_step(std::int64_t step, float loss, float first, float repeat);
};

// Reads a `mhaviz train --log` file: one JSON object per line with `step` and `loss`, and
// `loss_first`, `loss_repeat`, `eval` {`heads`: {pattern: [[layer 0's heads], …]}} where
// present. Throws std::invalid_argument("LINE N: …") for a line that is not such an object, and
// for a log with no step at all; the layers and heads are the first probe's.
TrainCurves read_train_log(std::istream& in);

// The figure within o.canvas: the title, the loss plot, the detectors' small plots and their
// legend on the left; with `probe`, its grid (build_model_figure) on the right. Hits:
// "loss_plot", "detector_PATTERN", and the grid's "thumb_L_H". Uses o.canvas, o.type, o.dark,
// o.transparent, o.caption (and the grid's options).
Figure build_train_figure(const TrainCurves& c, const ModelView* probe, const Options& o);

}  // namespace mhaviz::figure
