#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mhaviz/backend.hpp"
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

// n values uniform in [-1, 1).
inline std::vector<float> random_values(std::size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// T tokens "t0", "t1", ... with embeddings of din values uniform in [-2, 2), replacing s's.
inline void random_tokens(std::mt19937& gen, Session& s, int T, int din) {
  std::uniform_real_distribution<float> val(-2.0f, 2.0f);
  s.tokens.clear();
  s.embeddings.clear();
  for (int i = 0; i < T; ++i) {
    s.tokens.push_back("t" + std::to_string(i));
    std::vector<float> row(static_cast<std::size_t>(din));
    for (auto& x : row) x = val(gen);
    s.embeddings.push_back(row);
  }
}

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
  random_tokens(gen, s, T, din);
  return s;
}

// The backends this process ran tests on, and those it skipped: printed when the run ends
// ("[ backends ] ran: avx512, avx2, openblas; skipped: none"), so a log says which of the
// kernels were exercised, on every CPU.
struct BackendsSeen {
  std::set<std::string> ran, skipped;
};
inline BackendsSeen& backends_seen() {
  static BackendsSeen seen;
  return seen;
}
class BackendReport : public ::testing::Environment {
 public:
  void TearDown() override {
    const BackendsSeen& s = backends_seen();
    if (s.ran.empty() && s.skipped.empty()) return;
    auto list = [](const std::set<std::string>& names) {
      std::string out;
      for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
      return out.empty() ? std::string("none") : out;
    };
    std::printf("[ backends ] ran: %s; skipped (this CPU cannot run them): %s\n", list(s.ran).c_str(),
                list(s.skipped).c_str());
  }
};
inline ::testing::Environment* const kBackendReport = ::testing::AddGlobalTestEnvironment(new BackendReport);

// A fixture run once per backend (INSTANTIATE_TEST_SUITE_P over Backend values, named by
// backend_label): on a CPU without the backend each test is GTEST_SKIPped with the reason,
// so the summary shows it, instead of passing on the other backends alone.
class OnBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    const std::string name(backend_name(GetParam()));
    if (!set_backend(GetParam())) {
      backends_seen().skipped.insert(name);
      GTEST_SKIP() << "this CPU cannot run " << name;
    }
    backends_seen().ran.insert(name);
  }
  void TearDown() override { set_backend(before_); }

 private:
  Backend before_ = backend();
};
inline std::string backend_label(const ::testing::TestParamInfo<Backend>& p) {
  return std::string(backend_name(p.param));
}

}  // namespace mhaviz::test
