// The settings directory the app and the command line share: --config-dir when given, else
// $XDG_CONFIG_HOME/mhaviz (an absolute XDG_CONFIG_HOME only, as the XDG spec says), else
// ~/.config/mhaviz. Header-only: the GUI library and the command line's executable both read it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace mhaviz {

// $var/mhaviz when var holds an absolute path, else $HOME/fallback/mhaviz.
inline std::string xdg_dir(const char* var, const char* fallback) {
  namespace fs = std::filesystem;
  const char* v = std::getenv(var);
  if (v && *v && fs::path(v).is_absolute()) return (fs::path(v) / "mhaviz").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / fallback / "mhaviz").string();
}

inline std::string settings_dir(const std::string& config_dir) {
  return config_dir.empty() ? xdg_dir("XDG_CONFIG_HOME", ".config") : config_dir;
}

// Where the kernels' calibrated sizes are cached (mhaviz/kernel_tuning.hpp).
inline std::string kernel_cache_file(const std::string& config_dir) {
  return (std::filesystem::path(settings_dir(config_dir)) / "kernels.json").string();
}

}  // namespace mhaviz
