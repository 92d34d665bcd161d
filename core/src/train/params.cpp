// The parameter table of the book's GPTModel family and its init from the seed, in torch's
// construction order (train.hpp).
#include <algorithm>
#include <stdexcept>

#include "mhaviz/model.hpp"  // torch_linear_init
#include "mhaviz/train.hpp"
#include "train/torch_random.hpp"

namespace mhaviz::train {
namespace {

void check_range(const char* option, int value, int lo, int hi) {
  if (value < lo || value > hi)
    throw TrainError(std::string(option) + ": " + std::to_string(value) + " is out of range [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "]");
}

}  // namespace

void validate_config(const GptTrainConfig& c) {
  check_range("--layers", c.n_layers, 1, 64);
  check_range("--heads", c.n_heads, 1, 256);
  check_range("--d-model", c.emb_dim, 1, 8192);
  if (c.emb_dim % c.n_heads != 0)
    throw TrainError("--heads: " + std::to_string(c.n_heads) + " does not divide --d-model " +
                     std::to_string(c.emb_dim) + " (each head gets d-model / heads dimensions)");
  check_range("--context", c.context_length, 2, 4096);
  check_range("--vocab", c.vocab_size, 2, 1 << 20);
}

std::int64_t ParamTensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::vector<ParamTensor> parameter_layout(const GptTrainConfig& c) {
  const std::int64_t V = c.vocab_size, T = c.context_length, C = c.emb_dim, F = 4 * C;
  std::vector<ParamTensor> out;
  std::int64_t offset = 0;
  auto add = [&](std::string name, std::vector<std::int64_t> shape) {
    out.push_back({std::move(name), std::move(shape), offset});
    offset += out.back().numel();
  };
  add("tok_emb.weight", {V, C});
  add("pos_emb.weight", {T, C});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "trf_blocks." + std::to_string(l) + ".";
    for (const char* w : {"W_query", "W_key", "W_value"}) {
      add(b + "att." + w + ".weight", {C, C});
      if (c.qkv_bias) add(b + "att." + w + ".bias", {C});
    }
    add(b + "att.out_proj.weight", {C, C});
    add(b + "att.out_proj.bias", {C});
    if (c.attn_only) continue;
    add(b + "ff.layers.0.weight", {F, C});
    add(b + "ff.layers.0.bias", {F});
    add(b + "ff.layers.2.weight", {C, F});
    add(b + "ff.layers.2.bias", {C});
    for (const char* n : {"norm1", "norm2"}) {
      add(b + n + ".scale", {C});
      add(b + n + ".shift", {C});
    }
  }
  if (!c.attn_only) {
    add("final_norm.scale", {C});
    add("final_norm.shift", {C});
  }
  add("out_head.weight", {V, C});
  return out;
}

const ParamTensor& GptTrainModel::tensor(std::string_view name) const {
  for (const ParamTensor& t : layout)
    if (t.name == name) return t;
  throw std::out_of_range("no parameter named " + std::string(name));
}

std::span<const float> GptTrainModel::values(std::string_view name) const {
  const ParamTensor& t = tensor(name);
  return {params.data() + t.offset, static_cast<std::size_t>(t.numel())};
}

std::span<float> GptTrainModel::values(std::string_view name) {
  const ParamTensor& t = tensor(name);
  return {params.data() + t.offset, static_cast<std::size_t>(t.numel())};
}

GptTrainModel init_model(const GptTrainConfig& c, std::uint64_t seed) {
  GptTrainModel m;
  m.config = c;
  m.layout = parameter_layout(c);
  m.params.assign(static_cast<std::size_t>(m.layout.back().offset + m.layout.back().numel()), 0.0f);
  TorchGenerator gen(seed);
  // The layout is in construction order, so walking it feeds the generator as torch does. A
  // Linear's bias follows its weight and is drawn with it.
  for (std::size_t i = 0; i < m.layout.size(); ++i) {
    const ParamTensor& t = m.layout[i];
    float* p = m.params.data() + t.offset;
    const std::string_view name = t.name;
    if (name.ends_with("_emb.weight")) {
      torch_normal_(gen, p, t.numel(), 0.0f, 1.0f);
    } else if (name.ends_with(".scale")) {
      std::fill_n(p, t.numel(), 1.0f);
    } else if (name.ends_with(".weight")) {
      const bool bias = i + 1 < m.layout.size() && m.layout[i + 1].name == t.name.substr(0, t.name.size() - 6) + "bias";
      float* b = bias ? m.params.data() + m.layout[i + 1].offset : nullptr;
      torch_linear_init(gen.mt, static_cast<int>(t.shape[1]), static_cast<int>(t.shape[0]), p, b);
      if (bias) ++i;
    }
    // LayerNorm shifts stay 0.
  }
  return m;
}

}  // namespace mhaviz::train
