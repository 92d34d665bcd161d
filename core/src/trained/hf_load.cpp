// load_hf_model (hf_model.hpp): config.json, then every tensor the config implies, checked
// against its shape, widened to float32 and packed for the kernel as it is read.
#include <algorithm>
#include <string>

#include "kernels/gemm.hpp"
#include "kernels/linear.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/hf_weights.hpp"
#include "mhaviz/safetensors.hpp"

namespace fs = std::filesystem;

namespace mhaviz {
namespace {

using Shape = std::vector<std::int64_t>;

// Reads tensors by name for one model, in the form the forward holds them.
class Reader {
 public:
  Reader(const HfWeights& w, std::string label, bool kernel) : w_(w), label_(std::move(label)), kernel_(kernel) {}

  // The tensor as float32 after its shape is checked; its file pages are given back.
  std::vector<float> read(const std::string& name, const Shape& shape) const {
    const HfTensor& t = w_.at(name);
    if (t.shape() != shape)
      throw LoadError(label_ + ": tensor \"" + name + "\" is " + shape_list_string(t.shape()) + ", config.json gives " +
                      shape_list_string(shape));
    std::vector<float> out = t.read();
    t.release();
    return out;
  }
  bool has(const std::string& name) const { return w_.find(name) != nullptr; }

  // prefix.weight [out, in] (and prefix.bias [out] when bias), packed on the kernel.
  Linear linear(const std::string& prefix, int in, int out, bool bias) const {
    Linear l;
    l.name = prefix;
    l.in = in;
    l.out = out;
    l.weight = read(prefix + ".weight", {out, in});
    if (bias) l.bias = read(prefix + ".bias", {out});
    if (kernel_) detail::pack_linear(l, true);
    return l;
  }

 private:
  const HfWeights& w_;
  std::string label_;
  bool kernel_;
};

HfBlock read_block(const Reader& r, const HfConfig& c, int i) {
  const int C = c.hidden_size, H = c.num_attention_heads, G = c.num_key_value_heads, hd = c.head_dim,
            I = c.intermediate_size;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  HfBlock b;
  b.sliding = c.sliding[static_cast<std::size_t>(i)] && c.sliding_window > 0;
  b.input_norm = r.read(p + "input_layernorm.weight", {C});
  b.q = r.linear(p + "self_attn.q_proj", C, H * hd, c.qkv_bias);
  b.k = r.linear(p + "self_attn.k_proj", C, G * hd, c.qkv_bias);
  b.v = r.linear(p + "self_attn.v_proj", C, G * hd, c.qkv_bias);
  b.o = r.linear(p + "self_attn.o_proj", H * hd, C, c.o_bias);
  if (c.qk_norm) {
    b.q_norm = r.read(p + "self_attn.q_norm.weight", {hd});
    b.k_norm = r.read(p + "self_attn.k_norm.weight", {hd});
  }
  b.post_attn_norm = r.read(p + "post_attention_layernorm.weight", {C});
  if (c.gemma_norms) {
    b.pre_ff_norm = r.read(p + "pre_feedforward_layernorm.weight", {C});
    b.post_ff_norm = r.read(p + "post_feedforward_layernorm.weight", {C});
  }
  b.gate = r.linear(p + "mlp.gate_proj", C, I, c.mlp_bias);
  b.up = r.linear(p + "mlp.up_proj", C, I, c.mlp_bias);
  b.down = r.linear(p + "mlp.down_proj", I, C, c.mlp_bias);
  return b;
}

}  // namespace

HfModel load_hf_model(const fs::path& folder) {
  HfModel m;
  m.folder = folder;
  m.config = read_hf_config(folder / "config.json");
  const HfConfig& c = m.config;
  const HfWeights w = HfWeights::open(folder);
  const bool kernel = backend() != Backend::OpenBlas;
  const Reader r(w, folder.string(), kernel);
  const int C = c.hidden_size, V = c.vocab_size;

  // transformers ties the head whenever the config says so, whatever the file holds. The
  // tied head is packed first, before the blocks are read, so the embedding is held twice
  // only while nothing else is.
  m.tied = c.tie_word_embeddings;
  m.embed = r.read("model.embed_tokens.weight", {V, C});
  if (m.tied && kernel) {
    m.lm_head.name = "lm_head (tied to model.embed_tokens)";
    m.lm_head.in = C;
    m.lm_head.out = V;
    m.lm_head.packed = detail::pack_transposed(m.embed.data(), V, C);
    std::vector<float>().swap(m.embed);  // Qwen3-0.6B: 594 MiB not held twice
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) m.blocks.push_back(read_block(r, c, i));
  m.final_norm = r.read("model.norm.weight", {C});
  if (!m.tied) m.lm_head = r.linear("lm_head", C, V, false);
  m.inv_freq_global = c.rope.inv_freq(c.head_dim);
  m.inv_freq_local = c.rope_local.inv_freq(c.head_dim);
  return m;
}

std::int64_t HfModel::parameter_count() const {
  std::int64_t n =
      static_cast<std::int64_t>(config.vocab_size) * config.hidden_size + static_cast<std::int64_t>(final_norm.size());
  auto linear = [](const Linear& l) {
    return static_cast<std::int64_t>(l.in) * l.out + static_cast<std::int64_t>(l.bias.size());
  };
  for (const HfBlock& b : blocks) {
    for (const Linear* l : {&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down}) n += linear(*l);
    for (const std::vector<float>* v :
         {&b.input_norm, &b.post_attn_norm, &b.pre_ff_norm, &b.post_ff_norm, &b.q_norm, &b.k_norm})
      n += static_cast<std::int64_t>(v->size());
  }
  if (!tied) n += linear(lm_head);
  return n;
}

void HfModel::embedding_row(int id, float* out) const {
  const int C = config.hidden_size;
  if (!embed.empty()) {
    std::copy_n(embed.data() + static_cast<std::int64_t>(id) * C, C, out);
    return;
  }
  // Row id of [V, C] packed (gemm.hpp): panel id / kPanel is (C, kPanel) row-major.
  const float* panel = lm_head.packed.data() + static_cast<std::int64_t>(id / detail::kPanel) * C * detail::kPanel;
  for (int d = 0; d < C; ++d) out[d] = panel[static_cast<std::int64_t>(d) * detail::kPanel + id % detail::kPanel];
}

AttentionMask HfModel::layer_mask(int layer) const {
  AttentionMask mask;
  mask.causal = true;
  if (blocks[static_cast<std::size_t>(layer)].sliding) mask.window = config.sliding_window;
  return mask;
}

}  // namespace mhaviz
