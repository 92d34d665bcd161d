// safetensors, read through a memory map: an 8-byte little-endian header length N, N bytes
// of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the tensors' bytes (offsets relative to the first byte after the header, row-major,
// little-endian). Every malformed file is a LoadError naming the file and the problem; the
// reader never reads outside the mapping, whatever the header says.
//
// Tensors are copied out one at a time into float32 (F32, F16 and BF16 exactly, subnormals,
// infinities and NaNs included) and their pages released as they are consumed, so loading
// a 6 GB GPT-2 XL needs about its float32 size in memory and not twice that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/load_error.hpp"

namespace mhaviz {

enum class StDtype { F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U64, U32, U16, U8, BOOL };

std::string_view dtype_name(StDtype d);
std::size_t dtype_size(StDtype d);
bool dtype_is_float(StDtype d);

struct StTensor {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into the data section, end exclusive
  std::uint64_t end = 0;
  std::int64_t numel() const;
};

// "[768, 2304]", as torch and the safetensors header write a shape (tensor.hpp's shape_string
// writes the tuple "(768, 2304)").
std::string shape_list_string(const std::vector<std::int64_t>& shape);

class SafetensorsFile {
 public:
  // Maps the file read-only. Throws LoadError (does not exist, empty, truncated, bad header).
  static SafetensorsFile open(const std::filesystem::path& path);
  // Parses bytes the caller keeps alive for the object's lifetime (tests, fuzzing); `label`
  // names the source in errors.
  static SafetensorsFile from_memory(const void* data, std::size_t size, std::string label);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& label() const { return label_; }                // the file name used in errors
  const std::vector<StTensor>& tensors() const { return tensors_; }  // in offset order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const StTensor* find(std::string_view name) const;  // nullptr when absent

  // Tensor t's bytes as stored (any dtype; parsing checked they lie inside the file).
  std::span<const unsigned char> raw(const StTensor& t) const;
  // Copies tensor t as float32 into out[0, t.numel()). Throws LoadError for a non-float dtype.
  void read(const StTensor& t, float* out) const;
  std::vector<float> read(const StTensor& t) const;
  // A 2-D tensor [rows, cols] written transposed: out is [cols, rows] row-major.
  void read_transposed(const StTensor& t, float* out) const;
  // Gives back the pages that lie wholly inside t's bytes (madvise MADV_DONTNEED on a
  // private read-only file map: they are dropped from the resident set and would be read
  // again from the page cache if touched). No-op for from_memory.
  void release(const StTensor& t) const;

 private:
  SafetensorsFile() = default;
  void parse(std::size_t size);
  const unsigned char* bytes_of(const StTensor& t) const;

  std::string label_;
  const unsigned char* base_ = nullptr;  // start of the file (or the caller's buffer)
  std::size_t size_ = 0;
  std::size_t data_start_ = 0;  // 8 + N
  bool mapped_ = false;
  std::vector<StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Exact conversions (one value; the bulk ones live in read()).
float f16_to_f32(std::uint16_t h);
float bf16_to_f32(std::uint16_t b);

// Writes F32 tensors (name, shape, row-major values) as a safetensors file, atomically
// (temp file + rename). Throws std::runtime_error on an I/O failure.
struct StWriteTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* data = nullptr;  // numel values
};
void write_safetensors_f32(const std::filesystem::path& path, const std::vector<StWriteTensor>& tensors,
                           const std::map<std::string, std::string>& metadata = {});

}  // namespace mhaviz
