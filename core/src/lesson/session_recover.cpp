// recover_session: what can be kept of a session file that parse_session refuses (an
// autosave written by an older build, a hand-edited file). Every repair moves a value to
// the nearest one the format accepts, and is listed; the result goes through parse_session,
// so what it returns is exactly as valid as any file.
//
// Every number is brought inside the bounds the validator checks (the Limits of session.hpp,
// and the model's own sizes for the view's head and batch item) before anything computes
// with it: a num_heads of 0 would otherwise reach d_out % num_heads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>

#include "mhaviz/session.hpp"

namespace mhaviz {

using json = nlohmann::json;

namespace {

using Repairs = std::vector<std::string>;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A value as the file holds it, short enough for a one-line repair.
std::string shown(const json& v) {
  if (v.is_null()) return "missing";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// The longest prefix of at most max_bytes that ends on a whole UTF-8 character.
std::string cut_utf8(const std::string& s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

void drop_unknown(json& obj, const std::string& prefix, std::initializer_list<const char*> known, Repairs& repairs) {
  for (auto it = obj.begin(); it != obj.end();) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      repairs.push_back(prefix + it.key() + ": unknown field dropped");
      it = obj.erase(it);
    } else {
      ++it;
    }
  }
}

// An integer field clamped to [lo, hi], a fraction rounded first; a missing or non-numeric
// one becomes fallback (itself clamped). Returns the value the field now holds.
std::int64_t clamp_int(json& obj, const char* key, const std::string& field, std::int64_t lo, std::int64_t hi,
                       std::int64_t fallback, Repairs& repairs) {
  json& v = obj[key];
  std::int64_t x = fallback;
  if (v.is_number()) {
    const double d = v.get<double>();
    x = std::isfinite(d) ? static_cast<std::int64_t>(std::clamp(std::round(d), -9e18, 9e18)) : fallback;
  }
  const std::int64_t c = std::clamp(x, lo, hi);
  // json compares integers by value across signed and unsigned; 3.0 == 3 too, hence the type test.
  if (!v.is_number_integer() || v != json(c)) {
    repairs.push_back(field + ": " + shown(v) + " set to " + std::to_string(c));
    v = c;
  }
  return c;
}

// model.seed: any integer in [0, 2^64); a fraction rounded, the rest clamped.
void clamp_seed(json& m, std::uint64_t fallback, Repairs& repairs) {
  json& v = m["seed"];
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0)) return;
  std::uint64_t c = fallback;
  if (v.is_number_integer() || (v.is_number_float() && v.get<double>() < 0.5)) {
    c = 0;  // negative
  } else if (v.is_number_float()) {
    const double d = std::round(v.get<double>());
    c = d >= 0x1p64 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(d);
  }
  repairs.push_back("model.seed: " + shown(v) + " set to " + std::to_string(c));
  v = c;
}

// A true/false field: anything else (or nothing, when required) becomes fallback.
void keep_bool(json& obj, const char* key, const std::string& field, bool fallback, bool required, Repairs& repairs) {
  if (!required && !obj.contains(key)) return;
  json& v = obj[key];
  if (v.is_boolean()) return;
  repairs.push_back(field + ": " + shown(v) + " set to " + (fallback ? "true" : "false"));
  v = fallback;
}

// A field holding one of names: anything else becomes fallback.
template <typename Names>
void keep_name(json& obj, const char* key, const std::string& field, const Names& names, std::string_view fallback,
               Repairs& repairs) {
  if (!obj.contains(key)) return;
  json& v = obj[key];
  if (v.is_string() && std::find(std::begin(names), std::end(names), v.get<std::string>()) != std::end(names)) return;
  repairs.push_back(field + ": " + shown(v) + " set to \"" + std::string(fallback) + "\"");
  v = fallback;
}

void recover_tokens(json& j, Repairs& repairs) {
  json& tokens = j["tokens"];
  if (!tokens.is_array()) throw SessionError("tokens: not an array, nothing to recover");
  json emb = j.contains("embeddings") && j["embeddings"].is_array() ? j["embeddings"] : json::array();
  json kept_t = json::array(), kept_e = json::array();
  for (std::size_t i = 0; i < tokens.size() && kept_t.size() < static_cast<std::size_t>(Limits::kMaxTokens); ++i) {
    const std::string field = "tokens[" + std::to_string(i) + "]";
    if (!tokens[i].is_string() || tokens[i].get<std::string>().empty()) {
      repairs.push_back(field + ": not a non-empty string, dropped with its row");
      continue;
    }
    std::string t = tokens[i].get<std::string>();
    if (t.size() > static_cast<std::size_t>(Limits::kMaxTokenBytes)) {
      t = cut_utf8(t, static_cast<std::size_t>(Limits::kMaxTokenBytes));
      repairs.push_back(field + ": token of " + std::to_string(tokens[i].get<std::string>().size()) + " bytes cut to " +
                        std::to_string(t.size()));
    }
    kept_t.push_back(t);
    kept_e.push_back(i < emb.size() ? emb[i] : json());
  }
  if (tokens.size() > static_cast<std::size_t>(Limits::kMaxTokens))
    repairs.push_back("tokens: " + std::to_string(tokens.size()) + " tokens cut to " +
                      std::to_string(Limits::kMaxTokens));
  if (emb.size() > tokens.size())
    repairs.push_back("embeddings: " + std::to_string(emb.size()) + " rows for " + std::to_string(tokens.size()) +
                      " tokens, the rows past the last token dropped");
  if (kept_t.empty()) throw SessionError("tokens: no usable token, nothing to recover");
  j["tokens"] = kept_t;
  j["embeddings"] = kept_e;
}

void recover_embeddings(json& j, Repairs& repairs) {
  json& emb = j["embeddings"];
  const json& tokens = j["tokens"];
  // d_in: the first non-empty row's length within [1, kMaxDim]; with no such row, 1 (each
  // row then the token's own vector). Every row brought to it says so below.
  std::size_t d_in = 0;
  for (const json& row : emb)
    if (row.is_array() && !row.empty()) {
      d_in = row.size();
      break;
    }
  d_in = std::clamp<std::size_t>(d_in, 1, static_cast<std::size_t>(Limits::kMaxDim));
  for (std::size_t i = 0; i < emb.size(); ++i) {
    const std::string field = "embeddings[" + std::to_string(i) + "]";
    const std::vector<float> fresh = token_embedding(tokens[i].get<std::string>(), static_cast<int>(d_in));
    json& row = emb[i];
    if (!row.is_array()) {
      repairs.push_back(field + ": missing, the token's own vector used");
      row = json::array();
    } else if (row.size() != d_in) {
      repairs.push_back(field + ": " + std::to_string(row.size()) + " values made " + std::to_string(d_in));
    }
    json out = json::array();
    for (std::size_t k = 0; k < d_in; ++k) {
      if (k >= row.size()) {
        out.push_back(fresh[k]);
        continue;
      }
      const json& v = row[k];
      const std::string vf = field + "[" + std::to_string(k) + "]";
      const double d = v.is_number() ? v.get<double>() : NAN;
      if (!std::isfinite(d)) {
        repairs.push_back(vf + ": " + shown(v) + " set to 0");
        out.push_back(0.0);
      } else if (std::fabs(d) > Limits::kMaxAbsValue) {
        const double c = std::copysign(Limits::kMaxAbsValue, d);
        repairs.push_back(vf + ": " + num(d) + " clamped to " + num(c));
        out.push_back(c);
      } else {
        out.push_back(v);
      }
    }
    row = std::move(out);
  }
}

// The model's numbers, each within its bounds before any is combined with another.
void recover_model(json& j, Repairs& repairs) {
  json& m = j["model"];
  if (!m.is_object()) throw SessionError("model: not an object, nothing to recover");
  drop_unknown(m, "model.",
               {"variant", "d_out", "num_heads", "context_length", "dropout", "qkv_bias", "causal", "seed", "training",
                "weights", "num_kv_groups", "sliding_window", "latent_dim", "rope_base", "qk_norm", "qk_norm_eps",
                "rope_inv_freq", "query_pre_attn_scalar", "out_dim"},
               repairs);
  const ModelConfig defaults;
  const std::int64_t d_out = clamp_int(m, "d_out", "model.d_out", 1, Limits::kMaxDim, defaults.d_out, repairs);
  const std::int64_t heads =
      clamp_int(m, "num_heads", "model.num_heads", 1, Limits::kMaxHeads, defaults.num_heads, repairs);
  const auto T = static_cast<std::int64_t>(j["tokens"].size());
  clamp_int(m, "context_length", "model.context_length", T, Limits::kMaxContext, T, repairs);
  // Dropout's range is check_dropout's: [0, 1) has no largest value, so one outside is set to 0 (off).
  const json& dropout = m["dropout"];
  const bool in_range = dropout.is_number() && [&] {
    try {
      check_dropout(dropout.get<double>());
      return true;
    } catch (const SessionError&) {
      return false;
    }
  }();
  if (!in_range) {
    repairs.push_back("model.dropout: " + shown(dropout) + " set to 0");
    m["dropout"] = 0.0;
  }
  clamp_seed(m, defaults.seed, repairs);
  keep_bool(m, "qkv_bias", "model.qkv_bias", defaults.qkv_bias, true, repairs);
  keep_bool(m, "causal", "model.causal", defaults.causal, true, repairs);
  keep_bool(m, "training", "model.training", defaults.training, false, repairs);
  Variant v = Variant::Wrapper;
  if (!m.contains("variant") || !m["variant"].is_string() || !parse_variant(m["variant"].get<std::string>(), v)) return;
  std::int64_t h = heads;
  std::string why;
  if (v == Variant::Wrapper && heads * d_out > Limits::kMaxDim) {
    h = Limits::kMaxDim / d_out;  // the most heads whose outputs concatenate within the limit
    why = std::to_string(h) + " heads of d_out " + std::to_string(d_out) + " fit in " +
          std::to_string(Limits::kMaxDim) + " features";
  } else if (v != Variant::Wrapper && d_out % heads != 0) {
    while (d_out % h != 0) --h;  // the largest divisor below: ends at 1
    why = "a divisor of d_out " + std::to_string(d_out);
  }
  if (h != heads) {
    repairs.push_back("model.num_heads: " + std::to_string(heads) + " set to " + std::to_string(h) + ", " + why);
    m["num_heads"] = h;
  }
  if (v == Variant::Gqa && m.contains("num_kv_groups") && m["num_kv_groups"].is_number_integer()) {
    const std::int64_t g = m["num_kv_groups"].get<std::int64_t>();
    std::int64_t fit = std::clamp<std::int64_t>(g, 1, h);
    while (h % fit != 0) --fit;  // the largest divisor of num_heads below: ends at 1
    if (fit != g) {
      repairs.push_back("model.num_kv_groups: " + std::to_string(g) + " set to " + std::to_string(fit) +
                        ", a divisor of num_heads " + std::to_string(h));
      m["num_kv_groups"] = fit;
    }
  }
  // RoPE rotates pairs of a head's values, on the split variants but mla; QK-norm is on every
  // split variant. What the repaired model cannot hold is removed.
  if (m.contains("rope_base") && !m["rope_base"].is_null()) {
    const std::int64_t hd = v == Variant::Wrapper ? d_out : d_out / h;
    const std::string reason = v == Variant::Wrapper || v == Variant::Mla
                                   ? std::string("model.variant \"") + std::string(variant_name(v)) + "\" has no RoPE"
                               : hd % 2 != 0 ? "head_dim " + std::to_string(hd) + " is odd"
                                             : "";
    if (!reason.empty()) {
      repairs.push_back("model.rope_base: " + shown(m["rope_base"]) + " removed, " + reason);
      m.erase("rope_base");
    }
  }
  if (v == Variant::Wrapper && m.contains("qk_norm")) {
    repairs.push_back("model.qk_norm: " + shown(m["qk_norm"]) + " removed, model.variant \"wrapper\" has no QK-norm");
    m.erase("qk_norm");
  }
}

// Version 3 when the model holds a field of the bonus variants, else 2 with a view, else 1.
std::int64_t version_for(const json& j) {
  const auto model = j.find("model");
  if (model == j.end() || !model->is_object()) return j.contains("view") ? 2 : 1;
  const json& m = *model;
  const auto it = m.find("variant");
  const bool bonus = it != m.end() && (*it == "gqa" || *it == "mla");
  const bool v3 = bonus || m.contains("num_kv_groups") || m.contains("sliding_window") || m.contains("latent_dim") ||
                  m.contains("rope_base") || m.contains("qk_norm") || m.contains("query_pre_attn_scalar");
  return v3 ? 3 : j.contains("view") ? 2 : 1;
}

// The optional view: every field the parser knows kept or brought to the nearest value
// this document can show (head and batch item within the model's own sizes).
void recover_view(json& j, Repairs& repairs) {
  json& v = j["view"];
  drop_unknown(v, "view.",
               {"stage", "head", "batch", "enlarged", "log_scale", "shared_scale", "colormap", "walkthrough",
                "walk_step", "walk_mistake", "walk_compare", "walk_pane", "walk_numbers", "walk_weights"},
               repairs);
  const SessionView d;
  std::string_view stages[kStageCount];
  for (int i = 0; i < kStageCount; ++i) stages[i] = stage_name(static_cast<Stage>(i));
  keep_name(v, "stage", "view.stage", stages, stage_name(d.stage), repairs);
  keep_name(v, "colormap", "view.colormap", kColormapNames, d.colormap, repairs);
  keep_name(v, "walk_pane", "view.walk_pane", kWalkPaneNames, kWalkPaneNames[d.walk_pane], repairs);
  const std::int64_t heads = j["model"]["num_heads"].get<std::int64_t>(), batch = j["batch"].get<std::int64_t>();
  if (v.contains("head")) clamp_int(v, "head", "view.head", 0, heads - 1, d.head, repairs);
  if (v.contains("batch")) clamp_int(v, "batch", "view.batch", 0, batch - 1, d.batch, repairs);
  if (v.contains("walk_step")) clamp_int(v, "walk_step", "view.walk_step", 0, kMaxWalkSteps - 1, d.walk_step, repairs);
  const std::pair<const char*, bool> flags[] = {{"enlarged", d.enlarged},         {"log_scale", d.log_scale},
                                                {"shared_scale", d.shared_scale}, {"walkthrough", d.walkthrough},
                                                {"walk_mistake", d.walk_mistake}, {"walk_compare", d.walk_compare},
                                                {"walk_numbers", d.walk_numbers}, {"walk_weights", d.walk_weights}};
  for (const auto& [key, fallback] : flags) keep_bool(v, key, std::string("view.") + key, fallback, false, repairs);
}

}  // namespace

Recovered recover_session(std::string_view text, const std::filesystem::path& base_dir) {
  Recovered r;
  try {
    r.session = parse_session(text, base_dir);
    return r;  // nothing to repair
  } catch (const SessionError&) {
  }
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception&) {
    throw SessionError("session: not JSON, nothing to recover");
  }
  if (!j.is_object()) throw SessionError("session: not a JSON object, nothing to recover");
  drop_unknown(j, "", {"format", "version", "tokens", "embeddings", "batch", "model", "view"}, r.repairs);
  j["format"] = "mhaviz-session";
  if (j.contains("view") && !j["view"].is_object()) {
    r.repairs.push_back("view: " + shown(j["view"]) + " dropped (not an object)");
    j.erase("view");
  }
  const std::int64_t version = version_for(j);
  if (!j["version"].is_number_integer() || j["version"].get<std::int64_t>() != version) {
    r.repairs.push_back("version: " + j["version"].dump() + " read as " + std::to_string(version));
    j["version"] = version;
  }
  recover_tokens(j, r.repairs);
  recover_embeddings(j, r.repairs);
  clamp_int(j, "batch", "batch", 1, Limits::kMaxBatch, 1, r.repairs);
  recover_model(j, r.repairs);
  if (j.contains("view")) {
    recover_view(j, r.repairs);
    // A view field this file does not know yet: only what was shown, so the view is
    // dropped and the document kept.
    try {
      r.session = parse_session(j.dump(), base_dir);
      return r;
    } catch (const SessionError& e) {
      if (!std::string_view(e.what()).starts_with("view")) throw;
      r.repairs.push_back(std::string(e.what()) + ": the view is dropped");
      j.erase("view");
      j["version"] = version_for(j);
    }
  }
  r.session = parse_session(j.dump(), base_dir);  // throws what is still wrong (a memory limit, a weights file)
  return r;
}

}  // namespace mhaviz
