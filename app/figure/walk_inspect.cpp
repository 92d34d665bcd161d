// The walkthrough's inspector: the followed element's index path and how it is computed
// (dot products, softmax row, mask, dropout), as text the app's panel prints.
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "figure/walk_frame.hpp"

namespace mhaviz::figure {
namespace walk {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Values as the seeds print them (4 decimals).
std::string num(float v, int decimals = 4) { return format_number(v, decimals); }

}  // namespace

// "[b, t, j]" of an element of a step's layout, for the selected batch item.
std::string index_text(const Frame& f, const lay::Layout& l, const lay::Cell& c) {
  const std::int64_t b = f.b;
  if (l.kind == lay::Kind::Matrix) return lay::index_string({b, c.row, c.col});
  return lay::index_string({b, c.block % l.dims[1], c.row, c.col});
}

std::string tensor_label(const Frame& f, lay::Step st, int pane) {
  return pane_name(f.tr.config.variant, st, pane, f.in.mistaken);
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

// A projection's element as the dot product of its input row and the Linear's weight row: X
// with W_query, W_key, W_value (the wrapper's heads', the fused qkv_layer); mla's latent
// step X with W_DKV, its keys and values the latent with W_UK, W_UV.
void inspect_project(const Frame& f, lay::Step st, const lay::Layout& l, const lay::Cell& c, float value,
                     Inspection& out) {
  const Variant v = f.tr.config.variant;
  if (!f.in.model) {
    out.text("(weights of this trace are not available)");
    return;
  }
  const Model& m = *f.in.model;
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
    wname = kW[c.pane + lay::first_part(lay::Step::Project, f.dims)];
    t = c.row;
    row = c.col;
  }
  const bool from_latent = v == Variant::Mla && st == lay::Step::Project && c.pane > 0;
  if (st == lay::Step::Latent) wname = "W_DKV";
  if (from_latent) wname = c.pane == 1 ? "W_UK" : "W_UV";
  const Tensor& src = from_latent ? f.tr.latent : f.tr.input;
  const std::string src_name = from_latent ? "latent" : "X";
  try {
    const Linear& lin = m.layer(wname);
    std::vector<float> x(static_cast<std::size_t>(lin.in));
    for (int i = 0; i < lin.in; ++i) x[static_cast<std::size_t>(i)] = src.at({f.b, t, i});
    double sum = 0.0;
    const std::string terms = dot_terms(x, row_of(lin.weight, row, lin.in), sum);
    std::string bias;
    if (!lin.bias.empty()) {
      sum += static_cast<double>(lin.bias[static_cast<std::size_t>(row)]);
      bias = " + bias[" + std::to_string(row) + "] " + num(lin.bias[static_cast<std::size_t>(row)]);
    }
    out.text(tensor_label(f, st, c.pane) + index_text(f, l, c) + " = " + src_name +
             lay::index_string({f.b, t}).substr(0, lay::index_string({f.b, t}).size() - 1) + ", :] · " + wname +
             ".weight[" + std::to_string(row) + ", :]" + bias);
    out.text("= " + terms + (bias.empty() ? "" : " + " + num(lin.bias[static_cast<std::size_t>(row)])) + " = " +
             num(static_cast<float>(sum)) + "   (trace: " + num(value) + ")");
    if (st == lay::Step::Latent || from_latent) {
      out.text(st == lay::Step::Latent
                   ? "The latent is all an MLA KV cache keeps: latent_dim = " + std::to_string(lin.out) +
                         " values per token, "
                         "against 2 × d_out = " +
                         std::to_string(2 * f.tr.heads * f.tr.head_dim) + " for keys and values."
                   : "Keys and values are made from the latent, not from X: W_UK and W_UV map latent_dim " +
                         std::to_string(lin.in) + " → d_out " + std::to_string(lin.out) + ".");
    } else if (v == Variant::Gqa) {
      out.text("Column j = " + std::to_string(c.col) + " belongs to K/V head j / head_dim = " +
               std::to_string(c.col / f.tr.head_dim) + ": " + wname + " has " + std::to_string(f.tr.kv_heads) +
               " × head_dim rows, W_query " + std::to_string(f.tr.heads) + " × head_dim.");
    } else if (v == Variant::WeightSplit) {
      const lay::HeadIndex hi = lay::split_column(f.b, c.row, c.col, f.tr.head_dim);
      out.text("Column j = " + std::to_string(c.col) + " belongs to head j / head_dim = " + std::to_string(c.col) +
               " / " + std::to_string(f.tr.head_dim) + " = " + std::to_string(hi.head) +
               " (d = j mod head_dim = " + std::to_string(hi.d) + ")");
    } else if (v == Variant::FusedQkv) {
      const std::int64_t hd = f.tr.head_dim, head = c.col / (3 * hd), part = (c.col % (3 * hd)) / hd;
      out.text("Column " + std::to_string(c.col) + ": head " + std::to_string(head) + "'s chunk [q | k | v], part " +
               (part == 0   ? "q"
                : part == 1 ? "k"
                            : "v") +
               ", d = " + std::to_string(c.col % hd));
    } else {
      out.text("Head " + std::to_string(c.block % l.dims[1]) + " is its own module with its own " + kW[c.pane] + " (" +
               std::to_string(f.tr.head_dim) + " x " + std::to_string(f.tr.d_in) + ").");
    }
  } catch (const std::exception&) {
    out.text("(weights of this trace are not available)");
  }
}

// q_normed = q / √(mean(q²) + eps) · scale over the element's head vector; q_rotated pairs
// d with d ± head_dim/2 and turns them by position · θ_i. Recomputed here in double only to
// explain: the value printed first is the trace's.
void inspect_norm_rope(const Frame& f, lay::Step st, const lay::Cell& c, Inspection& out) {
  const Trace& tr = f.tr;
  const int hd = tr.head_dim;
  const std::int64_t h = c.block, t = c.row, d = c.col;
  if (st == lay::Step::QkNorm) {
    double ms = 0.0;
    for (int e = 0; e < hd; ++e) ms += static_cast<double>(tr.q.at({f.b, h, t, e})) * tr.q.at({f.b, h, t, e});
    ms /= hd;
    const float w = f.in.model && !f.in.model->q_norm.empty() ? f.in.model->q_norm[static_cast<std::size_t>(d)] : 1.0f;
    const double x = tr.q.at({f.b, h, t, d}), eps = tr.config.qk_norm_eps;
    char eps_text[32];
    std::snprintf(eps_text, sizeof eps_text, "%g", eps);
    out.text("= q" + lay::index_string({f.b, h, t, d}) + " / √(mean(q" +
             lay::index_string({f.b, h, t}).insert(lay::index_string({f.b, h, t}).size() - 1, ", :") + "²) + " +
             eps_text + ") · q_norm.scale[" + std::to_string(d) + "] = " + num(static_cast<float>(x)) + " / " +
             num(static_cast<float>(std::sqrt(ms + eps))) + " · " + num(w) + " = " +
             num(static_cast<float>(x / std::sqrt(ms + eps) * w)));
    out.text(
        "Every head's vector at every position is scaled to a root mean square of 1 (then by the learned scale), "
        "for q and k alike: the scores' size no longer grows with the vectors'.");
    return;
  }
  const Tensor& in = tr.q_normed.empty() ? tr.q : tr.q_normed;
  const int half = hd / 2, i = static_cast<int>(d % half);
  const std::int64_t partner = d < half ? d + half : d - half;
  const std::vector<double> inv = rope_inv_freq(tr.config);
  const double angle = static_cast<double>(t) * inv[static_cast<std::size_t>(i)];
  const std::string freq = tr.config.rope_inv_freq.empty()
                               ? "θ^(−2·" + std::to_string(i) + "/" + std::to_string(hd) + ")"
                               : "inv_freq[" + std::to_string(i) + "] (the model's scaled RoPE)";
  const double x = in.at({f.b, h, t, d}), y = in.at({f.b, h, t, partner});
  const double r = d < half ? x * std::cos(angle) - y * std::sin(angle) : x * std::cos(angle) + y * std::sin(angle);
  out.text("Pair (" + std::to_string(i) + ", " + std::to_string(i + half) + ") at position " + std::to_string(t) +
           " turns by angle " + std::to_string(t) + " · " + freq + " = " + num(static_cast<float>(angle)) + " rad");
  out.text(std::string("= ") + (d < half ? "x·cos − y·sin" : "x·cos + y·sin") + " with x = " +
           num(static_cast<float>(x)) + " (d " + std::to_string(d) + "), y = " + num(static_cast<float>(y)) + " (d " +
           std::to_string(partner) + ") = " + num(static_cast<float>(r)));
  out.text("Rotations keep lengths; q·kᵀ then depends on the two positions' difference. Position 0 is not turned.");
}

void inspect_path(const Frame& f, int k, std::int64_t flat, Inspection& out) {
  // The element's index in every layout of its chain.
  const auto path = lay::follow(f.steps, f.dims, f.in.mistaken, k, flat);
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
  out.text(s);
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
      out.text("head = j / head_dim = " + std::to_string(j) + " / " + std::to_string(hd) + " = " +
               std::to_string(hi.head) + ",  d = j mod head_dim = " + std::to_string(hi.d) +
               ".  The view keeps memory (same flat index); the transpose "
               "moves token " +
               std::to_string(t) + "'s row of head " + std::to_string(hi.head) + " into head " +
               std::to_string(hi.head) + "'s block.");
    }
  }
  if (st == lay::Step::Merge && f.src.wrong()) {
    const lay::HeadIndex bad = lay::mistaken_source(f.b, c.row, c.col, f.tr.tokens, f.tr.heads, hd);
    const lay::HeadIndex ok = lay::split_column(f.b, c.row, c.col, hd);
    out.text("The plain reshape puts context" + lay::index_string({bad.b, bad.head, bad.t, bad.d}) + " (token " +
             std::to_string(bad.t) + ", " + token_name(f, bad.t) + ") here; the correct merge has context" +
             lay::index_string({ok.b, ok.head, ok.t, ok.d}) + " (token " + std::to_string(ok.t) + ").");
  }
}

// The scaled score as the module writes it: s/√head_dim, or s·query_pre_attn_scalar^−0.5.
std::string scaled_text(const Trace& tr) {
  if (tr.config.query_pre_attn_scalar > 0) return "s·" + num(tr.scale());
  return "s/√" + std::to_string(tr.head_dim);
}

void inspect_softmax_row(const Frame& f, int head, int i, Inspection& out) {
  const Trace& tr = f.tr;
  const int T = tr.tokens;
  std::vector<float> sc(static_cast<std::size_t>(T));
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < T; ++j) {
    const float v =
        tr.masked(i, j) ? -std::numeric_limits<float>::infinity() : tr.scaled(tr.scores.at({f.b, head, i, j}));
    sc[static_cast<std::size_t>(j)] = v;
    mx = std::max(mx, v);
  }
  double sum = 0.0;
  for (int j = 0; j < T; ++j)
    sum += std::isinf(sc[static_cast<std::size_t>(j)])
               ? 0.0
               : std::exp(static_cast<double>(sc[static_cast<std::size_t>(j)] - mx));
  out.text("Row inspector: head " + std::to_string(head) + ", query " + std::to_string(i) + " (" + token_name(f, i) +
           ").  weight = exp(" + scaled_text(tr) + " − max) / Σ,  max = " + num(mx) +
           ",  Σ = " + num(static_cast<float>(sum)));
  const int shown = std::min(T, 10);
  Inspection::Table& t = out.table();
  t.header.push_back("key");
  for (int c = 0; c < shown; ++c) t.header.push_back(token_name(f, c == shown - 1 ? T - 1 : c).substr(0, 8));
  const std::string scaled_row = tr.config.query_pre_attn_scalar > 0 ? "score·s" : "score/√d";
  const char* names[4] = {"score", scaled_row.c_str(), "exp(· − max)", "weight"};
  for (int r = 0; r < 4; ++r) {
    std::vector<Inspection::Line> row{{names[r], false}};
    for (int c = 0; c < shown; ++c) {
      const int j = c == shown - 1 ? T - 1 : c;
      const bool masked = tr.masked(i, j);
      const float s = sc[static_cast<std::size_t>(j)];
      std::string txt;
      switch (r) {
        case 0:
          txt = masked ? num(-std::numeric_limits<float>::infinity()) : num(tr.scores.at({f.b, head, i, j}));
          break;
        case 1: txt = num(s); break;
        case 2: txt = masked ? "0" : num(static_cast<float>(std::exp(static_cast<double>(s - mx)))); break;
        default: txt = num(tr.weights.at({f.b, head, i, j})); break;
      }
      row.push_back({txt, masked});
    }
    t.rows.push_back(std::move(row));
  }
  if (T > shown) out.dim("(first " + std::to_string(shown - 1) + " keys and the last of " + std::to_string(T) + ")");
}

// The caption a step always shows (what the step does on this trace), before any cell is hovered.
void step_caption(const Frame& f, lay::Step st, Inspection& out) {
  const Trace& tr = f.tr;
  const int T = tr.tokens;
  std::int64_t masked_cells = 0;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) masked_cells += tr.masked(i, j) ? 1 : 0;
  switch (st) {
    case lay::Step::Mask:
      if (f.dims.window > 0) {
        std::int64_t outside = 0;
        for (int i = 0; i < T; ++i)
          for (int j = 0; j < T; ++j) outside += tr.hidden_by(i, j) == MaskRule::Window ? 1 : 0;
        out.text("mask_bool = (diff < 0) | (diff >= W), diff = i − j, W = " + std::to_string(f.dims.window) + ": " +
                 std::to_string(masked_cells - outside) + " cells per head after the query (grey, outlined) and " +
                 std::to_string(outside) + " W or more tokens back (blue-grey hatch) of " + std::to_string(T * T) +
                 " become -∞; each query sees at most W keys, so a KV cache keeps only the last W rows.");
      } else {
        out.text("mask_bool = triu(ones(" + std::to_string(T) + ", " + std::to_string(T) +
                 "), diagonal=1): " + std::to_string(masked_cells) + " of " + std::to_string(T * T) +
                 " cells per head (key after query, j > i) become -∞ (outlined), so softmax gives them weight 0.");
      }
      break;
    case lay::Step::Expand:
      if (f.src.repeat_wrong())
        out.text(
            ".repeat(1, group_size, 1, 1) tiles the K/V heads [kv 0, kv 1, …, kv 0, kv 1, …]: query head i gets K/V "
            "head i mod num_kv_groups, not its own group's (red outlines: the heads paired wrongly)." +
            std::string(
                f.dims.kv() == 1 || f.dims.group() == 1
                    ? " With " +
                          std::string(f.dims.kv() == 1 ? "one K/V head (multi-query)" : "one query head per K/V head") +
                          " both orders agree: this mistake changes nothing here."
                    : ""));
      else
        out.text(
            "repeat_interleave(group_size, dim=1) copies each K/V head group_size times in a row [kv 0, kv 0, …, kv 1, "
            "kv 1, …]: query head i reads K/V head i / group_size, the group it was trained with.");
      break;
    case lay::Step::Dropout:
      if (tr.dropout_applied()) {
        std::int64_t dropped = 0, n = 0;
        for (int h = 0; h < tr.heads; ++h)
          for (int i = 0; i < T; ++i)
            for (int j = 0; j < T; ++j) {
              if (tr.masked(i, j)) continue;
              ++n;
              dropped += tr.kept(f.b, h, i, j) ? 0 : 1;
            }
        out.text("p = " + fmt("%.2f", tr.config.dropout) + ": " + std::to_string(dropped) + " of " + std::to_string(n) +
                 " unmasked weights dropped (empty cells); survivors × 1/(1 − p) = " +
                 fmt("%.4f", 1.0 / (1.0 - tr.config.dropout)) + ".");
      } else {
        out.text(std::string("No dropout drawn (") + (tr.config.training ? "p = 0" : "eval mode") +
                 "): the weights pass through unchanged. Set dropout in the model panel to see cells disappear.");
      }
      break;
    case lay::Step::Merge:
      if (f.src.wrong()) {
        out.text(
            "Common mistake: reshape (b, h, T, hd) → (b, T, h·hd) without the transpose back. Row 0 then holds head 0 "
            "of tokens 0, 1, …: tokens are scrambled across heads. Red outlines: cells that differ from the correct "
            "merge.");
      } else {
        out.text(
            "view(b, num_tokens, d_out): each token's h blocks of head_dim are laid side by side; column j = "
            "head·head_dim + d.");
      }
      break;
    case lay::Step::Concat:
      out.text("The wrapper concatenates the heads' outputs along the last dim: no view or transpose is needed.");
      break;
    default: break;
  }
}

// A scores cell: the dot product of its query and key rows, and which K/V head gqa paired.
void inspect_scores(const Frame& f, lay::Step st, const lay::Cell& c, Inspection& out) {
  const Trace& tr = f.tr;
  const std::int64_t head = c.block, i = c.row, j = c.col, hd = tr.head_dim;
  std::vector<float> q(static_cast<std::size_t>(hd)), kk(static_cast<std::size_t>(hd));
  const Tensor& kt = k_read(f, st);
  const Tensor& qt = q_read(f);
  for (std::int64_t d = 0; d < hd; ++d) {
    q[static_cast<std::size_t>(d)] = qt.at({f.b, head, i, d});
    kk[static_cast<std::size_t>(d)] = kt.at({f.b, head, j, d});
  }
  double sum = 0;
  const std::string terms = dot_terms(q, kk, sum);
  out.text("= q" + lay::index_string({f.b, head, i}).insert(lay::index_string({f.b, head, i}).size() - 1, ", :") +
           " · k" + lay::index_string({f.b, head, j}).insert(lay::index_string({f.b, head, j}).size() - 1, ", :") +
           " = " + terms + " = " + num(static_cast<float>(sum)));
  out.text("Row " + std::to_string(i) + " of q (query " + token_name(f, i) + ") times column " + std::to_string(j) +
           " of kᵀ (key " + token_name(f, j) + "), inside head " + std::to_string(head) + " only.");
  if (tr.config.variant == Variant::Gqa) {
    const int g = kv_read(f.src, st, static_cast<int>(head)),
              ok = lay::kv_head_read(f.dims, static_cast<int>(head), false);
    out.text("Query head " + std::to_string(head) + " reads K/V head " + std::to_string(g) +
             (g == ok
                  ? " (head / group_size = " + std::to_string(head) + " / " + std::to_string(f.dims.group()) + ")"
                  : ", but its group's is K/V head " + std::to_string(ok) + " (.repeat pairs it wrongly)") +
             ".");
  }
}

// An output cell: its merged row times out_proj's (fused: linear_layer's) weight row, plus bias.
void inspect_out_proj(const Frame& f, const lay::Cell& c, Inspection& out) {
  const Trace& tr = f.tr;
  const char* name = tr.config.variant == Variant::FusedQkv ? "linear_layer" : "out_proj";
  try {
    if (!f.in.model) throw std::out_of_range(name);
    const Linear& lin = f.in.model->layer(name);
    std::vector<float> x(static_cast<std::size_t>(lin.in));
    // With the mistake on, out_proj reads the scrambled merge (and gives the wrong output shown).
    const Tensor& merged = f.src.wrong() ? f.src.mistake->merged : tr.context_merged;
    for (int i = 0; i < lin.in; ++i) x[static_cast<std::size_t>(i)] = merged.at({f.b, c.row, i});
    double sum = 0;
    const std::string terms = dot_terms(x, row_of(lin.weight, c.col, lin.in), sum);
    const float bias = lin.bias.empty() ? 0.0f : lin.bias[static_cast<std::size_t>(c.col)];
    out.text("= merged[" + std::to_string(f.b) + ", " + std::to_string(c.row) + ", :] · " + name + ".weight[" +
             std::to_string(c.col) + ", :] + bias = " + terms + " + " + num(bias) + " = " +
             num(static_cast<float>(sum + bias)));
    out.text(std::string(name) + " mixes all heads: every output column reads every head's columns.");
  } catch (const std::exception&) {
    out.text("(weights of this trace are not available)");
  }
}

Inspection inspect_step(const Frame& f, int k, std::int64_t flat, int softmax_head) {
  Inspection out;
  const lay::Step st = f.steps[static_cast<std::size_t>(k)];
  const lay::Layout l = lay::step_layout(st, f.dims);
  const Trace& tr = f.tr;
  const int T = tr.tokens;
  step_caption(f, st, out);
  if (flat < 0) {
    if (st == lay::Step::Softmax && T > 0)
      inspect_softmax_row(f, std::clamp(softmax_head, 0, tr.heads - 1), T - 1, out);
    else
      out.dim("Hover a cell to follow its element and see how it is computed; click to pin it.");
    return out;
  }
  const lay::Cell c = lay::cell_of(l, flat);
  const float value = step_value(f.src, st, flat);
  if (st != lay::Step::Project && st != lay::Step::Latent)  // the projection's first line already names the element
    out.text(tensor_label(f, st, c.pane) + index_text(f, l, c) + " = " + num(value));
  switch (st) {
    case lay::Step::Project:
    case lay::Step::Latent: inspect_project(f, st, l, c, value, out); break;
    case lay::Step::Scores: inspect_scores(f, st, c, out); break;
    case lay::Step::QkNorm:
    case lay::Step::Rope: inspect_norm_rope(f, st, c, out); break;
    case lay::Step::Expand: {
      const int g = kv_read(f.src, st, static_cast<int>(c.block));
      out.text(std::string(c.pane == 0 ? "keys" : "values") + " of query head " + std::to_string(c.block) +
               " = copy of K/V head " + std::to_string(g) + ": " + (c.pane == 0 ? "k" : "v") +
               lay::index_string({f.b, g, c.row, c.col}));
      break;
    }
    case lay::Step::Context: {
      const std::int64_t head = c.block, t = c.row, d = c.col;
      std::vector<float> wr(static_cast<std::size_t>(T)), vc(static_cast<std::size_t>(T));
      const Tensor& wt = tr.weights_after_dropout();
      const Tensor& vt = v_read(f);
      for (int j = 0; j < T; ++j) {
        wr[static_cast<std::size_t>(j)] = wt.at({f.b, head, t, j});
        vc[static_cast<std::size_t>(j)] = vt.at({f.b, head, j, d});
      }
      double sum = 0;
      const std::string terms = dot_terms(wr, vc, sum);
      out.text("= weights[" + std::to_string(f.b) + ", " + std::to_string(head) + ", " + std::to_string(t) +
               ", :] · v[" + std::to_string(f.b) + ", " + std::to_string(head) + ", :, " + std::to_string(d) +
               "] = " + terms + " = " + num(static_cast<float>(sum)));
      inspect_path(f, k, flat, out);
      break;
    }
    case lay::Step::OutProj: inspect_out_proj(f, c, out); break;
    default: break;
  }
  if (st == lay::Step::Mask) {
    const std::string key = "Key " + std::to_string(c.col), query = " query " + std::to_string(c.row);
    switch (tr.hidden_by(static_cast<int>(c.row), static_cast<int>(c.col))) {
      case MaskRule::Causal: out.text(key + " comes after" + query + ": masked to -inf."); break;
      case MaskRule::Window:
        out.text(key + " is i − j = " + std::to_string(c.row - c.col) + " ≥ W = " + std::to_string(f.dims.window) +
                 " tokens before" + query + ": outside the window, masked to -inf.");
        break;
      case MaskRule::Visible:
        out.text(key + " is not after" + query + (f.dims.window > 0 ? " and inside the window" : "") + ": kept.");
        break;
    }
  }
  if (st == lay::Step::Softmax) inspect_softmax_row(f, static_cast<int>(c.block), static_cast<int>(c.row), out);
  if (st == lay::Step::Dropout && tr.dropout_applied()) {
    const int i = static_cast<int>(c.row), j = static_cast<int>(c.col), h = static_cast<int>(c.block);
    if (tr.masked(i, j))
      out.text("Masked cell: weight 0 either way.");
    else if (tr.kept(f.b, h, i, j))
      out.text("Kept: " + num(tr.weights.at({f.b, h, i, j})) + " × " + fmt("%.4f", 1.0 / (1.0 - tr.config.dropout)) +
               " = " + num(value));
    else
      out.text("Dropped: " + num(tr.weights.at({f.b, h, i, j})) + " → 0");
  }
  if (st == lay::Step::View || st == lay::Step::Transpose || st == lay::Step::Chunk || st == lay::Step::TransposeBack ||
      st == lay::Step::Merge || st == lay::Step::Concat || st == lay::Step::Input)
    inspect_path(f, k, flat, out);
  return out;
}

}  // namespace walk

Inspection inspect(const WalkInput& in, int k, std::int64_t flat, int softmax_head) {
  const Options o;
  const walk::Frame f(in, o);
  return walk::inspect_step(f, k, flat, softmax_head);
}

}  // namespace mhaviz::figure
