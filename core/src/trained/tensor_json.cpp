#include "mhaviz/tensor_json.hpp"

#include <cmath>
#include <cstdio>

namespace mhaviz {

// %.9g: the float's value in at most 9 significant digits.
void append_number(std::string& out, float x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
  out.append(buf, static_cast<std::size_t>(n));
}

TensorJson::TensorJson(const nlohmann::json& head) {
  out_ = head.dump(1);
  out_.pop_back();  // the closing brace: the tensors follow
  while (!out_.empty() && (out_.back() == '\n' || out_.back() == ' ')) out_.pop_back();
  out_ += ",\n \"tensors\": {";
}

void TensorJson::add(const std::string& name, const Shape& shape, const std::vector<float>& data) {
  out_ += first_ ? "\n  \"" : ",\n  \"";
  first_ = false;
  out_ += name;
  out_ += "\": {\"shape\": [";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out_ += ", ";
    out_ += std::to_string(shape[i]);
  }
  out_ += "], \"data\": [";
  out_.reserve(out_.size() + data.size() * 13);
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i) out_ += ", ";
    append_number(out_, data[i]);
  }
  out_ += "]}";
}

std::string TensorJson::finish() {
  out_ += "\n }\n}\n";
  return std::move(out_);
}

}  // namespace mhaviz
