// Modal dialogs: open (path field, recent files, lessons), save as, and the
// "unsaved changes" questions. A failed open or save shows the error and changes nothing.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>

#include "app_state.hpp"

namespace mhaviz::gui {
namespace {

const char* popup_name(Dialog d) {
  switch (d) {
    case Dialog::Open: return "Open session";
    case Dialog::SaveAs: return "Save session as";
    case Dialog::ConfirmQuit: return "Quit with unsaved changes?";
    case Dialog::ConfirmOpen: return "Discard unsaved changes?";
    case Dialog::None: break;
  }
  return "";
}

void close_dialog(AppState& s) {
  s.ui.dialog = Dialog::None;
  ImGui::CloseCurrentPopup();
}

void path_dialog(AppState& s, bool open) {
  ImGui::TextUnformatted(open ? "Session file (.json) or a built-in lesson name:"
                              : "Save the session to (.json):");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30.0f);
  if (s.ui.dialog_just_opened) ImGui::SetKeyboardFocusHere();
  const bool enter = ImGui::InputText("##path", &s.ui.dialog_path, ImGuiInputTextFlags_EnterReturnsTrue);
  record_widget(s, "dialog_path");
  if (!s.ui.dialog_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.35f, 1.0f));
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 34.0f);
    ImGui::TextUnformatted(s.ui.dialog_error.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
  }
  if (open && !s.settings.recent.empty()) {
    ImGui::TextDisabled("Recent:");
    for (const auto& p : s.settings.recent) {
      if (ImGui::Selectable(p.c_str())) s.ui.dialog_path = p;
    }
  }
  const bool ok = ImGui::Button(open ? "Open" : "Save") || enter;
  record_widget(s, "dialog_ok");
  ImGui::SameLine();
  const bool cancel = ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
  if (ok && !s.ui.dialog_path.empty()) {
    const bool done = open ? open_document(s, s.ui.dialog_path) : save_document(s, s.ui.dialog_path);
    if (done) {
      close_dialog(s);
      if (!open && s.quit_requested) s.quit = true;
      return;
    }
    s.ui.dialog_error = s.ui.status;  // the one-line error; the document is unchanged
  }
  if (cancel) {
    s.quit_requested = false;
    close_dialog(s);
  }
}

}  // namespace

void draw_dialogs(AppState& s) {
  if (s.ui.dialog == Dialog::None) return;
  const char* name = popup_name(s.ui.dialog);
  if (s.ui.dialog_just_opened) ImGui::OpenPopup(name);
  const ImVec2 center = ImGui::GetMainViewport()->GetCenter();
  ImGui::SetNextWindowPos(center, ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopupModal(name, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    // The popup was closed from outside (e.g. it failed to open): forget it.
    if (!s.ui.dialog_just_opened) s.ui.dialog = Dialog::None;
    s.ui.dialog_just_opened = false;
    return;
  }
  const Dialog d = s.ui.dialog;
  switch (d) {
    case Dialog::Open:
      path_dialog(s, true);
      break;
    case Dialog::SaveAs:
      path_dialog(s, false);
      break;
    case Dialog::ConfirmQuit: {
      ImGui::TextUnformatted("The session has changes that are not saved to a file.");
      ImGui::TextDisabled("(It is autosaved and restored next time either way.)");
      if (ImGui::Button("Save")) {
        if (s.doc.path.empty()) {
          s.ui.dialog = Dialog::SaveAs;
          s.ui.dialog_just_opened = true;
          s.ui.dialog_path.clear();
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
      ImGui::Text("Open %s and discard the unsaved changes?", s.ui.pending_open.c_str());
      if (ImGui::Button("Discard and open")) {
        open_document(s, s.ui.pending_open);
        close_dialog(s);
      }
      record_widget(s, "open_discard");
      ImGui::SameLine();
      if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) close_dialog(s);
      break;
    }
    case Dialog::None:
      break;
  }
  if (s.ui.dialog == d) s.ui.dialog_just_opened = false;
  ImGui::EndPopup();
}

}  // namespace mhaviz::gui
