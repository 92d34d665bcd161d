#include "mhaviz/model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/gemm.hpp"

namespace mhaviz {

std::string_view variant_name(Variant v) {
  switch (v) {
    case Variant::Wrapper: return "wrapper";
    case Variant::WeightSplit: return "weight_split";
    case Variant::FusedQkv: return "fused_qkv";
    case Variant::Gqa: return "gqa";
    case Variant::Mla: return "mla";
  }
  return "?";
}

bool parse_variant(std::string_view name, Variant& out) {
  for (Variant v : kAllVariants) {
    if (variant_name(v) == name) {
      out = v;
      return true;
    }
  }
  return false;
}

int head_dim(const ModelConfig& c) {
  if (c.variant == Variant::Wrapper) return c.d_out;
  return c.num_heads > 0 ? c.d_out / c.num_heads : 0;
}

int merged_dim(const ModelConfig& c) { return c.num_heads * head_dim(c); }

int output_dim(const ModelConfig& c) { return c.out_dim > 0 ? c.out_dim : c.d_out; }

int kv_heads(const ModelConfig& c) { return c.variant == Variant::Gqa ? c.num_kv_groups : c.num_heads; }

int default_latent_dim(int d_out) { return std::max(16, d_out / 8); }

bool is_split(Variant v) { return v != Variant::Wrapper; }

const Linear& Model::layer(std::string_view name) const {
  for (const auto& l : layers)
    if (l.name == name) return l;
  throw std::out_of_range("no layer named " + std::string(name));
}

Linear& Model::layer(std::string_view name) {
  qkv_stacked = Linear();  // the caller may change the weights: the stack and packing would be stale
  Linear& l = const_cast<Linear&>(static_cast<const Model&>(*this).layer(name));
  l.packed.clear();
  return l;
}

void prepare_forward(Model& model) {
  model.qkv_stacked = Linear();
  const ModelConfig& c = model.config;
  const Model& view = model;
  if (c.variant != Variant::FusedQkv) {
    Linear st;
    st.name = "qkv_stacked";
    st.in = model.d_in;
    const int copies = c.variant == Variant::Wrapper ? c.num_heads : 1;
    std::vector<std::string> parts = {"W_query", "W_key", "W_value"};
    if (c.variant == Variant::Mla) parts = {"W_query", "W_DKV"};
    for (const std::string& which : parts)
      for (int h = 0; h < copies; ++h) {
        const Linear& l =
            view.layer(c.variant == Variant::Wrapper ? "heads." + std::to_string(h) + "." + which : which);
        st.weight.insert(st.weight.end(), l.weight.begin(), l.weight.end());
        st.bias.insert(st.bias.end(), l.bias.begin(), l.bias.end());
        st.out += l.out;
      }
    model.qkv_stacked = std::move(st);
  }
  if (!detail::kernel_available()) return;
  // The Linears forward() multiplies by whole; the wrapper has no output projection.
  auto pack = [](Linear& l) { l.packed = detail::pack_transposed(l.weight.data(), l.out, l.in); };
  for (Linear& l : model.layers)
    if (l.name == "qkv_layer" || l.name == "out_proj" || l.name == "linear_layer" || l.name == "W_UK" ||
        l.name == "W_UV")
      pack(l);
  if (!model.qkv_stacked.weight.empty()) pack(model.qkv_stacked);
}

std::int64_t Model::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& l : layers) n += static_cast<std::int64_t>(l.weight.size() + l.bias.size());
  return n + static_cast<std::int64_t>(q_norm.size() + k_norm.size());
}

// torch's uniform_real for float: 24 random bits scaled in double, then rounded to float.
float torch_uniform(std::mt19937& gen, float from, float to) {
  const std::uint32_t r = static_cast<std::uint32_t>(gen());
  const double x = static_cast<double>(r & 0xFFFFFFu) * (1.0 / 16777216.0);
  return static_cast<float>(x * (static_cast<double>(to) - static_cast<double>(from)) + static_cast<double>(from));
}

// torch's bernoulli_ on CPU draws a 64-bit value (two 32-bit draws, high word first)
// and keeps 53 bits.
double torch_uniform53(std::mt19937& gen) {
  const std::uint64_t a = static_cast<std::uint32_t>(gen());
  const std::uint64_t b = static_cast<std::uint32_t>(gen());
  const std::uint64_t r = ((a << 32) | b) & ((std::uint64_t{1} << 53) - 1);
  return static_cast<double>(r) * (1.0 / 9007199254740992.0);
}

// nn.Linear.reset_parameters(): kaiming_uniform_(a=sqrt(5)) on the weight, then
// uniform_(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias; bounds computed in double
// exactly as torch.nn.init does in Python.
void torch_linear_init(std::mt19937& gen, int in, int out, float* weight, float* bias) {
  const double gain = std::sqrt(2.0 / (1.0 + 5.0));
  const double std_dev = gain / std::sqrt(static_cast<double>(in));
  const double bound = std::sqrt(3.0) * std_dev;
  const float lo = static_cast<float>(-bound), hi = static_cast<float>(bound);
  const std::size_t n = static_cast<std::size_t>(in) * static_cast<std::size_t>(out);
  for (std::size_t i = 0; i < n; ++i) weight[i] = torch_uniform(gen, lo, hi);
  if (bias) {
    const double bb = 1.0 / std::sqrt(static_cast<double>(in));
    const float blo = static_cast<float>(-bb), bhi = static_cast<float>(bb);
    for (int i = 0; i < out; ++i) bias[i] = torch_uniform(gen, blo, bhi);
  }
}

namespace {

Linear make_linear(std::mt19937& gen, std::string name, int in, int out, bool bias) {
  Linear l;
  l.name = std::move(name);
  l.in = in;
  l.out = out;
  l.weight.resize(static_cast<std::size_t>(in) * static_cast<std::size_t>(out));
  if (bias) l.bias.resize(static_cast<std::size_t>(out));
  torch_linear_init(gen, in, out, l.weight.data(), bias ? l.bias.data() : nullptr);
  return l;
}

}  // namespace

namespace {

// The Linears a config builds, in PyTorch construction order (the order the generator feeds).
struct LayerPlan {
  std::string name;
  int in, out;
  bool bias;
};

std::vector<LayerPlan> layer_plan(const ModelConfig& config, int d_in) {
  const int d = config.d_out;
  const bool b = config.qkv_bias;
  switch (config.variant) {
    case Variant::Wrapper: {
      std::vector<LayerPlan> plan;
      for (int h = 0; h < config.num_heads; ++h) {
        const std::string p = "heads." + std::to_string(h) + ".";
        for (const char* w : {"W_query", "W_key", "W_value"}) plan.push_back({p + w, d_in, d, b});
      }
      return plan;
    }
    case Variant::WeightSplit:
      return {{"W_query", d_in, d, b}, {"W_key", d_in, d, b}, {"W_value", d_in, d, b}, {"out_proj", d, d, true}};
    case Variant::FusedQkv:
      return {{"qkv_layer", d_in, 3 * d, b}, {"linear_layer", d, d, true}};
    case Variant::Gqa: {
      // GroupedQueryAttention creates its K/V projections first and out_proj without bias.
      const int kv = config.num_kv_groups * head_dim(config);
      return {{"W_key", d_in, kv, b},
              {"W_value", d_in, kv, b},
              {"W_query", d_in, d, b},
              {"out_proj", d, output_dim(config), false}};
    }
    case Variant::Mla: {
      const int L = config.latent_dim;
      return {{"W_query", d_in, d, b},
              {"W_DKV", d_in, L, b},
              {"W_UK", L, d, b},
              {"W_UV", L, d, b},
              {"out_proj", d, d, true}};
    }
  }
  return {};
}

// Copies a parameter file's tensors over the initialised layers (validate_model checked that
// every one is there with its shape).
void load_parameters(Model& m, const ParameterFile& file) {
  for (Linear& l : m.layers) {
    l.weight = file.tensors.find(l.name + ".weight")->second.values;
    if (!l.bias.empty()) l.bias = file.tensors.find(l.name + ".bias")->second.values;
  }
  if (m.config.qk_norm) {
    m.q_norm = file.tensors.find("q_norm.scale")->second.values;
    m.k_norm = file.tensors.find("k_norm.scale")->second.values;
  }
}

}  // namespace

std::vector<ParameterSpec> parameter_specs(const ModelConfig& config, int d_in) {
  std::vector<ParameterSpec> specs;
  for (const LayerPlan& l : layer_plan(config, d_in)) {
    specs.push_back({l.name + ".weight", {l.out, l.in}});
    if (l.bias) specs.push_back({l.name + ".bias", {l.out}});
  }
  if (config.qk_norm) {  // RMSNorm(head_dim) scales: ones, no draw from the generator
    specs.push_back({"q_norm.scale", {head_dim(config)}});
    specs.push_back({"k_norm.scale", {head_dim(config)}});
  }
  return specs;
}

Model build_model(const ModelConfig& config, int d_in) {
  Model m;
  m.config = config;
  m.d_in = d_in;
  // torch.manual_seed takes 64 bits but seeds mt19937 with the low 32: same here.
  std::mt19937 gen(static_cast<std::mt19937::result_type>(config.seed));
  for (const LayerPlan& l : layer_plan(config, d_in)) m.layers.push_back(make_linear(gen, l.name, l.in, l.out, l.bias));
  m.rng_after_init = gen;
  if (config.qk_norm) m.q_norm = m.k_norm = std::vector<float>(static_cast<std::size_t>(head_dim(config)), 1.0f);
  if (config.weights) load_parameters(m, *config.weights);
  prepare_forward(m);
  return m;
}

Model weight_split_from_wrapper(const Model& wrapper) {
  const ModelConfig& wc = wrapper.config;
  Model m;
  m.config = wc;
  m.config.variant = Variant::WeightSplit;
  m.config.d_out = wc.num_heads * wc.d_out;
  m.config.out_dim = 0;  // out_proj is the identity on d_out
  m.d_in = wrapper.d_in;
  m.rng_after_init = wrapper.rng_after_init;
  const int D = m.config.d_out;
  for (const char* which : {"W_query", "W_key", "W_value"}) {
    Linear l;
    l.name = which;
    l.in = wrapper.d_in;
    l.out = D;
    for (int h = 0; h < wc.num_heads; ++h) {
      const Linear& src = wrapper.layer("heads." + std::to_string(h) + "." + which);
      l.weight.insert(l.weight.end(), src.weight.begin(), src.weight.end());
      l.bias.insert(l.bias.end(), src.bias.begin(), src.bias.end());
    }
    m.layers.push_back(std::move(l));
  }
  Linear out;
  out.name = "out_proj";
  out.in = out.out = D;
  out.weight.assign(static_cast<std::size_t>(D) * static_cast<std::size_t>(D), 0.0f);
  for (int i = 0; i < D; ++i) out.weight[static_cast<std::size_t>(i) * static_cast<std::size_t>(D + 1)] = 1.0f;
  out.bias.assign(static_cast<std::size_t>(D), 0.0f);
  m.layers.push_back(std::move(out));
  prepare_forward(m);
  return m;
}

Model weight_split_from_fused(const Model& fused) {
  const ModelConfig& fc = fused.config;
  const int hd = head_dim(fc), H = fc.num_heads, D = fc.d_out, din = fused.d_in;
  Model m;
  m.config = fc;
  m.config.variant = Variant::WeightSplit;
  m.config.out_dim = 0;  // linear_layer is [d_out, d_out]
  m.d_in = din;
  m.rng_after_init = fused.rng_after_init;
  const Linear& qkv = fused.layer("qkv_layer");
  const char* names[3] = {"W_query", "W_key", "W_value"};
  for (int part = 0; part < 3; ++part) {
    Linear l;
    l.name = names[part];
    l.in = din;
    l.out = D;
    // Output feature h*hd + d of part p comes from fused row h*3*hd + p*hd + d.
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < hd; ++d) {
        const std::size_t row = static_cast<std::size_t>(h * 3 * hd + part * hd + d);
        l.weight.insert(l.weight.end(), qkv.weight.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(din)),
                        qkv.weight.begin() + static_cast<std::ptrdiff_t>((row + 1) * static_cast<std::size_t>(din)));
        if (!qkv.bias.empty()) l.bias.push_back(qkv.bias[row]);
      }
    m.layers.push_back(std::move(l));
  }
  Linear out = fused.layer("linear_layer");
  out.name = "out_proj";
  m.layers.push_back(std::move(out));
  m.q_norm = fused.q_norm;
  m.k_norm = fused.k_norm;
  prepare_forward(m);
  return m;
}

}  // namespace mhaviz
