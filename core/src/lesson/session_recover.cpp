// recover_session: what can be kept of a session file that parse_session refuses (an
// autosave written by an older build, a hand-edited file). Every repair moves a value to
// the nearest one the format accepts, and is listed; the result goes through parse_session,
// so what it returns is exactly as valid as any file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "mhaviz/session.hpp"

namespace mhaviz {

using json = nlohmann::json;

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The longest prefix of at most max_bytes that ends on a whole UTF-8 character.
std::string cut_utf8(const std::string& s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// An integer field clamped to [lo, hi]; a missing or non-numeric one becomes fallback.
void clamp_int(json& obj, const char* key, const std::string& field, std::int64_t lo, std::int64_t hi,
               std::int64_t fallback, std::vector<std::string>& repairs) {
  json& v = obj[key];
  std::int64_t x = fallback;
  if (v.is_number()) {
    const double d = v.get<double>();
    x = std::isfinite(d) ? static_cast<std::int64_t>(std::clamp(std::round(d), -9e18, 9e18)) : fallback;
  }
  const std::int64_t c = std::clamp(x, lo, hi);
  if (!v.is_number_integer() || v.get<std::int64_t>() != c) {
    repairs.push_back(field + ": " + (v.is_null() ? std::string("missing") : v.dump()) + " set to " + std::to_string(c));
    v = c;
  }
}

void recover_tokens(json& j, std::vector<std::string>& repairs) {
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
    repairs.push_back("tokens: " + std::to_string(tokens.size()) + " tokens cut to " + std::to_string(Limits::kMaxTokens));
  if (kept_t.empty()) throw SessionError("tokens: no usable token, nothing to recover");
  j["tokens"] = kept_t;
  j["embeddings"] = kept_e;
}

void recover_embeddings(json& j, std::vector<std::string>& repairs) {
  json& emb = j["embeddings"];
  const json& tokens = j["tokens"];
  std::size_t d_in = 0;
  for (const json& row : emb)
    if (row.is_array() && !row.empty()) {
      d_in = std::min(row.size(), static_cast<std::size_t>(Limits::kMaxDim));
      break;
    }
  if (d_in == 0) throw SessionError("embeddings: no usable row, nothing to recover");
  for (std::size_t i = 0; i < emb.size(); ++i) {
    const std::string field = "embeddings[" + std::to_string(i) + "]";
    const std::string token = tokens[i].get<std::string>();
    const std::vector<float> fresh = token_embedding(token, static_cast<int>(d_in));
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
        repairs.push_back(vf + ": " + v.dump() + " set to 0");
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

void recover_model(json& j, std::vector<std::string>& repairs) {
  json& m = j["model"];
  if (!m.is_object()) throw SessionError("model: not an object, nothing to recover");
  for (auto it = m.begin(); it != m.end();) {
    static const char* const known[] = {"variant", "d_out", "num_heads", "context_length", "dropout",
                                        "qkv_bias", "causal", "seed", "training", "weights"};
    if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; })) {
      repairs.push_back("model." + it.key() + ": unknown field dropped");
      it = m.erase(it);
    } else {
      ++it;
    }
  }
  clamp_int(m, "d_out", "model.d_out", 1, Limits::kMaxDim, 2, repairs);
  clamp_int(m, "num_heads", "model.num_heads", 1, Limits::kMaxHeads, 1, repairs);
  const auto T = static_cast<std::int64_t>(j["tokens"].size());
  clamp_int(m, "context_length", "model.context_length", T, Limits::kMaxContext, T, repairs);
  const json& dropout = m["dropout"];
  if (!dropout.is_number() || !(dropout.get<double>() >= 0.0 && dropout.get<double>() < 1.0)) {
    repairs.push_back("model.dropout: " + dropout.dump() + " set to 0");
    m["dropout"] = 0.0;
  }
  Variant v = Variant::Wrapper;
  if (m.contains("variant") && m["variant"].is_string() && parse_variant(m["variant"].get<std::string>(), v) &&
      v != Variant::Wrapper) {
    const int d_out = m["d_out"].get<int>();
    int h = m["num_heads"].get<int>();
    if (d_out % h != 0) {
      while (d_out % h != 0) --h;  // the largest divisor below: ends at 1
      repairs.push_back("model.num_heads: " + m["num_heads"].dump() + " set to " + std::to_string(h) +
                        ", a divisor of d_out " + std::to_string(d_out));
      m["num_heads"] = h;
    }
  }
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
  for (auto it = j.begin(); it != j.end();) {
    static const char* const known[] = {"format", "version", "tokens", "embeddings", "batch", "model", "view"};
    if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; })) {
      r.repairs.push_back(it.key() + ": unknown field dropped");
      it = j.erase(it);
    } else {
      ++it;
    }
  }
  j["format"] = "mhaviz-session";
  const std::int64_t version = j.contains("view") ? 2 : 1;
  if (!j["version"].is_number_integer() || j["version"].get<std::int64_t>() != version) {
    r.repairs.push_back("version: " + j["version"].dump() + " read as " + std::to_string(version));
    j["version"] = version;
  }
  recover_tokens(j, r.repairs);
  recover_embeddings(j, r.repairs);
  clamp_int(j, "batch", "batch", 1, Limits::kMaxBatch, 1, r.repairs);
  recover_model(j, r.repairs);
  if (j.contains("view")) {
    // Only what was shown: a view that does not fit is dropped, the document kept.
    try {
      r.session = parse_session(j.dump(), base_dir);
      return r;
    } catch (const SessionError& e) {
      if (!std::string_view(e.what()).starts_with("view")) throw;
      r.repairs.push_back(std::string(e.what()) + ": the view is dropped");
      j.erase("view");
      j["version"] = 1;
    }
  }
  r.session = parse_session(j.dump(), base_dir);  // throws what is still wrong (a memory limit, a weights file)
  return r;
}

}  // namespace mhaviz
