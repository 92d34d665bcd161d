// config.json (hf_config.hpp). The defaults are those of transformers' config classes for
// each model_type, cited per field as "qwen3 / qwen2 / llama / gemma3_text":
//   configuration_qwen3.py (Qwen3Config), configuration_qwen2.py (Qwen2Config),
//   configuration_llama.py (LlamaConfig), configuration_gemma3.py (Gemma3TextConfig).
// RoPE comes either as rope_theta + rope_scaling (files written before transformers 5) or as
// rope_parameters (transformers 5; Gemma 3 per layer type).
#include "mhaviz/hf_config.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

namespace mhaviz {

namespace {

using json = nlohmann::json;

constexpr std::string_view kSupported = "qwen3, qwen2, llama, gemma3_text, gemma3";

// The defaults of one architecture's transformers config class.
struct Defaults {
  int kv_heads;  // -1: num_attention_heads
  int head_dim;  // -1: hidden_size / num_attention_heads
  double rope_theta;
  int max_position_embeddings;
  bool tie_word_embeddings;
  const char* activation;
  int bos, eos;  // -1: None
};
// Qwen3Config: num_key_value_heads 32, head_dim 128, rope_theta 10000, max_position 32768,
// tie False, silu. Qwen2Config: the same but head_dim = hidden / heads (Qwen2Attention's
// getattr fallback). LlamaConfig: K/V heads = heads, head_dim = hidden / heads, rope_theta
// 10000, max_position 2048, bos 1, eos 2. Gemma3TextConfig: K/V heads 4, head_dim 256,
// rope_theta 1e6, max_position 131072, tie True, gelu_pytorch_tanh, bos 2, eos 1.
Defaults defaults_of(HfArch a) {
  switch (a) {
    case HfArch::Qwen3: return {32, 128, 10000.0, 32768, false, "silu", -1, -1};
    case HfArch::Qwen2: return {32, -1, 10000.0, 32768, false, "silu", -1, -1};
    case HfArch::Llama: return {-1, -1, 10000.0, 2048, false, "silu", 1, 2};
    case HfArch::Gemma3: return {4, 256, 1000000.0, 131072, true, "gelu_pytorch_tanh", 2, 1};
  }
  return {};
}

struct Reader {
  const json& j;
  std::string source;

  [[noreturn]] void fail(const std::string& problem) const { throw LoadError(source + ": " + problem); }
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  std::string shown(const char* key) const {
    std::string s = j[key].dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  }
  int integer(const char* key, int fallback, bool required = false) const {
    if (!has(key)) {
      if (required) fail(std::string(key) + " is missing");
      return fallback;
    }
    if (!j[key].is_number_integer()) fail(std::string(key) + " is " + shown(key) + ", not an integer");
    const auto v = j[key].get<std::int64_t>();
    if (v < -1 || v > (1LL << 31) - 1) fail(std::string(key) + " is " + shown(key) + ", out of range");
    return static_cast<int>(v);
  }
  int positive(const char* key, int fallback, bool required = false) const {
    const int v = integer(key, fallback, required);
    if (v <= 0) fail(std::string(key) + " is " + std::to_string(v) + ", not a positive integer");
    return v;
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number()) fail(std::string(key) + " is " + shown(key) + ", not a number");
    return j[key].get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) fail(std::string(key) + " is " + shown(key) + ", not true or false");
    return j[key].get<bool>();
  }
  std::string text(const char* key, const char* fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) fail(std::string(key) + " is " + shown(key) + ", not a string");
    return j[key].get<std::string>();
  }
};

// One RoPE dictionary: rope_scaling {"rope_type"|"type", "factor", ...} or one entry of
// rope_parameters (which also holds "rope_theta").
HfRope read_rope(const Reader& r, const json& d, const std::string& where, double theta) {
  HfRope rope;
  rope.theta = theta;
  if (d.is_null()) return rope;
  if (!d.is_object()) r.fail(where + " is " + d.dump() + ", not an object");
  const Reader sub{d, r.source};
  auto field = [&](const char* key) {
    if (!sub.has(key)) r.fail(where + "." + key + " is missing");
    if (!d[key].is_number()) r.fail(where + "." + key + " is " + d[key].dump() + ", not a number");
    return d[key].get<double>();
  };
  if (sub.has("rope_theta")) rope.theta = field("rope_theta");
  if (sub.has("partial_rotary_factor") && field("partial_rotary_factor") != 1.0)
    r.fail(where + ".partial_rotary_factor " + d["partial_rotary_factor"].dump() +
           " is not supported (RoPE over the whole head only)");
  // Files before transformers 4.45 say "type", later ones "rope_type".
  const char* type_key = sub.has("rope_type") ? "rope_type" : "type";
  const std::string type = sub.text(type_key, "default");
  if (type == "default") {
    rope.scaling = HfRope::Scaling::None;
  } else if (type == "linear") {
    rope.scaling = HfRope::Scaling::Linear;
    rope.factor = field("factor");
  } else if (type == "llama3") {
    rope.scaling = HfRope::Scaling::Llama3;
    rope.factor = field("factor");
    rope.low_freq_factor = field("low_freq_factor");
    rope.high_freq_factor = field("high_freq_factor");
    rope.original_max_position_embeddings = field("original_max_position_embeddings");
    // Wavelengths are compared with original_max_position_embeddings / each factor.
    for (const char* key : {"low_freq_factor", "original_max_position_embeddings"})
      if (!(d[key].get<double>() > 0)) r.fail(where + "." + key + " " + d[key].dump() + " is not positive");
    if (rope.high_freq_factor <= rope.low_freq_factor)
      r.fail(where + ".high_freq_factor " + d["high_freq_factor"].dump() + " is not above low_freq_factor " +
             d["low_freq_factor"].dump());
  } else {
    r.fail(where + "." + type_key + " \"" + type + "\" is not supported (default, linear, llama3)");
  }
  if (rope.factor <= 0) r.fail(where + ".factor " + d["factor"].dump() + " is not positive");
  if (!(rope.theta > 0)) r.fail(where + ".rope_theta " + std::to_string(rope.theta) + " is not positive");
  return rope;
}

// Which layers use the sliding window, as each config class derives it when the file has no
// layer_types: Gemma3TextConfig every layer but each sliding_window_pattern-th (default 6:
// five sliding, one full); Qwen2/Qwen3Config layers from max_window_layers (default 28) on,
// only with use_sliding_window (default false).
void read_layers(const Reader& r, HfConfig& c) {
  const int n = c.num_hidden_layers;
  c.sliding.assign(static_cast<std::size_t>(n), false);
  if (c.arch == HfArch::Gemma3) {
    c.sliding_window = r.integer("sliding_window", 4096);  // gemma3_text: 4096 (the released models say 512 or 1024)
  } else if (c.arch != HfArch::Llama && r.flag("use_sliding_window", false)) {
    c.sliding_window = r.integer("sliding_window", 4096);  // qwen3 / qwen2: 4096
  }
  if (c.sliding_window < 0) r.fail("sliding_window is " + std::to_string(c.sliding_window) + ", below 0");
  if (r.has("layer_types")) {
    const json& t = r.j["layer_types"];
    if (!t.is_array() || static_cast<int>(t.size()) != n)
      r.fail("layer_types is not a list of num_hidden_layers (" + std::to_string(n) + ") entries");
    for (int i = 0; i < n; ++i) {
      const json& v = t[static_cast<std::size_t>(i)];
      if (v != "full_attention" && v != "sliding_attention")
        r.fail("layer_types[" + std::to_string(i) + "] is " + v.dump() +
               ", not \"full_attention\" or \"sliding_attention\"");
      c.sliding[static_cast<std::size_t>(i)] = v == "sliding_attention" && c.sliding_window > 0;
    }
    return;
  }
  if (c.sliding_window == 0) return;
  if (c.arch == HfArch::Gemma3) {
    const int pattern = r.positive("sliding_window_pattern", 6);
    for (int i = 0; i < n; ++i) c.sliding[static_cast<std::size_t>(i)] = (i + 1) % pattern != 0;
  } else {
    const int from = r.integer("max_window_layers", 28);
    for (int i = from < 0 ? 0 : from; i < n; ++i) c.sliding[static_cast<std::size_t>(i)] = true;
  }
}

void read_rope_fields(const Reader& r, HfConfig& c, double default_theta) {
  const double theta = r.number("rope_theta", default_theta);
  // Gemma3TextConfig: rope_local_base_freq 10000, sliding layers unscaled.
  const double local_theta = r.number("rope_local_base_freq", 10000.0);
  // A base's powers give the frequencies: one of 0 or below gives none (NaN or infinite angles).
  if (!(theta > 0)) r.fail("rope_theta " + r.j["rope_theta"].dump() + " is not positive");
  if (c.arch == HfArch::Gemma3 && !(local_theta > 0))
    r.fail("rope_local_base_freq " + r.j["rope_local_base_freq"].dump() + " is not positive");
  if (r.has("rope_parameters")) {
    const json& p = r.j["rope_parameters"];
    if (p.is_object() && (p.contains("full_attention") || p.contains("sliding_attention"))) {
      c.rope = read_rope(r, p.value("full_attention", json()), "rope_parameters.full_attention", theta);
      c.rope_local =
          read_rope(r, p.value("sliding_attention", json()), "rope_parameters.sliding_attention", local_theta);
    } else {
      c.rope = read_rope(r, p, "rope_parameters", theta);
      c.rope_local = c.arch == HfArch::Gemma3 ? read_rope(r, json(), "", local_theta) : c.rope;
    }
    return;
  }
  c.rope = read_rope(r, r.has("rope_scaling") ? r.j["rope_scaling"] : json(), "rope_scaling", theta);
  c.rope_local = c.arch == HfArch::Gemma3 ? read_rope(r, json(), "", local_theta) : c.rope;
}

HfConfig read_text_model(const Reader& r, HfArch arch, std::string model_type, bool nested = false) {
  HfConfig c;
  c.arch = arch;
  c.model_type = std::move(model_type);
  const Defaults d = defaults_of(arch);
  // 1. Sizes: save_pretrained writes them all at the top level, so none may be missing
  // there. A nested text_config is written as its difference from Gemma3TextConfig and
  // leaves out what equals the class's defaults (hidden 2304, intermediate 9216, 26
  // layers, 8 heads, vocabulary 262208).
  const bool need = !nested;
  c.hidden_size = r.positive("hidden_size", 2304, need);
  c.num_hidden_layers = r.positive("num_hidden_layers", 26, need);
  c.num_attention_heads = r.positive("num_attention_heads", 8, need);
  c.intermediate_size = r.positive("intermediate_size", 9216, need);
  c.vocab_size = r.positive("vocab_size", 262208, need);
  c.num_key_value_heads = r.positive("num_key_value_heads", d.kv_heads < 0 ? c.num_attention_heads : d.kv_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail("num_attention_heads " + std::to_string(c.num_attention_heads) +
           " is not a multiple of num_key_value_heads " + std::to_string(c.num_key_value_heads));
  if (d.head_dim < 0 && !r.has("head_dim") && c.hidden_size % c.num_attention_heads != 0)
    r.fail("hidden_size " + std::to_string(c.hidden_size) + " is not a multiple of num_attention_heads " +
           std::to_string(c.num_attention_heads) + " and there is no head_dim");
  c.head_dim = r.positive("head_dim", d.head_dim < 0 ? c.hidden_size / c.num_attention_heads : d.head_dim);
  if (c.head_dim % 2 != 0) r.fail("head_dim " + std::to_string(c.head_dim) + " is odd: RoPE rotates pairs of features");
  c.max_position_embeddings = r.positive("max_position_embeddings", d.max_position_embeddings);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);  // 1e-6 in all four classes
  if (!(c.rms_norm_eps > 0)) r.fail("rms_norm_eps " + std::to_string(c.rms_norm_eps) + " is not positive");

  // 2. The block's parts.
  c.tie_word_embeddings = r.flag("tie_word_embeddings", d.tie_word_embeddings);
  const bool attention_bias = r.flag("attention_bias", false);  // false in all four; Qwen2 has no such field
  c.qkv_bias = arch == HfArch::Qwen2 || attention_bias;         // Qwen2Attention: q/k/v bias=True, o_proj bias=False
  c.o_bias = arch != HfArch::Qwen2 && attention_bias;
  c.mlp_bias = r.flag("mlp_bias", false);  // llama: False
  c.qk_norm = arch == HfArch::Qwen3 || arch == HfArch::Gemma3;
  c.gemma_norms = arch == HfArch::Gemma3;
  // Gemma3TextConfig calls it hidden_activation; the others hidden_act.
  const std::string act = arch == HfArch::Gemma3 && r.has("hidden_activation")
                              ? r.text("hidden_activation", d.activation)
                              : r.text("hidden_act", d.activation);
  if (act == "silu" || act == "swish")
    c.activation = HfConfig::Activation::SiLU;
  else if (act == "gelu_pytorch_tanh" || act == "gelu_new")
    c.activation = HfConfig::Activation::GeluTanh;
  else
    r.fail(std::string(arch == HfArch::Gemma3 ? "hidden_activation" : "hidden_act") + " \"" + act +
           "\" is not supported (silu, gelu_pytorch_tanh)");
  for (const char* cap : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (r.has(cap))
      r.fail(std::string(cap) + " is " + r.shown(cap) + ": softcapping is not supported (Gemma 3 has it null)");
  if (r.flag("use_bidirectional_attention", false))
    r.fail("use_bidirectional_attention is true: only causal decoders are supported");

  // 3. Attention: RoPE, sliding layers, score scale, embedding scale.
  read_rope_fields(r, c, d.rope_theta);
  read_layers(r, c);
  // gemma3_text: query_pre_attn_scalar 256; the others scale by 1/sqrt(head_dim).
  c.query_pre_attn_scalar = arch == HfArch::Gemma3 ? r.number("query_pre_attn_scalar", 256.0) : c.head_dim;
  if (!(c.query_pre_attn_scalar > 0)) r.fail("query_pre_attn_scalar is not positive");
  c.embedding_scale = arch == HfArch::Gemma3 ? std::sqrt(static_cast<double>(c.hidden_size)) : 1.0;

  // 4. Special tokens.
  c.bos_token_id = r.integer("bos_token_id", d.bos);
  if (r.has("eos_token_id") && r.j["eos_token_id"].is_array()) {
    for (const json& e : r.j["eos_token_id"]) {
      if (!e.is_number_integer()) r.fail("eos_token_id holds " + e.dump() + ", not an integer");
      c.eos_token_ids.push_back(e.get<int>());
    }
  } else if (const int eos = r.integer("eos_token_id", d.eos); eos >= 0) {
    c.eos_token_ids.push_back(eos);
  }
  return c;
}

}  // namespace

std::vector<double> HfRope::inv_freq(int head_dim) const {
  std::vector<double> f(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < f.size(); ++i) {
    double v = 1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim);
    if (scaling == Scaling::Linear) v /= factor;
    if (scaling == Scaling::Llama3) {
      // Wavelengths above original/low_freq_factor are divided by factor, those below
      // original/high_freq_factor kept, those between interpolated.
      const double wavelen = 2 * std::numbers::pi / v;
      const double low_wavelen = original_max_position_embeddings / low_freq_factor;
      const double high_wavelen = original_max_position_embeddings / high_freq_factor;
      if (wavelen > low_wavelen) {
        v /= factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (original_max_position_embeddings / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
        v = (1 - smooth) * v / factor + smooth * v;
      }
    }
    f[i] = v;
  }
  return f;
}

double HfConfig::score_scale() const { return 1.0 / std::sqrt(query_pre_attn_scalar); }

std::string_view hf_supported_model_types() { return kSupported; }

std::string_view hf_arch_name(HfArch a) {
  switch (a) {
    case HfArch::Qwen3: return "Qwen3";
    case HfArch::Qwen2: return "Qwen2";
    case HfArch::Llama: return "Llama";
    case HfArch::Gemma3: return "Gemma 3";
  }
  return "?";
}

HfConfig parse_hf_config(std::string_view json_text, std::string_view source) {
  const std::string src(source);
  json j;
  try {
    j = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    std::string what = e.what();
    const auto pos = what.find("] ");
    throw LoadError(src + ": not valid JSON (" + (pos == std::string::npos ? what : what.substr(pos + 2)) + ")");
  }
  if (!j.is_object()) throw LoadError(src + ": not a JSON object");
  const Reader top{j, src};
  if (!top.has("model_type")) top.fail("model_type is missing (supported: " + std::string(kSupported) + ")");
  const std::string type = top.text("model_type", "");
  if (type == "qwen3") return read_text_model(top, HfArch::Qwen3, type);
  if (type == "qwen2") return read_text_model(top, HfArch::Qwen2, type);
  if (type == "llama") return read_text_model(top, HfArch::Llama, type);
  if (type == "gemma3_text") return read_text_model(top, HfArch::Gemma3, type);
  if (type == "gemma3") {
    // Gemma 3 4B and larger: an image model around a gemma3_text language model.
    if (!j.contains("text_config") || !j["text_config"].is_object())
      top.fail("model_type \"gemma3\" has no text_config object");
    json text = j["text_config"];
    if (!text.contains("tie_word_embeddings") && j.contains("tie_word_embeddings"))
      text["tie_word_embeddings"] = j["tie_word_embeddings"];
    HfConfig c = read_text_model(Reader{text, src + " text_config"}, HfArch::Gemma3, type, true);
    c.from_text_config = true;
    return c;
  }
  top.fail("model_type \"" + type + "\" is not supported (supported: " + std::string(kSupported) + ")");
}

HfConfig read_hf_config(const std::filesystem::path& config_json) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config_json, ec))
    throw LoadError(config_json.string() + ": does not exist or is not a file");
  std::ifstream in(config_json, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw LoadError(config_json.string() + ": cannot be read");
  return parse_hf_config(ss.str(), config_json.string());
}

}  // namespace mhaviz
