#include "mhaviz/prompt.hpp"

namespace mhaviz {
namespace {

// Steps shared by text and ids: 1 the special tokens first, 2 the given ids, 3 the checks.
Prompt assemble(const Tokenizer& tok, const std::vector<int>& ids, PromptOptions o, PromptLimits limits,
                std::string_view field, bool from_text) {
  const std::string name(field);
  Prompt p;
  if (o.first == SpecialFirst::EndOfText) {
    if (tok.eot_id() < 0) {
      p.ids = ids;
      p.error = name + ": the vocabulary has no <|endoftext|> to put first";
      return p;
    }
    p.ids.push_back(tok.eot_id());
  }
  p.ids.insert(p.ids.end(), ids.begin(), ids.end());
  const auto n = static_cast<long long>(p.ids.size());
  if (n == 0) {
    p.error = name + ": empty; type at least one token";
  } else if (n > limits.n_ctx) {
    p.error = name + ": " + std::to_string(n) + " tokens is longer than the model's context of " +
              std::to_string(limits.n_ctx);
  } else if (limits.vocab_size > 0) {
    for (std::size_t i = 0; i < p.ids.size() && p.error.empty(); ++i)
      if (p.ids[i] < 0 || p.ids[i] >= limits.vocab_size)
        p.error = name + ": token " + std::to_string(i) + " is id " + std::to_string(p.ids[i]) +
                  ", outside the model's vocabulary [0, " + std::to_string(limits.vocab_size) + ")" +
                  (from_text ? " (are the tokenizer files this model's?)" : "");
  }
  return p;
}

}  // namespace

Prompt encode_prompt(const Tokenizer& tok, std::string_view text, PromptOptions o, PromptLimits limits) {
  if (std::string why = tok.refuse(text); !why.empty()) return {{}, "text: " + why};
  return assemble(tok, tok.encode(text, o.template_tokens), o, limits, "text", true);
}

Prompt prompt_from_ids(const Tokenizer& tok, const std::vector<int>& ids, PromptOptions o, PromptLimits limits,
                       std::string_view field) {
  return assemble(tok, ids, o, limits, field, false);
}

}  // namespace mhaviz
