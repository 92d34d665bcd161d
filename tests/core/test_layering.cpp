// The core's layers, as its folders show them: core/ includes no windowing or GUI header (the
// CLI and exports reuse it headless); core/src/kernels knows no model; the trained models
// (core/src/trained and their public headers) know nothing of the chapter-3 lesson, which
// alone may know both (a trained layer shown as a lesson, the dumps).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kCore = fs::path(MHAVIZ_SOURCE_DIR) / "core";

// The quoted includes of a file: "mhaviz/trace.hpp", "kernels/gemm.hpp", ...
std::vector<std::string> quoted_includes(const fs::path& file) {
  static const std::regex inc(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::string> out;
  std::ifstream in(file);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, inc)) out.push_back(m[1]);
  return out;
}

std::vector<fs::path> sources_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && (e.path().extension() == ".cpp" || e.path().extension() == ".hpp"))
      out.push_back(e.path());
  return out;
}

TEST(Layering, CoreIncludesNoGuiHeaders) {
  const std::regex ui(R"(^\s*#\s*include\s*[<"](imgui|GLFW/|GL/|EGL/|backends/|glad|epoxy)[^>"]*[>"])");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kCore)) {
    if (!e.is_regular_file()) continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      EXPECT_FALSE(std::regex_search(line, ui)) << e.path() << ":" << n << ": " << line;
    }
  }
  EXPECT_GT(files, 5);
}

// The public headers below any model: tensors, the backend choice and the kernel's sizes,
// masks, packed keys, Linear, errors.
const std::set<std::string> kBase = {"mhaviz/tensor.hpp",         "mhaviz/backend.hpp",    "mhaviz/kernel_tuning.hpp",
                                     "mhaviz/attention_mask.hpp", "mhaviz/key_panels.hpp", "mhaviz/linear.hpp",
                                     "mhaviz/load_error.hpp"};
// The chapter-3 lesson's public headers.
const std::set<std::string> kLesson = {"mhaviz/model.hpp",     "mhaviz/trace.hpp",   "mhaviz/session.hpp",
                                       "mhaviz/layout.hpp",    "mhaviz/export.hpp",  "mhaviz/dump.hpp",
                                       "mhaviz/gpt_layer.hpp", "mhaviz/hf_layer.hpp"};

TEST(Layering, KernelsKnowNoModel) {
  int files = 0;
  for (const fs::path& f : sources_under(kCore / "src" / "kernels")) {
    ++files;
    for (const std::string& inc : quoted_includes(f))
      EXPECT_TRUE(inc.rfind("kernels/", 0) == 0 || kBase.count(inc)) << f << " includes " << inc;
  }
  EXPECT_GT(files, 5);
}

// Every public header a header reaches through quoted includes, itself included.
std::set<std::string> reached(const std::string& header) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {header};
  while (!todo.empty()) {
    const std::string h = todo.back();
    todo.pop_back();
    if (h.rfind("mhaviz/", 0) != 0 || !seen.insert(h).second) continue;
    for (const std::string& inc : quoted_includes(kCore / "include" / h)) todo.push_back(inc);
  }
  return seen;
}

TEST(Layering, TrainedModelsKnowNoLesson) {
  std::set<std::string> trained = {"mhaviz/gpt.hpp",       "mhaviz/gpt_forward.hpp", "mhaviz/gpt_worker.hpp",
                                   "mhaviz/tokenizer.hpp", "mhaviz/prompt.hpp",      "mhaviz/safetensors.hpp",
                                   "mhaviz/heads.hpp"};
  int files = 0;
  for (const fs::path& f : sources_under(kCore / "src" / "trained")) {
    ++files;
    for (const std::string& inc : quoted_includes(f)) {
      EXPECT_EQ(inc.rfind("lesson/", 0), std::string::npos) << f << " includes " << inc;
      if (inc.rfind("mhaviz/", 0) == 0) trained.insert(inc);
    }
  }
  EXPECT_GT(files, 5);
  for (const std::string& h : trained)
    for (const std::string& r : reached(h)) EXPECT_EQ(kLesson.count(r), 0u) << h << " reaches the lesson's " << r;
}

}  // namespace
