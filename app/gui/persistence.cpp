// Settings in $XDG_CONFIG_HOME/mhaviz, the autosaved session in $XDG_STATE_HOME/mhaviz,
// and opening/saving documents (atomic writes; failures change nothing).
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../settings_dir.hpp"
#include "app_state.hpp"

namespace mhaviz::gui {
namespace fs = std::filesystem;

namespace {

void ensure_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
}

}  // namespace

void resolve_paths(AppState& s) {
  s.paths.config_dir = settings_dir(s.opts.config_dir);
  s.paths.state_dir = s.opts.state_dir.empty() ? xdg_dir("XDG_STATE_HOME", ".local/state") : s.opts.state_dir;
}

// [SECTION] Settings
namespace {
// A list of paths, at most ten; anything else in the field is ignored.
void read_recent(const nlohmann::json& j, const char* field, std::vector<std::string>& out) {
  if (!j.contains(field) || !j[field].is_array()) return;
  out.clear();
  for (const auto& r : j[field]) {
    if (r.is_string() && out.size() < 10) out.push_back(r.get<std::string>());
  }
}
}  // namespace

void load_settings(AppState& s) {
  const std::string path = (fs::path(s.paths.config_dir) / "settings.json").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    Settings& st = s.settings;
    st.font_size = std::clamp(j.value("font_size", st.font_size), 10.0f, 48.0f);
    st.ui_scale = std::clamp(j.value("ui_scale", st.ui_scale), 0.75f, 2.5f);
    st.dark = j.value("theme", std::string("dark")) != "light";
    Colormap c;
    if (parse_colormap(j.value("colormap", std::string("viridis")), c)) st.colormap = c;
    st.diverging_for_signed = j.value("diverging_for_signed", st.diverging_for_signed);
    st.shared_scale = j.value("shared_scale", st.shared_scale);
    st.show_values = j.value("show_values", st.show_values);
    st.log_weights = j.value("log_weights", st.log_weights);
    st.left_width = std::clamp(j.value("left_width", st.left_width), 0.0f, 16384.0f);
    st.window_width = std::clamp(j.value("window_width", st.window_width), 320, 16384);
    st.window_height = std::clamp(j.value("window_height", st.window_height), 240, 16384);
    st.capture_scale = std::clamp(j.value("capture_scale", st.capture_scale), 1, 4);
    st.capture_caption = j.value("capture_caption", st.capture_caption);
    st.capture_transparent = j.value("capture_transparent", st.capture_transparent);
    st.capture_light = j.value("capture_light", st.capture_light);
    st.variant_keeps_d_out = j.value("variant_keeps_d_out", st.variant_keeps_d_out);
    st.scores_one_scale = j.value("scores_one_scale", st.scores_one_scale);
    st.capture_dir = j.value("capture_dir", st.capture_dir);
    read_recent(j, "recent", st.recent);
    read_recent(j, "recent_models", st.recent_models);
  } catch (const std::exception& e) {
    notify(s, std::string("Ignored unreadable settings: ") + e.what(), true);
  }
}

void save_settings(AppState& s) {
  const Settings& st = s.settings;
  nlohmann::json j = {
      {"font_size", st.font_size},
      {"ui_scale", st.ui_scale},
      {"theme", st.dark ? "dark" : "light"},
      {"colormap", std::string(colormap_name(st.colormap))},
      {"diverging_for_signed", st.diverging_for_signed},
      {"shared_scale", st.shared_scale},
      {"show_values", st.show_values},
      {"log_weights", st.log_weights},
      {"left_width", st.left_width},
      {"window_width", st.window_width},
      {"window_height", st.window_height},
      {"capture_scale", st.capture_scale},
      {"capture_caption", st.capture_caption},
      {"capture_transparent", st.capture_transparent},
      {"capture_light", st.capture_light},
      {"variant_keeps_d_out", st.variant_keeps_d_out},
      {"scores_one_scale", st.scores_one_scale},
      {"capture_dir", st.capture_dir},
      {"recent", st.recent},
      {"recent_models", st.recent_models},
  };
  try {
    ensure_dir(s.paths.config_dir);
    write_file_atomic((fs::path(s.paths.config_dir) / "settings.json").string(), j.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mhaviz: cannot save settings: %s\n", e.what());
  }
}

namespace {
// Absolute, most recent first, no repeats, at most ten.
void push_recent(std::vector<std::string>& r, const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  const std::string p = ec ? path : abs.lexically_normal().string();
  r.erase(std::remove(r.begin(), r.end(), p), r.end());
  r.insert(r.begin(), p);
  if (r.size() > 10) r.resize(10);
}
}  // namespace

void add_recent(AppState& s, const std::string& path) { push_recent(s.settings.recent, path); }
void add_recent_model(AppState& s, const std::string& path) { push_recent(s.settings.recent_models, path); }

// [SECTION] Autosave
namespace {

// A name beside the autosave that no earlier refused file has: autosave-refused-DATE-TIME.json.
fs::path refused_name(const fs::path& dir) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::error_code ec;
  fs::path p = dir / ("autosave-refused-" + std::string(stamp) + ".json");
  for (int i = 2; fs::exists(p, ec); ++i)
    p = dir / ("autosave-refused-" + std::string(stamp) + "-" + std::to_string(i) + ".json");
  return p;
}

// The autosave was refused: it is never discarded. It moves aside (the next autosave would
// replace it) and the Recover dialog offers what recover_session can keep of it.
void keep_refused_autosave(AppState& s, const std::string& text, const std::string& why, DocState from) {
  const fs::path dir(s.paths.state_dir);
  const fs::path kept = refused_name(dir);
  std::error_code ec;
  fs::rename(dir / "autosave.json", kept, ec);
  if (ec) {
    // It cannot move: leave it where it is and stop autosaving over it.
    s.paths.autosave_off = true;
    s.ui.restore.kept_at = (dir / "autosave.json").string() + " (left in place: " + ec.message() + "; autosave is off)";
  } else {
    s.ui.restore.kept_at = kept.string();
  }
  s.ui.restore.error = why;
  s.ui.restore.repairs.clear();
  s.ui.restore.recovered.reset();
  try {
    Recovered r = recover_session(text);
    from.session = std::move(r.session);
    s.ui.restore.recovered = std::move(from);
    s.ui.restore.repairs = std::move(r.repairs);
  } catch (const std::exception& e) {
    s.ui.restore.repairs = {std::string("Nothing could be recovered: ") + e.what()};
  }
  s.ui.dialog.kind = Dialog::Recover;
  s.ui.dialog.just_opened = true;
  notify(s, "Could not restore the autosave: " + why + "; it is kept at " + s.ui.restore.kept_at, true);
}

}  // namespace

bool restore_autosave(AppState& s) {
  const fs::path dir(s.paths.state_dir);
  std::error_code ec;
  if (!fs::exists(dir / "autosave.json", ec)) return false;
  DocState from{Session{}, "", "autosave"};
  bool modified = true;
  try {
    if (fs::exists(dir / "autosave-meta.json", ec)) {
      const nlohmann::json meta = nlohmann::json::parse(read_file((dir / "autosave-meta.json").string()));
      from.path = meta.value("path", std::string());
      from.origin = meta.value("origin", from.origin);
      modified = meta.value("modified", true);
    }
  } catch (const std::exception&) {
    // The meta file only names the document; the session itself is what matters.
  }
  std::string text;
  try {
    text = read_file((dir / "autosave.json").string());
    Session ses = parse_session(text);
    set_document(s, std::move(ses), from.path, from.origin);
    s.doc.modified = modified;
    if (modified) s.doc.saved_id = 0;
    s.autosaved_revision = s.doc.revision;
    s.autosaved_view = current_view(s);
    notify(s, "Restored your last session (" + from.origin + ")");
    return true;
  } catch (const std::exception& e) {
    keep_refused_autosave(s, text, e.what(), std::move(from));
    return false;
  }
}

void open_recovered(AppState& s) {
  if (!s.ui.restore.recovered) return;
  DocState d = std::move(*s.ui.restore.recovered);
  s.ui.restore.recovered.reset();
  set_document(s, std::move(d.session), d.path, d.origin);
  s.doc.saved_id = 0;  // not what any file holds
  s.doc.modified = true;
  notify(s, "Opened what could be recovered (" + std::to_string(s.ui.restore.repairs.size()) +
                " values changed); the refused file is kept at " + s.ui.restore.kept_at);
}

// The document with what is shown: files are written as version 2 with a "view".
Session with_view(const AppState& s) {
  Session out = s.doc.session;
  out.view = current_view(s);
  return out;
}

void autosave(AppState& s) {
  if (s.paths.autosave_off) return;
  const SessionView view = current_view(s);
  if (s.autosaved_revision == s.doc.revision && s.autosaved_view == view) return;
  const fs::path dir(s.paths.state_dir);
  try {
    // Edits are validated as they are made; this guards the file against anything else.
    const Session out = with_view(s);
    validate_session(out);
    ensure_dir(dir.string());
    const nlohmann::json meta = {{"path", s.doc.path}, {"origin", s.doc.origin}, {"modified", s.doc.modified}};
    write_file_atomic((dir / "autosave.json").string(), session_to_json(out));
    write_file_atomic((dir / "autosave-meta.json").string(), meta.dump(2) + "\n");
    s.autosaved_revision = s.doc.revision;
    s.autosaved_view = view;
  } catch (const std::exception& e) {
    // Report once per revision; the next edit tries again. The last good autosave stays.
    s.autosaved_revision = s.doc.revision;
    s.autosaved_view = view;
    notify(s, std::string("Autosave failed: ") + e.what(), true);
  }
}

// [SECTION] Documents
bool open_document(AppState& s, const std::string& path_or_lesson) {
  try {
    Session ses = load_session(path_or_lesson);
    const bool lesson_name = is_lesson(path_or_lesson);
    set_document(s, std::move(ses), lesson_name || path_or_lesson == "-" ? "" : path_or_lesson,
                 lesson_name ? "lesson " + path_or_lesson : path_or_lesson);
    if (!lesson_name && path_or_lesson != "-") add_recent(s, path_or_lesson);
    notify(s, "Opened " + path_or_lesson);
    return true;
  } catch (const std::exception& e) {
    notify(s, e.what(), true);
    return false;
  }
}

bool save_document(AppState& s, const std::string& path) {
  try {
    const Session out = with_view(s);
    validate_session(out);
    write_file_atomic(path, session_to_json(out));
    s.doc.path = path;
    s.doc.origin = path;
    s.doc.history.rename(path, path);
    s.doc.saved_id = s.doc.history.current_id();
    s.doc.modified = false;
    ++s.doc.revision;  // the autosave records the clean state
    add_recent(s, path);
    notify(s, "Saved " + path);
    return true;
  } catch (const std::exception& e) {
    notify(s, e.what(), true);
    return false;
  }
}

}  // namespace mhaviz::gui
