// The Model panel's logic without a window: the sizes the sliders stop at, and the stages
// that say they change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "figure/colormap.hpp"
#include "file_list.hpp"
#include "mhaviz/session.hpp"
#include "slider_steps.hpp"
#include "figure/stage_note.hpp"

namespace mhaviz::gui {
namespace {
using figure::unchanged_stage_note;

TEST(SizeSteps, SensibleSizesUpToTheDocumentedLimit) {
  const std::vector<int> s = size_steps(2, 8192);
  EXPECT_EQ(s.front(), 1);
  EXPECT_EQ(s.back(), 8192);  // README: d_in, d_out 1..8192
  for (int v : {1, 2, 3, 6, 16, 24, 32, 48, 64, 96, 512, 768, 1024, 4096, 6144}) {
    EXPECT_NE(std::find(s.begin(), s.end(), v), s.end()) << v;
  }
  EXPECT_EQ(std::find(s.begin(), s.end(), 445), s.end());
  // No step more than doubles past 16: a one-step drag from 2 goes to 1 or 3.
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_LE(s[i], std::max(s[i - 1] + 1, 2 * s[i - 1])) << s[i];
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end());

  const std::vector<int> xl = size_steps(1600, 8192);  // a lesson's odd size stays reachable
  EXPECT_EQ(xl[static_cast<std::size_t>(nearest_step(xl, 1600))], 1600);
  EXPECT_EQ(s[static_cast<std::size_t>(nearest_step(s, 700))], 768);
  EXPECT_EQ(size_steps(5, 4).back(), 4);
}

// A session's view names a colormap from the core's list (the core does not link the figure
// library): the two lists must stay one.
TEST(SessionView, ColormapNamesAreTheFigureLibrarysNames) {
  ASSERT_EQ(std::size(kColormapNames), static_cast<std::size_t>(figure::kColormapCount));
  for (int i = 0; i < figure::kColormapCount; ++i)
    EXPECT_EQ(figure::colormap_name(static_cast<figure::Colormap>(i)), kColormapNames[i]) << i;
}

TEST(StageNote, SaysWhenAStageChangesNothing) {
  ModelConfig c;
  c.causal = true;
  c.training = true;
  c.dropout = 0.5;
  for (int i = 0; i < kStageCount; ++i) EXPECT_EQ(unchanged_stage_note(static_cast<Stage>(i), c), "") << i;
  c.causal = false;
  EXPECT_NE(unchanged_stage_note(Stage::Masked, c).find("causal mask is off"), std::string::npos);
  EXPECT_EQ(unchanged_stage_note(Stage::Scaled, c), "");
  c.training = false;
  EXPECT_NE(unchanged_stage_note(Stage::Dropped, c).find("eval mode"), std::string::npos);
  c.training = true;
  c.dropout = 0.0;
  EXPECT_NE(unchanged_stage_note(Stage::Dropped, c).find("p = 0"), std::string::npos);
}

TEST(FileList, FoldersThenSessionFilesNoHiddenOnes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mhaviz-file-list-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  fs::create_directories(dir / ".hidden");
  for (const char* f : {"b.json", "a.json", "notes.txt", ".secret.json"}) std::ofstream(dir / f) << "{}";
  std::string error;
  const std::vector<FileRow> rows = list_folder(dir.string(), error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].label, "..");
  EXPECT_EQ(rows[0].path, dir.parent_path().string());
  EXPECT_EQ(rows[1].label, "sub/");
  EXPECT_TRUE(rows[1].folder);
  EXPECT_EQ(rows[2].label, "a.json");
  EXPECT_EQ(rows[3].label, "b.json");
  EXPECT_EQ(rows[3].path, (dir / "b.json").string());
  EXPECT_FALSE(rows[3].folder);
  EXPECT_TRUE(list_folder((dir / "missing").string(), error).empty());
  EXPECT_NE(error.find("cannot list"), std::string::npos);
  EXPECT_EQ(list_folder("/", error).front().label.substr(0, 2) == "..", false);  // the root has no parent
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhaviz::gui
