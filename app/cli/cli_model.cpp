#include "cli_model.hpp"

#include <CLI/CLI.hpp>
#include <stdexcept>

#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/prompt.hpp"

namespace mhaviz::cli {

void add_model_options(CLI::App& sub, ModelOptions& o, bool input) {
  sub.add_option("--model", o.path,
                 "A trained model: a Hugging Face GPT-2 folder or the book's GPTModel (model.safetensors, config.json, "
                 "vocab.json + merges.txt or tokenizer.json), or its .safetensors file; or a Qwen3, Qwen2, Llama or "
                 "Gemma 3 folder (config.json, model.safetensors or shards, tokenizer.json)");
  if (!input) return;
  sub.add_option("--text", o.text,
                 "Text to run the model on, tokenized by the model folder's tokenizer (with --model)");
  sub.add_option(
         "--ids", o.ids,
         "Token ids instead of --text, e.g. --ids 15496,995 (with --model; a folder without tokenizer files takes "
         "only ids)")
      ->delimiter(',');
  sub.add_flag("--prepend-eot", o.prepend_eot, "Put <|endoftext|> before the text, as TransformerLens does");
  sub.add_flag(
      "--no-special-tokens", o.no_special,
      "Leave out the special tokens tokenizer.json's template puts around the text (<|begin_of_text|>, <bos>)");
}

PromptOptions prompt_options(const ModelOptions& o) {
  return {o.prepend_eot ? SpecialFirst::EndOfText : SpecialFirst::None, !o.no_special};
}

namespace {

// Exactly one of --text and --ids, checked before a model is read.
void check_input(const ModelOptions& o) {
  if (o.text && !o.ids.empty()) throw std::invalid_argument("--ids: give --text or --ids, not both");
  if (!o.text && o.ids.empty()) throw std::invalid_argument("--text: give the text to run the model on (or --ids)");
}

// --text or --ids -> the ids a model with these limits runs on; std::invalid_argument otherwise.
std::vector<int> input_ids(const ModelOptions& o, const Tokenizer& tokenizer, PromptLimits limits) {
  const PromptOptions po = prompt_options(o);
  Prompt p =
      o.text ? encode_prompt(tokenizer, *o.text, po, limits) : prompt_from_ids(tokenizer, o.ids, po, limits, "--ids");
  if (!p.error.empty()) throw std::invalid_argument(p.error);
  return std::move(p.ids);
}

}  // namespace

ModelInput load_model_input(const ModelOptions& o) {
  check_input(o);
  GptModel model = load_gpt(o.path);
  Tokenizer tokenizer = Tokenizer::from_folder(model.folder, model.config.vocab_size);
  std::vector<int> ids = input_ids(o, tokenizer, {model.config.n_ctx, model.config.vocab_size});
  prepare_gpt_forward(model);
  return ModelInput{std::move(model), std::move(tokenizer), std::move(ids)};
}

int one_token(const Tokenizer& tok, const std::string& text, const char* field) {
  const std::vector<int> ids = tok.encode(text, false);
  if (ids.size() != 1)
    throw std::invalid_argument(std::string(field) + ": '" + text + "' is " + std::to_string(ids.size()) +
                                " tokens, not one token of the vocabulary");
  return ids.front();
}

std::vector<int> text_ids(const Tokenizer& tok, const GptModel& m, const std::string& text, const std::string& field) {
  return text_ids(tok, {m.config.n_ctx, m.config.vocab_size}, {}, text, field);
}

std::vector<int> text_ids(const Tokenizer& tok, const HfModel& m, const std::string& text, const std::string& field) {
  return text_ids(tok, hf_limits(m), {}, text, field);
}

std::vector<int> text_ids(const Tokenizer& tok, PromptLimits limits, PromptOptions po, const std::string& text,
                          const std::string& field) {
  Prompt p = encode_prompt(tok, text, po, limits);
  if (!p.error.empty()) {
    const std::string e = p.error.rfind("text:", 0) == 0 ? field + ":" + p.error.substr(5) : field + ": " + p.error;
    throw std::invalid_argument(e);
  }
  return std::move(p.ids);
}

HfModelInput load_hf_model_input(const ModelOptions& o) {
  check_input(o);
  HfModel model = load_hf_model(o.path);
  Tokenizer tokenizer = Tokenizer::from_folder(model.folder, model.config.vocab_size);
  std::vector<int> ids = input_ids(o, tokenizer, hf_limits(model));
  return HfModelInput{std::move(model), std::move(tokenizer), std::move(ids)};
}

PromptLimits hf_limits(const HfModel& m) {
  const HfConfig& c = m.config;
  return {c.max_position_embeddings > 0 ? c.max_position_embeddings : 1 << 30, c.vocab_size};
}

}  // namespace mhaviz::cli
