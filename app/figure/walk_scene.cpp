// The walkthrough's scenes: what each step draws (grids, operands, titles) and where (the plan
// of cell sizes and windows for a canvas: walk_plan.cpp).
#include <cstdio>

#include "figure/text.hpp"
#include "figure/walk_frame.hpp"

namespace mhaviz::figure::walk {

Frame::Frame(const WalkInput& input, const Options& options)
    : in(input), o(options), tr(*input.trace), th(detail::theme(options)) {
  b = std::clamp(in.batch, 0, std::max(0, tr.batch - 1));
  src = {&tr, b, in.mistaken, in.mistake};
  dims = src.dims();
  steps = walk_steps(in);
  set_text(o.type.label);
}

void Frame::set_text(float size) {
  sfh = size;
  op_size = size == o.type.label ? o.type.title : std::round(o.type.title * size / o.type.label);
  gap_px = std::ceil(sfh + 6.0f);
  pane_px = std::ceil(sfh * 1.5f);
  const float cap = text_width("abcdefgh", sfh);
  token_w = key_w = 0.0f;
  for (const auto& t : *in.tokens) {
    token_w = std::max(token_w, std::min(cap, text_width(t, sfh)));
    key_w = std::max(key_w, text_width(t, sfh));
  }
}

float text_w(const Frame& f, const std::string& s, float size) { return text_width(s, size > 0.0f ? size : f.sfh); }

std::vector<std::string> title_lines(const Frame& f, const std::string& t, float room) {
  std::vector<std::string> best{t};
  float widest = text_w(f, t);
  if (f.title_lines < 2 || widest + 8.0f <= room) return best;
  // A name and its shape part at the run of spaces between them, never inside the shape.
  const char* gap = t.find("  ") != std::string::npos ? "  " : " ";
  for (std::size_t i = t.find(gap); i != std::string::npos; i = t.find(gap, i)) {
    std::size_t j = i;
    while (j < t.size() && t[j] == ' ') ++j;
    if (i > 0 && j < t.size()) {
      std::string a = t.substr(0, i), b = t.substr(j);
      const float w = std::max(text_w(f, a), text_w(f, b));
      if (w < widest) {
        widest = w;
        best = {std::move(a), std::move(b)};
      }
    }
    i = j;
  }
  return best;
}

// Numbers grow with the cells and shrink (to 10 pixels at the least) until the widest fits.
float number_size(const Frame& f, float cs, int decimals) {
  const float size = std::clamp(std::round(cs * 0.3f), 10.0f, std::round(f.sfh * 1.4f));
  const float w = text_w(f, decimals < 0 ? "-0.00" : format_number(-0.5f, decimals), size);
  return w + 4.0f <= cs ? size : std::floor(size * (cs - 4.0f) / w);
}

bool numbers_fit(const Frame& f, float cs, int decimals) {
  const float size = number_size(f, cs, decimals);
  return size >= 10.0f && cs >= size + 2.0f;
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
  return shape_string(sh);
}

namespace {

// The element of the correct merge a cell of a merged grid holds, or (mistake) the one the
// plain reshape puts there.
std::function<lay::HeadIndex(std::int64_t)> merge_source(const Frame& f, bool mistaken) {
  const Frame* fp = &f;
  return [fp, mistaken](std::int64_t i) {
    const lay::Cell c = lay::cell_of(lay::step_layout(lay::Step::Merge, fp->dims), i);
    return mistaken ? lay::mistaken_source(fp->b, c.row, c.col, fp->tr.tokens, fp->tr.heads, fp->tr.head_dim)
                    : lay::split_column(fp->b, c.row, c.col, fp->tr.head_dim);
  };
}

// Cells of the mistaken merge that differ from the correct one.
std::function<bool(std::int64_t)> merge_wrong(const Frame& f) {
  const Frame* fp = &f;
  return [fp](std::int64_t flat) {
    const std::int64_t off =
        static_cast<std::int64_t>(fp->b) * lay::step_layout(lay::Step::Merge, fp->dims).pane_numel() + flat;
    return at(fp->src.mistake->merged, off) != at(fp->tr.context_merged, off);
  };
}

}  // namespace

// gqa: which K/V head the grid's heads are or read, and (the mistake) which blocks and
// scores the mis-paired .repeat makes wrong.
void gqa_heads(const Frame& f, Grid& g, lay::Step st) {
  const Frame* fp = &f;
  if (lay::first_part(st, f.dims) == 1) {
    g.kv_heads = true;
    return;
  }
  if (g.l.kind != lay::Kind::HeadBlocks || st == lay::Step::Input) return;
  g.reads = [fp, st](int h) { return kv_read(fp->src, st, h); };
  if (!f.src.repeat_wrong()) return;
  if (st == lay::Step::Expand) {
    g.wrong = [fp](std::int64_t flat) {
      const int h = static_cast<int>(lay::cell_of(lay::step_layout(lay::Step::Expand, fp->dims), flat).block);
      return lay::kv_head_read(fp->dims, h, true) != lay::kv_head_read(fp->dims, h, false);
    };
  } else if (st == lay::Step::Scores) {
    g.wrong = [fp](std::int64_t flat) {
      const std::int64_t off =
          static_cast<std::int64_t>(fp->b) * lay::step_layout(lay::Step::Scores, fp->dims).pane_numel() + flat;
      return at(fp->src.mistake->repeat.scores, off) != at(fp->tr.scores, off);
    };
  }
}

Grid result_grid(const Frame& f, lay::Step st) {
  Grid g;
  g.l = windowed(f, lay::step_layout(st, f.dims));
  const Variant v = f.tr.config.variant;
  const Frame* fp = &f;
  g.value = [fp, st](std::int64_t i) { return step_value(fp->src, st, i); };
  if (st == lay::Step::Mask || st == lay::Step::Dropout)
    g.state = [fp, st](std::int64_t i) { return step_state(fp->src, st, i); };
  if (g.l.panes == 3) {
    const int p = f.in.pane;
    g.pane_first = p == 3 ? 0 : p;
    g.pane_last = p == 3 ? 2 : p;
  } else {
    g.pane_last = g.l.panes - 1;  // gqa's keys | values: both, they are small
  }
  if (v == Variant::Gqa) gqa_heads(f, g, st);
  // With the mistake, the correct expansion is drawn beside it: the keys alone make the point
  // (the values are paired alike) and leave the cells room for their numbers.
  if (st == lay::Step::Expand && f.src.repeat_wrong()) g.pane_last = 0;
  const std::string shp = shape_of(f, g.l);
  g.tint = step_tint(st);
  for (int p = 0; p < g.l.panes; ++p) g.pane_titles.push_back(pane_name(v, st, p, f.in.mistaken) + "  " + shp);
  switch (st) {
    case lay::Step::Input:
    case lay::Step::Latent: break;
    case lay::Step::Project:
      if (v == Variant::Wrapper) {
        g.blocks = BlockLabels::Modules;
        for (int p = 0; p < 3; ++p)
          g.pane_titles[static_cast<std::size_t>(p)] =
              pane_name(v, st, p, false) + "  " + std::to_string(f.tr.heads) + " x (" + std::to_string(f.tr.batch) +
              ", " + std::to_string(f.tr.tokens) + ", " + std::to_string(f.tr.head_dim) + ")";
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
    case lay::Step::Expand:
      g.blocks = BlockLabels::Heads;
      g.read_hue = true;  // each block is a copy of the K/V head it reads
      break;
    case lay::Step::QkNorm:
    case lay::Step::Rope: g.blocks = BlockLabels::Heads; break;
    case lay::Step::Scores:
    case lay::Step::Mask:
    case lay::Step::Softmax:
    case lay::Step::Dropout:
      g.blocks = BlockLabels::Heads;
      g.col_tokens = true;
      break;
    case lay::Step::Merge:
      g.col_heads = true;
      g.source = merge_source(f, f.src.wrong());
      if (f.src.wrong()) g.wrong = merge_wrong(f);
      break;
    case lay::Step::Concat:
      g.col_heads = true;
      g.decimals = 4;  // the wrapper's output: the numbers the book prints
      break;
    case lay::Step::OutProj: g.decimals = 4; break;
  }
  return g;
}

Grid tensor_grid(const Frame& f, lay::Step layout_of, const Tensor* t, std::string title, Tint tint) {
  return layout_grid(f, lay::step_layout(layout_of, f.dims), t, std::move(title), tint);
}

Grid layout_grid(const Frame& f, const lay::Layout& l, const Tensor* t, std::string title, Tint tint) {
  Grid g;
  g.l = windowed(f, l);
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
// wrapper) or of the output projection, drawn as (in, out) so that output column j is the
// input times column j. A projection's columns are coloured by head: the weight split's W is
// the heads' matrices side by side; out_proj mixes every head into every column.
bool weight_grid(const Frame& f, Grid& g, bool out_proj) {
  const Trace& tr = f.tr;
  const Variant v = tr.config.variant;
  // gqa's and mla's projections have more shapes than one Wᵀ beside the result shows.
  if (!f.in.model || ((v == Variant::Gqa || v == Variant::Mla) && !out_proj)) return false;
  static constexpr const char* kW[3] = {"W_query", "W_key", "W_value"};
  const int pane = std::clamp(f.in.pane, 0, 2);
  const Model& m = *f.in.model;
  const int hd = tr.head_dim, H = tr.heads;
  std::vector<const Linear*> ls;
  std::string name;
  try {
    if (out_proj) {
      if (v == Variant::Wrapper) return false;
      name = v == Variant::FusedQkv ? "linear_layer" : "out_proj";
      ls.push_back(&m.layer(name));
    } else if (v == Variant::Wrapper) {
      for (int h = 0; h < H; ++h) ls.push_back(&m.layer("heads." + std::to_string(h) + "." + kW[pane]));
    } else {
      name = v == Variant::FusedQkv ? "qkv_layer" : kW[pane];
      ls.push_back(&m.layer(name));
    }
  } catch (const std::exception&) {
    return false;
  }
  const int in = out_proj ? H * hd : tr.d_in;
  for (const Linear* l : ls)
    if (l->in != in || l->weight.empty()) return false;  // the model is ahead of the trace
  if (v == Variant::Wrapper && !out_proj) {
    g.l.kind = lay::Kind::HeadBlocks;
    g.l.dims = {1, H, in, hd};
    g.blocks = BlockLabels::Modules;
    g.pane_titles = {std::string(kW[pane]) + "ᵀ of each head  (" + std::to_string(in) + ", " + std::to_string(hd) +
                     ")"};
    g.tint = Tint::Head;
  } else {
    const int out = ls[0]->out;
    g.l.dims = {1, 1, in, out};
    g.l.head_cols = out_proj ? 0 : v == Variant::FusedQkv ? 3 * hd : hd;
    g.l.part_cols = !out_proj && v == Variant::FusedQkv ? hd : 0;
    g.col_heads = !out_proj;
    g.tint = out_proj ? Tint::Neutral : Tint::Head;
    g.pane_titles = {name + ".weightᵀ  (" + std::to_string(in) + ", " + std::to_string(out) + ")"};
  }
  g.l.heads = H;
  g.l = windowed(f, g.l);
  g.rows = RowLabels::None;
  const lay::Layout l = g.l;
  g.value = [ls, l](std::int64_t flat) {
    const lay::Cell c = lay::cell_of(l, flat);
    const Linear* lin = ls[static_cast<std::size_t>(l.kind == lay::Kind::HeadBlocks ? c.block % l.dims[1] : 0)];
    // Wᵀ[i, j] = weight[j, i]
    return lin->weight[static_cast<std::size_t>(c.col * lin->in + c.row)];
  };
  return true;
}

namespace {
// The last of x -> normed -> rotated that the config computes.
const Tensor& newest(const Tensor& x, const Tensor& normed, const Tensor& rotated) {
  return !rotated.empty() ? rotated : !normed.empty() ? normed : x;
}
}  // namespace

const Tensor& q_read(const Frame& f) { return newest(f.tr.q, f.tr.q_normed, f.tr.q_rotated); }

const Tensor& k_read(const Frame& f, lay::Step st) {
  if (f.tr.config.variant != Variant::Gqa) return newest(f.tr.k, f.tr.k_normed, f.tr.k_rotated);
  return f.src.repeat_wrong() && st == lay::Step::Scores ? f.src.mistake->repeat.k_expanded : f.tr.k_expanded;
}

const Tensor& v_read(const Frame& f) { return f.tr.config.variant == Variant::Gqa ? f.tr.v_expanded : f.tr.v; }

namespace {

// gqa's queries beside the keys | values its Project, View and Transpose draw at G heads.
Grid query_grid(const Frame& f, lay::Step st) {
  const Trace& tr = f.tr;
  const Tensor* t = st == lay::Step::Transpose ? &tr.q : &tr.queries;
  const std::string name = st == lay::Step::Project ? "queries" : st == lay::Step::View ? "queries.view" : "q";
  const lay::Layout l = lay::query_layout(st, f.dims);
  Grid g = layout_grid(f, l, t, name + "  " + shape_of(f, l), Tint::Head);
  if (st == lay::Step::View) {
    g.rows = RowLabels::Heads;
    g.blocks = BlockLabels::Tokens;
  } else if (st == lay::Step::Project) {
    g.col_heads = true;
  } else {
    const Frame* fp = &f;
    g.reads = [fp](int h) { return lay::kv_head_read(fp->dims, h, false); };
  }
  return g;
}

// QK-norm and RoPE: q before -> q after, and k after beside it (at the K/V heads in gqa).
void norm_rope_scene(const Frame& f, lay::Step st, Scene& sc, Grid res) {
  const Trace& tr = f.tr;
  const bool norm = st == lay::Step::QkNorm;
  const Tensor& q_in = norm || tr.q_normed.empty() ? tr.q : tr.q_normed;
  Grid q = tensor_grid(f, lay::Step::Context, &q_in, (&q_in == &tr.q ? "q  " : "q_normed  ") + shape_string(q_in.shape),
                       Tint::Head);
  q.blocks = BlockLabels::Heads;
  q.op_after = "→";
  sc.grids.push_back(std::move(q));
  sc.result = static_cast<int>(sc.grids.size());
  res.op_after = "|";
  sc.grids.push_back(std::move(res));
  const Tensor& k_out = norm ? tr.k_normed : tr.k_rotated;
  Grid k = tensor_grid(f, lay::Step::Transpose, &k_out,
                       (norm ? "k_normed  " : "k_rotated  ") + shape_string(k_out.shape), Tint::Head);
  k.kv_heads = tr.config.variant == Variant::Gqa;
  k.blocks = BlockLabels::Heads;
  sc.grids.push_back(std::move(k));
}

// gqa's expansion reads the keys at the G K/V heads (the values expand alike); with the
// mistake, build_scene puts what the correct .repeat_interleave gives beside it.
void expand_scene(const Frame& f, Scene& sc) {
  const Trace& tr = f.tr;
  Grid kv = tensor_grid(f, lay::Step::Transpose, &tr.k, "k  " + shape_string(tr.k.shape), Tint::Head);
  kv.kv_heads = true;
  kv.blocks = BlockLabels::Heads;
  kv.op_after = "→";
  sc.grids.push_back(std::move(kv));
}

}  // namespace

Scene build_scene(const Frame& f, int k) {
  Scene sc;
  const lay::Step st = f.steps[static_cast<std::size_t>(k)];
  const Trace& tr = f.tr;
  const Variant v = tr.config.variant;
  Grid res = result_grid(f, st);
  const bool weights = f.in.weights && f.weights_fit;
  const bool kv_panes = lay::first_part(st, f.dims) == 1;
  if (st == lay::Step::QkNorm || st == lay::Step::Rope) {
    norm_rope_scene(f, st, sc, std::move(res));
    return sc;
  }
  switch (st) {
    case lay::Step::Project: {
      Grid x =
          tensor_grid(f, lay::Step::Input, &tr.input,
                      pane_name(v, lay::Step::Input, 0, false) + "  " + shape_string(tr.input.shape), Tint::Neutral);
      x.op_after = "→";
      sc.grids.push_back(std::move(x));
      Grid wt;
      if (weights && (f.in.pane != 3 || v == Variant::FusedQkv) && weight_grid(f, wt, false)) {
        sc.grids.back().op_after = "·";
        wt.op_after = "=";
        sc.grids.push_back(std::move(wt));
      }
      if (kv_panes) {
        Grid q = query_grid(f, st);
        q.op_after = "|";
        sc.grids.push_back(std::move(q));
      }
      if (v == Variant::Mla) {  // the keys and values come from the latent (the queries from X)
        sc.grids.back().op_after = "and";
        Grid lt =
            tensor_grid(f, lay::Step::Latent, &tr.latent, "latent  " + shape_string(tr.latent.shape), Tint::Neutral);
        lt.op_after = "→";
        sc.grids.push_back(std::move(lt));
      }
      break;
    }
    case lay::Step::View:
    case lay::Step::Transpose:
      if (kv_panes) {
        Grid q = query_grid(f, st);
        q.op_after = "|";
        sc.grids.push_back(std::move(q));
      }
      break;
    case lay::Step::Expand: expand_scene(f, sc); break;
    case lay::Step::Latent: {
      Grid x = tensor_grid(f, lay::Step::Input, &tr.input, "X  " + shape_string(tr.input.shape), Tint::Neutral);
      x.op_after = "→";
      sc.grids.push_back(std::move(x));
      break;
    }
    case lay::Step::Scores: {
      // With the mistake the step compares the mis-paired scores with the correct ones (the
      // expansion before it shows the keys each head got): the operands would only take room.
      if (f.src.repeat_wrong()) break;
      const Tensor& qt = q_read(f);
      const char* qname = !tr.q_rotated.empty() ? "q_rotated  " : !tr.q_normed.empty() ? "q_normed  " : "q  ";
      Grid q = tensor_grid(f, lay::Step::Context, &qt, qname + shape_string(qt.shape), Tint::Head);
      q.op_after = "·";
      const Tensor& kt = k_read(f, st);
      Grid kk = tensor_grid(f, lay::Step::Context, &kt, "k (kᵀ's columns)", Tint::Head);
      if (v == Variant::Gqa) {
        const Frame* fp = &f;
        kk.reads = [fp](int h) { return kv_read(fp->src, lay::Step::Scores, h); };
        kk.read_hue = true;
        kk.blocks = BlockLabels::Heads;
      }
      kk.op_after = "=";
      sc.grids.push_back(std::move(q));
      sc.grids.push_back(std::move(kk));
      break;
    }
    case lay::Step::Context: {
      Grid wg = tensor_grid(f, lay::Step::Softmax, &tr.weights_after_dropout(),
                            pane_name(v, lay::Step::Dropout, 0, false), Tint::Weights);
      wg.col_tokens = true;
      wg.op_after = "·";
      const Tensor& vt = v_read(f);
      Grid vg = tensor_grid(f, lay::Step::Context, &vt,
                            (v == Variant::Gqa ? "v expanded  " : "v  ") + shape_string(vt.shape), Tint::Head);
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
      Grid m =
          tensor_grid(f, v == Variant::Wrapper ? lay::Step::Concat : lay::Step::Merge, in,
                      std::string(wrong ? "merged (the mistake)  " : "merged  ") + shape_string(in->shape), Tint::Head);
      m.col_heads = true;
      if (wrong) {
        m.source = merge_source(f, true);
        m.wrong = merge_wrong(f);
      } else {
        m.source = merge_source(f, false);
      }
      m.op_after = "→";
      sc.grids.push_back(std::move(m));
      Grid wt;
      if (weights && weight_grid(f, wt, true)) {
        sc.grids.back().op_after = "·";
        wt.op_after = "=";
        sc.grids.push_back(std::move(wt));
      }
      break;
    }
    default: break;
  }
  sc.result = static_cast<int>(sc.grids.size());
  sc.grids.push_back(std::move(res));
  if (f.src.repeat_wrong() && (st == lay::Step::Expand || st == lay::Step::Scores)) {
    // Beside the mistake, what the correct .repeat_interleave gives.
    sc.grids.back().op_after = "vs";
    const bool scores = st == lay::Step::Scores;
    Grid ok = tensor_grid(f, st, scores ? &tr.scores : &tr.k_expanded, "correct: repeat_interleave",
                          scores ? Tint::Diverging : Tint::Head);
    const Frame* fp = &f;
    ok.reads = [fp](int h) { return lay::kv_head_read(fp->dims, h, false); };
    ok.read_hue = !scores;
    ok.blocks = BlockLabels::Heads;
    ok.col_tokens = scores;
    sc.grids.push_back(std::move(ok));
  }
  if (st == lay::Step::Scores && !f.src.repeat_wrong() && f.src.mistake &&
      !f.src.mistake->scores_without_rope.empty()) {
    // RoPE: the same q·kᵀ of the q and k before the rotation, beside the rotated one's.
    sc.grids.back().op_after = "|";
    Grid plain =
        tensor_grid(f, st, &f.src.mistake->scores_without_rope, "without RoPE: q·kᵀ unrotated", Tint::Diverging);
    plain.blocks = BlockLabels::Heads;
    plain.col_tokens = true;
    sc.grids.push_back(std::move(plain));
  }
  if (st == lay::Step::Merge && f.src.wrong()) {
    sc.grids.back().op_after = "vs";
    Grid ok = tensor_grid(f, lay::Step::Merge, &tr.context_merged, "correct: transpose(1, 2), then view", Tint::Head);
    ok.col_heads = true;
    ok.source = merge_source(f, false);
    sc.grids.push_back(std::move(ok));
  }
  return sc;
}

// [SECTION] Geometry
Point grid_size(const Frame& f, const Grid& g) {
  lay::Layout t = g.l;
  t.panes = panes_drawn(g);
  const lay::Point e = lay::extent(t);
  return {e.x * f.cs, e.y * f.cs};
}

namespace {

// A grid right of one with the same token rows (same count, same blocks side by side) reads
// its row labels from its neighbour: drawing them again would only take width from the cells.
bool shares_rows(const Grid* prev, const Grid& g) {
  return prev && prev->rows == RowLabels::Tokens && g.rows == RowLabels::Tokens && prev->l.dims[2] == g.l.dims[2] &&
         prev->l.kind == g.l.kind && prev->l.block_cols == g.l.block_cols && prev->l.max_rows == g.l.max_rows;
}

// Which grids of a scene leave their row labels to the grid on their left.
std::vector<char> shared_rows(const Scene& sc) {
  std::vector<char> out(sc.grids.size(), 0);
  for (std::size_t i = 1; i < sc.grids.size(); ++i) out[i] = shares_rows(&sc.grids[i - 1], sc.grids[i]) ? 1 : 0;
  return out;
}

float left_margin(const Frame& f, const Grid& g, bool shared) {
  if (g.rows == RowLabels::None || shared) return 6.0f;
  const float w = g.rows == RowLabels::Heads ? text_w(f, "head 00") : f.token_w;
  return std::ceil(w + 8.0f);
}

float top_margin(const Frame& f, const Grid& g) {
  float lines = static_cast<float>(f.title_lines);  // pane titles
  if (g.col_heads || g.l.part_cols > 0) lines += 1.0f;
  if (g.blocks != BlockLabels::None) lines += 1.0f;  // the first block's label
  if (g.col_tokens) {  // key tokens, on staggered lines when they are wide (the shared rule)
    const int kl = key_label_lines(f.key_w, f.cs, text_w(f, " "));
    lines += static_cast<float>(kl <= kMaxKeyLines ? kl : 1);
  }
  return std::ceil(lines * (f.sfh + 3.0f));
}

}  // namespace

const std::string& pane_title(const Grid& g, int pane) {
  return pane < static_cast<int>(g.pane_titles.size()) ? g.pane_titles[static_cast<std::size_t>(pane)]
                                                       : g.pane_titles.front();
}

std::string title_note(const ColumnLabels& keys) {
  return keys.note.empty() ? std::string() : "  \xC2\xB7 columns: " + keys.note;
}

std::string title_note(const Frame& f, const Grid& g) {
  if (!g.col_tokens || !(f.B || f.title_notes)) return {};
  return title_note(column_labels(tokens(f), f.cs, [&f](const std::string& t) { return text_w(f, t); }));
}

namespace {

// The width a grid takes: its cells, or its last pane title when that is wider. Drawn, and
// planned at the size a step gets (Frame::title_notes), a title also holds the note of
// numbered key columns, so a grid beside a narrow one starts after it.
float grid_width(const Frame& f, const Grid& g) {
  float w = grid_size(f, g).x;
  const std::string note = title_note(f, g);
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane) {
    const float x = (lay::slot_point(g.l, pane, 0, 0, 0).x - pane_shift(g)) * f.cs;
    for (const std::string& line : title_lines(f, pane_title(g, pane) + note, lay::pane_width(g.l) * f.cs))
      w = std::max(w, x + text_w(f, line) + 8.0f);
  }
  return w;
}

}  // namespace

// (walk_frame.hpp) A title is as wide at every cell size, and shrinking the cells only brings the
// panes closer. At 24 px on an 835-px canvas "queries  (2, 3, 6)" ran into "keys". The titles
// hold a double space between name and shape, so they keep more than that between them: with
// a space, "Q_i  2 x (2, 6, 2) K_i  2 x (2, 6, 2)" read as "2, 6, 2) K_i".
bool pane_titles_collide(const Frame& f, const Scene& sc) {
  const float gap = f.sfh;
  for (const Grid& g : sc.grids) {
    const std::string note = title_note(f, g);
    for (int pane = g.pane_first; pane < g.pane_last; ++pane) {
      const float pitch = (lay::slot_point(g.l, pane + 1, 0, 0, 0).x - lay::slot_point(g.l, pane, 0, 0, 0).x) * f.cs;
      if (pitch <= 0.0f) continue;  // stacked, not side by side
      for (const std::string& line : title_lines(f, pane_title(g, pane) + note, lay::pane_width(g.l) * f.cs))
        if (text_w(f, line) + gap > pitch) return true;
    }
  }
  return false;
}

// Width and height of a scene at the frame's cell size.
Point scene_size(const Frame& f, const Scene& sc) {
  float w = 0, top = 0, h = 0;
  const std::vector<char> shared = shared_rows(sc);
  for (std::size_t i = 0; i < sc.grids.size(); ++i) {
    const Grid& g = sc.grids[i];
    w += left_margin(f, g, shared[i] != 0) + grid_width(f, g);
    if (i + 1 < sc.grids.size()) w += f.op_size * kOpWidthFactor;
    top = std::max(top, top_margin(f, g));
    h = std::max(h, grid_size(f, g).y);
  }
  return {w, top + h};
}

void place_scene(const Frame& f, Scene& sc, Point at) {
  // Every grid's cells start at one height, so the rows of A · B = C line up.
  float x = at.x, top = 0;
  for (const Grid& g : sc.grids) top = std::max(top, top_margin(f, g));
  const std::vector<char> shared = shared_rows(sc);
  for (std::size_t i = 0; i < sc.grids.size(); ++i) {
    Grid& g = sc.grids[i];
    g.left = left_margin(f, g, shared[i] != 0);
    g.top = top_margin(f, g);  // its own labels: drawn just above its cells
    if (shared[i]) g.rows = RowLabels::None;
    g.ox = std::floor(x + g.left);
    g.oy = std::floor(at.y + top);
    x += g.left + grid_width(f, g) + f.op_size * kOpWidthFactor;
  }
}

// Top-left of a point (cell units) of a grid.
Point to_px(const Frame& f, const Grid& g, lay::Point p) {
  return {g.ox + (p.x - pane_shift(g)) * f.cs, g.oy + p.y * f.cs};
}

}  // namespace mhaviz::figure::walk
