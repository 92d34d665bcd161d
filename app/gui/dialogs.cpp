// Modal dialogs: open (path field, recent files, lessons), save as, and the
// "unsaved changes" questions. A failed open or save shows the error and changes nothing.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "file_list.hpp"
#include "text_fields.hpp"

namespace mhaviz::gui {
namespace {

const char* popup_name(Dialog d) {
  switch (d) {
    case Dialog::Open: return "Open session";
    case Dialog::SaveAs: return "Save session as";
    case Dialog::ConfirmQuit: return "Quit with unsaved changes?";
    case Dialog::ConfirmOpen: return "Discard unsaved changes?";
    case Dialog::Recover: return "The autosave could not be restored";
    case Dialog::None: break;
  }
  return "";
}

void close_dialog(AppState& s) {
  s.ui.dialog.kind = Dialog::None;
  ImGui::CloseCurrentPopup();
}

// [SECTION] File browser of the Open and Save dialogs: usable with the keyboard alone. The
// path field keeps the keyboard; Up and Down move through the recent files (Open) and the
// folder's rows, writing the row's path into the field; Enter opens a folder or acts on
// the file; ".." is the parent. A typed relative name is taken in the folder shown.
namespace fs = std::filesystem;

std::vector<FileRow> browser_rows(AppState& s, bool open) {
  Ui& ui = s.ui;
  if (ui.dialog.browse_listed != ui.dialog.browse_dir) {
    ui.dialog.browse_rows = list_folder(ui.dialog.browse_dir, ui.dialog.browse_error);
    ui.dialog.browse_listed = ui.dialog.browse_dir;
    ui.dialog.browse_sel = -1;
  }
  std::vector<FileRow> rows;
  if (open)
    for (const auto& p : s.settings.recent) rows.push_back({p, p, false});
  rows.insert(rows.end(), ui.dialog.browse_rows.begin(), ui.dialog.browse_rows.end());
  return rows;
}

// Up / Down in the path field: the selected row's path replaces the field's text.
int browse_keys(ImGuiInputTextCallbackData* data) {
  auto& s = *static_cast<AppState*>(data->UserData);
  const std::vector<FileRow> rows = browser_rows(s, s.ui.dialog.kind == Dialog::Open);
  if (rows.empty()) return 0;
  const int n = static_cast<int>(rows.size());
  int& sel = s.ui.dialog.browse_sel;
  sel = data->EventKey == ImGuiKey_UpArrow ? (sel <= 0 ? n - 1 : sel - 1) : (sel + 1) % n;
  const std::string& p = rows[static_cast<std::size_t>(sel)].path;
  data->DeleteChars(0, data->BufTextLen);
  data->InsertChars(0, p.c_str());
  return 0;
}

// What the field names: a folder to show, a lesson, or a file in the folder shown.
std::string resolve_path(const AppState& s, const std::string& typed, bool open) {
  std::error_code ec;
  if (typed.empty() || fs::path(typed).is_absolute()) return typed;
  const fs::path in_folder = fs::path(s.ui.dialog.browse_dir) / typed;
  if (open && is_lesson(typed) && !fs::exists(in_folder, ec)) return typed;
  return in_folder.lexically_normal().string();
}

void start_browsing(AppState& s) {
  std::error_code ec;
  const std::string from = !s.doc.path.empty()          ? s.doc.path
                           : !s.settings.recent.empty() ? s.settings.recent.front()
                                                        : "";
  const fs::path dir = from.empty() ? fs::current_path(ec) : fs::absolute(from, ec).parent_path();
  s.ui.dialog.browse_dir = dir.string();
  s.ui.dialog.browse_listed.clear();
}

void path_dialog(AppState& s, bool open) {
  Ui& ui = s.ui;
  if (ui.dialog.just_opened) start_browsing(s);
  const float fh = ImGui::GetFontSize();
  ImGui::TextUnformatted(open ? "Session file (.json) or a built-in lesson name:" : "Save the session to (.json):");
  ImGui::SetNextItemWidth(fh * 34.0f);
  if (ui.dialog.just_opened || ui.dialog.refocus) ImGui::SetKeyboardFocusHere();
  ui.dialog.refocus = false;
  const bool enter =
      input_text(s, "##path", ui.dialog.path,
                 ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CallbackHistory, browse_keys, &s);
  record_widget(s, "dialog_path");
  if (!ui.dialog.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
    ImGui::PushTextWrapPos(fh * 34.0f);
    ImGui::TextUnformatted(ui.dialog.error.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
  }
  ImGui::TextDisabled("%s  (Up/Down choose, Enter opens, .. goes up)", ui.dialog.browse_dir.c_str());
  const std::vector<FileRow> rows = browser_rows(s, open);
  std::string chosen;  // a row double-clicked
  s.hooks.browse_rows.clear();
  ImGui::BeginChild("files", ImVec2(fh * 34.0f, fh * 14.0f), true);
  const std::size_t recent = open ? s.settings.recent.size() : 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i == 0 && recent > 0) ImGui::TextDisabled("Recent");
    if (i == recent)
      ImGui::TextDisabled("In this folder%s",
                          ui.dialog.browse_error.empty() ? "" : (": " + ui.dialog.browse_error).c_str());
    const bool selected = static_cast<int>(i) == ui.dialog.browse_sel;
    if (selected && ui.dialog.browse_scroll) ImGui::SetScrollHereY();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(rows[i].label.c_str(), selected, ImGuiSelectableFlags_AllowDoubleClick)) {
      ui.dialog.browse_sel = static_cast<int>(i);
      ui.dialog.path = rows[i].path;
      if (ImGui::IsMouseDoubleClicked(0)) chosen = rows[i].path;
    }
    ImGui::PopID();
    s.hooks.browse_rows.push_back(rows[i].label);
  }
  ui.dialog.browse_scroll = ImGui::IsKeyDown(ImGui::GetKeyIndex(ImGuiKey_UpArrow)) ||
                            ImGui::IsKeyDown(ImGui::GetKeyIndex(ImGuiKey_DownArrow));
  ImGui::EndChild();
  const bool ok = ImGui::Button(open ? "Open" : "Save") || enter || !chosen.empty();
  record_widget(s, "dialog_ok");
  ImGui::SameLine();
  const bool cancel = ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
  if (ok && !ui.dialog.path.empty()) {
    const std::string path = resolve_path(s, chosen.empty() ? ui.dialog.path : chosen, open);
    std::error_code ec;
    if (fs::is_directory(path, ec)) {  // a folder: show it, and keep typing in the field
      ui.dialog.browse_dir = fs::path(path).lexically_normal().string();
      ui.dialog.path = (fs::path(ui.dialog.browse_dir) / "").string();
      ui.dialog.error.clear();
      ui.dialog.refocus = true;
      return;
    }
    const bool done = open ? open_document(s, path) : save_document(s, path);
    if (done) {
      close_dialog(s);
      if (!open && s.quit_requested) s.quit = true;
      return;
    }
    ui.dialog.error = s.ui.status.text;  // the one-line error; the document is unchanged
    ui.dialog.refocus = true;
  }
  if (cancel) {
    s.quit_requested = false;
    close_dialog(s);
  }
}

// A refused autosave: where it is kept, what recovering it changes, and the choice.
void recover_dialog(AppState& s) {
  const float wrap = ImGui::GetFontSize() * 36.0f;
  ImGui::PushTextWrapPos(wrap);
  ImGui::TextUnformatted("Your last session was autosaved, but the file is not a valid session:");
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
  ImGui::TextUnformatted(s.ui.restore.error.c_str());
  ImGui::PopStyleColor();
  ImGui::TextUnformatted("Nothing was deleted. The file is kept, unchanged, at:");
  ImGui::TextUnformatted(s.ui.restore.kept_at.c_str());
  if (s.ui.restore.recovered) {
    ImGui::Text("Opening what can be recovered keeps every other value and changes %zu:", s.ui.restore.repairs.size());
  }
  ImGui::PopTextWrapPos();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float h = std::min(static_cast<float>(s.ui.restore.repairs.size()) + 0.5f, 8.0f) * line;
  ImGui::BeginChild("repairs", ImVec2(wrap, h), true);
  for (const auto& r : s.ui.restore.repairs) ImGui::TextUnformatted(r.c_str());
  ImGui::EndChild();
  if (s.ui.restore.recovered) {
    if (s.ui.dialog.just_opened) ImGui::SetKeyboardFocusHere();
    if (ImGui::Button("Open what can be recovered")) {
      open_recovered(s);
      close_dialog(s);
      return;
    }
    record_widget(s, "recover_open");
    ImGui::SameLine();
  }
  if (ImGui::Button(s.ui.restore.recovered ? "Keep the lesson" : "OK") ||
      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
    close_dialog(s);
  }
  record_widget(s, "recover_dismiss");
}

}  // namespace

void draw_dialogs(AppState& s) {
  if (s.ui.dialog.kind == Dialog::None) return;
  const char* name = popup_name(s.ui.dialog.kind);
  if (s.ui.dialog.just_opened) ImGui::OpenPopup(name);
  const ImVec2 center = ImGui::GetMainViewport()->GetCenter();
  ImGui::SetNextWindowPos(center, ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopupModal(name, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    // The popup was closed from outside (e.g. it failed to open): forget it.
    if (!s.ui.dialog.just_opened) s.ui.dialog.kind = Dialog::None;
    s.ui.dialog.just_opened = false;
    return;
  }
  const Dialog d = s.ui.dialog.kind;
  switch (d) {
    case Dialog::Open: path_dialog(s, true); break;
    case Dialog::SaveAs: path_dialog(s, false); break;
    case Dialog::ConfirmQuit: {
      ImGui::TextUnformatted("The session has changes that are not saved to a file.");
      ImGui::TextDisabled("(It is autosaved and restored next time either way.)");
      if (ImGui::Button("Save")) {
        if (s.doc.path.empty()) {
          s.ui.dialog.kind = Dialog::SaveAs;
          s.ui.dialog.just_opened = true;
          s.ui.dialog.path.clear();
          ImGui::CloseCurrentPopup();
        } else if (save_document(s, s.doc.path)) {
          s.quit = true;
          close_dialog(s);
        }
      }
      record_widget(s, "quit_save");
      ImGui::SameLine();
      if (ImGui::Button("Quit without saving")) {
        s.quit = true;
        close_dialog(s);
      }
      record_widget(s, "quit_discard");
      ImGui::SameLine();
      if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
        s.quit_requested = false;
        close_dialog(s);
      }
      break;
    }
    case Dialog::ConfirmOpen: {
      ImGui::Text("Open %s and discard the unsaved changes?", s.ui.dialog.pending_open.c_str());
      if (ImGui::Button("Discard and open")) {
        open_document(s, s.ui.dialog.pending_open);
        close_dialog(s);
      }
      record_widget(s, "open_discard");
      ImGui::SameLine();
      if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) close_dialog(s);
      break;
    }
    case Dialog::Recover: recover_dialog(s); break;
    case Dialog::None: break;
  }
  if (s.ui.dialog.kind == d) s.ui.dialog.just_opened = false;
  ImGui::EndPopup();
}

}  // namespace mhaviz::gui
