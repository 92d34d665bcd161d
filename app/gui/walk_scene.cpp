// The walkthrough's scenes: what each step draws (grids, operands, titles) and where, and
// the plan of cell sizes and windows, cached on its inputs (choose_scale).
#include "walk_frame.hpp"

namespace mhaviz::gui::walk {

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
  if (st == lay::Step::Mask || st == lay::Step::Dropout)
    g.state = [fp, st](std::int64_t i) { return figure::step_state(fp->src, st, i); };
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
          g.pane_titles[static_cast<std::size_t>(p)] = figure::pane_name(v, st, p, false) + "  " +
                                                       std::to_string(f.tr.heads) + " x (" +
                                                       std::to_string(f.tr.batch) + ", " + std::to_string(f.tr.tokens) +
                                                       ", " + std::to_string(f.tr.head_dim) + ")";
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
    case lay::Step::Context: g.blocks = BlockLabels::Heads; break;
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
    g.pane_titles = {std::string(kW[pane]) + "ᵀ of each head  (" + std::to_string(din) + ", " + std::to_string(hd) +
                     ")"};
  } else {
    const int out = ls[0]->out;
    g.l.dims = {1, 1, din, out};
    g.l.head_cols = v == Variant::FusedQkv ? 3 * hd : hd;
    g.l.part_cols = v == Variant::FusedQkv ? hd : 0;
    g.col_heads = true;
    g.pane_titles = {(v == Variant::FusedQkv ? std::string("qkv_layer.weightᵀ") : std::string(kW[pane]) + ".weightᵀ") +
                     "  (" + std::to_string(din) + ", " + std::to_string(out) + ")"};
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
      Grid x = tensor_grid(
          f, lay::Step::Input, &tr.input,
          figure::pane_name(tr.config.variant, lay::Step::Input, 0, false) + "  " + shape_text(tr.input.shape),
          Tint::Neutral);
      x.op_after = "→";
      sc.grids.push_back(std::move(x));
      if (f.w.show_weights && f.weights_fit && f.w.plan.weights_fit &&
          (f.w.pane != 3 || tr.config.variant == Variant::FusedQkv)) {
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
      Grid wg = tensor_grid(f, lay::Step::Softmax, &tr.weights_after_dropout(),
                            figure::pane_name(tr.config.variant, lay::Step::Dropout, 0, false), Tint::Weights);
      wg.col_tokens = true;
      wg.op_after = "·";
      Grid vg = tensor_grid(f, lay::Step::Context, &tr.v, "v  " + shape_text(tr.v.shape), Tint::Head);
      vg.op_after = "=";
      sc.grids.push_back(std::move(wg));
      sc.grids.push_back(std::move(vg));
      break;
    }
    case lay::Step::OutProj: {
      // With the mistake on, out_proj reads the scrambled merge: show that input, outlined and
      // tinted by the head each element really came from, so the wrong output has its cause beside it.
      const bool wrong = f.src.wrong();
      const Tensor* in = wrong ? &f.src.mistake->merged : &tr.context_merged;
      Grid m = tensor_grid(f, tr.config.variant == Variant::Wrapper ? lay::Step::Concat : lay::Step::Merge, in,
                           std::string(wrong ? "merged (the mistake)  " : "merged  ") + shape_text(in->shape),
                           Tint::Head);
      m.col_heads = true;
      if (wrong) {
        const Frame* fp = &f;
        m.source = [fp](std::int64_t i) {
          const lay::Cell c = lay::cell_of(lay::step_layout(lay::Step::Merge, fp->dims), i);
          return lay::mistaken_source(fp->b, c.row, c.col, fp->tr.tokens, fp->tr.heads, fp->tr.head_dim);
        };
      }
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

// [SECTION] The walkthrough tab
// Cell size of every step (the largest that fits the canvas), and one window of blocks,
// rows and columns for all steps when a step would get cells too small to read.
void choose_scale(Frame& f, const ImVec2& avail) {
  const int n = step_count(f);
  const float fh = ImGui::GetFontSize();
  WalkPlan& plan = f.w.plan;
  const WalkPlan::Key key{avail.x,
                          avail.y,
                          fh,
                          f.sfh,
                          f.value_w,
                          f.token_w,
                          f.key_w,
                          static_cast<int>(f.dims.variant),
                          f.dims.T,
                          f.dims.d_in,
                          f.dims.h,
                          f.dims.hd,
                          f.w.pane,
                          n,
                          f.w.show_weights,
                          f.w.mistaken};
  if (plan.valid && plan.key == key) return;  // nothing it depends on changed: no scene is built
  plan.key = key;
  plan.valid = true;
  ++plan.builds;
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
  plan.cs.assign(static_cast<std::size_t>(n), 4.0f);
  plan.bcols.assign(static_cast<std::size_t>(n), 1);
  plan.lims.assign(static_cast<std::size_t>(n), {0, 0, 0});
  // Wᵀ in the projection step only when the step still fits without a window.
  f.weights_fit = true;
  plan.weights_fit = true;
  for (int k = 0; k < n && f.w.show_weights; ++k) {
    if (f.steps[static_cast<std::size_t>(k)] != lay::Step::Project) continue;
    float best = -1.0f;
    for (int c = 1; c <= 4; ++c) {
      f.block_cols = c;
      best = std::max(best, fit_one(k));
    }
    f.weights_fit = best >= want;
    plan.weights_fit = f.weights_fit;
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
      plan.cs[static_cast<std::size_t>(k)] = std::clamp(best, 4.0f, max_cs);
      plan.bcols[static_cast<std::size_t>(k)] = best_c;
      plan.lims[static_cast<std::size_t>(k)] = {win[0], win[1], win[2]};
      if (best >= want) break;
    }
  }
  f.block_cols = 1;
  f.lim_blocks = f.lim_rows = f.lim_cols = 0;
}

// Cell size, block columns and window of step k.
void use_step(Frame& f, int k) {
  const std::size_t i = static_cast<std::size_t>(k);
  const WalkPlan& p = f.w.plan;
  set_cs(f, p.cs[i]);
  f.block_cols = p.bcols[i];
  f.lim_blocks = p.lims[i][0];
  f.lim_rows = p.lims[i][1];
  f.lim_cols = p.lims[i][2];
}

}  // namespace mhaviz::gui::walk
