// The streamed JSON of a dump: a header object, then "tensors": {name: {"shape", "data"}},
// written as text as it goes rather than as a JSON tree of millions of numbers. Numbers as
// the lesson's dump writes them (dump.hpp's append_number): at most 9 significant digits.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mhaviz/tensor.hpp"

namespace mhaviz {

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
