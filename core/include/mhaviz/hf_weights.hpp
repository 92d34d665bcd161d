// The weights of a Hugging Face checkpoint folder: model.safetensors, or the shards that
// model.safetensors.index.json names ({"metadata": {...}, "weight_map": {tensor name: shard
// file}}), each memory-mapped by SafetensorsFile. One name -> tensor table over all files,
// checked whole when opened: a shard missing, an index entry outside the folder, a tensor
// the index puts in a shard that does not hold it, one in two shards or one the index does
// not name are each a LoadError of one line naming the file and the tensor.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/safetensors.hpp"

namespace mhaviz {

// One tensor: where it lives and how to read it (F32, F16 and BF16 widened to float32).
struct HfTensor {
  const SafetensorsFile* file = nullptr;
  const StTensor* info = nullptr;  // name, dtype, shape

  const std::vector<std::int64_t>& shape() const { return info->shape; }
  StDtype dtype() const { return info->dtype; }
  std::int64_t numel() const { return info->numel(); }
  std::span<const unsigned char> bytes() const { return file->raw(*info); }  // as stored
  void read(float* out) const { file->read(*info, out); }                    // out: numel floats
  std::vector<float> read() const { return file->read(*info); }
  void read_transposed(float* out) const { file->read_transposed(*info, out); }  // [r, c] -> [c, r]
  void release() const { file->release(*info); }                                 // give its pages back once consumed
};

class HfWeights {
 public:
  // model.safetensors if the folder has it (as transformers looks first), else the index and
  // its shards. Throws LoadError.
  static HfWeights open(const std::filesystem::path& folder);

  HfWeights(HfWeights&&) noexcept;
  HfWeights& operator=(HfWeights&&) noexcept;
  ~HfWeights();

  bool sharded() const { return sharded_; }
  std::size_t file_count() const { return files_.size(); }
  const std::map<std::string, HfTensor, std::less<>>& tensors() const { return tensors_; }  // by name
  const HfTensor* find(std::string_view name) const;                                        // nullptr when absent
  // Throws LoadError "FOLDER: no tensor "name"".
  const HfTensor& at(std::string_view name) const;

 private:
  HfWeights() = default;
  std::string label_;  // the folder, for errors
  bool sharded_ = false;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, HfTensor, std::less<>> tensors_;
};

}  // namespace mhaviz
