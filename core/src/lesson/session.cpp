#include "mhaviz/session.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mhaviz/safetensors.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

using json = nlohmann::json;

namespace {

// Messages are one line whatever the file holds: a key or value with a control character
// (a newline inside a field name, say) is written escaped.
std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

[[noreturn]] void fail(const std::string& field, const std::string& problem) {
  throw SessionError(one_line(field + ": " + problem));
}

// A value as the user wrote it, short enough for a one-line message.
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string type_name(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number_float()) return "a number";
  return std::string(v.is_array() ? "an array" : v.is_object() ? "an object" : v.is_string() ? "a string"
                     : v.is_boolean() ? "a boolean" : "null");
}

const json& require(const json& obj, const std::string& prefix, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(prefix + key, "missing (required field)");
  return *it;
}

void reject_unknown(const json& obj, const std::string& where, std::initializer_list<const char*> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) {
      std::string key = it.key();
      if (key.size() > 40) key = key.substr(0, 37) + "...";
      fail(where.empty() ? key : where + "." + key, "unknown field (value " + show(it.value()) + ")");
    }
  }
}

std::int64_t get_int(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    fail(field, show(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  if (!v.is_number_integer()) fail(field, "expected an integer, got " + type_name(v) + " " + show(v));
  const std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi) fail(field, show(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

bool get_bool(const json& v, const std::string& field) {
  if (!v.is_boolean()) fail(field, "expected true or false, got " + type_name(v) + " " + show(v));
  return v.get<bool>();
}

// Nesting depth outside strings, checked before parsing so that hostile input
// cannot exhaust the stack of anything that walks the tree.
void check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (char ch : text) {
    if (in_string) {
      if (escape) escape = false;
      else if (ch == '\\') escape = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > Limits::kMaxJsonDepth)
        fail("session", "JSON nested deeper than " + std::to_string(Limits::kMaxJsonDepth) + " levels");
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
}

// A float written with the fewest digits that read back to the same float (0.43, not 0.4300000071525574).
json float_json(float f) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, f);
  return json(std::strtod(std::string(buf, res.ptr).c_str(), nullptr));
}

std::string human_bytes(std::int64_t b) {
  char buf[64];
  if (b >= (std::int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1 << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

// Every parameter the config builds is in the file with its shape, and the file holds nothing
// else (a tensor of another module would be silently ignored otherwise).
void check_parameter_file(const ParameterFile& file, const ModelConfig& c, int d_in) {
  const std::vector<ParameterSpec> specs = parameter_specs(c, d_in);
  const std::string what = std::string(variant_name(c.variant)) + " module with d_in " + std::to_string(d_in) + ", d_out " +
                           std::to_string(c.d_out) + ", " + std::to_string(c.num_heads) + " heads" +
                           (c.qkv_bias ? ", qkv_bias" : "");
  for (const ParameterSpec& p : specs) {
    const auto it = file.tensors.find(p.name);
    if (it == file.tensors.end())
      fail("model.weights", file.path + ": no tensor " + p.name + " " + shape_list_string(p.shape) + ", which the " + what + " needs");
    if (it->second.shape != p.shape)
      fail("model.weights", file.path + ": " + p.name + " is " + shape_list_string(it->second.shape) + " but the " + what + " needs " +
                                shape_list_string(p.shape));
  }
  for (const auto& entry : file.tensors) {
    const std::string& name = entry.first;  // a structured binding cannot be captured before clang 16
    if (std::none_of(specs.begin(), specs.end(), [&](const ParameterSpec& p) { return p.name == name; }))
      fail("model.weights", file.path + ": " + name + " is not a parameter of the " + what);
  }
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The fields that make a trained model's layer this module (hf_layer.hpp): each needs the
// option it refines.
void check_model_fields(const ModelConfig& c, const std::string& variant) {
  if (c.qk_norm_eps != 1e-6) {
    if (!(c.qk_norm_eps > 0.0 && c.qk_norm_eps <= 1.0))
      fail("model.qk_norm_eps", number(c.qk_norm_eps) + " is out of range (0, 1]");
    if (!c.qk_norm) fail("model.qk_norm_eps", number(c.qk_norm_eps) + " is set but model.qk_norm is false");
  }
  if (!c.rope_inv_freq.empty()) {
    if (c.rope_base == 0.0) fail("model.rope_inv_freq", "is set but model.rope_base is null (RoPE is off)");
    const std::size_t half = static_cast<std::size_t>(head_dim(c) / 2);
    if (c.rope_inv_freq.size() != half)
      fail("model.rope_inv_freq", std::to_string(c.rope_inv_freq.size()) + " values, but head_dim / 2 = " +
                                      std::to_string(half) + " (one per rotated pair)");
    for (std::size_t i = 0; i < half; ++i)
      if (!(std::isfinite(c.rope_inv_freq[i]) && c.rope_inv_freq[i] > 0.0))
        fail("model.rope_inv_freq[" + std::to_string(i) + "]",
             number(c.rope_inv_freq[i]) + " is not a positive number");
  }
  if (c.query_pre_attn_scalar != 0.0) {
    if (!(c.query_pre_attn_scalar > 0.0 && c.query_pre_attn_scalar <= Limits::kMaxRopeBase))
      fail("model.query_pre_attn_scalar", number(c.query_pre_attn_scalar) + " is out of range (0, 1e9]");
    if (!is_split(c.variant))
      fail("model.query_pre_attn_scalar", number(c.query_pre_attn_scalar) + " is set but " + variant +
                                              " scales each head by its own d_out (only the split variants take it)");
  }
  if (c.out_dim != 0) {
    if (c.out_dim < 1 || c.out_dim > Limits::kMaxDim)
      fail("model.out_dim",
           std::to_string(c.out_dim) + " is out of range [1, " + std::to_string(Limits::kMaxDim) + "]");
    if (c.variant != Variant::Gqa)
      fail("model.out_dim", std::to_string(c.out_dim) + " is set but " + variant + " projects to d_out (only \"gqa\")");
  }
}

// The fields of the book's bonus variants (session version 3): each on the variants that have it.
void check_variant_fields(const ModelConfig& c) {
  const std::string variant = "model.variant = \"" + std::string(variant_name(c.variant)) + "\"";
  if (c.variant == Variant::Gqa) {
    if (c.num_kv_groups < 1 || c.num_kv_groups > c.num_heads)
      fail("model.num_kv_groups", std::to_string(c.num_kv_groups) + " is out of range [1, " +
                                      std::to_string(c.num_heads) +
                                      "] (the number of K/V heads, at most model.num_heads)");
    if (c.num_heads % c.num_kv_groups != 0)
      fail("model.num_kv_groups", std::to_string(c.num_kv_groups) +
                                      " does not divide model.num_heads = " + std::to_string(c.num_heads) +
                                      " (each K/V head serves an equal group of query heads)");
  } else if (c.num_kv_groups != 0) {
    fail("model.num_kv_groups",
         std::to_string(c.num_kv_groups) + " is set but " + variant + " has no K/V groups (only \"gqa\")");
  }
  if (c.variant == Variant::Mla) {
    if (c.latent_dim < 1 || c.latent_dim > Limits::kMaxDim)
      fail("model.latent_dim",
           std::to_string(c.latent_dim) + " is out of range [1, " + std::to_string(Limits::kMaxDim) + "]");
  } else if (c.latent_dim != 0) {
    fail("model.latent_dim", std::to_string(c.latent_dim) + " is set but " + variant + " has no latent (only \"mla\")");
  }
  if (c.sliding_window != 0) {
    if (c.sliding_window < 1)
      fail("model.sliding_window", std::to_string(c.sliding_window) + " is below 1 (null turns the window off)");
    if (!is_split(c.variant))
      fail("model.sliding_window", std::to_string(c.sliding_window) + " is set but " + variant +
                                       " has no window (the split variants have: weight_split, fused_qkv, gqa, mla)");
    if (!c.causal)
      fail("model.sliding_window",
           std::to_string(c.sliding_window) + " needs model.causal = true (the window looks back from each query)");
  }
  if (c.rope_base != 0.0) {
    char value[64];
    std::snprintf(value, sizeof value, "%g", c.rope_base);
    if (!(c.rope_base > 1.0 && c.rope_base <= Limits::kMaxRopeBase))
      fail("model.rope_base", std::string(value) + " is out of range (1, 1e9] (null turns RoPE off)");
    if (c.variant == Variant::Mla)
      fail("model.rope_base", std::string(value) + " is set but " + variant +
                                  " has no RoPE here (real MLA models rotate a separate, decoupled key part, "
                                  "which this lesson does not model)");
    if (!is_split(c.variant))
      fail("model.rope_base", std::string(value) + " is set but " + variant +
                                  " has no RoPE (the split variants have: weight_split, fused_qkv, gqa)");
    if (c.d_out % c.num_heads == 0 && head_dim(c) % 2 != 0)
      fail("model.rope_base", std::string(value) + " needs an even head_dim, but d_out / num_heads = " +
                                  std::to_string(head_dim(c)) + " (RoPE rotates pairs of values)");
  }
  if (c.qk_norm && !is_split(c.variant))
    fail("model.qk_norm",
         "true is set but " + variant + " has no QK-norm (the split variants have: weight_split, fused_qkv, gqa, mla)");
  check_model_fields(c, variant);
}

// Version 3 holds the bonus variants and their fields; a session without them is written as
// before, so older builds read it.
bool needs_version_3(const ModelConfig& c) {
  return c.variant == Variant::Gqa || c.variant == Variant::Mla || c.sliding_window != 0 || c.rope_base != 0.0 ||
         c.qk_norm || c.query_pre_attn_scalar != 0.0;
}

// The optional "view" object of version 2. Ranges that depend on the model (head, batch
// item) are checked by validate_session.
SessionView parse_view(const json& v) {
  if (!v.is_object()) fail("view", "expected an object, got " + type_name(v));
  reject_unknown(v, "view", {"stage", "head", "batch", "enlarged", "log_scale", "shared_scale", "colormap", "walkthrough",
                             "walk_step", "walk_mistake", "walk_compare", "walk_pane", "walk_numbers", "walk_weights"});
  SessionView out;
  if (auto it = v.find("stage"); it != v.end())
    if (!it->is_string() || !parse_stage(it->get<std::string>(), out.stage))
      fail("view.stage", show(*it) + " is not one of \"scores\", \"masked\", \"scaled\", \"weights\", \"dropped\"");
  if (auto it = v.find("head"); it != v.end()) out.head = static_cast<int>(get_int(*it, "view.head", 0, Limits::kMaxHeads - 1));
  if (auto it = v.find("batch"); it != v.end()) out.batch = static_cast<int>(get_int(*it, "view.batch", 0, Limits::kMaxBatch - 1));
  if (auto it = v.find("colormap"); it != v.end()) {
    const bool known = it->is_string() && std::find(std::begin(kColormapNames), std::end(kColormapNames),
                                                    it->get<std::string>()) != std::end(kColormapNames);
    if (!known) fail("view.colormap", show(*it) + " is not one of \"viridis\", \"cividis\", \"magma\", \"diverging\"");
    out.colormap = it->get<std::string>();
  }
  if (auto it = v.find("walk_step"); it != v.end())
    out.walk_step = static_cast<int>(get_int(*it, "view.walk_step", 0, kMaxWalkSteps - 1));
  if (auto it = v.find("walk_pane"); it != v.end()) {
    const auto at = it->is_string() ? std::find(std::begin(kWalkPaneNames), std::end(kWalkPaneNames), it->get<std::string>())
                                    : std::end(kWalkPaneNames);
    if (at == std::end(kWalkPaneNames)) fail("view.walk_pane", show(*it) + " is not one of \"q\", \"k\", \"v\", \"all\"");
    out.walk_pane = static_cast<int>(at - std::begin(kWalkPaneNames));
  }
  const std::pair<const char*, bool*> flags[] = {{"enlarged", &out.enlarged},       {"log_scale", &out.log_scale},
                                                 {"shared_scale", &out.shared_scale}, {"walkthrough", &out.walkthrough},
                                                 {"walk_mistake", &out.walk_mistake}, {"walk_compare", &out.walk_compare},
                                                 {"walk_numbers", &out.walk_numbers}, {"walk_weights", &out.walk_weights}};
  for (const auto& [key, dst] : flags)
    if (auto it = v.find(key); it != v.end()) *dst = get_bool(*it, std::string("view.") + key);
  return out;
}

// A number field of the model given as a number (its range: check_model_fields).
double get_number(const json& v, const std::string& field) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fail(field, "expected a number, got " + type_name(v) + " " + show(v));
  return v.get<double>();
}

// model.qk_norm_eps, rope_inv_freq, query_pre_attn_scalar, out_dim (version 3, optional).
void parse_model_fields(const json& m, ModelConfig& c) {
  if (auto it = m.find("qk_norm_eps"); it != m.end()) c.qk_norm_eps = get_number(*it, "model.qk_norm_eps");
  if (auto it = m.find("rope_inv_freq"); it != m.end()) {
    if (!it->is_array() || it->size() > static_cast<std::size_t>(Limits::kMaxDim))
      fail("model.rope_inv_freq", "expected an array of head_dim / 2 numbers, got " + type_name(*it));
    for (std::size_t i = 0; i < it->size(); ++i)
      c.rope_inv_freq.push_back(get_number((*it)[i], "model.rope_inv_freq[" + std::to_string(i) + "]"));
  }
  if (auto it = m.find("query_pre_attn_scalar"); it != m.end()) {
    c.query_pre_attn_scalar = get_number(*it, "model.query_pre_attn_scalar");
    if (c.query_pre_attn_scalar == 0.0) fail("model.query_pre_attn_scalar", "0 is out of range (0, 1e9]");
  }
  if (auto it = m.find("out_dim"); it != m.end())
    c.out_dim = static_cast<int>(get_int(*it, "model.out_dim", 1, Limits::kMaxDim));
}

// model.num_kv_groups (gqa, required), model.latent_dim (mla, optional: max(16, d_out // 8)),
// model.sliding_window (null or absent: off): version 3 fields. Combinations are
// check_variant_fields's, through validate_session.
void parse_variant_fields(const json& m, std::int64_t version, ModelConfig& c) {
  const bool bonus = c.variant == Variant::Gqa || c.variant == Variant::Mla;
  if (version < 3) {
    if (bonus) fail("model.variant", "\"" + std::string(variant_name(c.variant)) + "\" needs \"version\": 3");
    for (const char* key : {"num_kv_groups", "sliding_window", "latent_dim", "rope_base", "qk_norm", "qk_norm_eps",
                            "rope_inv_freq", "query_pre_attn_scalar", "out_dim"})
      if (m.contains(key)) fail(std::string("model.") + key, "needs \"version\": 3 (value " + show(m[key]) + ")");
    return;
  }
  if (c.variant == Variant::Gqa)
    c.num_kv_groups =
        static_cast<int>(get_int(require(m, "model.", "num_kv_groups"), "model.num_kv_groups", 1, Limits::kMaxHeads));
  else if (auto it = m.find("num_kv_groups"); it != m.end())
    c.num_kv_groups = static_cast<int>(get_int(*it, "model.num_kv_groups", 1, Limits::kMaxHeads));
  if (auto it = m.find("latent_dim"); it != m.end())
    c.latent_dim = static_cast<int>(get_int(*it, "model.latent_dim", 1, Limits::kMaxDim));
  else if (c.variant == Variant::Mla)
    c.latent_dim = default_latent_dim(c.d_out);
  if (auto it = m.find("sliding_window"); it != m.end() && !it->is_null())
    c.sliding_window = static_cast<int>(get_int(*it, "model.sliding_window", 1, Limits::kMaxContext));
  if (auto it = m.find("rope_base"); it != m.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() == 0.0)
      fail("model.rope_base", "expected a number in (1, 1e9] or null, got " + type_name(*it) + " " + show(*it));
    c.rope_base = it->get<double>();  // its range: check_variant_fields, through validate_session
  }
  if (auto it = m.find("qk_norm"); it != m.end()) c.qk_norm = get_bool(*it, "model.qk_norm");
  parse_model_fields(m, c);
}

}  // namespace

Tensor Session::input_tensor() const {
  const int T = num_tokens(), din = d_in();
  Tensor t({batch, T, din});
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < T; ++i)
      std::copy(embeddings[static_cast<std::size_t>(i)].begin(), embeddings[static_cast<std::size_t>(i)].end(),
                t.data.begin() + (static_cast<std::ptrdiff_t>(b) * T + i) * din);
  return t;
}

std::int64_t estimate_memory_bytes(const ModelConfig& c, int d_in, int tokens, int batch) {
  const std::int64_t b = batch, T = tokens, M = static_cast<std::int64_t>(c.num_heads) * head_dim(c), D = c.d_out;
  const std::int64_t params = forward_cost(c, d_in, tokens, batch).parameters;
  const std::int64_t attn = b * c.num_heads * T * T;  // one (b, h, T, T) tensor
  const bool drop = c.training && c.dropout > 0.0;
  std::int64_t floats = params + b * T * d_in  // parameters, input
                        + 6 * b * T * M        // queries/keys/values and q/k/v
                        + (c.variant == Variant::FusedQkv ? 3 * b * T * D : 0) +
                        (c.variant == Variant::Gqa ? 2 * b * T * M : 0)           // k, v expanded
                        + (c.variant == Variant::Mla ? b * T * c.latent_dim : 0)  // the latent
                        + 2 * attn                                                // scores, weights
                        + (drop ? attn : 0)                                       // dropped
                        + 2 * b * T * M + b * T * output_dim(c);                  // context, merged, output
  return floats * 4 + (drop ? attn : 0);          // + keep mask bytes
}

void check_dropout(double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", p);
    fail("model.dropout", std::string(buf) + " is outside [0, 1)");
  }
}

void check_token(std::string_view t, const std::string& field) {
  if (t.empty()) fail(field, "empty token");
  if (static_cast<int>(t.size()) > Limits::kMaxTokenBytes)
    fail(field, "token of " + std::to_string(t.size()) + " bytes is over the limit of " + std::to_string(Limits::kMaxTokenBytes));
}

void check_embedding_value(double v, const std::string& field, std::string_view shown) {
  if (std::isfinite(v) && std::fabs(v) <= Limits::kMaxAbsValue) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  fail(field, (shown.empty() ? std::string(buf) : std::string(shown)) + " is not a finite number within ±1e6");
}

void validate_model(const ModelConfig& c, int d_in, int tokens, int batch) {
  auto range = [](const std::string& field, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi) fail(field, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  range("tokens", tokens, 1, Limits::kMaxTokens);
  range("d_in", d_in, 1, Limits::kMaxDim);
  range("batch", batch, 1, Limits::kMaxBatch);
  range("model.d_out", c.d_out, 1, Limits::kMaxDim);
  range("model.num_heads", c.num_heads, 1, Limits::kMaxHeads);
  range("model.context_length", c.context_length, 1, Limits::kMaxContext);
  check_dropout(c.dropout);
  if (c.variant != Variant::Wrapper && c.d_out % c.num_heads != 0)
    fail("model.d_out", std::to_string(c.d_out) + " is not divisible by model.num_heads = " + std::to_string(c.num_heads) +
                            " (" + std::string(variant_name(c.variant)) + " splits d_out into equal heads)");
  if (c.variant == Variant::Wrapper && static_cast<std::int64_t>(c.num_heads) * c.d_out > Limits::kMaxDim)
    fail("model.num_heads", std::to_string(c.num_heads) + " heads of d_out " + std::to_string(c.d_out) +
                                " concatenate to " + std::to_string(static_cast<std::int64_t>(c.num_heads) * c.d_out) +
                                " features, over the limit of " + std::to_string(Limits::kMaxDim));
  check_variant_fields(c);
  if (c.weights) check_parameter_file(*c.weights, c, d_in);
  if (tokens > c.context_length)
    fail("tokens", std::to_string(tokens) + " tokens exceed model.context_length = " + std::to_string(c.context_length));
  const std::int64_t need = estimate_memory_bytes(c, d_in, tokens, batch);
  if (need > Limits::kMaxMemoryBytes)
    fail("model", "this configuration needs an estimated " + human_bytes(need) + " (limit " + human_bytes(Limits::kMaxMemoryBytes) +
                      "): reduce tokens, batch, num_heads or d_out");
}

void validate_session(const Session& s) {
  if (s.tokens.empty()) fail("tokens", "empty: a session needs at least one token");
  if (static_cast<std::int64_t>(s.tokens.size()) > Limits::kMaxTokens)
    fail("tokens", std::to_string(s.tokens.size()) + " tokens is over the limit of " + std::to_string(Limits::kMaxTokens));
  for (std::size_t i = 0; i < s.tokens.size(); ++i) {
    check_token(s.tokens[i], "tokens[" + std::to_string(i) + "]");
  }
  if (s.embeddings.size() != s.tokens.size())
    fail("embeddings", std::to_string(s.embeddings.size()) + " rows for " + std::to_string(s.tokens.size()) + " tokens (one row per token)");
  const std::size_t din = s.embeddings.front().size();
  if (din == 0) fail("embeddings[0]", "empty row: d_in must be at least 1");
  if (static_cast<std::int64_t>(din) > Limits::kMaxDim)
    fail("embeddings[0]", std::to_string(din) + " values is over the d_in limit of " + std::to_string(Limits::kMaxDim));
  for (std::size_t i = 0; i < s.embeddings.size(); ++i) {
    const auto& row = s.embeddings[i];
    if (row.size() != din)
      fail("embeddings[" + std::to_string(i) + "]", std::to_string(row.size()) + " values, expected " + std::to_string(din) +
                                                         " as in embeddings[0]");
    for (std::size_t j = 0; j < row.size(); ++j)
      if (!std::isfinite(row[j]) || std::fabs(row[j]) > Limits::kMaxAbsValue)
        check_embedding_value(static_cast<double>(row[j]), "embeddings[" + std::to_string(i) + "][" + std::to_string(j) + "]");
  }
  validate_model(s.model, static_cast<int>(din), s.num_tokens(), s.batch);
  if (s.view) {
    if (s.view->head >= s.model.num_heads)
      fail("view.head", std::to_string(s.view->head) + " is out of range [0, " + std::to_string(s.model.num_heads - 1) +
                            "] (model.num_heads = " + std::to_string(s.model.num_heads) + ")");
    if (s.view->batch >= s.batch)
      fail("view.batch", std::to_string(s.view->batch) + " is out of range [0, " + std::to_string(s.batch - 1) +
                             "] (batch = " + std::to_string(s.batch) + ")");
  }
}

Session parse_session(std::string_view text, const std::filesystem::path& base_dir) {
  if (static_cast<std::int64_t>(text.size()) > Limits::kMaxFileBytes)
    fail("session", std::to_string(text.size()) + " bytes is over the limit of " + std::to_string(Limits::kMaxFileBytes));
  check_depth(text);
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double (1e400) is out_of_range.
    std::string what = e.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    for (char& ch : what)
      if (ch == '\n' || ch == '\r') ch = ' ';
    fail("session", "malformed JSON: " + what);
  }
  if (!j.is_object()) fail("session", "expected a JSON object, got " + type_name(j));
  reject_unknown(j, "", {"format", "version", "tokens", "embeddings", "batch", "model", "view"});
  const json& format = require(j, "", "format");
  if (format != "mhaviz-session") fail("format", show(format) + " is not \"mhaviz-session\"");
  const json& version = require(j, "", "version");
  if (!version.is_number_integer() || version.get<std::int64_t>() < 1 || version.get<std::int64_t>() > 3)
    fail("version", show(version) + " is not a supported version (1, 2 or 3)");
  if (j.contains("view") && version.get<std::int64_t>() == 1) fail("view", "needs \"version\": 2 (version 1 files have no view)");

  Session s;
  const json& tokens = require(j, "", "tokens");
  if (!tokens.is_array()) fail("tokens", "expected an array of strings, got " + type_name(tokens));
  if (tokens.size() > static_cast<std::size_t>(Limits::kMaxTokens))
    fail("tokens", std::to_string(tokens.size()) + " tokens is over the limit of " + std::to_string(Limits::kMaxTokens));
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_string()) fail("tokens[" + std::to_string(i) + "]", "expected a string, got " + type_name(tokens[i]) + " " + show(tokens[i]));
    s.tokens.push_back(tokens[i].get<std::string>());
  }
  const json& emb = require(j, "", "embeddings");
  if (!emb.is_array()) fail("embeddings", "expected an array of rows, got " + type_name(emb));
  if (emb.size() > static_cast<std::size_t>(Limits::kMaxTokens))
    fail("embeddings", std::to_string(emb.size()) + " rows is over the limit of " + std::to_string(Limits::kMaxTokens));
  for (std::size_t i = 0; i < emb.size(); ++i) {
    const std::string field = "embeddings[" + std::to_string(i) + "]";
    if (!emb[i].is_array()) fail(field, "expected an array of numbers, got " + type_name(emb[i]) + " " + show(emb[i]));
    if (emb[i].size() > static_cast<std::size_t>(Limits::kMaxDim))
      fail(field, std::to_string(emb[i].size()) + " values is over the d_in limit of " + std::to_string(Limits::kMaxDim));
    std::vector<float> row;
    row.reserve(emb[i].size());
    for (std::size_t k = 0; k < emb[i].size(); ++k) {
      const json& v = emb[i][k];
      const std::string vf = field + "[" + std::to_string(k) + "]";
      if (!v.is_number()) fail(vf, "expected a number, got " + type_name(v) + " " + show(v));
      const double d = v.get<double>();
      check_embedding_value(d, vf, show(v));
      row.push_back(static_cast<float>(d));
    }
    s.embeddings.push_back(std::move(row));
  }
  s.batch = static_cast<int>(get_int(require(j, "", "batch"), "batch", 1, Limits::kMaxBatch));

  const json& m = require(j, "", "model");
  if (!m.is_object()) fail("model", "expected an object, got " + type_name(m));
  reject_unknown(m, "model",
                 {"variant", "d_out", "num_heads", "context_length", "dropout", "qkv_bias", "causal", "seed",
                  "training", "weights", "num_kv_groups", "sliding_window", "latent_dim", "rope_base", "qk_norm",
                  "qk_norm_eps", "rope_inv_freq", "query_pre_attn_scalar", "out_dim"});
  const json& variant = require(m, "model.", "variant");
  if (!variant.is_string() || !parse_variant(variant.get<std::string>(), s.model.variant))
    fail("model.variant",
         show(variant) + " is not one of \"wrapper\", \"weight_split\", \"fused_qkv\", \"gqa\", \"mla\"");
  s.model.d_out = static_cast<int>(get_int(require(m, "model.", "d_out"), "model.d_out", 1, Limits::kMaxDim));
  s.model.num_heads = static_cast<int>(get_int(require(m, "model.", "num_heads"), "model.num_heads", 1, Limits::kMaxHeads));
  s.model.context_length =
      static_cast<int>(get_int(require(m, "model.", "context_length"), "model.context_length", 1, Limits::kMaxContext));
  const json& dropout = require(m, "model.", "dropout");
  if (!dropout.is_number()) fail("model.dropout", "expected a number in [0, 1), got " + type_name(dropout) + " " + show(dropout));
  s.model.dropout = dropout.get<double>();  // its range: check_dropout, through validate_session below
  s.model.qkv_bias = get_bool(require(m, "model.", "qkv_bias"), "model.qkv_bias");
  s.model.causal = get_bool(require(m, "model.", "causal"), "model.causal");
  const json& seed = require(m, "model.", "seed");
  if (seed.is_number_unsigned()) s.model.seed = seed.get<std::uint64_t>();
  else if (seed.is_number_integer() && seed.get<std::int64_t>() >= 0) s.model.seed = static_cast<std::uint64_t>(seed.get<std::int64_t>());
  else fail("model.seed", "expected an integer in [0, 2^64), got " + show(seed));
  if (auto it = m.find("training"); it != m.end()) s.model.training = get_bool(*it, "model.training");
  if (auto it = m.find("weights"); it != m.end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      fail("model.weights", "expected the path of a .safetensors file, got " + type_name(*it) + " " + show(*it));
    const std::filesystem::path p = it->get<std::string>();
    s.model.weights = load_parameter_file(p.is_absolute() || base_dir.empty() ? p : base_dir / p);
  }
  parse_variant_fields(m, version.get<std::int64_t>(), s.model);
  if (auto it = j.find("view"); it != j.end()) s.view = parse_view(*it);
  validate_session(s);
  return s;
}

std::string session_to_json(const Session& s) {
  json j;
  j["format"] = "mhaviz-session";
  // A file without a view stays version 1, and one without the bonus variants' fields at most
  // version 2, readable by older builds.
  j["version"] = needs_version_3(s.model) ? 3 : s.view ? 2 : 1;
  j["tokens"] = s.tokens;
  json emb = json::array();
  for (const auto& row : s.embeddings) {
    json r = json::array();
    for (float f : row) r.push_back(float_json(f));
    emb.push_back(std::move(r));
  }
  j["embeddings"] = std::move(emb);
  j["batch"] = s.batch;
  const ModelConfig& c = s.model;
  j["model"] = {{"variant", std::string(variant_name(c.variant))},
                {"d_out", c.d_out},
                {"num_heads", c.num_heads},
                {"context_length", c.context_length},
                {"dropout", c.dropout},
                {"qkv_bias", c.qkv_bias},
                {"causal", c.causal},
                {"seed", c.seed},
                {"training", c.training}};
  if (c.variant == Variant::Gqa) j["model"]["num_kv_groups"] = c.num_kv_groups;
  if (c.variant == Variant::Mla) j["model"]["latent_dim"] = c.latent_dim;
  if (c.sliding_window != 0) j["model"]["sliding_window"] = c.sliding_window;
  if (c.rope_base != 0.0) j["model"]["rope_base"] = c.rope_base;
  if (c.qk_norm) j["model"]["qk_norm"] = true;
  if (c.qk_norm_eps != 1e-6) j["model"]["qk_norm_eps"] = c.qk_norm_eps;
  if (!c.rope_inv_freq.empty()) j["model"]["rope_inv_freq"] = c.rope_inv_freq;
  if (c.query_pre_attn_scalar != 0.0) j["model"]["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
  if (c.out_dim != 0) j["model"]["out_dim"] = c.out_dim;
  if (c.weights) j["model"]["weights"] = c.weights->path;
  if (s.view) {
    const SessionView& v = *s.view;
    j["view"] = {{"stage", std::string(stage_name(v.stage))}, {"head", v.head}, {"batch", v.batch},
                 {"enlarged", v.enlarged}, {"log_scale", v.log_scale}, {"shared_scale", v.shared_scale},
                 {"colormap", v.colormap}, {"walkthrough", v.walkthrough}, {"walk_step", v.walk_step},
                 {"walk_mistake", v.walk_mistake}, {"walk_compare", v.walk_compare},
                 {"walk_pane", std::string(kWalkPaneNames[std::clamp(v.walk_pane, 0, 3)])}, {"walk_numbers", v.walk_numbers},
                 {"walk_weights", v.walk_weights}};
  }
  return j.dump(1) + "\n";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("session", "cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail("session", "cannot read '" + path + "': it is a directory");
  if (::stat(path.c_str(), &st) == 0 && st.st_size > Limits::kMaxFileBytes)
    fail("session", "'" + path + "' is " + std::to_string(st.st_size) + " bytes, over the limit of " + std::to_string(Limits::kMaxFileBytes));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("session", "cannot read '" + path + "': read error");
  return s;
}

Session load_session(const std::string& what) {
  if (what == "-") {
    std::string s((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return parse_session(s);
  }
  struct stat st {};
  if (::stat(what.c_str(), &st) != 0 && is_lesson(what)) return lesson(what);
  if (::stat(what.c_str(), &st) != 0)
    fail("session", "'" + what + "' is neither a readable file nor a built-in lesson (see `mhaviz lessons`)");
  return parse_session(read_file(what), std::filesystem::path(what).parent_path());
}

std::shared_ptr<const ParameterFile> load_parameter_file(const std::filesystem::path& path) {
  auto file = std::make_shared<ParameterFile>();
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  file->path = (ec ? path : abs).lexically_normal().string();
  try {
    const SafetensorsFile st = SafetensorsFile::open(path);
    std::int64_t total = 0;
    for (const StTensor& t : st.tensors()) total += t.numel();
    if (total > Limits::kMaxMemoryBytes / 4)
      fail("model.weights", path.string() + ": " + std::to_string(total) + " values is over a session's limit of " +
                                std::to_string(Limits::kMaxMemoryBytes / 4) + " (is this a whole GPT? open it with --model)");
    for (const StTensor& t : st.tensors()) {
      ParameterFile::Tensor& out = file->tensors[t.name];
      out.shape = t.shape;
      out.values = st.read(t);
      for (std::size_t i = 0; i < out.values.size(); ++i)
        if (!std::isfinite(out.values[i]))
          fail("model.weights", path.string() + ": " + t.name + "[" + std::to_string(i) + "] is not a finite number");
    }
  } catch (const LoadError& e) {
    fail("model.weights", e.what());
  }
  return file;
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string where = "output";
  auto failure = [&](const std::string& why) { fail(where, "cannot write '" + path + "': " + why); };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) failure("it is a directory");
  std::string tmpl = path + ".tmp-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) failure(std::strerror(errno));
  const std::string tmp(name.data());
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      failure(why);
    }
    done += static_cast<std::size_t>(n);
  }
  // A new file gets the usual 0644 (mkstemp makes 0600); an existing one keeps its mode.
  const mode_t mode = (::stat(path.c_str(), &st) == 0) ? (st.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    failure(why);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    failure(why);
  }
}

std::vector<std::string> split_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::vector<float> token_embedding(std::string_view token, int d_in) {
  // FNV-1a of the text seeds a generator whose output the standard fixes, so every
  // build on every machine gives a word the same vector.
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : token) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  std::mt19937_64 gen(h);
  std::vector<float> v(static_cast<std::size_t>(std::max(0, d_in)));
  for (auto& x : v) x = static_cast<float>(static_cast<int>(gen() % 201) - 100) / 100.0f;
  return v;
}

}  // namespace mhaviz
