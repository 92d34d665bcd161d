// The safetensors reader on hand-made bytes: values of every float dtype (exact, specials
// included), one-line LoadErrors for each way a header can be wrong, offsets at the exact end
// of the data, the size of every dtype the format defines, mutated files that must never
// crash, the atomic writer's round trip through a real memory map.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "mhaviz/safetensors.hpp"

namespace mhaviz {
namespace {

using nlohmann::json;

// 8-byte little-endian length, header text, data.
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

std::string error_of(const std::string& bytes) {
  try {
    SafetensorsFile::from_memory(bytes.data(), bytes.size(), "m.safetensors");
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}

// A header with one F32 tensor "x" of `shape` at `offsets` and `data_bytes` bytes of data.
std::string one_tensor(const json& dtype, const json& shape, const json& offsets, std::size_t data_bytes) {
  const json h = {{"x", {{"dtype", dtype}, {"shape", shape}, {"data_offsets", offsets}}}};
  return file_bytes(h.dump(), std::string(data_bytes, '\0'));
}

TEST(Safetensors, ReadsEveryFloatDtypeAndMetadata) {
  const std::string data = raw<float>({1.5f, -2.0f, 3.25f, 0.0f}) + raw<std::uint16_t>({0x3c00, 0xc000}) +
                           raw<std::uint16_t>({0x3f80, 0x4049});
  const json h = {{"__metadata__", {{"format", "pt"}}},
                  {"a", {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}}},
                  {"b", {{"dtype", "F16"}, {"shape", {2}}, {"data_offsets", {16, 20}}}},
                  {"c", {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {20, 24}}}}};
  const std::string bytes = file_bytes(h.dump(), data);
  const auto f = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "m.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.read(*f.find("a")), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f}));
  EXPECT_EQ(f.read(*f.find("b")), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.read(*f.find("c")), (std::vector<float>{1.0f, 3.140625f}));
  EXPECT_EQ(f.find("a")->shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(f.find("missing"), nullptr);
  std::vector<float> t(4);
  f.read_transposed(*f.find("a"), t.data());
  EXPECT_EQ(t, (std::vector<float>{1.5f, 3.25f, -2.0f, 0.0f}));
}

TEST(Safetensors, HalfConversionsAreExactIncludingSpecials) {
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0xfc01)));
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)) && f16_to_f32(0x8000) == 0.0f);
  EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(bf16_to_f32(0x0001), std::bit_cast<float>(0x00010000u));  // bf16 subnormal
  EXPECT_EQ(bf16_to_f32(0xff80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc1)));
  // Every finite half round-trips through float32 to itself (float → half by the FPU's rule).
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    const float v = f16_to_f32(static_cast<std::uint16_t>(h));
    ASSERT_EQ(f16_to_f32(static_cast<std::uint16_t>(h | 0x8000)), -v);
    if (h > 0) {
      ASSERT_GT(v, f16_to_f32(static_cast<std::uint16_t>(h - 1))) << h;
    }
  }
}

struct Bad {
  const char* what;
  std::string bytes;
  const char* expected;
};

TEST(Safetensors, EveryBrokenHeaderIsOneLineNamingTheFile) {
  std::string huge(8, '\0');
  const std::uint64_t big = 9'000'000'000'000'000'000ull;
  std::memcpy(huge.data(), &big, 8);
  std::string past(8, '\0');
  const std::uint64_t n = 1000;
  std::memcpy(past.data(), &n, 8);
  past += "{}";
  const json x = {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}};
  const std::vector<Bad> cases = {
      {"empty", "", "empty file"},
      {"short", "abc", "too short for the 8-byte header length"},
      {"over 100 MB", huge + "{}", "over the 100 MB limit"},
      {"past the end", past, "header length 1000 is past the end of the 10-byte file"},
      {"not JSON", file_bytes("{\"x\": ", ""), "not valid JSON"},
      {"not an object", file_bytes("[1]", ""), "not an object of tensors"},
      {"tensor not an object", file_bytes("{\"x\": 3}", ""), "tensor \"x\" is not an object"},
      {"no dtype", file_bytes(R"({"x": {"shape": [1], "data_offsets": [0, 4]}})", std::string(4, '\0')), "no dtype"},
      {"dtype not a string", one_tensor(7, {1}, {0, 4}, 4), "no dtype string"},
      {"unknown dtype", one_tensor("F12", {1}, {0, 4}, 4), "unknown dtype \"F12\""},
      {"no shape", file_bytes(R"({"x": {"dtype": "F32", "data_offsets": [0, 4]}})", std::string(4, '\0')), "no shape"},
      {"negative shape", one_tensor("F32", {-1}, {0, 4}, 4), "not a non-negative integer: -1"},
      {"float shape", one_tensor("F32", {1.5}, {0, 4}, 4), "not a non-negative integer: 1.5"},
      {"no offsets", file_bytes(R"({"x": {"dtype": "F32", "shape": [1]}})", std::string(4, '\0')), "no data_offsets"},
      {"three offsets", one_tensor("F32", {1}, {0, 4, 8}, 8), "no data_offsets pair"},
      {"negative offset", one_tensor("F32", {1}, {-4, 0}, 4), "not non-negative integers"},
      {"reversed offsets", one_tensor("F32", {1}, {4, 0}, 4), "end before they begin"},
      {"outside", one_tensor("F32", {4}, {0, 16}, 8), "outside the data (8 bytes)"},
      {"shape × dtype", one_tensor("F32", {3}, {0, 8}, 8), "hold 8 bytes but shape [3] of F32 needs 12"},
      {"F16 size", one_tensor("F16", {3}, {0, 8}, 8), "needs 6"},
      {"overflowing shape", one_tensor("F32", {1ull << 62, 1ull << 62}, {0, 8}, 8), "needs more than 2^64"},
      {"overlap", file_bytes(json{{"a", x}, {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}}}.dump(), std::string(12, '\0')),
       "tensors \"a\" and \"b\" overlap"},
      {"duplicate", file_bytes(R"({"x": )" + x.dump() + R"(, "x": )" + x.dump() + "}", std::string(8, '\0')), "\"x\" is named twice"},
      {"metadata not object", file_bytes(R"({"__metadata__": 3})", ""), "__metadata__ is not an object"},
      {"metadata value", file_bytes(R"({"__metadata__": {"a": 1}})", ""), "__metadata__ \"a\" is not a string"},
      {"newline in name", file_bytes(json{{"a\nb", {{"dtype", "Q"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), std::string(4, '\0')),
       "tensor \"a?b\" has unknown dtype"},
  };
  for (const Bad& c : cases) {
    const std::string e = error_of(c.bytes);
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.what << ": got \"" << e << "\"";
    EXPECT_EQ(e.rfind("m.safetensors: ", 0), 0u) << c.what << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << c.what;
  }
}

TEST(Safetensors, NonFloatDtypesParseButDoNotReadAsWeights) {
  // GPT-2 files may carry integer/bool mask buffers: the header is fine, reading one is not.
  const std::string bytes = one_tensor("I32", {2}, {0, 8}, 8);
  const auto f = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "m.safetensors");
  try {
    (void)f.read(*f.find("x"));
    FAIL() << "integer tensor read as float";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor \"x\" has integer dtype I32"), std::string::npos) << e.what();
  }
  const std::string b2 = one_tensor("F64", {1}, {0, 8}, 8);
  const auto f2 = SafetensorsFile::from_memory(b2.data(), b2.size(), "m.safetensors");
  EXPECT_THROW((void)f2.read(*f2.find("x")), LoadError);
  const std::string b3 = one_tensor("BOOL", {0, 3}, {8, 8}, 8);  // empty tensors take no bytes
  EXPECT_EQ(error_of(b3), "");
  const std::string b4 = one_tensor("F32", {1ull << 62, 1ull << 62, 0}, {8, 8}, 8);
  const auto f4 = SafetensorsFile::from_memory(b4.data(), b4.size(), "m.safetensors");
  EXPECT_EQ(f4.find("x")->numel(), 0);
  EXPECT_TRUE(f4.read(*f4.find("x")).empty());
}

// The last byte a tensor may hold is the last byte of the file: data_offsets end = data size
// is read, one byte more is refused naming the file and the tensor; the same at the start
// (an empty tensor may sit at the very end, not one past it) and for begin > end by one.
// Through the memory map and through from_memory, the bytes the fuzz target parses.
TEST(Safetensors, OffsetsAtTheEndOfTheDataExactly) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhaviz_st_edge_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Edge {
    const char* what;
    json dtype, shape, offsets;
    const char* error;  // "" when accepted
  };
  const std::size_t n = 12;  // bytes of data
  const std::vector<Edge> edges = {
      {"U8 ending at the last byte", "U8", {12}, {0, 12}, ""},
      {"U8 ending one past", "U8", {13}, {0, 13}, "data_offsets [0,13] are outside the data (12 bytes)"},
      {"F32 ending at the last byte", "F32", {2}, {4, 12}, ""},
      {"F32 ending one past", "F32", {2}, {5, 13}, "data_offsets [5,13] are outside the data (12 bytes)"},
      {"empty, starting at the end", "F32", {0}, {12, 12}, ""},
      {"empty, starting one past", "F32", {0}, {13, 13}, "data_offsets [13,13] are outside the data (12 bytes)"},
      {"begin one past end", "U8", {0}, {12, 11}, "data_offsets [12,11] end before they begin"},
  };
  for (const Edge& e : edges) {
    std::string data(n, '\0');
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<char>(0x3c + i);
    const std::string bytes = one_tensor(e.dtype, e.shape, e.offsets, n);
    const auto path = dir / "edge.safetensors";
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    for (const bool mapped : {false, true}) {
      const std::string label = mapped ? path.string() : "m.safetensors";
      const std::string where = std::string(e.what) + (mapped ? " (mapped)" : " (in memory)");
      try {
        const SafetensorsFile f =
            mapped ? SafetensorsFile::open(path) : SafetensorsFile::from_memory(bytes.data(), bytes.size(), label);
        EXPECT_STREQ(e.error, "") << where << ": accepted";
        const StTensor& t = *f.find("x");
        EXPECT_EQ(t.end, e.offsets[1].get<std::uint64_t>()) << where;
        if (t.dtype == StDtype::F32) {
          EXPECT_EQ(f.read(t).size(), static_cast<std::size_t>(t.numel())) << where;
        }
      } catch (const LoadError& err) {
        EXPECT_EQ(std::string(err.what()), e.error[0] ? label + ": tensor \"x\" " + e.error : std::string("accepted"))
            << where;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

// Every dtype the safetensors format defines (the reference implementation's Dtype: BOOL,
// U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64) with its size
// in bytes; one file holding a tensor of each parses with every offset where that size puts
// it. Only F32, F16 and BF16 read as weights; the others are refused by name.
TEST(Safetensors, EveryDtypeOfTheFormatHasItsSizeAndAFileOfEachParses) {
  struct Kind {
    const char* name;
    StDtype dtype;
    std::size_t size;
    bool is_float, weights;
  };
  const Kind kinds[] = {
      {"BOOL", StDtype::BOOL, 1, false, false},      {"U8", StDtype::U8, 1, false, false},
      {"I8", StDtype::I8, 1, false, false},          {"F8_E5M2", StDtype::F8_E5M2, 1, true, false},
      {"F8_E4M3", StDtype::F8_E4M3, 1, true, false}, {"I16", StDtype::I16, 2, false, false},
      {"U16", StDtype::U16, 2, false, false},        {"F16", StDtype::F16, 2, true, true},
      {"BF16", StDtype::BF16, 2, true, true},        {"I32", StDtype::I32, 4, false, false},
      {"U32", StDtype::U32, 4, false, false},        {"F32", StDtype::F32, 4, true, true},
      {"F64", StDtype::F64, 8, true, false},         {"I64", StDtype::I64, 8, false, false},
      {"U64", StDtype::U64, 8, false, false},
  };
  json header = json::object();
  std::string data;
  for (const Kind& k : kinds) {
    EXPECT_EQ(dtype_size(k.dtype), k.size) << k.name;
    EXPECT_EQ(dtype_name(k.dtype), k.name);
    EXPECT_EQ(dtype_is_float(k.dtype), k.is_float) << k.name;
    // [3] of each, back to back; the float ones hold 1.5, -2, 0.25.
    std::string bytes(3 * k.size, '\x01');
    if (k.dtype == StDtype::F32) bytes = raw<float>({1.5f, -2.0f, 0.25f});
    if (k.dtype == StDtype::F16) bytes = raw<std::uint16_t>({0x3e00, 0xc000, 0x3400});
    if (k.dtype == StDtype::BF16) bytes = raw<std::uint16_t>({0x3fc0, 0xc000, 0x3e80});
    header[k.name] = {{"dtype", k.name}, {"shape", {3}}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
    // One byte short of its size is refused, naming the size the dtype needs.
    const std::string short_one = one_tensor(k.name, {3}, {0, 3 * k.size - 1}, 3 * k.size);
    EXPECT_NE(error_of(short_one).find("of " + std::string(k.name) + " needs " + std::to_string(3 * k.size)),
              std::string::npos)
        << k.name << ": " << error_of(short_one);
  }
  const std::string bytes = file_bytes(header.dump(), data);
  const auto path =
      std::filesystem::temp_directory_path() / ("mhaviz_st_dtypes_" + std::to_string(::getpid()) + ".safetensors");
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const SafetensorsFile f = SafetensorsFile::open(path);
  std::filesystem::remove(path);
  ASSERT_EQ(f.tensors().size(), std::size(kinds));
  std::uint64_t at = 0;
  for (const Kind& k : kinds) {
    const StTensor* t = f.find(k.name);
    ASSERT_NE(t, nullptr) << k.name;
    EXPECT_EQ(t->dtype, k.dtype) << k.name;
    EXPECT_EQ(t->begin, at) << k.name;
    EXPECT_EQ(t->end - t->begin, 3 * k.size) << k.name;
    EXPECT_EQ(t->numel(), 3) << k.name;
    at = t->end;
    if (k.weights) {
      EXPECT_EQ(f.read(*t), (std::vector<float>{1.5f, -2.0f, 0.25f})) << k.name;
      continue;
    }
    try {
      (void)f.read(*t);
      ADD_FAILURE() << k.name << " read as weights";
    } catch (const LoadError& e) {
      const std::string kind = k.is_float ? "unsupported dtype " : "integer dtype ";
      EXPECT_EQ(std::string(e.what()), path.string() + ": tensor \"" + k.name + "\" has " + kind + k.name +
                                           "; model weights must be F32, F16 or BF16");
    }
  }
  EXPECT_EQ(at, data.size());
  // Dtypes newer than this list (F8_E8M0, F4 ...) are refused by name, not mis-sized.
  EXPECT_NE(error_of(one_tensor("F8_E8M0", {3}, {0, 3}, 3)).find("unknown dtype \"F8_E8M0\""), std::string::npos);
}

TEST(Safetensors, MutatedFilesGiveLoadErrorsOrReadableTensors) {
  const json h = {{"a", {{"dtype", "F16"}, {"shape", {3, 2}}, {"data_offsets", {0, 12}}}},
                  {"b", {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {12, 16}}}}};
  const std::string good = file_bytes(h.dump(), std::string(16, '\x3c'));
  std::mt19937 gen(7);
  for (int i = 0; i < 4000; ++i) {
    std::string m = good;
    const int edits = 1 + static_cast<int>(gen() % 4);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = gen() % m.size();
      switch (gen() % 3) {
        case 0: m[at] = static_cast<char>(gen()); break;
        case 1: m.erase(at, 1 + gen() % 8); break;
        default: m.insert(at, 1, "0123456789[]{},:\"-"[gen() % 18]); break;
      }
      if (m.empty()) break;
    }
    try {
      const auto f = SafetensorsFile::from_memory(m.data(), m.size(), "m.safetensors");
      for (const StTensor& t : f.tensors())
        if (dtype_is_float(t.dtype) && t.dtype != StDtype::F64 && dtype_size(t.dtype) > 1) (void)f.read(t);
    } catch (const LoadError& e) {
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(Safetensors, WriterRoundTripsThroughAMappedFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhaviz_st_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<float> a(3000), b{1.0f, -0.0f, std::numeric_limits<float>::infinity()};
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f - 7.0f;
  const auto path = dir / "w.safetensors";
  write_safetensors_f32(path, {{"a", {1000, 3}, a.data()}, {"b", {3}, b.data()}}, {{"k", "v"}});
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp" + std::to_string(::getpid())));
  {
    const auto f = SafetensorsFile::open(path);
    EXPECT_EQ(f.metadata().at("k"), "v");
    EXPECT_EQ(f.read(*f.find("a")), a);
    f.release(*f.find("a"));
    EXPECT_EQ(f.read(*f.find("a")), a);  // released pages come back from the page cache
    const std::vector<float> rb = f.read(*f.find("b"));
    EXPECT_EQ(std::memcmp(rb.data(), b.data(), 12), 0);
    SafetensorsFile moved = SafetensorsFile::open(path);
    SafetensorsFile other = SafetensorsFile::open(path);
    moved = std::move(other);
    EXPECT_EQ(moved.tensors().size(), 2u);
  }
  auto expect_error = [](const std::filesystem::path& p, const std::string& what) {
    try {
      SafetensorsFile::open(p);
      ADD_FAILURE() << p << " opened";
    } catch (const LoadError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error(dir / "nope.safetensors", "does not exist");
  expect_error(dir, "is a folder");
  // A FIFO with no writer would block open() forever; a device reads without end.
  ASSERT_EQ(::mkfifo((dir / "fifo.safetensors").c_str(), 0600), 0);
  expect_error(dir / "fifo.safetensors", "is not a regular file");
  expect_error("/dev/zero", "is not a regular file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mhaviz
