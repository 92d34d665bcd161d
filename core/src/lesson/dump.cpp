#include "mhaviz/dump.hpp"

#include <nlohmann/json.hpp>

#include "mhaviz/tensor_json.hpp"

namespace mhaviz {

namespace {

nlohmann::json dump_head(const Session& session, const Model& model, const Trace& trace) {
  nlohmann::json head;
  head["format"] = "mhaviz-dump";
  head["version"] = 1;
  head["session"] = nlohmann::json::parse(session_to_json(session));
  head["cost"] = {
      {"matmul_calls", trace.cost.matmul_calls}, {"flops", trace.cost.flops}, {"parameters", model.parameter_count()}};
  return head;
}

nlohmann::json range_json(const KeyRange& r) { return nlohmann::json::array({r.begin, r.end}); }

}  // namespace

std::string dump_json(const Session& session, const Model& model, const Trace& trace) {
  TensorJson out(dump_head(session, model, trace));
  for (const auto& nt : named_tensors(model, trace)) out.add(nt.name, nt.tensor.shape, nt.tensor.data);
  return out.finish();
}

std::string decode_dump_json(const Session& session, const Model& model, const DecodeTrace& decode) {
  nlohmann::json head = dump_head(session, model, decode.trace);
  nlohmann::json layout = nlohmann::json::array();
  for (const CachedTensor& t : decode.layout.tensors)
    layout.push_back({{"name", t.name}, {"holds", t.holds}, {"heads", t.heads}, {"width", t.width}});
  nlohmann::json steps = nlohmann::json::array();
  for (const CacheStep& s : decode.steps) {
    nlohmann::json shapes = nlohmann::json::object();
    for (std::size_t i = 0; i < decode.layout.tensors.size(); ++i)
      shapes[decode.layout.tensors[i].name] = decode.cache_shape(s, i);
    steps.push_back({{"queries", range_json(s.queries)},
                     {"read", range_json(s.read)},
                     {"held", range_json(s.held)},
                     {"evicted", range_json(s.evicted)},
                     {"shapes", std::move(shapes)},
                     {"elements", s.elements},
                     {"bytes", s.bytes}});
  }
  head["decode"] = {{"prefill", decode.prefill},
                    {"window", decode.layout.window},
                    {"bytes_per_value", KvCacheLayout::kBytesPerValue},
                    {"cache", std::move(layout)},
                    {"steps", std::move(steps)}};
  TensorJson out(head);
  for (const auto& nt : named_tensors(model, decode.trace)) out.add(nt.name, nt.tensor.shape, nt.tensor.data);
  for (std::size_t i = 0; i < decode.cache.size(); ++i)
    out.add("cache." + decode.layout.tensors[i].name, decode.cache[i].shape, decode.cache[i].data);
  return out.finish();
}

std::string gpt_dump_json(const GptModel& model, const Tokenizer& tokenizer, const GptTrace& trace, int top_k,
                          const Intervention* ablation) {
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
  auto shown = [&](int id) { return tokenizer.has_token(id) ? tokenizer.display_token(id) : std::string(); };
  for (const int id : trace.ids) tokens.push_back(shown(id));
  head["tokens"] = std::move(tokens);
  nlohmann::json top = nlohmann::json::array();
  const NextToken next = next_token(model, trace, trace.tokens() - 1, top_k);
  for (const TokenProbability& t : next.top) top.push_back({{"id", t.id}, {"token", shown(t.id)}, {"p", t.p}});
  head["next_token"] = {{"position", trace.tokens() - 1}, {"top", std::move(top)}};
  if (ablation != nullptr) {
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadIndex& h : ablation->ablate) heads.push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
    head["ablation"] = {{"heads", std::move(heads)}, {"mode", ablation->mode == AblationMode::Mean ? "mean" : "zero"}};
  }
  TensorJson out(head);
  for (int l = 0; l < c.n_layer; ++l) {
    const Tensor& w = trace.layers[static_cast<std::size_t>(l)].weights;
    out.add("layers." + std::to_string(l) + ".attn_weights", w.shape, w.data);
  }
  out.add("logits_last", trace.logits_last.shape, trace.logits_last.data);
  return out.finish();
}

}  // namespace mhaviz
