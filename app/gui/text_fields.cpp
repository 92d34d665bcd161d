#include "text_fields.hpp"

#include <imgui_stdlib.h>

#include "app_state.hpp"

namespace mhaviz::gui {
namespace {

// The field edits an aliased copy; the text takes it back whenever the field wrote to it (with
// EnterReturnsTrue ImGui writes on every edit and returns true on Enter only).
template <class Draw>
bool through_aliases(AppState& s, std::string& text, Draw draw) {
  WideChars& wide = s.ui.window.wide;
  const std::string before = wide.to_field(text);
  std::string field = before;
  const bool result = draw(field);
  if (field != before) text = wide.from_field(field);
  return result;
}

}  // namespace

bool input_text(AppState& s, const char* id, std::string& text, ImGuiInputTextFlags flags,
                ImGuiInputTextCallback callback, void* user) {
  return through_aliases(s, text, [&](std::string& f) { return ImGui::InputText(id, &f, flags, callback, user); });
}

bool input_text_with_hint(AppState& s, const char* id, const char* hint, std::string& text, ImGuiInputTextFlags flags) {
  return through_aliases(s, text, [&](std::string& f) { return ImGui::InputTextWithHint(id, hint, &f, flags); });
}

bool input_text_multiline(AppState& s, const char* id, std::string& text, ImVec2 size, ImGuiInputTextFlags flags,
                          ImGuiInputTextCallback callback, void* user) {
  return through_aliases(
      s, text, [&](std::string& f) { return ImGui::InputTextMultiline(id, &f, size, flags, callback, user); });
}

}  // namespace mhaviz::gui
