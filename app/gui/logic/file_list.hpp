// What the Open and Save dialogs list: a folder's subfolders and session files. No UI.
#pragma once

#include <string>
#include <vector>

namespace mhaviz::gui {

struct FileRow {
  std::string label;  // as listed: "name/" for a folder, "name.json" for a file, ".." for the parent
  std::string path;   // absolute
  bool folder = false;
};

// The parent (unless dir is the root), then the folders, then the .json files of dir,
// each group by name; hidden entries (a leading dot) are left out. An unreadable folder
// gives no rows and a one-line error naming it.
std::vector<FileRow> list_folder(const std::string& dir, std::string& error);

}  // namespace mhaviz::gui
