// The one error type of everything that reads a user's trained model: safetensors files,
// config.json, vocab.json, merges.txt, tokenizer.json. The message is one line that names
// the file and the problem ("model.safetensors: header length 9e18 is past the end of the
// 1024-byte file"); the CLI prints it and exits 2, the app shows it and keeps its model.
#pragma once

#include <stdexcept>

namespace mhaviz {

class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mhaviz
