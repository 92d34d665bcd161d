// load_gpt: a Hugging Face GPT-2 or the book's GPTModel from safetensors + config.json into
// GptModel (gpt.hpp). Both layouts fill the same float32 form, nn.Linear orientation.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "mhaviz/gpt.hpp"
#include "mhaviz/safetensors.hpp"

namespace fs = std::filesystem;

namespace mhaviz {

namespace {

using Shape = std::vector<std::int64_t>;

struct Located {
  fs::path weights;
  fs::path folder;
};

// path: a folder holding model.safetensors (or exactly one *.safetensors), or the file.
Located locate(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw LoadError(path.string() + ": does not exist");
  if (!fs::is_directory(path, ec)) return {path, path.has_parent_path() ? path.parent_path() : fs::path(".")};
  if (fs::is_empty(path, ec))
    throw LoadError(path.string() + ": empty folder (expected config.json and model.safetensors)");
  if (fs::exists(path / "model.safetensors", ec)) return {path / "model.safetensors", path};
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".safetensors") found.push_back(e.path());
  if (found.empty()) throw LoadError(path.string() + ": no model.safetensors in the folder");
  if (found.size() > 1)
    throw LoadError(path.string() + ": " + std::to_string(found.size()) +
                    " .safetensors files and no model.safetensors: name the file to load");
  return {found.front(), path};
}

// config.json, in Hugging Face's keys or the book's (GPT_CONFIG_124M). has_qkv_bias_key says
// whether the book's config stated qkv_bias (else it is read off the tensors).
struct ConfigRead {
  GptConfig config;
  bool book_keys = false;
  bool has_qkv_bias_key = false;
};

ConfigRead read_config(const fs::path& file) {
  const std::string L = file.string();
  std::error_code ec;
  if (!fs::exists(file, ec)) throw LoadError(L + ": missing (the model's config.json must be beside its weights)");
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw LoadError(L + ": cannot read");
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw LoadError(L + ": not valid JSON");
  if (!j.is_object()) throw LoadError(L + ": not a JSON object of settings");

  auto positive = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      const auto it = j.find(k);
      if (it == j.end()) continue;
      // Sizes beyond 2^24 are no GPT anyone can load; the bound keeps products in int64.
      if (!it->is_number_integer() || it->get<std::int64_t>() <= 0 || it->get<std::int64_t>() > (1 << 24))
        throw LoadError(L + ": " + k + " is not a positive integer: " + it->dump());
      return static_cast<int>(it->get<std::int64_t>());
    }
    std::string names;
    for (const char* k : keys) names += std::string(names.empty() ? "" : " or ") + "\"" + k + "\"";
    throw LoadError(L + ": missing key " + names);
  };

  ConfigRead r;
  GptConfig& c = r.config;
  r.book_keys = j.contains("emb_dim") || j.contains("n_layers") || j.contains("context_length");
  if (r.book_keys) {
    c.vocab_size = positive({"vocab_size"});
    c.n_ctx = positive({"context_length"});
    c.n_embd = positive({"emb_dim"});
    c.n_head = positive({"n_heads"});
    c.n_layer = positive({"n_layers"});
    c.layer_norm_eps = 1e-5f;  // the book's LayerNorm
    if (const auto it = j.find("qkv_bias"); it != j.end()) {
      if (!it->is_boolean()) throw LoadError(L + ": qkv_bias is not true or false: " + it->dump());
      c.qkv_bias = it->get<bool>();
      r.has_qkv_bias_key = true;
    }
    if (const auto it = j.find("attn_only"); it != j.end()) {
      if (!it->is_boolean()) throw LoadError(L + ": attn_only is not true or false: " + it->dump());
      c.attn_only = it->get<bool>();
    }
  } else {
    if (!j.contains("n_layer") && !j.contains("model_type"))
      throw LoadError(L +
                      ": no model_type, nor GPT-2's keys (n_layer, n_head, n_embd) or the book's (emb_dim, n_layers, "
                      "context_length) (supported model_type: gpt2, qwen3, qwen2, llama, gemma3_text, gemma3)");
    c.n_layer = positive({"n_layer"});
    c.n_head = positive({"n_head"});
    c.n_embd = positive({"n_embd"});
    c.n_ctx = positive({"n_positions", "n_ctx"});
    c.vocab_size = positive({"vocab_size"});
    if (const auto it = j.find("layer_norm_epsilon"); it != j.end()) {
      if (!it->is_number() || !(it->get<double>() > 0.0) || it->get<double>() >= 1.0)
        throw LoadError(L + ": layer_norm_epsilon is not a small positive number: " + it->dump());
      c.layer_norm_eps = it->get<float>();
    }
    c.qkv_bias = true;
    // GPT2Config's switches to other computations than GPT-2's: refused, never ignored.
    if (const auto it = j.find("activation_function"); it != j.end() && !it->is_null())
      if (*it != "gelu_new" && *it != "gelu_pytorch_tanh")  // the same tanh formula
        throw LoadError(L + ": activation_function " + it->dump() +
                        " is not supported (mhaviz computes GPT-2's gelu_new)");
    for (const auto& [key, gpt2] : {std::pair{"scale_attn_weights", true}, {"scale_attn_by_inverse_layer_idx", false}})
      if (const auto it = j.find(key); it != j.end() && !it->is_null() && *it != gpt2)
        throw LoadError(L + ": " + key + " " + it->dump() + " is not supported (GPT-2's is " +
                        (gpt2 ? "true" : "false") + ")");
    if (const auto it = j.find("n_inner"); it != j.end() && !it->is_null() && *it != 4 * c.n_embd)
      throw LoadError(L + ": n_inner " + it->dump() +
                      " is not supported (GPT-2's MLP is 4 × n_embd = " + std::to_string(4 * c.n_embd) + " wide)");
  }
  if (c.n_embd % c.n_head != 0)
    throw LoadError(L + ": " + (r.book_keys ? "emb_dim " : "n_embd ") + std::to_string(c.n_embd) +
                    " is not a multiple of " + (r.book_keys ? "n_heads " : "n_head ") + std::to_string(c.n_head));
  return r;
}

// Copies named tensors out of the file into float32, checking each shape, releasing the
// file's pages behind it.
// Bytes read so far against the total a load will read, told to the caller's callback.
class Progress {
 public:
  Progress(const SafetensorsFile& f, const LoadProgress* callback) : callback_(callback) {
    for (const StTensor& t : f.tensors())
      if (dtype_is_float(t.dtype)) total_ += t.end - t.begin;
  }
  void add(std::uint64_t bytes) {
    done_ = std::min(total_, done_ + bytes);
    if (callback_ && *callback_ && !(*callback_)(done_, total_)) throw LoadCancelled("load cancelled");
  }
  void finish() {
    done_ = total_;
    add(0);
  }

 private:
  const LoadProgress* callback_;
  std::uint64_t done_ = 0, total_ = 0;
};

class TensorSource {
 public:
  TensorSource(const SafetensorsFile& f, std::string prefix, Progress& progress)
      : f_(f), prefix_(std::move(prefix)), progress_(progress) {}

  bool has(const std::string& name) const { return f_.find(prefix_ + name) != nullptr; }

  // The file's tensor `name` (prefix added) of shape `shape`, as stored.
  void take(const std::string& name, const Shape& shape, std::vector<float>& out) const {
    const StTensor& t = need(name, shape);
    out.resize(static_cast<std::size_t>(t.numel()));
    f_.read(t, out.data());
    done(t);
  }
  // Into a slice of a larger buffer (the book's W_query/W_key/W_value into one qkv).
  void take_into(const std::string& name, const Shape& shape, float* out) const {
    const StTensor& t = need(name, shape);
    f_.read(t, out);
    done(t);
  }
  // Conv1D: stored [in, out], wanted [out, in].
  void take_transposed(const std::string& name, const Shape& stored, std::vector<float>& out) const {
    const StTensor& t = need(name, stored);
    out.resize(static_cast<std::size_t>(t.numel()));
    f_.read_transposed(t, out.data());
    done(t);
  }

 private:
  void done(const StTensor& t) const {
    f_.release(t);
    progress_.add(t.end - t.begin);
  }

  const StTensor& need(const std::string& name, const Shape& shape) const {
    const StTensor* t = f_.find(prefix_ + name);
    if (!t) throw LoadError(f_.label() + ": tensor " + prefix_ + name + " is missing");
    if (t->shape != shape)
      throw LoadError(f_.label() + ": tensor " + prefix_ + name + " has shape " + shape_list_string(t->shape) +
                      ", expected " + shape_list_string(shape));
    return *t;
  }

  const SafetensorsFile& f_;
  std::string prefix_;
  Progress& progress_;
};

// How many blocks the file holds: the count of consecutive indices N from 0 with some
// tensor named `stem`N".…".
int blocks_held(const SafetensorsFile& f, const std::string& stem) {
  std::vector<bool> held;
  for (const StTensor& t : f.tensors()) {
    if (t.name.rfind(stem, 0) != 0) continue;
    const std::size_t dot = t.name.find('.', stem.size());
    if (dot == std::string::npos || dot == stem.size() || dot - stem.size() > 6) continue;
    const std::string digits = t.name.substr(stem.size(), dot - stem.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) continue;
    const auto i = static_cast<std::size_t>(std::stoi(digits));
    if (held.size() <= i) held.resize(i + 1, false);
    held[i] = true;
  }
  int n = 0;
  while (n < static_cast<int>(held.size()) && held[static_cast<std::size_t>(n)]) ++n;
  return n;
}

void set_linear(Linear& l, std::string name, int in, int out) {
  l.name = std::move(name);
  l.in = in;
  l.out = out;
}

void check_layers(const SafetensorsFile& f, const fs::path& config_file, const GptConfig& c, bool book_keys,
                  const std::string& stem) {
  const int held = blocks_held(f, stem);
  if (c.n_layer > held)
    throw LoadError(config_file.string() + ": " + (book_keys ? "n_layers " : "n_layer ") + std::to_string(c.n_layer) +
                    " is more layers than " + f.label() + " holds (" + std::to_string(held) + ")");
}

// Hugging Face GPT-2: Conv1D weights [in, out] transposed; mask buffers ignored.
void load_hf(const SafetensorsFile& f, const std::string& prefix, Progress& progress, GptModel& m) {
  const GptConfig& c = m.config;
  const std::int64_t E = c.n_embd, V = c.vocab_size, P = c.n_ctx;
  const TensorSource src(f, prefix, progress);
  src.take("wte.weight", {V, E}, m.wte);
  src.take("wpe.weight", {P, E}, m.wpe);
  m.blocks.resize(static_cast<std::size_t>(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    GptBlock& b = m.blocks[static_cast<std::size_t>(i)];
    const std::string h = "h." + std::to_string(i) + ".";
    src.take(h + "ln_1.weight", {E}, b.ln1_weight);
    src.take(h + "ln_1.bias", {E}, b.ln1_bias);
    set_linear(b.qkv, prefix + h + "attn.c_attn", c.n_embd, 3 * c.n_embd);
    src.take_transposed(h + "attn.c_attn.weight", {E, 3 * E}, b.qkv.weight);
    src.take(h + "attn.c_attn.bias", {3 * E}, b.qkv.bias);
    set_linear(b.proj, prefix + h + "attn.c_proj", c.n_embd, c.n_embd);
    src.take_transposed(h + "attn.c_proj.weight", {E, E}, b.proj.weight);
    src.take(h + "attn.c_proj.bias", {E}, b.proj.bias);
    src.take(h + "ln_2.weight", {E}, b.ln2_weight);
    src.take(h + "ln_2.bias", {E}, b.ln2_bias);
    set_linear(b.fc, prefix + h + "mlp.c_fc", c.n_embd, 4 * c.n_embd);
    src.take_transposed(h + "mlp.c_fc.weight", {E, 4 * E}, b.fc.weight);
    src.take(h + "mlp.c_fc.bias", {4 * E}, b.fc.bias);
    set_linear(b.fc_proj, prefix + h + "mlp.c_proj", 4 * c.n_embd, c.n_embd);
    src.take_transposed(h + "mlp.c_proj.weight", {4 * E, E}, b.fc_proj.weight);
    src.take(h + "mlp.c_proj.bias", {E}, b.fc_proj.bias);
  }
  src.take("ln_f.weight", {E}, m.lnf_weight);
  src.take("ln_f.bias", {E}, m.lnf_bias);
  // lm_head sits outside `transformer.`; absent, the head is tied to wte (left empty).
  const TensorSource top(f, "", progress);
  set_linear(m.lm_head, "lm_head", c.n_embd, c.vocab_size);
  if (top.has("lm_head.weight")) top.take("lm_head.weight", {V, E}, m.lm_head.weight);
}

// The book's GPTModel: nn.Linear [out, in] everywhere; W_query, W_key, W_value stacked.
void load_book(const SafetensorsFile& f, const fs::path& config_file, bool has_qkv_bias_key, Progress& progress,
               GptModel& m) {
  GptConfig& c = m.config;
  const std::int64_t E = c.n_embd, V = c.vocab_size, P = c.n_ctx;
  const TensorSource src(f, "", progress);
  const bool file_bias = src.has("trf_blocks.0.att.W_query.bias");
  if (!has_qkv_bias_key) c.qkv_bias = file_bias;
  if (!c.qkv_bias && file_bias)
    throw LoadError(config_file.string() + ": qkv_bias is false but " + f.label() +
                    " holds trf_blocks.0.att.W_query.bias");
  src.take("tok_emb.weight", {V, E}, m.wte);
  src.take("pos_emb.weight", {P, E}, m.wpe);
  m.blocks.resize(static_cast<std::size_t>(c.n_layer));
  const auto plane = static_cast<std::size_t>(E * E);
  for (int i = 0; i < c.n_layer; ++i) {
    GptBlock& b = m.blocks[static_cast<std::size_t>(i)];
    const std::string t = "trf_blocks." + std::to_string(i) + ".";
    if (!c.attn_only) {
      src.take(t + "norm1.scale", {E}, b.ln1_weight);
      src.take(t + "norm1.shift", {E}, b.ln1_bias);
    }
    set_linear(b.qkv, t + "att.W_query|W_key|W_value", c.n_embd, 3 * c.n_embd);
    b.qkv.weight.resize(3 * plane);
    const char* parts[] = {"att.W_query", "att.W_key", "att.W_value"};
    for (std::size_t k = 0; k < 3; ++k)
      src.take_into(t + parts[k] + ".weight", {E, E}, b.qkv.weight.data() + k * plane);
    if (c.qkv_bias) {
      b.qkv.bias.resize(static_cast<std::size_t>(3 * E));
      for (std::size_t k = 0; k < 3; ++k)
        src.take_into(t + parts[k] + ".bias", {E}, b.qkv.bias.data() + k * static_cast<std::size_t>(E));
    }
    set_linear(b.proj, t + "att.out_proj", c.n_embd, c.n_embd);
    src.take(t + "att.out_proj.weight", {E, E}, b.proj.weight);
    src.take(t + "att.out_proj.bias", {E}, b.proj.bias);
    if (c.attn_only) continue;
    src.take(t + "norm2.scale", {E}, b.ln2_weight);
    src.take(t + "norm2.shift", {E}, b.ln2_bias);
    set_linear(b.fc, t + "ff.layers.0", c.n_embd, 4 * c.n_embd);
    src.take(t + "ff.layers.0.weight", {4 * E, E}, b.fc.weight);
    src.take(t + "ff.layers.0.bias", {4 * E}, b.fc.bias);
    set_linear(b.fc_proj, t + "ff.layers.2", 4 * c.n_embd, c.n_embd);
    src.take(t + "ff.layers.2.weight", {E, 4 * E}, b.fc_proj.weight);
    src.take(t + "ff.layers.2.bias", {E}, b.fc_proj.bias);
  }
  if (!c.attn_only) {
    src.take("final_norm.scale", {E}, m.lnf_weight);
    src.take("final_norm.shift", {E}, m.lnf_bias);
  }
  set_linear(m.lm_head, "out_head", c.n_embd, c.vocab_size);
  src.take("out_head.weight", {V, E}, m.lm_head.weight);
}

}  // namespace

std::int64_t GptModel::parameter_count() const {
  auto n = [](const std::vector<float>& v) { return static_cast<std::int64_t>(v.size()); };
  // A prepared model may hold a Linear only packed (gpt_forward.hpp): count it by its shape.
  auto lin = [&](const Linear& l) {
    const bool held = !l.weight.empty() || !l.packed.empty();
    return (held ? static_cast<std::int64_t>(l.out) * l.in : 0) + n(l.bias);
  };
  std::int64_t total = n(wte) + n(wpe) + n(lnf_weight) + n(lnf_bias) + lin(lm_head);
  for (const GptBlock& b : blocks)
    total += n(b.ln1_weight) + n(b.ln1_bias) + n(b.ln2_weight) + n(b.ln2_bias) + lin(b.qkv) + lin(b.proj) + lin(b.fc) +
             lin(b.fc_proj);
  return total;
}

GptModel load_gpt(const fs::path& path) { return load_gpt(path, LoadProgress{}); }

GptModel load_gpt(const fs::path& path, const LoadProgress& callback) {
  const Located where = locate(path);
  const fs::path config_file = where.folder / "config.json";
  // The weights are checked first: a broken file is the likelier and more specific error.
  const SafetensorsFile f = SafetensorsFile::open(where.weights);
  const ConfigRead cr = read_config(config_file);

  Progress progress(f, &callback);
  GptModel m;
  m.config = cr.config;
  m.weights_file = where.weights;
  m.folder = where.folder;
  if (f.find("tok_emb.weight")) {
    m.layout = GptLayout::Book;
    check_layers(f, config_file, m.config, cr.book_keys, "trf_blocks.");
    load_book(f, config_file, cr.has_qkv_bias_key, progress, m);
  } else if (f.find("transformer.wte.weight") || f.find("wte.weight")) {
    const std::string prefix = f.find("transformer.wte.weight") ? "transformer." : "";
    m.layout = GptLayout::HuggingFace;
    check_layers(f, config_file, m.config, cr.book_keys, prefix + "h.");
    load_hf(f, prefix, progress, m);
  } else {
    throw LoadError(f.label() + ": neither a GPT-2 (wte.weight) nor a book GPTModel (tok_emb.weight): " +
                    std::to_string(f.tensors().size()) + " tensors, none of those names");
  }
  progress.finish();
  return m;
}

}  // namespace mhaviz
