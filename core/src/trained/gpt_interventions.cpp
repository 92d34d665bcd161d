// Ablation, patching, the logit lens and norm-weighted attention (gpt_interventions.hpp) on
// the blocks of gpt_forward.cpp (gpt_block.hpp).
//
// [SECTION] checking an intervention
// [SECTION] the intervened forward
// [SECTION] sweeps
// [SECTION] logit lens
// [SECTION] norm-weighted attention
// [SECTION] parsing
#include "mhaviz/gpt_interventions.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "gpt_block.hpp"

namespace mhaviz {
namespace {

std::string head_name(const HeadIndex& h) { return std::to_string(h.layer) + "." + std::to_string(h.head); }

float* head_rows(Tensor& t, int h) { return t.ptr() + static_cast<std::int64_t>(h) * t.shape[2] * t.shape[3]; }
const float* head_rows(const Tensor& t, int h) {
  return t.ptr() + static_cast<std::int64_t>(h) * t.shape[2] * t.shape[3];
}

void check_token(const GptConfig& c, int id, const char* field) {
  if (id < 0 || id >= c.vocab_size)
    throw std::invalid_argument(std::string(field) + ": token id " + std::to_string(id) + " is not in [0, " +
                                std::to_string(c.vocab_size) + ")");
}

}  // namespace

// [SECTION] checking an intervention

int Intervention::first_layer(int n_layer) const {
  int first = n_layer;
  for (const HeadIndex& h : ablate) first = std::min(first, h.layer);
  for (const HeadIndex& h : patch_heads) first = std::min(first, h.layer);
  for (const ResidIndex& r : patch_resid) first = std::min(first, r.layer);
  return first;
}

void check_intervention(const GptConfig& c, const GptTrace& base, const Intervention& iv) {
  auto check_head = [&](const HeadIndex& h, const char* field) {
    if (h.layer < 0 || h.layer >= c.n_layer || h.head < 0 || h.head >= c.n_head)
      throw std::invalid_argument(std::string(field) + ": head " + head_name(h) + " is not in the model's " +
                                  std::to_string(c.n_layer) + " layers × " + std::to_string(c.n_head) + " heads");
  };
  for (const HeadIndex& h : iv.ablate) check_head(h, "ablate");
  for (const HeadIndex& h : iv.patch_heads) check_head(h, "patch");
  for (const ResidIndex& r : iv.patch_resid)
    if (r.layer < 0 || r.layer >= c.n_layer || r.position < 0 || r.position >= base.tokens())
      throw std::invalid_argument("patch: residual " + std::to_string(r.layer) + "@" + std::to_string(r.position) +
                                  " is not in " + std::to_string(c.n_layer) + " layers × " +
                                  std::to_string(base.tokens()) + " positions");
  if (iv.patch_heads.empty() && iv.patch_resid.empty()) return;
  if (iv.source == nullptr) throw std::invalid_argument("patch: no run to take the patches from");
  if (iv.source->tokens() != base.tokens() || iv.source->layers.size() != base.layers.size())
    throw std::invalid_argument("patch: the source run has " + std::to_string(iv.source->tokens()) +
                                " tokens, the patched one " + std::to_string(base.tokens()));
}

// [SECTION] the intervened forward

namespace {

void shape_as(Tensor& t, const Shape& s) {
  if (t.shape != s) t = Tensor(s);
}

// The edits of one layer on its context (1, H, T, hd): ablations, then patches.
void edit_context(const Intervention& iv, int layer, GptLayerTrace& L) {
  const std::int64_t T = L.context.shape[2], hd = L.context.shape[3];
  for (const HeadIndex& h : iv.ablate) {
    if (h.layer != layer) continue;
    float* ctx = head_rows(L.context, h.head);
    if (iv.mode == AblationMode::Zero) {
      std::fill(ctx, ctx + T * hd, 0.0f);
      continue;
    }
    for (std::int64_t d = 0; d < hd; ++d) {
      double sum = 0.0;
      for (std::int64_t i = 0; i < T; ++i) sum += ctx[i * hd + d];
      const auto mean = static_cast<float>(sum / static_cast<double>(T));
      for (std::int64_t i = 0; i < T; ++i) ctx[i * hd + d] = mean;
    }
  }
  for (const HeadIndex& h : iv.patch_heads)
    if (h.layer == layer) {
      const float* src = head_rows(iv.source->layers[static_cast<std::size_t>(layer)].context, h.head);
      std::copy(src, src + T * hd, head_rows(L.context, h.head));
    }
}

// Layers [from, L) of out recomputed over every row from base's residual before `from`, with
// iv's edits; then the final norm and the last logits. out's layers before `from` untouched.
void run_from(const GptModel& m, const GptTrace& base, const Intervention& iv, int from, GptTrace& out) {
  const GptConfig& c = m.config;
  const int T = base.tokens(), C = c.n_embd, H = c.n_head, hd = c.head_dim();
  const bool kernel = base.backend != Backend::OpenBlas;
  out.model = nullptr;
  out.backend = base.backend;
  out.ids = base.ids;
  out.recomputed_from = 0;
  out.layers.resize(base.layers.size());
  const float* in = from == 0 ? base.embeddings.ptr() : base.layers[static_cast<std::size_t>(from - 1)].resid.ptr();
  for (int l = from; l < c.n_layer; ++l) {
    GptLayerTrace& L = out.layers[static_cast<std::size_t>(l)];
    L.mask = gpt_attention_mask(c);
    for (Tensor* t : {&L.x, &L.resid_mid, &L.resid}) shape_as(*t, {1, T, C});
    for (Tensor* t : {&L.q, &L.k, &L.v, &L.context}) shape_as(*t, {1, H, T, hd});
    shape_as(L.weights, {1, H, T, T});
    const detail::ContextEdit edit = [&iv, l](GptLayerTrace& lt) { edit_context(iv, l, lt); };
    detail::gpt_block_rows(m, m.blocks[static_cast<std::size_t>(l)], in, L, out, 0, T, kernel, &edit);
    for (const ResidIndex& r : iv.patch_resid)
      if (r.layer == l) {
        const float* src = iv.source->layers[static_cast<std::size_t>(l)].resid.ptr() + std::int64_t{r.position} * C;
        std::copy(src, src + C, L.resid.ptr() + std::int64_t{r.position} * C);
      }
    in = L.resid.ptr();
  }
  shape_as(out.final_norm, {1, T, C});
  detail::gpt_final_norm_rows(m, in, out.final_norm.ptr(), T);
  out.logits_last.shape = {c.vocab_size};
  out.logits_last.data = gpt_logits(m, out, T - 1);
}

}  // namespace

void gpt_forward_intervened(const GptModel& m, const GptTrace& base, const Intervention& iv, GptTrace& out) {
  if (&out == &base) throw std::invalid_argument("gpt_forward_intervened: out is the run it edits");
  if (base.tokens() == 0 || base.layers.size() != m.blocks.size())
    throw std::invalid_argument("gpt_forward_intervened: the run to edit is not a forward of this model");
  check_intervention(m.config, base, iv);
  const int from = iv.first_layer(m.config.n_layer);
  out.embeddings = base.embeddings;
  out.layers.resize(base.layers.size());
  for (int l = 0; l < from; ++l) out.layers[static_cast<std::size_t>(l)] = base.layers[static_cast<std::size_t>(l)];
  run_from(m, base, iv, from, out);
}

GptTrace gpt_forward_intervened(const GptModel& model, const GptTrace& base, const Intervention& iv) {
  GptTrace out;
  gpt_forward_intervened(model, base, iv, out);
  return out;
}

// [SECTION] sweeps

double TokenMetric::of(std::span<const float> logits) const {
  const auto at = [&](int id) { return static_cast<double>(logits[static_cast<std::size_t>(id)]); };
  if (vs >= 0) return at(target) - at(vs);
  // log softmax in double: log p = x_t − max − log Σ exp(x − max).
  const double mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  return at(target) - mx - std::log(sum);
}

namespace {

void check_metric(const GptConfig& c, const TokenMetric& metric) {
  check_token(c, metric.target, "target");
  if (metric.vs >= 0) check_token(c, metric.vs, "vs");
}

// Runs one intervention per grid cell (make(r, c) gives it) from base into a scratch trace;
// value(metric of the run) fills the cell. nullopt when progress says stop.
template <typename Make, typename Value>
std::optional<InterventionGrid> sweep(const GptModel& m, const GptTrace& base, int rows, int cols, const Make& make,
                                      const Value& value, const SweepProgress& progress) {
  InterventionGrid g;
  g.rows = rows;
  g.cols = cols;
  g.values.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  GptTrace scratch;
  for (int r = 0; r < rows; ++r)
    for (int col = 0; col < cols; ++col) {
      const Intervention iv = make(r, col);
      run_from(m, base, iv, iv.first_layer(m.config.n_layer), scratch);
      g.values[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + col] =
          static_cast<float>(value(scratch.logits_last.data));
      if (progress && !progress(r * cols + col + 1, rows * cols)) return std::nullopt;
    }
  return g;
}

}  // namespace

std::optional<InterventionGrid> ablation_sweep(const GptModel& m, const GptTrace& clean, const TokenMetric& metric,
                                               AblationMode mode, const SweepProgress& progress) {
  check_metric(m.config, metric);
  const double base = metric.of(clean.logits_last.data);
  auto make = [mode](int l, int h) {
    Intervention iv;
    iv.ablate = {{l, h}};
    iv.mode = mode;
    return iv;
  };
  auto value = [&](const std::vector<float>& logits) { return metric.of(logits) - base; };
  auto g = sweep(m, clean, m.config.n_layer, m.config.n_head, make, value, progress);
  if (g) g->clean = g->corrupt = base;
  return g;
}

std::optional<InterventionGrid> patch_sweep(const GptModel& m, const GptTrace& clean, const GptTrace& corrupt,
                                            const TokenMetric& metric, PatchPer per, const SweepProgress& progress) {
  check_metric(m.config, metric);
  if (clean.tokens() != corrupt.tokens())
    throw std::invalid_argument("corrupt: " + std::to_string(corrupt.tokens()) + " tokens, the clean text has " +
                                std::to_string(clean.tokens()) + " (patching needs equally many)");
  const double good = metric.of(clean.logits_last.data), bad = metric.of(corrupt.logits_last.data);
  if (good == bad)
    throw std::invalid_argument("target: the clean and corrupted texts give the same metric (" + std::to_string(good) +
                                "), so there is nothing to restore");
  auto make = [&](int l, int i) {
    Intervention iv;
    iv.source = &clean;
    if (per == PatchPer::Head)
      iv.patch_heads = {{l, i}};
    else
      iv.patch_resid = {{l, i}};
    return iv;
  };
  auto value = [&](const std::vector<float>& logits) { return (metric.of(logits) - bad) / (good - bad); };
  const int cols = per == PatchPer::Head ? m.config.n_head : clean.tokens();
  auto g = sweep(m, corrupt, m.config.n_layer, cols, make, value, progress);
  if (g) {
    g->clean = good;
    g->corrupt = bad;
  }
  return g;
}

// [SECTION] logit lens

std::vector<float> lens_logits(const GptModel& m, const GptTrace& tr, int layer) {
  const GptConfig& c = m.config;
  if (layer < 0 || layer >= static_cast<int>(tr.layers.size()))
    throw std::out_of_range("lens: layer " + std::to_string(layer) + " is not in [0, " +
                            std::to_string(tr.layers.size()) + ")");
  const int T = tr.tokens();
  std::vector<float> normed(static_cast<std::size_t>(T) * static_cast<std::size_t>(c.n_embd));
  detail::gpt_final_norm_rows(m, tr.layers[static_cast<std::size_t>(layer)].resid.ptr(), normed.data(), T);
  std::vector<float> logits(static_cast<std::size_t>(T) * static_cast<std::size_t>(c.vocab_size));
  detail::gpt_head_rows(m, normed.data(), T, logits.data(), tr.backend);
  return logits;
}

LogitLens logit_lens(const GptModel& m, const GptTrace& tr, int k, int target) {
  const GptConfig& c = m.config;
  if (k < 1 || k > c.vocab_size)
    throw std::invalid_argument("top: " + std::to_string(k) + " is not in [1, " + std::to_string(c.vocab_size) + "]");
  if (target >= 0) check_token(c, target, "target");
  LogitLens lens;
  lens.layers = c.n_layer;
  lens.tokens = tr.tokens();
  lens.k = k;
  lens.target = target;
  const auto V = static_cast<std::size_t>(c.vocab_size);
  for (int l = 0; l < c.n_layer; ++l) {
    const std::vector<float> logits = lens_logits(m, tr, l);
    for (int pos = 0; pos < lens.tokens; ++pos) {
      const std::vector<float> row(logits.begin() + static_cast<std::ptrdiff_t>(pos * V),
                                   logits.begin() + static_cast<std::ptrdiff_t>((pos + 1) * V));
      const NextToken next = next_token_from_logits(row, k);
      lens.top.insert(lens.top.end(), next.top.begin(), next.top.end());
      if (target < 0) continue;
      // Rank as next_token orders: higher probability first, ties by lower id.
      const float pt = next.probs[static_cast<std::size_t>(target)];
      int rank = 0;
      for (std::size_t i = 0; i < V; ++i)
        rank += next.probs[i] > pt || (next.probs[i] == pt && static_cast<int>(i) < target);
      lens.rank.push_back(rank);
      lens.target_p.push_back(pt);
    }
  }
  return lens;
}

// [SECTION] norm-weighted attention

Tensor norm_weighted_attention(const GptModel& m, const GptTrace& tr, int layer) {
  const GptConfig& c = m.config;
  if (layer < 0 || layer >= static_cast<int>(tr.layers.size()))
    throw std::out_of_range("norm-weighted: layer " + std::to_string(layer) + " is not in [0, " +
                            std::to_string(tr.layers.size()) + ")");
  const GptLayerTrace& L = tr.layers[static_cast<std::size_t>(layer)];
  const int T = tr.tokens(), C = c.n_embd, H = c.n_head, hd = c.head_dim();
  const std::vector<float> wo = gpt_linear_weight(m.blocks[static_cast<std::size_t>(layer)].proj);  // [C, C]
  Tensor out = L.weights;
  std::vector<double> norms(static_cast<std::size_t>(T));
  for (int h = 0; h < H; ++h) {
    const float* v = head_rows(L.v, h);
    for (int j = 0; j < T; ++j) {
      double sq = 0.0;
      for (int o = 0; o < C; ++o) {
        const float* w = wo.data() + static_cast<std::int64_t>(o) * C + static_cast<std::int64_t>(h) * hd;
        double f = 0.0;
        for (int d = 0; d < hd; ++d) f += static_cast<double>(w[d]) * v[static_cast<std::int64_t>(j) * hd + d];
        sq += f * f;
      }
      norms[static_cast<std::size_t>(j)] = std::sqrt(sq);
    }
    float* a = head_rows(out, h);
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) {
        float& x = a[static_cast<std::int64_t>(i) * T + j];
        x = static_cast<float>(x * norms[static_cast<std::size_t>(j)]);
      }
  }
  return out;
}

// [SECTION] parsing

Intervention parse_ablation(const std::string& spec) {
  Intervention iv;
  std::string heads = spec;
  if (const auto colon = spec.rfind(':'); colon != std::string::npos) {
    const std::string mode = spec.substr(colon + 1);
    if (mode == "mean")
      iv.mode = AblationMode::Mean;
    else if (mode != "zero")
      throw std::invalid_argument("ablate: mode \"" + mode + "\" is not zero or mean");
    heads = spec.substr(0, colon);
  }
  std::size_t at = 0;
  while (at <= heads.size()) {
    const std::size_t end = std::min(heads.find(',', at), heads.size());
    const std::string part = heads.substr(at, end - at);
    const std::size_t dot = part.find('.');
    auto number = [&](const std::string& s) {
      if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        throw std::invalid_argument("ablate: \"" + part + "\" is not LAYER.HEAD (e.g. 5.1)");
      return std::stoi(s);
    };
    if (dot == std::string::npos) number("");
    iv.ablate.push_back({number(part.substr(0, dot)), number(part.substr(dot + 1))});
    at = end + 1;
  }
  return iv;
}

}  // namespace mhaviz
