// The streamed JSON of every dump (the lesson's, GPT-2's, the Hugging Face models'): a header
// object, then "tensors": {name: {"shape", "data"}}, written as text as it goes rather than
// as a JSON tree of millions of numbers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mhaviz/tensor.hpp"

namespace mhaviz {

// Shortest decimal text with 9 significant digits at most ("0.5", "-0.451920271"); JSON has
// no infinities: a non-finite value is null.
void append_number(std::string& out, float x);

class TensorJson {
 public:
  // Starts the output with head's members, then opens "tensors".
  explicit TensorJson(const nlohmann::json& head);
  void add(const std::string& name, const Shape& shape, const std::vector<float>& data);
  // Closes "tensors" and the object; the writer is empty afterwards.
  std::string finish();

 private:
  std::string out_;
  bool first_ = true;
};

}  // namespace mhaviz
