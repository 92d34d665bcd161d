// `mhaviz patch` and `mhaviz lens`: activation patching and the logit lens of a trained GPT
// (gpt_interventions.hpp) or a Qwen, Llama or Gemma 3 folder (hf_interventions.hpp) as JSON. Every input is checked
// before anything is written: a bad one is one line naming the option and the value, exit 2, no output file.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli.hpp"
#include "figure/gpt_figures.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/model_kinds.hpp"
#include "mhaviz/prompt.hpp"

namespace mhaviz::cli {

void add_patch(CLI::App& app, PatchOptions& o) {
  auto* sub = app.add_subcommand(
      "patch",
      "Activation patching: each head's output (or each layer's residual at each position) from the clean "
      "text's run into the corrupted text's, as a JSON grid (1 = fully restored, 0 = no effect)");
  add_model_options(*sub, o.model, false);
  sub->add_option("--clean", o.clean, "The clean text")->required();
  sub->add_option("--corrupt", o.corrupt, "The corrupted text, as many tokens as the clean one")->required();
  sub->add_option("--target", o.target, "The token judged at the last position, e.g. ' Mary' (one token)")->required();
  sub->add_option("--vs", o.vs,
                  "Judge the logit difference target − vs (e.g. ' John') instead of the target's log-probability");
  sub->add_option("--per", o.per, "head (layers × heads) or layer-position (layers × positions); default head");
  sub->add_option("-o,--output", o.output, "Output file (written atomically); default: standard output");
}

void add_lens(CLI::App& app, LensOptions& o) {
  auto* sub = app.add_subcommand(
      "lens", "Logit lens: the final norm and the LM head on the residual after every layer, at every position (JSON)");
  add_model_options(*sub, o.model, true);
  sub->add_option("--top", o.top, "How many tokens per layer and position (default 5)");
  sub->add_option("--target", o.target, "Also this token's rank and probability at every layer and position");
  sub->add_option("-o,--output", o.output, "Output file (written atomically); default: standard output");
}

namespace {

using nlohmann::json;

// As the figures show them: an id the tokenizer has no token for as #id.
json tokens_json(const Tokenizer& tok, const std::vector<int>& ids) { return figure::display_tokens(tok, ids); }

json model_json(const GptModel& m) {
  return {{"path", m.weights_file.string()},
          {"n_layer", m.config.n_layer},
          {"n_head", m.config.n_head},
          {"vocab_size", m.config.vocab_size}};
}

// A Qwen, Llama or Gemma folder: the same fields (heads: query heads) and its architecture.
json model_json(const HfModel& m) {
  return {{"path", m.folder.string()},
          {"model_type", m.config.model_type},
          {"n_layer", m.config.num_hidden_layers},
          {"n_head", m.config.num_attention_heads},
          {"n_kv_head", m.config.num_key_value_heads},
          {"vocab_size", m.config.vocab_size}};
}

// A GPT folder (prepared for this backend) or a Qwen, Llama or Gemma one, and its tokenizer.
template <class Model>
struct Loaded {
  Model model;
  Tokenizer tok;
};
Loaded<GptModel> load_gpt_for(const std::string& path) {
  GptModel m = load_gpt(path);
  Tokenizer tok = Tokenizer::from_folder(m.folder, m.config.vocab_size);
  prepare_gpt_forward(m);
  return {std::move(m), std::move(tok)};
}
Loaded<HfModel> load_hf_for(const std::string& path) {
  HfModel m = load_hf_model(path);
  Tokenizer tok = Tokenizer::from_folder(m.folder, m.config.vocab_size);
  return {std::move(m), std::move(tok)};
}

json grid_json(const InterventionGrid& g) {
  json rows = json::array();
  for (int r = 0; r < g.rows; ++r) {
    json row = json::array();
    for (int c = 0; c < g.cols; ++c) row.push_back(g.at(r, c));
    rows.push_back(std::move(row));
  }
  return rows;
}

template <class Model>
std::string patch_json(const PatchOptions& o, const Loaded<Model>& l) {
  const Model& m = l.model;
  const Tokenizer& tok = l.tok;
  const std::vector<int> clean_ids = text_ids(tok, m, o.clean, "--clean"),
                         corrupt_ids = text_ids(tok, m, o.corrupt, "--corrupt");
  if (clean_ids.size() != corrupt_ids.size())
    throw std::invalid_argument("--corrupt: " + std::to_string(corrupt_ids.size()) + " tokens, the clean text has " +
                                std::to_string(clean_ids.size()) + " (patching needs equally many)");
  const TokenMetric metric{one_token(tok, o.target, "--target"), o.vs.empty() ? -1 : one_token(tok, o.vs, "--vs")};
  const auto clean = model_forward(m, clean_ids), corrupt = model_forward(m, corrupt_ids);
  const PatchPer per = o.per == "head" ? PatchPer::Head : PatchPer::LayerPosition;
  const std::optional<InterventionGrid> g = patch_sweep(m, clean, corrupt, metric, per);
  json out = {{"format", "mhaviz-patch"},
              {"version", 1},
              {"model", model_json(m)},
              {"clean", {{"text", o.clean}, {"token_ids", clean_ids}, {"tokens", tokens_json(tok, clean_ids)}}},
              {"corrupt", {{"text", o.corrupt}, {"token_ids", corrupt_ids}, {"tokens", tokens_json(tok, corrupt_ids)}}},
              {"target", {{"id", metric.target}, {"token", tok.display_token(metric.target)}}},
              {"vs", metric.vs < 0 ? json(nullptr) : json{{"id", metric.vs}, {"token", tok.display_token(metric.vs)}}},
              {"metric", metric.vs < 0 ? "log_prob" : "logit_diff"},
              {"metric_clean", g->clean},
              {"metric_corrupt", g->corrupt},
              {"per", o.per},
              {"rows", g->rows},
              {"cols", g->cols},
              {"effect", grid_json(*g)}};
  return out.dump(1) + "\n";
}

template <class Input>
std::string lens_json(const LensOptions& o, const Input& in) {
  const int target = o.target.empty() ? -1 : one_token(in.tokenizer, o.target, "--target");
  if (o.top < 1 || o.top > model_vocab(in.model))
    throw std::invalid_argument("--top: " + std::to_string(o.top) + " is not in [1, " +
                                std::to_string(model_vocab(in.model)) + "]");
  const auto tr = model_forward(in.model, in.ids);
  const LogitLens lens = logit_lens(in.model, tr, o.top, target);
  json layers = json::array();
  for (int l = 0; l < lens.layers; ++l) {
    json positions = json::array();
    for (int pos = 0; pos < lens.tokens; ++pos) {
      json top = json::array();
      for (int i = 0; i < lens.k; ++i) {
        const TokenProbability& e = lens.at(l, pos, i);
        top.push_back({{"id", e.id}, {"token", figure::display_tokens(in.tokenizer, {e.id}).front()}, {"p", e.p}});
      }
      json entry = {{"position", pos}, {"top", std::move(top)}};
      if (target >= 0) {
        const std::size_t at = static_cast<std::size_t>(l) * static_cast<std::size_t>(lens.tokens) + pos;
        entry["target_rank"] = lens.rank[at];
        entry["target_p"] = lens.target_p[at];
      }
      positions.push_back(std::move(entry));
    }
    layers.push_back({{"layer", l}, {"positions", std::move(positions)}});
  }
  json out = {
      {"format", "mhaviz-lens"},
      {"version", 1},
      {"model", model_json(in.model)},
      {"token_ids", in.ids},
      {"tokens", tokens_json(in.tokenizer, in.ids)},
      {"k", lens.k},
      {"target", target < 0 ? json(nullptr) : json{{"id", target}, {"token", in.tokenizer.display_token(target)}}},
      {"layers", std::move(layers)}};
  return out.dump(1) + "\n";
}

}  // namespace

int run_patch(const PatchOptions& o) {
  if (o.model.path.empty()) return usage_error("--model: give the model to patch (a folder or its .safetensors)");
  return write_made_output(o.output, [&] {
    if (o.per != "head" && o.per != "layer-position")
      throw std::invalid_argument("--per: '" + o.per + "' is not head or layer-position");
    return is_hf_model_folder(o.model.path) ? patch_json(o, load_hf_for(o.model.path))
                                            : patch_json(o, load_gpt_for(o.model.path));
  });
}

int run_lens(const LensOptions& o) {
  if (o.model.path.empty()) return usage_error("--model: give the model to read (a folder or its .safetensors)");
  return write_made_output(o.output, [&] {
    return is_hf_model_folder(o.model.path) ? lens_json(o, load_hf_model_input(o.model))
                                            : lens_json(o, load_model_input(o.model));
  });
}

}  // namespace mhaviz::cli
