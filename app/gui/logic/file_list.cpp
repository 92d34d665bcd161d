#include "file_list.hpp"

#include <algorithm>
#include <filesystem>

namespace mhaviz::gui {
namespace fs = std::filesystem;

std::vector<FileRow> list_folder(const std::string& dir, std::string& error) {
  error.clear();
  std::vector<FileRow> folders, files;
  std::error_code ec;
  const fs::path here = fs::absolute(dir, ec).lexically_normal();
  fs::directory_iterator it(here, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    error = "cannot list '" + here.string() + "': " + ec.message();
    return {};
  }
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code ec2;
    if (e.is_directory(ec2)) folders.push_back({name + "/", e.path().string(), true});
    else if (e.path().extension() == ".json") files.push_back({name, e.path().string(), false});
  }
  auto by_label = [](const FileRow& a, const FileRow& b) { return a.label < b.label; };
  std::sort(folders.begin(), folders.end(), by_label);
  std::sort(files.begin(), files.end(), by_label);
  std::vector<FileRow> out;
  const fs::path up = here.has_relative_path() ? here.parent_path() : here;
  if (up != here) out.push_back({"..", up.string(), true});
  out.insert(out.end(), folders.begin(), folders.end());
  out.insert(out.end(), files.begin(), files.end());
  return out;
}

}  // namespace mhaviz::gui
