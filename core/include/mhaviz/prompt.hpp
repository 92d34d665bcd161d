// Text -> the token ids a trained model runs on: the one encoder of the command line
// (`--text`, `--ids`), the app's text box and the model worker, with one wording for each
// error, so the text box can say before a forward what the forward would refuse.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/tokenizer.hpp"

namespace mhaviz {

// Which special tokens go before the text's own: a policy rather than a switch, as
// tokenizers differ in what they put first.
enum class SpecialFirst {
  None,       // the text's tokens alone (what GPT-2's tokenizer gives)
  EndOfText,  // "<|endoftext|>" first, as TransformerLens runs GPT-2: the token the model saw
              // between documents in training, where many heads park their attention
};

struct PromptOptions {
  SpecialFirst first = SpecialFirst::None;
  // The special tokens tokenizer.json's post-processor puts around a text (Llama 3.1's
  // <|begin_of_text|>, Gemma 3's <bos>), as Hugging Face's tokenizers add them by default;
  // false leaves them out. GPT-2's tokenizer adds none either way.
  bool template_tokens = true;
};

// What a model accepts: 1 to n_ctx ids, each in [0, vocab_size) (vocab_size 0: ids are not
// checked against a vocabulary, for a caller that only shows the tokenizer's own ids).
struct PromptLimits {
  int n_ctx = 0;
  int vocab_size = 0;
};

struct Prompt {
  std::vector<int> ids;  // every id, also when there are too many (a text box still shows them)
  std::string error;     // the first problem, one line naming the field; empty: a model can run ids
};

// Encodes text with the special tokens o asks for first. Errors, in this order:
//   "text: the vocabulary has no <|endoftext|> to put first"
//   "text: empty; type at least one token"
//   "text: 18 tokens is longer than the model's context of 16"
//   "text: token 3 is id 50300, outside the model's vocabulary [0, 263) (are the tokenizer
//    files this model's?)"
// Never throws: the tokenizer encodes any bytes. Takes long for a long text: call it where
// no lock is held that a drawing thread takes.
Prompt encode_prompt(const Tokenizer& tok, std::string_view text, PromptOptions o, PromptLimits limits);

// The same for ids given as they are (`--ids 15496,995`); errors name `field` and have no
// question about the tokenizer files.
Prompt prompt_from_ids(const Tokenizer& tok, const std::vector<int>& ids, PromptOptions o, PromptLimits limits,
                       std::string_view field);

}  // namespace mhaviz
