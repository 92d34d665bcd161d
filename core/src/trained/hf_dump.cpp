// hf_dump_json (hf_model.hpp): `mhaviz dump --model` for Qwen, Llama and Gemma folders, in the
// GPT dump's form with the architecture's own fields.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/tensor_json.hpp"

namespace mhaviz {

bool is_hf_model_folder(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return false;
  // load_gpt reads no shards: a sharded folder is this loader's, whatever its config says.
  if (std::filesystem::exists(path / "model.safetensors.index.json", ec)) return true;
  std::ifstream in(path / "config.json", std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  const auto it = j.find("model_type");
  return it != j.end() && it->is_string() && it->get<std::string>() != "gpt2";
}

std::string hf_dump_json(const HfModel& model, const Tokenizer& tokenizer, const HfTrace& trace, int top_k,
                         const HfIntervention* ablation) {
  const HfConfig& c = model.config;
  nlohmann::json head;
  head["format"] = "mhaviz-hf-dump";
  head["version"] = 1;
  std::vector<int> sliding;
  for (std::size_t l = 0; l < model.blocks.size(); ++l)
    if (model.blocks[l].sliding) sliding.push_back(static_cast<int>(l));
  head["model"] = {{"path", model.folder.string()},
                   {"model_type", c.model_type},
                   {"architecture", std::string(hf_arch_name(c.arch))},
                   {"num_hidden_layers", c.num_hidden_layers},
                   {"num_attention_heads", c.num_attention_heads},
                   {"num_key_value_heads", c.num_key_value_heads},
                   {"head_dim", c.head_dim},
                   {"hidden_size", c.hidden_size},
                   {"vocab_size", c.vocab_size},
                   {"sliding_window", c.sliding_window},
                   {"sliding_layers", sliding},
                   {"tied", model.tied},
                   {"parameters", model.parameter_count()}};
  head["token_ids"] = trace.ids;
  auto shown = [&](int id) { return tokenizer.has_token(id) ? tokenizer.display_token(id) : std::string(); };
  nlohmann::json tokens = nlohmann::json::array();
  for (const int id : trace.ids) tokens.push_back(shown(id));
  head["tokens"] = std::move(tokens);
  nlohmann::json top = nlohmann::json::array();
  for (const TokenProbability& t : next_token_from_logits(trace.logits_last.data, top_k).top)
    top.push_back({{"id", t.id}, {"token", shown(t.id)}, {"p", t.p}});
  head["next_token"] = {{"position", trace.tokens() - 1}, {"top", std::move(top)}};
  if (ablation != nullptr) {
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadIndex& h : ablation->ablate) heads.push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
    head["ablation"] = {{"heads", std::move(heads)}, {"mode", ablation->mode == AblationMode::Mean ? "mean" : "zero"}};
  }
  TensorJson out(head);
  for (std::size_t l = 0; l < trace.layers.size(); ++l) {
    const Tensor& w = trace.layers[l].weights;
    out.add("layers." + std::to_string(l) + ".attn_weights", w.shape, w.data);
  }
  out.add("logits_last", trace.logits_last.shape, trace.logits_last.data);
  return out.finish();
}

}  // namespace mhaviz
