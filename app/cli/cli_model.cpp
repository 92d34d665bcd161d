#include "cli_model.hpp"

#include <CLI/CLI.hpp>
#include <stdexcept>

#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/prompt.hpp"

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
  const PromptOptions po{o.prepend_eot ? SpecialFirst::EndOfText : SpecialFirst::None};
  const PromptLimits limits{model.config.n_ctx, model.config.vocab_size};
  Prompt p =
      o.text ? encode_prompt(tokenizer, *o.text, po, limits) : prompt_from_ids(tokenizer, o.ids, po, limits, "--ids");
  if (!p.error.empty()) throw std::invalid_argument(p.error);
  prepare_gpt_forward(model);
  return ModelInput{std::move(model), std::move(tokenizer), std::move(p.ids)};
}

}  // namespace mhaviz::cli
