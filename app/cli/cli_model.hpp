// What `dump`, `bench` and `render` share for a trained GPT: --model PATH, and the tokens to
// run it on from --text (GPT-2's tokenizer) or --ids.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mhaviz/gpt.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/prompt.hpp"
#include "mhaviz/tokenizer.hpp"

namespace CLI {
class App;
}

namespace mhaviz::cli {

struct ModelOptions {
  std::string path;                 // --model: a folder or its .safetensors file
  std::optional<std::string> text;  // --text
  std::vector<int> ids;             // --ids 1,2,3 (instead of --text)
  bool prepend_eot = false;         // --prepend-eot: <|endoftext|> first, as TransformerLens does
  bool no_special = false;          // --no-special-tokens: without tokenizer.json's template tokens
};
// Adds --model, and with `input` also --text, --ids and --prepend-eot.
void add_model_options(CLI::App& sub, ModelOptions& o, bool input);

struct ModelInput {
  GptModel model;  // prepared for the current backend
  Tokenizer tokenizer;
  std::vector<int> ids;  // 1 to n_ctx ids, each in [0, vocab_size)
};
// Loads the model and its tokenizer and turns --text/--ids into ids. Throws LoadError for the
// files and std::invalid_argument ("text: 1030 tokens is longer than the model's context of
// 1024") for the input; both one line.
ModelInput load_model_input(const ModelOptions& o);

// A token given as text (" Mary") -> its id; std::invalid_argument naming `field` unless the
// text is exactly one token of the vocabulary.
int one_token(const Tokenizer& tok, const std::string& text, const char* field);
// A text -> the ids m runs on (GPT: no special tokens added; Qwen, Llama, Gemma: those its
// tokenizer.json's template adds); std::invalid_argument naming `field`.
std::vector<int> text_ids(const Tokenizer& tok, const GptModel& m, const std::string& text, const std::string& field);
std::vector<int> text_ids(const Tokenizer& tok, const HfModel& m, const std::string& text, const std::string& field);
// The same with a model's limits and the special tokens po asks for (prompt_options(o): as
// --text is encoded).
std::vector<int> text_ids(const Tokenizer& tok, PromptLimits limits, PromptOptions po, const std::string& text,
                          const std::string& field);
PromptOptions prompt_options(const ModelOptions& o);

// The same for a Qwen, Llama or Gemma folder (is_hf_model_folder): ids of at most
// max_position_embeddings, the tokenizer.json beside the weights.
struct HfModelInput {
  HfModel model;  // packed for the current backend
  Tokenizer tokenizer;
  std::vector<int> ids;
};
HfModelInput load_hf_model_input(const ModelOptions& o);
// What a forward of m takes: at most max_position_embeddings ids, each below vocab_size.
PromptLimits hf_limits(const HfModel& m);

}  // namespace mhaviz::cli
