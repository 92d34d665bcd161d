// The attention variants side by side (variant_compare.hpp): real forwards for the
// equivalences, forward_cost and kv_memory_table for the costs.
#include "mhaviz/variant_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "mhaviz/kv_memory.hpp"

namespace mhaviz {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return std::numeric_limits<double>::infinity();
  double m = 0.0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a.data[i]) - static_cast<double>(b.data[i]));
    if (!(d <= m)) m = d;  // a NaN difference wins: it is no equality
  }
  return m;
}

namespace {

// [SECTION] The modules compared

// The MHA every variant is measured against: the session's weight-split module, or one made with
// its heads, head_dim, seed and options (the split variants' options carry over; a wrapper has none).
Model base_mha(const Model& model, std::string& note) {
  const ModelConfig& s = model.config;
  Model m;
  if (s.variant == Variant::WeightSplit) {
    m = model;
    note = "MHA: this session's weight-split MultiHeadAttention, in eval mode";
  } else if (s.variant == Variant::FusedQkv) {
    m = weight_split_from_fused(model);
    note = "MHA: this session's fused_qkv module as weight split (qkv_layer's rows regrouped), in eval mode";
  } else {
    ModelConfig c = s;
    c.variant = Variant::WeightSplit;
    c.d_out = s.num_heads * head_dim(s);
    c.num_kv_groups = 0;
    c.latent_dim = 0;
    c.weights = nullptr;
    m = build_model(c, model.d_in);
    note = "MHA: a weight-split MultiHeadAttention with this session's " + std::to_string(s.num_heads) +
           " heads of head_dim " + std::to_string(head_dim(s)) + ", seed " + std::to_string(s.seed) +
           " and options, in eval mode (the session is " + std::string(variant_name(s.variant)) +
           ": its weights are not the session's)";
  }
  m.config.training = false;
  return m;
}

// The same module with one option changed: RoPE and the window have no parameters.
Model with_options(const Model& m, int window, double rope_base) {
  Model o = m;
  o.config.sliding_window = window;
  o.config.rope_base = rope_base;
  return o;
}

// GroupedQueryAttention with `groups` K/V heads made from an MHA's weights: W_query and out_proj
// copied, each K/V head the mean of its group's MHA heads (Ainslie et al. 2023's mean-pooling;
// a group of one is the head itself, bit for bit). GQA's out_proj has no bias: the MHA's must
// be zero for the two to be comparable.
Model gqa_from_mha(const Model& mha, int groups) {
  const ModelConfig& c = mha.config;
  const int h = c.num_heads, hd = head_dim(c), per = h / groups;
  ModelConfig g = c;
  g.variant = Variant::Gqa;
  g.num_kv_groups = groups;
  g.weights = nullptr;
  Model m = build_model(g, mha.d_in);  // GroupedQueryAttention's layers, names and shapes
  m.config.training = false;
  m.layer("W_query").weight = mha.layer("W_query").weight;
  m.layer("W_query").bias = mha.layer("W_query").bias;
  m.layer("out_proj").weight = mha.layer("out_proj").weight;
  for (const char* name : {"W_key", "W_value"}) {
    const Linear& src = mha.layer(name);
    Linear& dst = m.layer(name);
    const std::size_t din = static_cast<std::size_t>(src.in);
    for (int gi = 0; gi < groups; ++gi)
      for (int d = 0; d < hd; ++d) {
        const std::size_t row = static_cast<std::size_t>(gi * hd + d);
        for (std::size_t k = 0; k <= din; ++k) {  // k == din: the bias
          if (k == din && src.bias.empty()) break;
          double sum = 0.0;
          for (int p = 0; p < per; ++p) {
            const std::size_t r = static_cast<std::size_t>((gi * per + p) * hd + d);
            sum += k < din ? src.weight[r * din + k] : src.bias[r];
          }
          (k < din ? dst.weight[row * din + k] : dst.bias[row]) = static_cast<float>(sum / per);
        }
      }
  }
  m.q_norm = mha.q_norm;
  m.k_norm = mha.k_norm;
  prepare_forward(m);
  return m;
}

// [SECTION] Equivalences

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The numbers in words: equal or not, and by how much.
void judge(Equivalence& e) {
  double worst = 0.0;
  for (const auto& d : e.diffs) worst = std::isnan(d.second) ? d.second : std::max(worst, d.second);
  e.equal = worst <= kEquivalenceTolerance;
  if (worst == 0.0) {
    e.verdict = "bit-equal";
  } else if (e.equal) {
    e.verdict = "equal within " + fmt("%.1e", worst) + " (float32 rounding)";
  } else {
    e.verdict = "differ:";
    for (const auto& [name, d] : e.diffs)
      if (!(d <= kEquivalenceTolerance)) e.verdict += " " + name + " by up to " + fmt("%.3g", d) + ",";
    e.verdict.pop_back();
  }
}

Equivalence compare_pair(std::string claim, std::string how, bool expected, const Trace& a, const Trace& b,
                         bool scores) {
  Equivalence e;
  e.claim = std::move(claim);
  e.how = std::move(how);
  e.expected_equal = expected;
  if (scores) e.diffs.push_back({"scores", max_abs_diff(a.scores, b.scores)});
  e.diffs.push_back({"attention weights", max_abs_diff(a.weights, b.weights)});
  e.diffs.push_back({"output", max_abs_diff(a.output, b.output)});
  judge(e);
  return e;
}

// (b, T, d) -> (b, 1, d): each sequence's first token.
Tensor first_token(const Tensor& x) {
  const std::int64_t b = x.shape[0], T = x.shape[1], d = x.shape[2];
  Tensor one({b, 1, d});
  for (std::int64_t i = 0; i < b; ++i)
    std::copy_n(x.data.begin() + static_cast<std::ptrdiff_t>(i * T * d), d,
                one.data.begin() + static_cast<std::ptrdiff_t>(i * d));
  return one;
}

// The K/V heads of the GQA row: the session's when it is gqa with fewer than h, else h / 2 (the
// largest divisor of h below h when h is odd; 1 when h is 1).
int gqa_groups(const ModelConfig& s, std::string& why) {
  const int h = s.num_heads;
  if (s.variant == Variant::Gqa && s.num_kv_groups < h) {
    why = "the session's";
    return s.num_kv_groups;
  }
  if (h == 1) {
    why = "h = 1: the same as MHA";
    return 1;
  }
  int g = h / 2;
  while (h % g != 0) --g;
  why = std::string(h % 2 == 0 ? "h / 2" : "the largest divisor of h below h") +
        (s.variant == Variant::Gqa ? ": the session's G is h" : ": the session is not gqa");
  return g;
}

void add_equivalences(VariantComparison& out, const Model& mha, const Tensor& x, int gqa_g, int swa_w) {
  const ModelConfig& c = mha.config;
  const int h = c.num_heads, T = out.tokens;
  {
    // GQA: out_proj without bias, so the MHA's is zeroed for these two pairs.
    Model mha0 = mha;
    std::fill(mha0.layer("out_proj").bias.begin(), mha0.layer("out_proj").bias.end(), 0.0f);
    prepare_forward(mha0);
    const Trace t_mha0 = forward(mha0, x);
    out.equivalences.push_back(compare_pair(
        "GQA with " + std::to_string(h) + " K/V heads (one per query head) = MHA",
        "W_query, W_key, W_value and out_proj copied from the MHA (its out_proj bias set to 0: GQA's has none)", true,
        t_mha0, forward(gqa_from_mha(mha0, h), x), false));
    if (gqa_g < h)
      out.equivalences.push_back(compare_pair(
          "GQA with " + std::to_string(gqa_g) + (gqa_g == 1 ? " K/V head" : " K/V heads") +
              ", made by mean-pooling, is not MHA",
          "each K/V head the mean of its " + std::to_string(h / gqa_g) +
              " MHA heads' W_key and W_value rows, as checkpoints are converted (uptraining then recovers quality)",
          false, t_mha0, forward(gqa_from_mha(mha0, gqa_g), x), false));
  }
  if (!c.causal) {
    out.notes.push_back("Sliding window not compared: it needs the causal mask, which this session turns off.");
  } else {
    // Traces of T x T per head: one kept at a time beside the pair's other.
    const Trace t_nowin = forward(with_options(mha, 0, c.rope_base), x);
    out.equivalences.push_back(compare_pair("Sliding window W = T = " + std::to_string(T) + " = causal MHA",
                                            "the MHA with the window set: every key a causal query sees is in it", true,
                                            t_nowin, forward(with_options(mha, T, c.rope_base), x), false));
    if (swa_w < T)
      out.equivalences.push_back(
          compare_pair("Sliding window W = " + std::to_string(swa_w) + " < T is not causal MHA",
                       "the MHA with the window set: query i no longer sees keys i - W and before", false, t_nowin,
                       forward(with_options(mha, swa_w, c.rope_base), x), false));
  }
  if (out.head_dim % 2 != 0) {
    out.notes.push_back("RoPE not compared: it rotates pairs of a head's values, and head_dim " +
                        std::to_string(out.head_dim) + " is odd.");
    return;
  }
  const double base = c.rope_base != 0.0 ? c.rope_base : 10000.0;
  const std::string b_s = fmt("%g", base) + (c.rope_base != 0.0 ? " (the session's)" : "");
  const Model rope = with_options(mha, c.sliding_window, base), plain = with_options(mha, c.sliding_window, 0.0);
  const Tensor x1 = first_token(x);
  out.equivalences.push_back(
      compare_pair("RoPE at one token (every angle 0) = no RoPE",
                   "the first token alone, RoPE base " + b_s + " against none: cos 0 = 1, sin 0 = 0", true,
                   forward(plain, x1), forward(rope, x1), true));
  if (T > 1)
    out.equivalences.push_back(
        compare_pair("RoPE at " + std::to_string(T) + " tokens is not no RoPE",
                     "RoPE base " + b_s + " against none: key j turned by angles j \xC2\xB7 \xCE\xB8_i", false,
                     forward(plain, x), forward(rope, x), true));
}

// [SECTION] Costs

// A variant's KV bytes as the memory table's row of that name counts them.
std::int64_t kv_row_bytes(KvModel m, std::int64_t batch, std::int64_t context, const std::string& row) {
  m.batch = static_cast<int>(batch);
  m.context = context;
  for (const KvRow& r : kv_memory_table(m))
    if (r.variant == row) return r.bytes;
  throw std::logic_error("no KV memory row " + row);
}

void add_costs(VariantComparison& out, const ModelConfig& mha_config, int gqa_g, const std::string& gqa_why, int latent,
               const std::string& latent_why, int swa_w, const std::string& swa_why) {
  const int h = out.heads;
  ModelConfig mha = mha_config;
  mha.sliding_window = 0;
  ModelConfig gqa = mha, mqa = mha, mla = mha, swa = mha;
  gqa.variant = mqa.variant = Variant::Gqa;
  gqa.num_kv_groups = gqa_g;
  mqa.num_kv_groups = 1;
  mla.variant = Variant::Mla;
  mla.latent_dim = latent;
  mla.rope_base = 0.0;  // MultiHeadLatentAttention has no RoPE here (a decoupled key in real models)
  swa.sliding_window = swa_w;
  KvModel kv;
  kv.name = "session";
  kv.emb_dim = out.d_in;
  kv.heads = h;
  kv.head_dim = out.head_dim;
  kv.layers = 1;
  kv.latent_dim = latent;
  kv.window = swa_w;
  kv.dtype = "fp32";
  kv.dtype_bytes = out.dtype_bytes;
  const auto heads = [](int g) { return std::to_string(g) + (g == 1 ? " K/V head" : " K/V heads"); };
  const struct {
    const char* name;
    ModelConfig config;
    std::string detail;
    int kv_heads;
    const char* row;
  } rows[] = {
      {"MHA", mha, heads(h) + " (weight split)", h, "MHA"},
      {"GQA", gqa, heads(gqa_g) + " (" + gqa_why + ")", gqa_g, gqa_g < h ? "GQA" : "MHA"},
      {"MQA", mqa, heads(1) + " (GQA with G = 1)", 1, h > 1 ? "GQA" : "MHA"},
      {"MLA", mla, "latent_dim " + std::to_string(latent) + " (" + latent_why + ")", h, "MLA"},
      {"SWA", swa, "MHA, window " + std::to_string(swa_w) + " (" + swa_why + ")", h, "MHA + SWA"},
  };
  for (const auto& r : rows) {
    VariantCost v;
    v.variant = r.name;
    v.detail = r.detail;
    v.config = r.config;
    v.cost = forward_cost(r.config, out.d_in, out.tokens, out.batch);
    kv.kv_heads = r.kv_heads;
    v.kv_bytes_token = kv_row_bytes(kv, 1, 1, r.row);
    v.kv_bytes_context = kv_row_bytes(kv, out.batch, out.context, r.row);
    out.costs.push_back(std::move(v));
  }
  out.notes.push_back(
      "FLOPs: 2\xC2\xB7m\xC2\xB7n\xC2\xB7k of every matmul of one forward. SWA's are MHA's: PyTorch's masked "
      "implementation computes every q\xC2\xB7k\xE1\xB5\x80 and hides cells afterwards (a kernel that skips them "
      "would do about T\xC2\xB7W of T\xC2\xB2 per head).");
  out.notes.push_back(
      "KV cache: float32, this module as one layer, per token of one sequence and for batch " +
      std::to_string(out.batch) + " at context_length " + std::to_string(out.context) +
      ", as mhaviz kv-memory --session FILE --dtype fp32 counts it; SWA's grows as MHA's until the window is "
      "full, then stays at W tokens.");
}

}  // namespace

VariantComparison compare_attention_variants(const Model& model, const Tensor& input) {
  if (input.rank() != 3 || input.shape[2] != model.d_in || input.shape[1] < 1)
    throw std::invalid_argument("input: shape " + shape_string(input.shape) + " is not (b, T, " +
                                std::to_string(model.d_in) + ")");
  const ModelConfig& s = model.config;
  VariantComparison out;
  out.batch = static_cast<int>(input.shape[0]);
  out.tokens = static_cast<int>(input.shape[1]);
  out.d_in = model.d_in;
  out.heads = s.num_heads;
  out.head_dim = head_dim(s);
  out.context = s.context_length;
  const Model mha = base_mha(model, out.base);
  std::string gqa_why, latent_why, swa_why;
  const int gqa_g = gqa_groups(s, gqa_why);
  const int latent = s.variant == Variant::Mla ? s.latent_dim : default_latent_dim(merged_dim(mha.config));
  latent_why = s.variant == Variant::Mla ? "the session's" : "max(16, d_out // 8)";
  const int swa_w = s.sliding_window > 0 ? s.sliding_window : std::max(1, out.tokens / 2);
  swa_why = s.sliding_window > 0 ? "the session's" : "T / 2";
  add_equivalences(out, mha, input, gqa_g, swa_w);
  add_costs(out, mha.config, gqa_g, gqa_why, latent, latent_why, swa_w, swa_why);
  return out;
}

}  // namespace mhaviz
