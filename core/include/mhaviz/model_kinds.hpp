// The two kinds of trained model the core reads (a GPT, gpt_forward.hpp; a Qwen, Llama or
// Gemma 3 folder, hf_model.hpp) under one name per step, for code written once for both:
// the interventions' commands, their figures and the app's model view.
#pragma once

#include <span>
#include <vector>

#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/hf_model.hpp"

namespace mhaviz {

inline GptTrace model_forward(const GptModel& m, std::span<const int> ids) { return gpt_forward(m, ids); }
inline HfTrace model_forward(const HfModel& m, std::span<const int> ids) { return hf_forward(m, ids); }

inline GptTrace model_forward_intervened(const GptModel& m, const GptTrace& base, const Intervention& iv) {
  return gpt_forward_intervened(m, base, iv);
}
inline HfTrace model_forward_intervened(const HfModel& m, const HfTrace& base, const HfIntervention& iv) {
  return hf_forward_intervened(m, base, iv);
}

// (V) the LM head at position pos of tr: the trace's own last row where pos is the last.
inline std::vector<float> model_logits(const GptModel& m, const GptTrace& tr, int pos) {
  return pos == tr.tokens() - 1 && !tr.logits_last.data.empty() ? tr.logits_last.data : gpt_logits(m, tr, pos);
}
inline std::vector<float> model_logits(const HfModel& m, const HfTrace& tr, int pos) {
  return pos == tr.tokens() - 1 && !tr.logits_last.data.empty() ? tr.logits_last.data : hf_logits(m, tr, pos);
}

inline int model_layers(const GptModel& m) { return m.config.n_layer; }
inline int model_layers(const HfModel& m) { return m.config.num_hidden_layers; }
inline int model_vocab(const GptModel& m) { return m.config.vocab_size; }
inline int model_vocab(const HfModel& m) { return m.config.vocab_size; }

}  // namespace mhaviz
