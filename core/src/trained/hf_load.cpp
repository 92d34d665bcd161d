// load_hf_model (hf_model.hpp): config.json, then every tensor the config implies, checked
// against its shape and packed for the kernel as it is read (BF16 into BF16 panels, any other
// dtype widened to float32).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/gemm.hpp"
#include "kernels/linear.hpp"
#include "kernels/parallel.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/hf_weights.hpp"
#include "mhaviz/safetensors.hpp"
#include "weight_read.hpp"

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
    check(name, t, shape);
    std::vector<float> out = t.read();
    t.release();
    return out;
  }
  bool has(const std::string& name) const { return w_.find(name) != nullptr; }

  void check(const std::string& name, const HfTensor& t, const Shape& shape) const {
    if (t.shape() != shape)
      throw LoadError(label_ + ": tensor \"" + name + "\" is " + shape_list_string(t.shape()) + ", config.json gives " +
                      shape_list_string(shape));
  }

  // The tensor checked as read() does, then packed for the kernel: a BF16 tensor into BF16
  // panels straight from its bytes (half the memory; an edit's one-row products stream it at
  // its stored width), any other into float panels.
  void pack(const std::string& name, const Shape& shape, Linear& l) const {
    const HfTensor& t = w_.at(name);
    if (t.dtype() != StDtype::BF16) {
      l.weight = read(name, shape);
      detail::pack_linear(l, true);
      return;
    }
    check(name, t, shape);
    l.packed_bf16 = detail::pack_transposed_bf16(t.bytes().data(), l.out, l.in);
    t.release();
  }

  // prefix.weight [out, in] (and prefix.bias [out] when bias), packed on the kernel.
  Linear linear(const std::string& prefix, int in, int out, bool bias) const {
    Linear l;
    l.name = prefix;
    l.in = in;
    l.out = out;
    if (kernel_)
      pack(prefix + ".weight", {out, in}, l);
    else
      l.weight = read(prefix + ".weight", {out, in});
    if (bias) l.bias = read(prefix + ".bias", {out});
    return l;
  }

 private:
  const HfWeights& w_;
  std::string label_;
  bool kernel_;
};

// Where the text model's tensors are named: "model." and "lm_head" (Qwen, Llama, gemma3_text),
// or, in Gemma 3's image-text model ("gemma3", 4B and larger), "language_model.model." and
// "language_model.lm_head" as Google released the files, "model.language_model." and
// "lm_head" as transformers 4.52 and later save them. Its vision tower is never read.
struct TextNames {
  std::string model, head;
};
TextNames text_names(const Reader& r, const HfConfig& c) {
  if (!c.from_text_config) return {"model.", "lm_head"};
  const TextNames forms[] = {
      {"language_model.model.", "language_model.lm_head"}, {"model.language_model.", "lm_head"}, {"model.", "lm_head"}};
  for (const TextNames& f : forms)
    if (r.has(f.model + "embed_tokens.weight")) return f;
  return forms[0];  // the released form, named by the error that follows
}

HfBlock read_block(const Reader& r, const HfConfig& c, const TextNames& names, int i) {
  const int C = c.hidden_size, H = c.num_attention_heads, G = c.num_key_value_heads, hd = c.head_dim,
            I = c.intermediate_size;
  const std::string p = names.model + "layers." + std::to_string(i) + ".";
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
  static std::atomic<std::uint64_t> loaded{0};
  HfModel m;
  m.serial = ++loaded;
  m.folder = folder;
  m.config = read_hf_config(folder / "config.json");
  const HfConfig& c = m.config;
  const HfWeights w = HfWeights::open(folder);
  const bool kernel = backend() != Backend::OpenBlas;
  const Reader r(w, folder.string(), kernel);
  const int C = c.hidden_size, V = c.vocab_size;
  const TextNames names = text_names(r, c);

  // transformers ties the head whenever the config says so, whatever the file holds. The
  // tied head is packed first, before the blocks are read, so the embedding is held twice
  // only while nothing else is.
  m.tied = c.tie_word_embeddings;
  if (m.tied && kernel) {
    // The embedding is held once, as the head's panels (Qwen3-0.6B: 594 MiB not held twice).
    m.lm_head.name = names.head + " (tied to " + names.model + "embed_tokens)";
    m.lm_head.in = C;
    m.lm_head.out = V;
    r.pack(names.model + "embed_tokens.weight", {V, C}, m.lm_head);
  } else {
    m.embed = r.read(names.model + "embed_tokens.weight", {V, C});
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) m.blocks.push_back(read_block(r, c, names, i));
  m.final_norm = r.read(names.model + "norm.weight", {C});
  if (!m.tied) m.lm_head = r.linear(names.head, C, V, false);
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
  const std::int64_t at = static_cast<std::int64_t>(id / detail::kPanel) * C * detail::kPanel + id % detail::kPanel;
  for (int d = 0; d < C; ++d) {
    const std::int64_t i = at + static_cast<std::int64_t>(d) * detail::kPanel;
    if (lm_head.packed_bf16.empty()) {
      out[d] = lm_head.packed[static_cast<std::size_t>(i)];
    } else {
      out[d] = bf16_to_f32(lm_head.packed_bf16[static_cast<std::size_t>(i)]);
    }
  }
}

namespace {

// The weights a forward of one row reads whole: every block's, the final norm's and the head's.
// Of an untied model's embedding table (embed) it reads one row, so the table is not counted:
// counted, it made an untied model's edit look closer to one read than it is.
detail::WeightBuffers weight_buffers(const HfModel& m) {
  detail::WeightBuffers out;
  for (const HfBlock& b : m.blocks) {
    for (const Linear* l : {&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down}) out.add(*l);
    for (const std::vector<float>* v :
         {&b.input_norm, &b.post_attn_norm, &b.pre_ff_norm, &b.post_ff_norm, &b.q_norm, &b.k_norm})
      out.add(*v);
  }
  out.add(m.final_norm);
  out.add(m.lm_head);
  return out;
}

}  // namespace

std::int64_t hf_weight_bytes(const HfModel& m) { return weight_buffers(m).bytes(); }

std::uint64_t hf_read_weights(const HfModel& m) { return weight_buffers(m).read_once(); }

AttentionMask HfModel::layer_mask(int layer) const {
  AttentionMask mask;
  mask.causal = true;
  if (blocks[static_cast<std::size_t>(layer)].sliding) mask.window = config.sliding_window;
  return mask;
}

}  // namespace mhaviz
