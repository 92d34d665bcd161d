// The walkthrough's plan (walk_frame.hpp): for a canvas, each step's cell size (the largest that
// fits), its blocks side by side, its pane titles' lines, its window of blocks, rows and columns
// when its cells would be too small to read, whether Wᵀ and the chain strip go beside it, and
// its scene's text size.
#include <algorithm>
#include <cmath>

#include "figure/walk_frame.hpp"

namespace mhaviz::figure::walk {
namespace {

// A step's cell size at the frame's choices, and its worth: the size, or next to nothing where
// pane titles run into each other, so that any choice keeping them clear (titles on two lines,
// blocks arranged otherwise) is taken before one that does not.
struct Fit {
  float cs, worth;
};

// Large sizes: a window of blocks, rows and columns with ellipses (per step: small steps keep
// every cell; a transition fades out what the next window hides).
constexpr std::int64_t kWindows[4][3] = {{0, 0, 0}, {4, 10, 12}, {3, 8, 8}, {2, 6, 6}};

class Planner {
 public:
  Planner(Frame& f, WalkPlan& plan, const std::function<Canvas(int)>& canvas_of)
      : f_(f), plan_(plan), canvas_of_(canvas_of), aw_(f.o.canvas.width), ah_(f.o.canvas.height) {
    const std::size_t n = static_cast<std::size_t>(step_count(f));
    plan.cs.assign(n, 4.0f);
    plan.bcols.assign(n, 1);
    plan.lims.assign(n, {0, 0, 0});
    // Wᵀ beside a projection only when the step still fits without a window.
    plan.weights.assign(n, 0);
    plan.title_lines.assign(n, 1);
    plan.strip.assign(n, 1);
    plan.text.assign(n, text_);
  }

  // Whether Wᵀ goes beside each projection step: where its cells stay readable.
  void plan_weights() {
    for (int k = 0; k < step_count(f_) && f_.in.weights; ++k) {
      const lay::Step st = f_.steps[static_cast<std::size_t>(k)];
      if (st != lay::Step::Project && st != lay::Step::OutProj) continue;
      f_.strip_fit = true;
      canvas(k);
      f_.weights_fit = true;
      float best = -1.0f;
      title_choices(k, [&](int, int, Fit v) { best = std::max(best, v.worth); });
      plan_.weights[static_cast<std::size_t>(k)] = best >= want_ ? 1 : 0;
    }
  }

  // Step k at the typography's text size, or, where its scene is wider than its canvas at the
  // cells' least size or has pane titles over each other, smaller text, down to 10 px: on a
  // 1024 × 768 window with a 24-pixel font (600 × 277) grouped-query attention's expansion drew
  // "keys.repeat_interleave" over "values.repeat_interleave", and its scores with and without
  // RoPE ran 60 px past the edge.
  void plan_step(int k) {
    const std::size_t i = static_cast<std::size_t>(k);
    choose(k);
    for (const float scale : {0.88f, 0.77f, 0.68f}) {
      if (clean(k)) break;
      const float size = std::round(text_ * scale);
      if (size < 10.0f) break;
      f_.set_text(size);
      plan_.text[i] = size;
      choose(k);
    }
    if (!clean(k)) {  // none did: the typography's size, as planned with it
      f_.set_text(text_);
      plan_.text[i] = text_;
      choose(k);
    }
    f_.set_text(text_);
  }

 private:
  void canvas(int k) {
    const Canvas c = canvas_of_(k);
    aw_ = c.width, ah_ = c.height;
  }

  Fit fit_one(int k) {
    // A scene's size is linear in the cell size: measure it at two.
    f_.cs = 10.0f;
    const Point a = scene_size(f_, build_scene(f_, k));
    f_.cs = 20.0f;
    const Point b = scene_size(f_, build_scene(f_, k));
    const float cw = (b.x - a.x) / 10.0f, ch = (b.y - a.y) / 10.0f;
    const float fw = a.x - cw * 10.0f, fhh = a.y - ch * 10.0f;
    float best = max_cs_;
    if (cw > 0) best = std::min(best, (aw_ - fw) / cw);
    if (ch > 0) best = std::min(best, (ah_ - fhh) / ch);
    best = std::floor(best);
    // Titles wider than their cells make the size not quite linear: shrink until it fits. The
    // note of numbered key columns is measured here, at the size the step gets, not at the two
    // sizes above: at 10 px every token column is numbered, and the note would have been counted
    // in steps whose cells end up wide enough for the tokens. Left out, a scene came out wider
    // than planned (the context step of a 6-d lesson on a 1024 × 768 window: its chain strip
    // dropped when drawn, its cells kept at the 10 px planned beside it).
    f_.title_notes = true;
    for (int it = 0; it < 24 && best > 4.0f; ++it) {
      f_.cs = best;
      const Point e = scene_size(f_, build_scene(f_, k));
      if (e.x <= aw_ && e.y <= ah_) break;
      best = std::max(4.0f, std::min(best - 1.0f, std::floor(best * std::min(aw_ / e.x, ah_ / e.y))));
    }
    f_.cs = best;
    const bool collide = pane_titles_collide(f_, build_scene(f_, k));
    f_.title_notes = false;
    return {best, collide ? best * 0.01f : best};
  }

  // Every arrangement of blocks (1 to 4 side by side) and pane titles (one line or two). Pane
  // titles take a second line only where that gives cells 15% larger (choose): with a large
  // font the titles over narrow grids ("context_vec  (2, 2, 6, 2)" over two columns) were wider
  // than the cells and left the step 4-pixel cells.
  template <class Each>
  void title_choices(int k, Each&& each) {
    for (int c = 1; c <= 4; ++c)
      for (int lines = 1; lines <= 2; ++lines) {
        f_.block_cols = c;
        f_.title_lines = lines;
        each(c, lines, fit_one(k));
      }
  }

  // Step k's cells, blocks, title lines, window and strip at the frame's text size.
  void choose(int k) {
    const std::size_t i = static_cast<std::size_t>(k);
    f_.weights_fit = plan_.weights[i] != 0;
    float chosen = -1.0f;  // the worth of the choice taken
    // The chain strip goes before the scene's cells: a window hides cells, the strip only
    // repeats them. With a 24-pixel font the centre of a 1280 × 800 window is 700 px wide, and
    // beside the strip's 210 the context step's three grids kept 4-pixel cells.
    const int tries = chain_of(f_, k).size() >= 2 ? 2 : 1;
    for (const auto& win : kWindows) {
      f_.lim_blocks = win[0];
      f_.lim_rows = win[1];
      f_.lim_cols = win[2];
      for (int t = 0; t < tries; ++t) {
        f_.strip_fit = t == 0;
        canvas(k);
        // Blocks side by side when that gives larger cells (wide canvas, many short blocks).
        float best = -1.0f, best_cs = 4.0f;
        int best_c = 1, best_lines = 1;
        title_choices(k, [&](int c, int lines, Fit v) {
          if (v.worth > (lines > best_lines ? best * 1.15f : best + 0.5f)) {
            best = v.worth;
            best_cs = v.cs;
            best_c = c;
            best_lines = lines;
          }
        });
        // Taken only where larger than what an earlier try gave: without the strip, a window
        // hiding cells, at no gain, are not taken.
        if (best <= chosen) continue;
        plan_.cs[i] = std::clamp(best_cs, 4.0f, max_cs_);
        plan_.bcols[i] = best_c;
        plan_.title_lines[i] = best_lines;
        plan_.lims[i] = {win[0], win[1], win[2]};
        plan_.strip[i] = f_.strip_fit ? 1 : 0;
        chosen = best;
        if (best >= want_) break;
      }
      // Cells large enough, even beside titles that run together: a window would hide cells
      // and bring the panes closer still.
      if (plan_.cs[i] >= want_) break;
    }
  }

  // Whether step k as planned fits its canvas with its pane titles apart.
  bool clean(int k) {
    use_step(f_, plan_, k);
    f_.title_notes = true;
    const Scene sc = build_scene(f_, k);
    const Point e = scene_size(f_, sc);
    const Canvas c = canvas_of_(k);
    const bool ok = e.x <= c.width + 0.5f && e.y <= c.height + 0.5f && !pane_titles_collide(f_, sc);
    f_.title_notes = false;
    return ok;
  }

  Frame& f_;
  WalkPlan& plan_;
  const std::function<Canvas(int)>& canvas_of_;
  float aw_, ah_;  // the canvas of the step being fitted
  // The typography's text size; cells large enough for the back of a room (they grow to fill a
  // 1920 × 1080 screen); below `want_`, cells are too small to point at.
  const float text_ = f_.sfh, max_cs_ = std::floor(f_.sfh * 7.0f), want_ = std::max(10.0f, f_.sfh * 0.75f);
};

}  // namespace

void plan_steps(Frame& f, WalkPlan& plan, const std::function<Canvas(int)>& canvas_of) {
  Planner p(f, plan, canvas_of);
  p.plan_weights();
  for (int k = 0; k < step_count(f); ++k) p.plan_step(k);
  f.block_cols = f.title_lines = 1;
  f.strip_fit = true;
  f.lim_blocks = f.lim_rows = f.lim_cols = 0;
}

// Cell size, block columns and window of step k.
void use_step(Frame& f, const WalkPlan& p, int k) {
  const std::size_t i = static_cast<std::size_t>(k);
  if (i < p.text.size() && p.text[i] != f.sfh) f.set_text(p.text[i]);
  f.cs = p.cs[i];
  f.block_cols = p.bcols[i];
  f.title_lines = p.title_lines[i];
  f.lim_blocks = p.lims[i][0];
  f.lim_rows = p.lims[i][1];
  f.lim_cols = p.lims[i][2];
  f.weights_fit = p.weights[i] != 0;
  f.strip_fit = p.strip[i] != 0;
}

}  // namespace mhaviz::figure::walk
