#include "mhaviz/dump.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace mhaviz {

void append_number(std::string& out, float x) {
  // JSON has no infinities; the dumped tensors are finite by construction (masks are
  // applied inside softmax, not stored as -inf), so this only guards the format.
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
  out.append(buf, static_cast<std::size_t>(n));
}

std::string dump_json(const Session& session, const Model& model, const Trace& trace) {
  nlohmann::json head;
  head["format"] = "mhaviz-dump";
  head["version"] = 1;
  head["session"] = nlohmann::json::parse(session_to_json(session));
  head["cost"] = {{"matmul_calls", trace.cost.matmul_calls},
                  {"flops", trace.cost.flops},
                  {"parameters", model.parameter_count()}};
  std::string out = head.dump(1);
  out.pop_back();  // reopen the object to stream the tensors without building a JSON tree of millions of numbers
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  out += ",\n \"tensors\": {";
  bool first = true;
  for (const auto& nt : named_tensors(model, trace)) {
    out += first ? "\n  \"" : ",\n  \"";
    first = false;
    out += nt.name;
    out += "\": {\"shape\": [";
    for (std::size_t i = 0; i < nt.tensor.shape.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(nt.tensor.shape[i]);
    }
    out += "], \"data\": [";
    for (std::size_t i = 0; i < nt.tensor.data.size(); ++i) {
      if (i) out += ", ";
      append_number(out, nt.tensor.data[i]);
    }
    out += "]}";
  }
  out += "\n }\n}\n";
  return out;
}

}  // namespace mhaviz
