#include "cli_model.hpp"

#include <CLI/CLI.hpp>
#include <stdexcept>

#include "mhaviz/gpt_forward.hpp"

namespace mhaviz::cli {

void add_model_options(CLI::App& sub, ModelOptions& o, bool input) {
  sub.add_option("--model", o.path,
                 "A trained GPT: a Hugging Face GPT-2 folder or the book's GPTModel (model.safetensors, config.json, "
                 "vocab.json + merges.txt or tokenizer.json), or its .safetensors file");
  if (!input) return;
  sub.add_option("--text", o.text, "Text to run the model on, tokenized as GPT-2 does (with --model)");
  sub.add_option("--ids", o.ids, "Token ids instead of --text, e.g. --ids 15496,995 (with --model)")->delimiter(',');
  sub.add_flag("--prepend-eot", o.prepend_eot, "Put <|endoftext|> before the text, as TransformerLens does");
}

ModelInput load_model_input(const ModelOptions& o) {
  if (o.text && !o.ids.empty()) throw std::invalid_argument("--ids: give --text or --ids, not both");
  if (!o.text && o.ids.empty()) throw std::invalid_argument("--text: give the text to run the model on (or --ids)");
  GptModel model = load_gpt(o.path);
  Tokenizer tokenizer = Tokenizer::from_folder(model.folder);
  const int V = model.config.vocab_size, ctx = model.config.n_ctx;
  const std::string field = o.text ? "text" : "--ids";
  std::vector<int> ids;
  if (o.prepend_eot) {
    if (tokenizer.eot_id() < 0) throw std::invalid_argument("--prepend-eot: the vocabulary has no <|endoftext|>");
    ids.push_back(tokenizer.eot_id());
  }
  const std::vector<int> more = o.text ? tokenizer.encode(*o.text) : o.ids;
  ids.insert(ids.end(), more.begin(), more.end());
  if (ids.empty()) throw std::invalid_argument(field + ": empty; give at least one token");
  if (static_cast<int>(ids.size()) > ctx)
    throw std::invalid_argument(field + ": " + std::to_string(ids.size()) + " tokens is longer than the model's context of " +
                                std::to_string(ctx));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= V)
      throw std::invalid_argument(field + ": token " + std::to_string(i) + " is id " + std::to_string(ids[i]) +
                                  ", outside the model's vocabulary [0, " + std::to_string(V) + ")" +
                                  (o.text ? " (are the tokenizer files this model's?)" : ""));
  prepare_gpt_forward(model);
  return ModelInput{std::move(model), std::move(tokenizer), std::move(ids)};
}

}  // namespace mhaviz::cli
