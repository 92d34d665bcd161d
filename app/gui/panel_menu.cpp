// The menu bar (File, Lessons, View, Help) and the keyboard shortcuts it shows.
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <string>

#include "app_state.hpp"

namespace mhaviz::gui {
namespace {

void open_lesson(AppState& s, const std::string& name) {
  if (s.doc.modified) {
    s.ui.pending_open = name;
    s.ui.dialog = Dialog::ConfirmOpen;
    s.ui.dialog_just_opened = true;
  } else {
    open_document(s, name);
  }
}

void start_dialog(AppState& s, Dialog d) {
  s.ui.dialog = d;
  s.ui.dialog_just_opened = true;
  s.ui.dialog_error.clear();
  s.ui.dialog_path = s.doc.path;
}

// The model view, or back to the lesson (the walkthrough closes: the model view replaces it).
void toggle_model_view(AppState& s) {
  s.model.show = !model_view_active(s) || s.walkthrough.open;
  if (s.model.show) s.walkthrough.open = false;
}

void do_save(AppState& s) {
  if (s.doc.path.empty()) start_dialog(s, Dialog::SaveAs);
  else save_document(s, s.doc.path);
}

}  // namespace

void record_widget(AppState& s, const char* name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  s.probe.widgets[name] = {a.x, a.y, b.x, b.y};
}

void record_frame(AppState& s, const char* name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  s.probe.widgets[name] = {a.x, a.y, a.x + ImGui::CalcItemWidth(), b.y};
}

// [SECTION] Menu bar
void draw_menu_bar(AppState& s) {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) start_dialog(s, Dialog::Open);
    if (ImGui::BeginMenu("Open recent", !s.settings.recent.empty())) {
      for (const auto& p : s.settings.recent) {
        if (ImGui::MenuItem(p.c_str())) {
          if (s.doc.modified) {
            s.ui.pending_open = p;
            s.ui.dialog = Dialog::ConfirmOpen;
            s.ui.dialog_just_opened = true;
          } else {
            open_document(s, p);
          }
        }
      }
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Open model...")) {
      s.model.open_dialog = s.model.open_dialog_just_opened = true;
      s.model.open_edit = s.model.path;
    }
    if (ImGui::BeginMenu("Open recent model", !s.settings.recent_models.empty())) {
      for (const auto& p : s.settings.recent_models) {
        if (ImGui::MenuItem(p.c_str())) open_model(s, p);
      }
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Save", "Ctrl+S")) do_save(s);
    if (ImGui::MenuItem("Save As...", "Ctrl+Shift+S")) start_dialog(s, Dialog::SaveAs);
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) s.quit_requested = true;
    ImGui::EndMenu();
  }
  // Menu and item rectangles go into --layout-out so that tests can switch lessons by mouse.
  const bool lessons_open = ImGui::BeginMenu("Lessons");
  record_widget(s, "menu_lessons");
  if (lessons_open) {
    for (const auto& l : lessons()) {
      if (ImGui::MenuItem(l.name.c_str())) open_lesson(s, l.name);
      record_widget(s, ("lesson_" + l.name).c_str());
      if (ImGui::IsItemHovered() && !l.description.empty()) ImGui::SetTooltip("%s", l.description.c_str());
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (int i = 0; i < kStageCount; ++i) {
      const Stage st = static_cast<Stage>(i);
      const std::string key = std::to_string(i + 1);
      if (ImGui::MenuItem(std::string(stage_title(st)).c_str(), key.c_str(), s.view.stage == st)) s.view.stage = st;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Previous head", "[")) s.view.head = std::max(0, s.view.head - 1);
    if (ImGui::MenuItem("Next head", "]")) s.view.head = std::min(std::max(0, s.compute.trace.heads - 1), s.view.head + 1);
    if (ImGui::MenuItem("Enlarge selected head", "E", s.view.enlarged)) s.view.enlarged = !s.view.enlarged;
    ImGui::MenuItem("Walkthrough of the pipeline", "W", &s.walkthrough.open);
    if (ImGui::MenuItem("Model view (trained GPT)", "M", model_view_active(s), !s.model.path.empty())) toggle_model_view(s);
    if (ImGui::MenuItem("Controls panel", "C", s.view.show_controls)) s.view.show_controls = !s.view.show_controls;
    ImGui::Separator();
    ImGui::MenuItem("Shared colour scale", nullptr, &s.settings.shared_scale);
    ImGui::MenuItem("Values in cells", nullptr, &s.settings.show_values);
    ImGui::MenuItem("Logarithmic scale for weights", nullptr, &s.settings.log_weights);
    if (ImGui::BeginMenu("Colormap")) {
      for (int i = 0; i < kColormapCount; ++i) {
        const Colormap c = static_cast<Colormap>(i);
        if (ImGui::MenuItem(std::string(colormap_title(c)).c_str(), nullptr, s.settings.colormap == c)) s.settings.colormap = c;
      }
      ImGui::Separator();
      ImGui::MenuItem("Diverging map for signed scores", nullptr, &s.settings.diverging_for_signed);
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Dark theme", nullptr, s.settings.dark)) {
      s.settings.dark = true;
      s.ui.style_dirty = true;
    }
    if (ImGui::MenuItem("Light theme", nullptr, !s.settings.dark)) {
      s.settings.dark = false;
      s.ui.style_dirty = true;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Larger text", "Ctrl+=")) {
      s.settings.font_size = std::min(48.0f, s.settings.font_size + 2.0f);
      s.ui.fonts_dirty = true;
    }
    if (ImGui::MenuItem("Smaller text", "Ctrl+-")) {
      s.settings.font_size = std::max(10.0f, s.settings.font_size - 2.0f);
      s.ui.fonts_dirty = true;
    }
    float scale = s.settings.ui_scale;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    if (ImGui::SliderFloat("UI scale", &scale, 0.75f, 2.5f, "%.2f")) {
      s.settings.ui_scale = scale;
    }
    if (ImGui::IsItemDeactivatedAfterEdit()) {
      s.ui.fonts_dirty = true;
      s.ui.style_dirty = true;
    }
    ImGui::EndMenu();
  }
  draw_capture_menu(s);
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("mhaviz: multi-head attention, live.");
    ImGui::TextDisabled("Keys: 1-5 stage, [ ] head, E enlarge, C controls panel, Ctrl+O open, Ctrl+S save.");
    ImGui::TextDisabled("F12 captures what is shown as a PNG (Shift+F12: the whole window).");
    ImGui::TextDisabled("Hover a cell for its scores, weight and dropout.");
    ImGui::EndMenu();
  }
  // Right side: document name and state.
  std::string title = s.doc.origin + (s.doc.modified ? "  (modified)" : "");
  const float w = ImGui::CalcTextSize(title.c_str()).x;
  ImGui::SameLine(std::max(ImGui::GetCursorPosX() + 20.0f, ImGui::GetWindowWidth() - w - 20.0f));
  ImGui::TextDisabled("%s", title.c_str());
  ImGui::EndMenuBar();
}

// [SECTION] Shortcuts
void handle_shortcuts(AppState& s) {
  ImGuiIO& io = ImGui::GetIO();
  if (s.ui.dialog != Dialog::None) return;
  handle_capture_shortcuts(s);
  if (io.KeyCtrl) {
    if (ImGui::IsKeyPressed(GLFW_KEY_O, false)) start_dialog(s, Dialog::Open);
    if (ImGui::IsKeyPressed(GLFW_KEY_S, false)) {
      if (io.KeyShift) start_dialog(s, Dialog::SaveAs);
      else do_save(s);
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_Q, false)) s.quit_requested = true;
    if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD, false)) {
      s.settings.font_size = std::min(48.0f, s.settings.font_size + 2.0f);
      s.ui.fonts_dirty = true;
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_MINUS, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT, false)) {
      s.settings.font_size = std::max(10.0f, s.settings.font_size - 2.0f);
      s.ui.fonts_dirty = true;
    }
    return;
  }
  if (io.WantTextInput) return;
  for (int i = 0; i < kStageCount; ++i) {
    if (ImGui::IsKeyPressed(GLFW_KEY_1 + i, false)) s.view.stage = static_cast<Stage>(i);
  }
  const int heads = std::max(1, s.compute.trace.heads);
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT_BRACKET, false)) s.view.head = std::max(0, s.view.head - 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT_BRACKET, false)) s.view.head = std::min(heads - 1, s.view.head + 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_E, false)) s.view.enlarged = !s.view.enlarged;
  if (ImGui::IsKeyPressed(GLFW_KEY_C, false)) s.view.show_controls = !s.view.show_controls;
  if (ImGui::IsKeyPressed(GLFW_KEY_M, false) && !s.model.path.empty()) toggle_model_view(s);
}

}  // namespace mhaviz::gui
