// ImGui's text fields over a std::string, holding characters beyond U+FFFF as aliases
// (wide_chars.hpp) so that editing a field never loses them; typed and pasted characters take
// the same aliases (the app's character and clipboard callbacks, app.cpp).
#pragma once

#include <imgui.h>

#include <string>

namespace mhaviz::gui {

struct AppState;

bool input_text(AppState& s, const char* id, std::string& text, ImGuiInputTextFlags flags = 0,
                ImGuiInputTextCallback callback = nullptr, void* user = nullptr);
bool input_text_with_hint(AppState& s, const char* id, const char* hint, std::string& text,
                          ImGuiInputTextFlags flags = 0);
bool input_text_multiline(AppState& s, const char* id, std::string& text, ImVec2 size, ImGuiInputTextFlags flags = 0,
                          ImGuiInputTextCallback callback = nullptr, void* user = nullptr);

}  // namespace mhaviz::gui
