// The menu bar (File, Lessons, View, Help) and the keyboard shortcuts it shows.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "figure/text.hpp"

namespace mhaviz::gui {
namespace {

void open_lesson(AppState& s, const std::string& name) {
  if (s.doc.modified) {
    s.ui.dialog.pending_open = name;
    s.ui.dialog.kind = Dialog::ConfirmOpen;
    s.ui.dialog.just_opened = true;
  } else {
    open_document(s, name);
  }
}

void start_dialog(AppState& s, Dialog d) {
  s.ui.dialog.kind = d;
  s.ui.dialog.just_opened = true;
  s.ui.dialog.error.clear();
  s.ui.dialog.path = s.doc.path;
}

// The model view, or back to the lesson (the walkthrough closes: the model view replaces it).
void toggle_model_view(AppState& s) { toggle_centre(s, Centre::Model); }

void do_save(AppState& s) {
  if (s.doc.path.empty())
    start_dialog(s, Dialog::SaveAs);
  else
    save_document(s, s.doc.path);
}

}  // namespace

void record_widget(AppState& s, const char* name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  s.hooks.widgets[name] = {a.x, a.y, b.x, b.y};
}

void record_frame(AppState& s, const char* name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  s.hooks.widgets[name] = {a.x, a.y, a.x + ImGui::CalcItemWidth(), b.y};
}

namespace {
using LineBreaker = std::vector<std::string> (*)(const std::string&, float,
                                                 const std::function<float(const std::string&)>&);

// The text in lines as `lines` breaks it at the window's edge, as one item (its rectangle, hover
// and tooltip cover every line). A piece wider than the whole line is left to TextWrapped, which
// breaks it between glyphs.
void text_lines(const std::string& text, LineBreaker lines) {
  const float room = std::max(1.0f, ImGui::GetContentRegionAvail().x);
  const auto width = [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; };
  ImGui::BeginGroup();
  for (const std::string& line : lines(text, room, width)) {
    if (width(line) > room)
      ImGui::TextWrapped("%s", line.c_str());
    else
      ImGui::TextUnformatted(line.c_str());
  }
  ImGui::EndGroup();
}
}  // namespace

// ImGui's own wrapping also breaks after '.', ',' and ';': a narrow strip showed "weight decay
// 0." on one line and "1" on the next.
void text_words_wrapped(const std::string& text) { text_lines(text, figure::word_lines); }

// ImGui's wrapping broke ".local" after its dot and a run's folder "induction-20261129-034326"
// between two digits.
void text_path_wrapped(const std::string& text) { text_lines(text, figure::path_lines); }

// An error usually names the folder or file it is about: ImGui's wrapping cut such a name
// mid-word ("config_unknown_m" / "odel_type").
void text_error_wrapped(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
  text_path_wrapped(text);
  ImGui::PopStyleColor();
}

void text_dim_wrapped(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_words_wrapped(text);
  ImGui::PopStyleColor();
}

void same_line_or_wrap(float width) {
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < width) ImGui::NewLine();
}

float labelled_width(float frame, const char* label) {
  const float text = ImGui::CalcTextSize(label, nullptr, true).x;
  return frame + (text > 0.0f ? ImGui::GetStyle().ItemInnerSpacing.x + text : 0.0f);
}

float button_width(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, true).x + 2.0f * ImGui::GetStyle().FramePadding.x;
}

void draw_refusal(AppState& s, const char* where) {
  if (s.ui.edit.refusal_where != where || glfwGetTime() >= s.ui.edit.refusal_until) return;
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(s.ui.edit.refusal.c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
  record_widget(s, "refusal");
}

// [SECTION] Edit menu: the items name the edit they take back or redo.
void draw_edit_menu(AppState& s) {
  const History& h = s.doc.history;
  const std::string undo_item = h.can_undo() ? "Undo " + h.undo_label() : std::string("Undo");
  const std::string redo_item = h.can_redo() ? "Redo " + h.redo_label() : std::string("Redo");
  s.hooks.edit_menu = undo_item + "|" + redo_item;
  const bool open = ImGui::BeginMenu("Edit");
  record_widget(s, "menu_edit");
  if (!open) return;
  if (ImGui::MenuItem(undo_item.c_str(), "Ctrl+Z", false, h.can_undo())) undo(s);
  record_widget(s, "edit_undo");
  if (ImGui::MenuItem(redo_item.c_str(), "Ctrl+Shift+Z, Ctrl+Y", false, h.can_redo())) redo(s);
  record_widget(s, "edit_redo");
  ImGui::Separator();
  ImGui::TextDisabled("steps to undo: %zu, to redo: %zu", h.undo_steps(), h.redo_steps());
  ImGui::EndMenu();
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
            s.ui.dialog.pending_open = p;
            s.ui.dialog.kind = Dialog::ConfirmOpen;
            s.ui.dialog.just_opened = true;
          } else {
            open_document(s, p);
          }
        }
      }
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Open model...")) {
      s.gpt.open_dialog = s.gpt.open_dialog_just_opened = true;
      s.gpt.open_edit = s.gpt.path;
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
  draw_edit_menu(s);
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
    if (ImGui::MenuItem("Next head", "]"))
      s.view.head = std::min(std::max(0, s.compute.trace.heads - 1), s.view.head + 1);
    if (ImGui::MenuItem("Enlarge selected head", "E", s.view.enlarged)) s.view.enlarged = !s.view.enlarged;
    if (ImGui::MenuItem("Walkthrough of the pipeline", "W", walkthrough_active(s), walkthrough_draws(s)))
      toggle_centre(s, Centre::Walkthrough);
    if (ImGui::MenuItem("Model view (trained GPT)", "M", model_view_active(s), !s.gpt.path.empty()))
      toggle_model_view(s);
    if (ImGui::MenuItem("Train a small GPT", "T", centre_view(s) == Centre::Train)) toggle_centre(s, Centre::Train);
    record_widget(s, "menu_train");
    if (ImGui::MenuItem("KV cache, step by step", "K", centre_view(s) == Centre::KvCache))
      toggle_centre(s, Centre::KvCache);
    record_widget(s, "menu_kv");
    if (ImGui::MenuItem("Controls panel", "C", s.view.show_controls)) s.view.show_controls = !s.view.show_controls;
    ImGui::Separator();
    ImGui::MenuItem("Shared colour scale", nullptr, &s.settings.shared_scale);
    ImGui::MenuItem("Values in cells", nullptr, &s.settings.show_values);
    ImGui::MenuItem("Logarithmic scale for weights", nullptr, &s.settings.log_weights);
    if (ImGui::BeginMenu("Colormap")) {
      for (int i = 0; i < kColormapCount; ++i) {
        const Colormap c = static_cast<Colormap>(i);
        if (ImGui::MenuItem(std::string(colormap_title(c)).c_str(), nullptr, s.settings.colormap == c))
          s.settings.colormap = c;
      }
      ImGui::Separator();
      ImGui::MenuItem("Diverging map for signed scores", nullptr, &s.settings.diverging_for_signed);
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Dark theme", nullptr, s.settings.dark)) {
      s.settings.dark = true;
      s.ui.window.style_dirty = true;
    }
    if (ImGui::MenuItem("Light theme", nullptr, !s.settings.dark)) {
      s.settings.dark = false;
      s.ui.window.style_dirty = true;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Larger text", "Ctrl+=")) {
      s.settings.font_size = std::min(48.0f, s.settings.font_size + 2.0f);
      s.ui.window.fonts_dirty = true;
    }
    if (ImGui::MenuItem("Smaller text", "Ctrl+-")) {
      s.settings.font_size = std::max(10.0f, s.settings.font_size - 2.0f);
      s.ui.window.fonts_dirty = true;
    }
    float scale = s.settings.ui_scale;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    if (ImGui::SliderFloat("UI scale", &scale, 0.75f, 2.5f, "%.2f")) {
      s.settings.ui_scale = scale;
    }
    if (ImGui::IsItemDeactivatedAfterEdit()) {
      s.ui.window.fonts_dirty = true;
      s.ui.window.style_dirty = true;
    }
    ImGui::EndMenu();
  }
  draw_capture_menu(s);
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("mhaviz: multi-head attention, live.");
    ImGui::TextDisabled("Keys: 1-5 stage, [ ] head, E enlarge, C controls panel, Ctrl+O open, Ctrl+S save.");
    ImGui::TextDisabled("Ctrl+Z undo, Ctrl+Shift+Z or Ctrl+Y redo (the Edit menu names the edit).");
    ImGui::TextDisabled("A single key is a shortcut; words typed with no field active go to the tokens.");
    ImGui::TextDisabled("F12 captures what is shown as a PNG (Shift+F12: the whole window).");
    ImGui::TextDisabled("Hover a cell for its scores, weight and dropout.");
    ImGui::EndMenu();
  }
  // Right side: what is shown (the model, the run, or the document and its state).
  const bool document = !model_view_active(s) && centre_view(s) != Centre::Train;
  std::string title = shown_title(s) + (document && s.doc.modified ? "  (modified)" : "");
  const float w = ImGui::CalcTextSize(title.c_str()).x;
  ImGui::SameLine(std::max(ImGui::GetCursorPosX() + 20.0f, ImGui::GetWindowWidth() - w - 20.0f));
  ImGui::TextDisabled("%s", title.c_str());
  s.ui.drawn.menu_title = std::move(title);
  ImGui::EndMenuBar();
}

// [SECTION] Shortcuts
namespace {

// Two printable characters closer than this are typing, not shortcuts (a typist's keys
// come 0.1-0.2 s apart; a shortcut is one key on its own).
constexpr double kTypingGap = 0.3;

void forget_typed(Ui& ui) {
  ui.keys.typed.clear();
  ui.keys.typed_count = 0;
}

void append_utf8(std::string& out, unsigned c) {
  char buf[5];
  out += ImTextCharToUtf8(buf, c);
}

// Printable characters typed while no text field has the keyboard. A lone one becomes
// s.ui.keys.shortcut once no other follows within kTypingGap (so it fires a moment after the
// key, never in the middle of a word); a run of them goes to the tokens field, which takes
// the keyboard from then on, and fires nothing.
void take_typed(AppState& s) {
  Ui& ui = s.ui;
  const ImGuiIO& io = ImGui::GetIO();
  // ImGui's clock, which follows queued input (app.cpp): when the keys were typed, not when a
  // slow frame saw them.
  const double now = ImGui::GetTime();
  ui.keys.shortcut = 0;
  if (ui.keys.focus_tokens && now - ui.keys.focus_asked_at > 1.0) {
    // The field was not drawn (its section folded): give up rather than swallow every key.
    ui.keys.focus_tokens = false;
    ui.keys.tokens_insert.clear();
  }
  if (!ui.keys.typed.empty() && now - ui.keys.typed_at > kTypingGap) {
    unsigned first = static_cast<unsigned char>(ui.keys.typed[0]);
    if (ui.keys.typed_count == 1 && first < 0x80) ui.keys.shortcut = first;
    forget_typed(ui);
  }
  for (const ImWchar c : io.InputQueueCharacters) {
    if (c < 0x20 || c == 0x7F || io.KeyCtrl || io.KeyAlt) continue;
    if (ui.keys.focus_tokens) {  // the field is about to take the keyboard: it gets these too
      append_utf8(ui.keys.tokens_insert, c);
      continue;
    }
    append_utf8(ui.keys.typed, c);
    ++ui.keys.typed_count;
    ui.keys.typed_at = now;
  }
  if (ui.keys.typed_count >= 2 && !ui.keys.focus_tokens) {
    const bool space_needed =
        !ui.edit.token_text.empty() && ui.edit.token_text.back() != ' ' && ui.keys.typed[0] != ' ';
    ui.keys.tokens_insert = (space_needed ? " " : "") + ui.keys.typed;
    ui.keys.focus_tokens = true;
    ui.keys.focus_asked_at = now;
    ui.keys.typed_to_tokens_at = now;
    s.view.show_controls = true;  // the field must be there to take it
    forget_typed(ui);
  }
}

}  // namespace

void handle_shortcuts(AppState& s) {
  ImGuiIO& io = ImGui::GetIO();
  s.ui.keys.shortcut = 0;
  if (s.ui.dialog.kind != Dialog::None) {
    forget_typed(s.ui);
    return;
  }
  handle_capture_shortcuts(s);
  if (io.KeyCtrl) {
    // In a text field Ctrl+Z and Ctrl+Y are the field's own (the tokens field's edits
    // become one undo step when it is left).
    if (!io.WantTextInput) {
      if (ImGui::IsKeyPressed(GLFW_KEY_Z, false)) {
        if (io.KeyShift)
          redo(s);
        else
          undo(s);
      }
      if (ImGui::IsKeyPressed(GLFW_KEY_Y, false)) redo(s);
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_O, false)) start_dialog(s, Dialog::Open);
    if (ImGui::IsKeyPressed(GLFW_KEY_S, false)) {
      if (io.KeyShift)
        start_dialog(s, Dialog::SaveAs);
      else
        do_save(s);
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_Q, false)) s.quit_requested = true;
    if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD, false)) {
      s.settings.font_size = std::min(48.0f, s.settings.font_size + 2.0f);
      s.ui.window.fonts_dirty = true;
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_MINUS, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT, false)) {
      s.settings.font_size = std::max(10.0f, s.settings.font_size - 2.0f);
      s.ui.window.fonts_dirty = true;
    }
    return;
  }
  if (io.WantTextInput) {
    forget_typed(s.ui);
    return;
  }
  take_typed(s);
  const unsigned k = s.ui.keys.shortcut;
  if (k >= '1' && k < '1' + static_cast<unsigned>(kStageCount)) s.view.stage = static_cast<Stage>(k - '1');
  const int heads = std::max(1, s.compute.trace.heads);
  if (k == '[') s.view.head = std::max(0, s.view.head - 1);
  if (k == ']') s.view.head = std::min(heads - 1, s.view.head + 1);
  if (k == 'e' || k == 'E') s.view.enlarged = !s.view.enlarged;
  if (k == 'c' || k == 'C') s.view.show_controls = !s.view.show_controls;
  if ((k == 'm' || k == 'M') && !s.gpt.path.empty()) toggle_model_view(s);
  // Here, once a frame, not in walkthrough_active(), which several panels ask.
  if (k == 'w' || k == 'W') toggle_centre(s, Centre::Walkthrough);
  if (k == 't' || k == 'T') toggle_centre(s, Centre::Train);
  if (k == 'k' || k == 'K') toggle_centre(s, Centre::KvCache);
}

}  // namespace mhaviz::gui
