// The Train view's `text` task (the CLI's `mhaviz train --task text FILE`): the file the user
// chose checked as the trainer would read it, before Start, and its tokens named as a class
// reads them. No GL, GLFW or ImGui; tested in-process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mhaviz/train_data.hpp"

namespace mhaviz::gui {

// What the file gives, or why it cannot be trained on: error is one line naming the file and
// the reason (empty, binary, too short for one batch, unreadable or missing, a folder; the
// tokenizer folder's own error), as train::text_task says it. Empty error: trainable.
struct TextCheck {
  std::string error;
  std::int64_t tokens = 0;  // the text's length in tokens (characters, or GPT-2's)
  int vocab = 0;            // the vocabulary a model of it gets
  bool characters = true;   // tokenized by characters (else by the tokenizer folder's)
};
// path: the text file (empty: "text: choose a text file"); tokenizer: a folder with GPT-2's
// vocab.json + merges.txt or tokenizer.json, empty for characters; context, batch: the run's.
TextCheck check_train_text(const std::string& path, const std::string& tokenizer, int context, int batch);

// Whether folder holds a GPT-2 tokenizer's files (vocab.json + merges.txt, or tokenizer.json).
bool has_tokenizer_files(const std::string& folder);

// ids of data's vocabulary as a class reads them: a text's characters with white space made
// visible (␣, \n, \t), GPT-2's tokens as the model view shows them (␣the), ids of a synthetic
// task as numbers.
std::vector<std::string> task_token_names(const train::TaskData& data, const std::vector<std::int32_t>& ids);

}  // namespace mhaviz::gui
