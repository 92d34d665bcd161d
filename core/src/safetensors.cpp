#include "mhaviz/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace mhaviz {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is every CPU mhaviz targets");

namespace {

// The reference implementation refuses headers over 100 MB; so do we, before allocating.
constexpr std::uint64_t kMaxHeader = 100'000'000;

struct DtypeInfo {
  StDtype dtype;
  const char* name;
  std::size_t size;
  bool is_float;
};
constexpr DtypeInfo kDtypes[] = {
    {StDtype::F64, "F64", 8, true},         {StDtype::F32, "F32", 4, true},
    {StDtype::F16, "F16", 2, true},         {StDtype::BF16, "BF16", 2, true},
    {StDtype::F8_E4M3, "F8_E4M3", 1, true}, {StDtype::F8_E5M2, "F8_E5M2", 1, true},
    {StDtype::I64, "I64", 8, false},        {StDtype::I32, "I32", 4, false},
    {StDtype::I16, "I16", 2, false},        {StDtype::I8, "I8", 1, false},
    {StDtype::U64, "U64", 8, false},        {StDtype::U32, "U32", 4, false},
    {StDtype::U16, "U16", 2, false},        {StDtype::U8, "U8", 1, false},
    {StDtype::BOOL, "BOOL", 1, false},
};

const DtypeInfo& info(StDtype d) {
  for (const DtypeInfo& i : kDtypes)
    if (i.dtype == d) return i;
  return kDtypes[1];
}

std::string name_q(std::string_view s) {
  // Names come from untrusted JSON: keep the one-line promise and a bounded length.
  std::string out = "\"";
  for (char c : s.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (s.size() > 200) out += "...";
  return out + "\"";
}

std::uint16_t load_u16(const unsigned char* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Source element i of tensor bytes p as float32.
float element(StDtype d, const unsigned char* p, std::size_t i) {
  switch (d) {
    case StDtype::F32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case StDtype::F16: return f16_to_f32(load_u16(p + 2 * i));
    case StDtype::BF16: return bf16_to_f32(load_u16(p + 2 * i));
    default: return 0.0f;  // callers reject the other dtypes first
  }
}

}  // namespace

std::string_view dtype_name(StDtype d) { return info(d).name; }
std::size_t dtype_size(StDtype d) { return info(d).size; }
bool dtype_is_float(StDtype d) { return info(d).is_float; }

std::int64_t StTensor::numel() const {
  // Parsing checked numel × dtype size against the data, but only when no dimension is 0:
  // [2^62, 2^62, 0] is a valid empty tensor whose running product would overflow.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  std::int64_t n = 1;
  for (std::int64_t s : shape) n *= s;
  return n;
}

std::string shape_list_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant × 2⁻²⁴, exact in float32.
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  // Infinity and NaN keep their payload; normals rebias the exponent (15 → 127).
  const std::uint32_t bits = exp == 0x1f ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112u) << 23) | (mant << 13));
  return std::bit_cast<float>(bits);
}

float bf16_to_f32(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// [SECTION] opening and parsing

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f;
  f.label_ = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw LoadError(f.label_ + ": does not exist");
  if (std::filesystem::is_directory(path, ec)) throw LoadError(f.label_ + ": is a folder, not a safetensors file");
  // A FIFO or a device would block the open or the read (a session's model.weights may name
  // any path); O_NONBLOCK covers a file swapped for a FIFO after the check.
  if (!std::filesystem::is_regular_file(path, ec)) throw LoadError(f.label_ + ": is not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw LoadError(f.label_ + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw LoadError(f.label_ + ": cannot read its size (" + std::strerror(err) + ")");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw LoadError(f.label_ + ": empty file (0 bytes), not a safetensors file");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file open
  if (p == MAP_FAILED) throw LoadError(f.label_ + ": cannot map " + std::to_string(size) + " bytes (" + std::strerror(err) + ")");
  f.base_ = static_cast<const unsigned char*>(p);
  f.size_ = size;
  f.mapped_ = true;
  f.parse(size);  // on a throw f's destructor unmaps
  return f;
}

SafetensorsFile SafetensorsFile::from_memory(const void* data, std::size_t size, std::string label) {
  SafetensorsFile f;
  f.label_ = std::move(label);
  f.base_ = static_cast<const unsigned char*>(data);
  f.size_ = size;
  if (size == 0) throw LoadError(f.label_ + ": empty file (0 bytes), not a safetensors file");
  f.parse(size);
  return f;
}

void SafetensorsFile::parse(std::size_t size) {
  const std::string& L = label_;
  if (size < 8) throw LoadError(L + ": truncated: " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  std::uint64_t n = 0;
  std::memcpy(&n, base_, 8);
  if (n > kMaxHeader)
    throw LoadError(L + ": header length " + std::to_string(n) + " is over the 100 MB limit (not a safetensors file, or corrupt)");
  if (n > size - 8)
    throw LoadError(L + ": header length " + std::to_string(n) + " is past the end of the " + std::to_string(size) +
                    "-byte file (truncated?)");
  data_start_ = 8 + static_cast<std::size_t>(n);
  const std::uint64_t data_size = size - data_start_;
  const char* h = reinterpret_cast<const char*>(base_ + 8);

  // Duplicate names: nlohmann keeps the last of equal keys silently, so watch the keys of
  // the top-level object as they are parsed.
  std::set<std::string> seen;
  std::string duplicate;
  const nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    if (ev == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  const nlohmann::json j = nlohmann::json::parse(h, h + n, cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw LoadError(L + ": header (" + std::to_string(n) + " bytes) is not valid JSON");
  if (!j.is_object()) throw LoadError(L + ": header is JSON but not an object of tensors");
  if (!duplicate.empty()) throw LoadError(L + ": tensor " + name_q(duplicate) + " is named twice in the header");

  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw LoadError(L + ": __metadata__ is not an object of strings");
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) throw LoadError(L + ": __metadata__ " + name_q(k) + " is not a string");
        metadata_[k] = mv.get<std::string>();
      }
      continue;
    }
    const std::string q = "tensor " + name_q(name);
    if (!v.is_object()) throw LoadError(L + ": " + q + " is not an object with dtype, shape and data_offsets");
    StTensor t;
    t.name = name;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) throw LoadError(L + ": " + q + " has no dtype string");
    const std::string& dts = dt->get_ref<const std::string&>();
    const DtypeInfo* di = nullptr;
    for (const DtypeInfo& i : kDtypes)
      if (dts == i.name) di = &i;
    if (!di) throw LoadError(L + ": " + q + " has unknown dtype " + name_q(dts));
    t.dtype = di->dtype;

    const auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) throw LoadError(L + ": " + q + " has no shape array");
    // numel × dtype size, unless it overflows 64 bits (then it is surely not the offsets' span).
    std::uint64_t bytes = di->size;
    bool too_big = false;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) throw LoadError(L + ": " + q + " has a shape entry that is not a non-negative integer: " + d.dump());
      const auto dim = d.get<std::uint64_t>();
      if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw LoadError(L + ": " + q + " has shape entry " + std::to_string(dim) + ", too large");
      t.shape.push_back(static_cast<std::int64_t>(dim));
      if (!too_big && __builtin_mul_overflow(bytes, dim, &bytes)) too_big = true;
    }
    for (std::int64_t dim : t.shape)
      if (dim == 0) bytes = 0, too_big = false;

    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2)
      throw LoadError(L + ": " + q + " has no data_offsets pair [begin, end]");
    for (const auto& o : *off)
      if (!o.is_number_unsigned())
        throw LoadError(L + ": " + q + " data_offsets " + off->dump() + " are not non-negative integers");
    t.begin = (*off)[0].get<std::uint64_t>();
    t.end = (*off)[1].get<std::uint64_t>();
    if (t.end < t.begin) throw LoadError(L + ": " + q + " data_offsets " + off->dump() + " end before they begin");
    if (t.end > data_size)
      throw LoadError(L + ": " + q + " data_offsets " + off->dump() + " are outside the data (" + std::to_string(data_size) + " bytes)");
    if (too_big || t.end - t.begin != bytes)
      throw LoadError(L + ": " + q + " data_offsets " + off->dump() + " hold " + std::to_string(t.end - t.begin) +
                      " bytes but shape " + shape_list_string(t.shape) + " of " + std::string(di->name) + " needs " +
                      (too_big ? "more than 2^64" : std::to_string(bytes)));
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (std::size_t i = 1; i < tensors_.size(); ++i) {
    const StTensor& a = tensors_[i - 1];
    const StTensor& b = tensors_[i];
    // Empty tensors take no bytes and may share an offset with anything.
    if (b.begin < a.end && a.begin != a.end && b.begin != b.end)
      throw LoadError(L + ": tensors " + name_q(a.name) + " and " + name_q(b.name) + " overlap in the data");
  }
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : label_(std::move(o.label_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      data_start_(o.data_start_),
      mapped_(std::exchange(o.mapped_, false)),
      tensors_(std::move(o.tensors_)),
      metadata_(std::move(o.metadata_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    this->~SafetensorsFile();
    new (this) SafetensorsFile(std::move(o));
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapped_ && base_) ::munmap(const_cast<unsigned char*>(base_), size_);
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  for (const StTensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

// [SECTION] reading tensors

const unsigned char* SafetensorsFile::bytes_of(const StTensor& t) const {
  if (!dtype_is_float(t.dtype) || t.dtype == StDtype::F64 || t.dtype == StDtype::F8_E4M3 || t.dtype == StDtype::F8_E5M2) {
    const char* kind = dtype_is_float(t.dtype) ? "unsupported dtype " : "integer dtype ";
    throw LoadError(label_ + ": tensor " + name_q(t.name) + " has " + kind + std::string(dtype_name(t.dtype)) +
                    "; model weights must be F32, F16 or BF16");
  }
  return base_ + data_start_ + t.begin;
}

std::span<const unsigned char> SafetensorsFile::raw(const StTensor& t) const {
  return {base_ + data_start_ + t.begin, static_cast<std::size_t>(t.end - t.begin)};
}

void SafetensorsFile::read(const StTensor& t, float* out) const {
  const unsigned char* p = bytes_of(t);
  const auto n = static_cast<std::size_t>(t.numel());
  if (n == 0) return;  // out may be null (an empty vector's data()), which memcpy may not take
  if (t.dtype == StDtype::F32) {
    std::memcpy(out, p, n * 4);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = element(t.dtype, p, i);
}

std::vector<float> SafetensorsFile::read(const StTensor& t) const {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  read(t, v.data());
  return v;
}

void SafetensorsFile::read_transposed(const StTensor& t, float* out) const {
  if (t.shape.size() != 2) throw LoadError(label_ + ": tensor " + name_q(t.name) + " is not 2-D: " + shape_list_string(t.shape));
  const unsigned char* p = bytes_of(t);
  const auto rows = static_cast<std::size_t>(t.shape[0]);
  const auto cols = static_cast<std::size_t>(t.shape[1]);
  // Tiles keep both the reads and the writes within a few cache lines.
  constexpr std::size_t B = 32;
  for (std::size_t r0 = 0; r0 < rows; r0 += B)
    for (std::size_t c0 = 0; c0 < cols; c0 += B)
      for (std::size_t r = r0; r < std::min(rows, r0 + B); ++r)
        for (std::size_t c = c0; c < std::min(cols, c0 + B); ++c) out[c * rows + r] = element(t.dtype, p, r * cols + c);
}

void SafetensorsFile::release(const StTensor& t) const {
  if (!mapped_) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<std::uintptr_t>(base_ + data_start_ + t.begin);
  const auto hi = reinterpret_cast<std::uintptr_t>(base_ + data_start_ + t.end);
  const std::uintptr_t first = (lo + page - 1) / page * page;
  const std::uintptr_t last = hi / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// [SECTION] writing

void write_safetensors_f32(const std::filesystem::path& path, const std::vector<StWriteTensor>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const StWriteTensor& t : tensors) {
    std::int64_t n = 1;
    for (std::int64_t s : t.shape) n *= s;
    const std::uint64_t bytes = static_cast<std::uint64_t>(n) * 4;
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the reference writer does
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const std::uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const StWriteTensor& t : tensors) {
      std::int64_t count = 1;
      for (std::int64_t s : t.shape) count *= s;
      out.write(reinterpret_cast<const char*>(t.data), static_cast<std::streamsize>(count * 4));
    }
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error(path.string() + ": cannot write");
    }
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace mhaviz
