// The walkthrough's table of values, names, colours and labels (walk_values.hpp).
#include "figure/walk_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mhaviz::figure {

namespace lay = mhaviz::layout;

// [SECTION] Numbers
std::string format_number(float v, int decimals) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
  // "-0.00": a negative value too small to show its sign; the cell reads 0.
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string format_value(float v) {
  const float a = std::fabs(v);
  return format_number(v, a >= 100.0f ? 0 : a >= 10.0f ? 1 : 2);
}

// [SECTION] The tensors a step reads
Mistake trace_mistake(const Trace& tr) {
  Mistake m;
  m.merged = mistaken_merge(tr);
  if (tr.config.variant == Variant::Gqa) m.repeat = mistaken_repeat(tr);
  if (!tr.q_rotated.empty())
    m.scores_without_rope =
        raw_scores(tr, tr.q_normed.empty() ? tr.q : tr.q_normed, tr.k_normed.empty() ? tr.k : tr.k_normed);
  return m;
}

Mistake make_mistake(const Model& model, const Trace& tr) {
  Mistake m = trace_mistake(tr);
  if (tr.config.variant == Variant::Wrapper) return m;  // the wrapper concatenates: no mistake to make
  // out_proj(merged) = merged · Wᵀ + b: the same Linear the forward applies to the correct merge
  // (the fused variant's is linear_layer).
  const Linear& op = model.layer(tr.config.variant == Variant::FusedQkv ? "linear_layer" : "out_proj");
  if (op.weight.empty() || op.in != tr.heads * tr.head_dim) return m;
  const std::int64_t rows = static_cast<std::int64_t>(tr.batch) * tr.tokens;
  m.output = Tensor({tr.batch, tr.tokens, op.out});
  for (std::int64_t r = 0; r < rows; ++r)
    for (int o = 0; o < op.out; ++o) {
      double sum = op.bias.empty() ? 0.0 : static_cast<double>(op.bias[static_cast<std::size_t>(o)]);
      for (int i = 0; i < op.in; ++i)
        sum +=
            static_cast<double>(m.merged.data[static_cast<std::size_t>(r * op.in + i)]) *
            static_cast<double>(
                op.weight[static_cast<std::size_t>(o) * static_cast<std::size_t>(op.in) + static_cast<std::size_t>(i)]);
      m.output.data[static_cast<std::size_t>(r * op.out + o)] = static_cast<float>(sum);
    }
  return m;
}

bool StepSource::wrong() const {
  return mistaken && mistake != nullptr && lay::mistake_kind(dims()) == lay::MistakeKind::Merge;
}

bool StepSource::repeat_wrong() const {
  return mistaken && mistake != nullptr && !mistake->repeat.scores.empty() &&
         lay::mistake_kind(dims()) == lay::MistakeKind::Repeat;
}

lay::Dims StepSource::dims() const {
  const Trace& t = *trace;
  return lay::dims_for(t.config, 1, t.tokens, t.d_in);
}

int kv_read(const StepSource& s, lay::Step st, int h) {
  const lay::Dims d = s.dims();
  if (d.variant != Variant::Gqa || h < 0) return -1;
  // The mistake's pairing holds from the expansion through the scores it makes.
  return lay::kv_head_read(d, h, s.repeat_wrong() && (st == lay::Step::Expand || st == lay::Step::Scores));
}

namespace {

float value_at(const Tensor& t, std::int64_t i) {
  return i >= 0 && i < t.numel() ? t.data[static_cast<std::size_t>(i)] : 0.0f;
}
const Tensor& projection(const Trace& tr, int p) { return p == 0 ? tr.queries : p == 1 ? tr.keys : tr.values; }
const Tensor& per_head(const Trace& tr, int p) { return p == 0 ? tr.q : p == 1 ? tr.k : tr.v; }
const Tensor& expanded(const StepSource& s, int p) {
  if (s.repeat_wrong()) return p == 0 ? s.mistake->repeat.k_expanded : s.mistake->repeat.v_expanded;
  return p == 0 ? s.trace->k_expanded : s.trace->v_expanded;
}

}  // namespace

float step_value(const StepSource& s, lay::Step st, std::int64_t flat) {
  const Trace& tr = *s.trace;
  const lay::Dims dims = s.dims();
  const lay::Layout l = lay::step_layout(st, dims);
  const std::int64_t per = l.pane_numel();
  const int pane = static_cast<int>(flat / per);
  const std::int64_t r = flat % per;
  const std::int64_t base = static_cast<std::int64_t>(s.batch) * per;
  const std::int64_t off = base + r;
  const Variant v = tr.config.variant;
  const int part = pane + lay::first_part(st, dims);  // q, k or v
  switch (st) {
    case lay::Step::Input: return value_at(tr.input, off);
    case lay::Step::Project:
      if (v == Variant::Wrapper) return value_at(per_head(tr, part), off);
      if (v == Variant::FusedQkv) return value_at(tr.qkv, off);
      return value_at(projection(tr, part), off);
    case lay::Step::View: return v == Variant::FusedQkv ? value_at(tr.qkv, off) : value_at(projection(tr, part), off);
    case lay::Step::Transpose:
      if (v == Variant::FusedQkv)
        return value_at(tr.qkv, base + lay::move_index_inverse(lay::Move::Transpose,
                                                               lay::step_layout(lay::Step::View, dims), l, r));
      return value_at(per_head(tr, part), off);
    case lay::Step::Chunk: return value_at(per_head(tr, part), off);
    case lay::Step::Expand: return value_at(expanded(s, pane), off);
    case lay::Step::QkNorm: return value_at(tr.q_normed, off);
    case lay::Step::Latent: return value_at(tr.latent, off);
    case lay::Step::Rope: return value_at(tr.q_rotated, off);
    case lay::Step::Scores: return value_at(s.repeat_wrong() ? s.mistake->repeat.scores : tr.scores, off);
    case lay::Step::Mask: {
      const lay::Cell c = lay::cell_of(l, flat);
      if (tr.masked(static_cast<int>(c.row), static_cast<int>(c.col))) return -std::numeric_limits<float>::infinity();
      return value_at(tr.scores, off);
    }
    case lay::Step::Softmax: return value_at(tr.weights, off);
    case lay::Step::Dropout: return value_at(tr.weights_after_dropout(), off);
    case lay::Step::Context: return value_at(tr.context, off);
    case lay::Step::TransposeBack:
      return value_at(tr.context, base + lay::move_index_inverse(lay::Move::Transpose,
                                                                 lay::step_layout(lay::Step::Context, dims), l, r));
    case lay::Step::Merge: return value_at(s.wrong() ? s.mistake->merged : tr.context_merged, off);
    case lay::Step::Concat: return value_at(tr.context_merged, off);
    case lay::Step::OutProj:
      return value_at(s.wrong() && !s.mistake->output.empty() ? s.mistake->output : tr.output, off);
  }
  return 0.0f;
}

int step_state(const StepSource& s, lay::Step st, std::int64_t flat) {
  const Trace& tr = *s.trace;
  if (st != lay::Step::Mask && st != lay::Step::Dropout) return 0;
  const lay::Cell c = lay::cell_of(lay::step_layout(st, s.dims()), flat);
  const int i = static_cast<int>(c.row), j = static_cast<int>(c.col), head = static_cast<int>(c.block);
  if (st == lay::Step::Mask && tr.masked(i, j)) return tr.hidden_by(i, j) == MaskRule::Window ? 3 : 1;
  if (st == lay::Step::Dropout && tr.dropout_applied() && !tr.masked(i, j) && !tr.kept(s.batch, head, i, j)) return 2;
  return 0;
}

// [SECTION] Names
int pane_count(Variant v, lay::Step st) {
  switch (st) {
    case lay::Step::Project:
    case lay::Step::View:
    case lay::Step::Transpose: return v == Variant::FusedQkv ? 1 : v == Variant::Gqa ? 2 : 3;
    case lay::Step::Chunk: return 3;
    case lay::Step::Expand: return 2;
    default: return 1;
  }
}

std::string pane_name(Variant v, lay::Step st, int pane, bool mistaken) {
  static constexpr const char* kProj[3] = {"queries", "keys", "values"};
  static constexpr const char* kWrap[3] = {"Q_i", "K_i", "V_i"};
  static constexpr const char* kHead[3] = {"q", "k", "v"};
  lay::Dims d;
  d.variant = v;
  const auto p = static_cast<std::size_t>(std::clamp(pane + lay::first_part(st, d), 0, 2));
  const bool fused = v == Variant::FusedQkv;
  const bool merge_mistake = mistaken && lay::mistake_kind(d) == lay::MistakeKind::Merge;
  switch (st) {
    case lay::Step::Input: return "X";
    case lay::Step::Project: return fused ? "qkv" : v == Variant::Wrapper ? kWrap[p] : kProj[p];
    case lay::Step::View: return fused ? "qkv.view" : std::string(kProj[p]) + ".view";
    case lay::Step::Transpose: return fused ? "qkv.permute" : kHead[p];
    case lay::Step::Chunk: return kHead[p];
    case lay::Step::Expand:
      // (the header's code line says it is the mistake; the titles stay short enough for the cells)
      return std::string(pane == 0 ? "keys" : "values") + (mistaken ? ".repeat" : ".repeat_interleave");
    case lay::Step::QkNorm: return "q_normed";
    case lay::Step::Latent: return "latent";
    case lay::Step::Rope: return "q_rotated";
    case lay::Step::Scores: return mistaken && v == Variant::Gqa ? "attn_scores (mis-paired)" : "attn_scores";
    case lay::Step::Mask: return "masked scores";
    case lay::Step::Softmax: return "attn_weights";
    case lay::Step::Dropout: return "attn_weights after dropout";
    case lay::Step::Context: return "context_vec";
    case lay::Step::TransposeBack: return "context_vec.transpose(1, 2)";
    case lay::Step::Merge: return merge_mistake ? "plain reshape (the mistake)" : "context_vec";
    case lay::Step::Concat: return "torch.cat(..., dim=-1)";
    case lay::Step::OutProj: return merge_mistake ? "output (of the mistake)" : "output";
  }
  return "";
}

// [SECTION] Colours
Tint step_tint(lay::Step st) {
  switch (st) {
    case lay::Step::Input:
    case lay::Step::Latent:
    case lay::Step::OutProj: return Tint::Neutral;
    case lay::Step::Scores:
    case lay::Step::Mask: return Tint::Diverging;
    case lay::Step::Softmax:
    case lay::Step::Dropout: return Tint::Weights;
    default: return Tint::Head;
  }
}

Rgb head_rgb(int head) {
  static constexpr unsigned char kHead[10][3] = {{78, 121, 167},  {242, 142, 43},  {89, 161, 79},  {225, 87, 89},
                                                 {176, 122, 161}, {118, 183, 178}, {237, 201, 72}, {255, 157, 167},
                                                 {156, 117, 95},  {186, 176, 172}};
  const auto* c = kHead[static_cast<std::size_t>(((head % 10) + 10) % 10)];
  return {c[0] / 255.0f, c[1] / 255.0f, c[2] / 255.0f};
}

Rgb group_rgb(int head, int group, bool dark) {
  if (group <= 1) return head_rgb(head);
  const float t = 0.5f * static_cast<float>(head % group) / static_cast<float>(group);
  return mix_rgb(head_rgb(head / group), dark ? Rgb{0.1f, 0.1f, 0.1f} : Rgb{1, 1, 1}, t);
}

Rgb neutral_rgb(bool dark) {
  return dark ? Rgb{84 / 255.0f, 97 / 255.0f, 117 / 255.0f} : Rgb{158 / 255.0f, 173 / 255.0f, 199 / 255.0f};
}

Rgb mix_rgb(Rgb a, Rgb b, float t) { return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; }

float luminance(Rgb c) { return 0.2126f * c.r + 0.7152f * c.g + 0.0722f * c.b; }

Rgb cell_rgb(Tint t, int head, int part, float value, float vmax, bool dark, Rgb bg) {
  const Rgb hue = head >= 0 ? head_rgb(head) : Rgb{};
  return cell_rgb_hue(t, head >= 0 ? &hue : nullptr, part, value, vmax, dark, bg);
}

Rgb cell_rgb_hue(Tint t, const Rgb* hue, int part, float value, float vmax, bool dark, Rgb bg) {
  const float m = std::max(1e-12f, vmax);
  switch (t) {
    case Tint::Neutral: return neutral_rgb(dark);
    case Tint::Diverging:
      // -vmax at 0, zero at the middle, +vmax at 1: a sign reads as a hue, not as a brightness.
      return colormap_eval(Colormap::Diverging,
                           std::isfinite(value) ? std::clamp(0.5f + 0.5f * value / m, 0.0f, 1.0f) : 0.5f);
    case Tint::Weights: {
      const float a = std::isfinite(value) ? std::clamp(std::fabs(value) / m, 0.0f, 1.0f) : 0.0f;
      const Rgb base = hue ? *hue : Rgb{0.5f, 0.5f, 0.55f};
      return mix_rgb(bg, base, 0.18f + 0.82f * a);
    }
    case Tint::Head: break;
  }
  Rgb c = hue ? *hue : Rgb{0.5f, 0.5f, 0.55f};
  if (part > 0) c = mix_rgb(c, dark ? Rgb{0.1f, 0.1f, 0.1f} : Rgb{1, 1, 1}, part == 1 ? 0.28f : 0.5f);
  return c;
}

std::vector<Swatch> diverging_legend(float vmax) {
  std::vector<Swatch> out;
  for (const float f : {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f}) {
    const float v = f * vmax;
    out.push_back({cell_rgb(Tint::Diverging, -1, -1, v, vmax, false, Rgb{1, 1, 1}), format_value(v)});
  }
  return out;
}

// [SECTION] Labels
std::vector<std::string> block_labels(lay::Kind kind, std::int64_t count, const std::vector<std::string>& tokens,
                                      float width, const Measure& m) {
  const auto token = [&tokens](std::int64_t i) {
    return i >= 0 && i < static_cast<std::int64_t>(tokens.size()) ? tokens[static_cast<std::size_t>(i)] : std::string();
  };
  const int forms = kind == lay::Kind::HeadBlocks ? 2 : kind == lay::Kind::TokenBlocks ? 4 : 0;
  const auto label = [&](int form, std::int64_t i) -> std::string {
    const std::string n = std::to_string(i);
    if (kind == lay::Kind::HeadBlocks) return form == 0 ? "head " + n : "h" + n;
    switch (form) {
      case 0: return "token " + n + ": " + token(i);
      case 1: return n + ": " + token(i);
      case 2: return token(i);
      default: return "t" + n;
    }
  };
  std::vector<std::string> out(static_cast<std::size_t>(std::max<std::int64_t>(0, count)));
  for (int form = 0; form < forms; ++form) {
    bool fits = true;
    for (std::int64_t i = 0; i < count && fits; ++i) fits = m(label(form, i)) <= width;
    if (!fits) continue;
    for (std::int64_t i = 0; i < count; ++i) out[static_cast<std::size_t>(i)] = label(form, i);
    break;
  }
  return out;
}

int key_label_lines(float widest, float cell, float gap) {
  for (int n = 1; n <= kMaxKeyLines; ++n)
    if (widest <= static_cast<float>(n) * cell - std::max(gap, 2.0f * static_cast<float>(n))) return n;
  return kMaxKeyLines + 1;
}

ColumnLabels column_labels(const std::vector<std::string>& tokens, float cell, const Measure& m) {
  ColumnLabels out;
  const std::size_t n = tokens.size();
  float widest = 0.0f;
  for (const std::string& t : tokens) widest = std::max(widest, m(t));
  out.lines = key_label_lines(widest, cell, m(" "));
  if (out.lines <= kMaxKeyLines) {
    out.text = tokens;
    return out;
  }
  out.lines = 1;
  out.text.resize(n);
  for (std::size_t j = 0; j < n; ++j) out.text[j] = std::to_string(j);
  if (m(std::to_string(n > 0 ? n - 1 : 0)) > cell - 2.0f) {
    for (auto& s : out.text) s.clear();
    return out;
  }
  out.note = "keys by position";
  return out;
}

}  // namespace mhaviz::figure
