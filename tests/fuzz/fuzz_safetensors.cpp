// libFuzzer target: the safetensors header parser. Any bytes give either a LoadError (one
// line naming the source) or tensors that lie inside the data, do not overlap, and read
// as float32 without touching memory outside the buffer (ASan checks that).
#include <cstdint>
#include <string_view>
#include <vector>

#include "mhaviz/safetensors.hpp"

namespace {

[[noreturn]] void broken(const char* what) {
  __builtin_trap();
  (void)what;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto f = mhaviz::SafetensorsFile::from_memory(data, size, "fuzz.safetensors");
    std::uint64_t end = 0;
    for (const mhaviz::StTensor& t : f.tensors()) {
      if (t.end < t.begin || t.end > size) broken("offsets");
      if (t.begin < end && t.begin != t.end) broken("overlap");
      if (t.end > end) end = t.end;
      if (static_cast<std::uint64_t>(t.numel()) * mhaviz::dtype_size(t.dtype) != t.end - t.begin) broken("size");
      try {
        const std::vector<float> v = f.read(t);
        if (v.size() != static_cast<std::size_t>(t.numel())) broken("read size");
        if (t.shape.size() == 2) {
          std::vector<float> tr(v.size());
          f.read_transposed(t, tr.data());
        }
      } catch (const mhaviz::LoadError&) {
        if (t.dtype == mhaviz::StDtype::F32 || t.dtype == mhaviz::StDtype::F16 || t.dtype == mhaviz::StDtype::BF16) broken("float refused");
      }
    }
  } catch (const mhaviz::LoadError& e) {
    const std::string_view msg = e.what();
    if (msg.rfind("fuzz.safetensors: ", 0) != 0 || msg.find('\n') != std::string_view::npos) broken("message");
  }
  return 0;
}
