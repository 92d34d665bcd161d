// core/ must stay free of windowing and GUI headers: the CLI and exports reuse it headless.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace {

TEST(Layering, CoreIncludesNoGuiHeaders) {
  const std::regex ui(R"(^\s*#\s*include\s*[<"](imgui|GLFW/|GL/|EGL/|backends/|glad|epoxy)[^>"]*[>"])");
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(MHAVIZ_SOURCE_DIR) + "/core")) {
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

}  // namespace
