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

namespace {

// Ends the header object `head` and opens its "tensors" member, so the tensors can be
// streamed without building a JSON tree of millions of numbers.
std::string open_tensors(const nlohmann::json& head) {
  std::string out = head.dump(1);
  out.pop_back();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out + ",\n \"tensors\": {";
}

// ,\n  "name": {"shape": [...], "data": [...]}   (no comma before the first)
void append_tensor(std::string& out, bool& first, const std::string& name, const Shape& shape, const std::vector<float>& data) {
  out += first ? "\n  \"" : ",\n  \"";
  first = false;
  out += name;
  out += "\": {\"shape\": [";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += "], \"data\": [";
  out.reserve(out.size() + data.size() * 13);
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i) out += ", ";
    append_number(out, data[i]);
  }
  out += "]}";
}

}  // namespace

std::string dump_json(const Session& session, const Model& model, const Trace& trace) {
  nlohmann::json head;
  head["format"] = "mhaviz-dump";
  head["version"] = 1;
  head["session"] = nlohmann::json::parse(session_to_json(session));
  head["cost"] = {{"matmul_calls", trace.cost.matmul_calls},
                  {"flops", trace.cost.flops},
                  {"parameters", model.parameter_count()}};
  std::string out = open_tensors(head);
  bool first = true;
  for (const auto& nt : named_tensors(model, trace)) append_tensor(out, first, nt.name, nt.tensor.shape, nt.tensor.data);
  out += "\n }\n}\n";
  return out;
}

std::string gpt_dump_json(const GptModel& model, const Tokenizer& tokenizer, const GptTrace& trace, int top_k) {
  const GptConfig& c = model.config;
  nlohmann::json head;
  head["format"] = "mhaviz-gpt-dump";
  head["version"] = 1;
  head["model"] = {{"path", model.weights_file.string()},
                   {"layout", model.layout == GptLayout::HuggingFace ? "huggingface" : "book"},
                   {"n_layer", c.n_layer},
                   {"n_head", c.n_head},
                   {"n_embd", c.n_embd},
                   {"n_ctx", c.n_ctx},
                   {"vocab_size", c.vocab_size},
                   {"parameters", model.parameter_count()}};
  head["token_ids"] = trace.ids;
  nlohmann::json tokens = nlohmann::json::array();
  for (const int id : trace.ids) tokens.push_back(tokenizer.display_token(id));
  head["tokens"] = std::move(tokens);
  nlohmann::json top = nlohmann::json::array();
  const NextToken next = next_token(model, trace, trace.tokens() - 1, top_k);
  for (const TokenProbability& t : next.top)
    top.push_back({{"id", t.id}, {"token", t.id < tokenizer.vocab_size() ? tokenizer.display_token(t.id) : ""}, {"p", t.p}});
  head["next_token"] = {{"position", trace.tokens() - 1}, {"top", std::move(top)}};
  std::string out = open_tensors(head);
  bool first = true;
  for (int l = 0; l < c.n_layer; ++l) {
    const Tensor& w = trace.layers[static_cast<std::size_t>(l)].weights;
    append_tensor(out, first, "layers." + std::to_string(l) + ".attn_weights", w.shape, w.data);
  }
  append_tensor(out, first, "logits_last", trace.logits_last.shape, trace.logits_last.data);
  out += "\n }\n}\n";
  return out;
}

}  // namespace mhaviz
