// The prompt encoder (prompt.hpp) that the command line, the app's text box and the model
// worker share: special tokens first by policy, the context and vocabulary checks, and one
// wording for each error, on GPT-2's real vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mhaviz/prompt.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using test::kGpt2Vocab;

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Tokenizer& gpt2_tokenizer() {
  static const Tokenizer t = Tokenizer::from_files(kGpt2Vocab / "vocab.json", kGpt2Vocab / "merges.txt");
  return t;
}

constexpr PromptLimits kGpt2{1024, 50257};

TEST(Prompt, TextAloneOrEndOfTextFirst) {
  const Prompt plain = encode_prompt(gpt2_tokenizer(), "Hello world", {}, kGpt2);
  EXPECT_EQ(plain.ids, (std::vector<int>{15496, 995}));
  EXPECT_EQ(plain.error, "");
  const Prompt eot = encode_prompt(gpt2_tokenizer(), "Hello world", {SpecialFirst::EndOfText}, kGpt2);
  EXPECT_EQ(eot.ids, (std::vector<int>{50256, 15496, 995}));
  EXPECT_EQ(eot.error, "");
  // The end-of-text token alone is a prompt of one token.
  EXPECT_EQ(encode_prompt(gpt2_tokenizer(), "", {SpecialFirst::EndOfText}, kGpt2).ids, std::vector<int>{50256});
}

TEST(Prompt, TheTemplatesSpecialTokensUnlessLeftOut) {
  // A tokenizer.json (SentencePiece-style: no byte-level step) whose post-processor puts <bos>
  // first, as Gemma 3's and Llama 3.1's do.
  const Tokenizer tok = Tokenizer::from_tokenizer_json_string(R"({
    "added_tokens": [{"id": 3, "content": "<bos>", "special": true}],
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<bos>": {"id": "<bos>", "ids": [3], "tokens": ["<bos>"]}}},
    "model": {"type": "BPE", "vocab": {"h": 0, "i": 1, "hi": 2}, "merges": ["h i"]}})");
  const PromptLimits limits{16, 4};
  EXPECT_EQ(encode_prompt(tok, "hi", {}, limits).ids, (std::vector<int>{3, 2}));
  EXPECT_EQ(encode_prompt(tok, "hi", {SpecialFirst::None, false}, limits).ids, std::vector<int>{2});
  // GPT-2's tokenizer has no template: the switch changes nothing there.
  EXPECT_EQ(encode_prompt(gpt2_tokenizer(), "Hello world", {SpecialFirst::None, false}, kGpt2).ids,
            (std::vector<int>{15496, 995}));
}

TEST(Prompt, EveryErrorInOneWording) {
  EXPECT_EQ(encode_prompt(gpt2_tokenizer(), "", {}, kGpt2).error, "text: empty; type at least one token");
  // Too long: the ids are all there for a text box to show, with the lengths in the error.
  const Prompt lng = encode_prompt(gpt2_tokenizer(), "Every effort moves you", {SpecialFirst::EndOfText}, {4, 50257});
  EXPECT_EQ(lng.ids, (std::vector<int>{50256, 6109, 3626, 6100, 345}));
  EXPECT_EQ(lng.error, "text: 5 tokens is longer than the model's context of 4");
  EXPECT_EQ(encode_prompt(gpt2_tokenizer(), "Every effort moves you", {}, {4, 50257}).error, "");
  // A model whose vocabulary is smaller than its tokenizer's.
  EXPECT_EQ(
      encode_prompt(gpt2_tokenizer(), "Hello world", {}, {16, 1000}).error,
      "text: token 0 is id 15496, outside the model's vocabulary [0, 1000) (are the tokenizer files this model's?)");
  EXPECT_EQ(encode_prompt(gpt2_tokenizer(), "Hello world", {}, {16, 0}).error, "") << "vocab_size 0: not checked";
  // Ids given as they are name their own field.
  EXPECT_EQ(prompt_from_ids(gpt2_tokenizer(), {1, 50257}, {}, kGpt2, "--ids").error,
            "--ids: token 1 is id 50257, outside the model's vocabulary [0, 50257)");
  EXPECT_EQ(prompt_from_ids(gpt2_tokenizer(), {1, 2}, {SpecialFirst::EndOfText}, kGpt2, "--ids").ids,
            (std::vector<int>{50256, 1, 2}));
}

TEST(Prompt, EndOfTextFirstWithoutOneInTheVocabularyIsAnError) {
  nlohmann::json vocab = nlohmann::json::parse(slurp_file(kGpt2Vocab / "vocab.json"));
  vocab.erase("<|endoftext|>");
  const Tokenizer tok = Tokenizer::from_strings(vocab.dump(), slurp_file(kGpt2Vocab / "merges.txt"), "no-eot");
  ASSERT_EQ(tok.eot_id(), -1);
  const Prompt p = encode_prompt(tok, "Hello world", {SpecialFirst::EndOfText}, kGpt2);
  EXPECT_EQ(p.error, "text: the vocabulary has no <|endoftext|> to put first");
  EXPECT_EQ(p.ids, (std::vector<int>{15496, 995})) << "the text's tokens are still shown";
  EXPECT_EQ(encode_prompt(tok, "Hello world", {}, kGpt2).error, "");
}

}  // namespace
}  // namespace mhaviz
