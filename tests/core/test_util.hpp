#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "mhaviz/session.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string data_path(const std::string& rel) { return std::string(MHAVIZ_TEST_DATA) + "/" + rel; }

// A random valid session: shapes drawn small enough for the loop oracle.
inline Session random_session(std::mt19937& gen, Variant v, bool dropout) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  Session s;
  const int T = pick(1, 9), din = pick(1, 7);
  s.model.variant = v;
  s.model.num_heads = pick(1, 4);
  s.model.d_out = v == Variant::Wrapper ? pick(1, 5) : s.model.num_heads * pick(1, 4);
  s.model.context_length = T + pick(0, 3);
  s.model.dropout = dropout ? 0.1 * pick(1, 8) : 0.0;
  s.model.qkv_bias = pick(0, 1) == 1;
  s.model.causal = pick(0, 3) != 0;
  s.model.seed = static_cast<std::uint64_t>(pick(0, 100000));
  s.batch = pick(1, 3);
  std::uniform_real_distribution<float> val(-2.0f, 2.0f);
  for (int i = 0; i < T; ++i) {
    s.tokens.push_back("t" + std::to_string(i));
    std::vector<float> row(static_cast<std::size_t>(din));
    for (auto& x : row) x = val(gen);
    s.embeddings.push_back(row);
  }
  return s;
}

}  // namespace mhaviz::test
