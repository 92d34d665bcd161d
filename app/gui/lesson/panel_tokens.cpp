// Tokens and their embeddings: a text field (split on whitespace) and a T x d_in table
// edited by dragging or typing (double-click or Ctrl+click a value to type it).
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <string>

#include "app_state.hpp"
#include "text_fields.hpp"

namespace mhaviz::gui {

namespace {
constexpr int kMaxValueColumns = 60;  // of the 64 an ImGui 1.86 table may have

// Text in at most `width` pixels: cut at a whole UTF-8 character with an ellipsis.
std::string elide(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
  std::size_t n = text.size();
  std::string out;
  do {
    if (n == 0) return "\u2026";
    --n;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // whole characters
    out = text.substr(0, n) + "\u2026";
  } while (ImGui::CalcTextSize(out.c_str()).x > width);
  return out;
}

// A token in at most `width` pixels: cut at a whole UTF-8 character with an ellipsis, the
// full text in a tooltip.
void token_cell(AppState& s, const std::string& t, float width, int row) {
  WideChars& wide = s.ui.window.wide;  // an emoji as the atlas draws it (wide_chars.hpp)
  const std::string full = wide.to_field(t), shown = elide(full, width);
  ImGui::TextUnformatted(shown.c_str());
  if (row < 8) s.hooks.token_cells.push_back(wide.from_field(shown));
  if (shown != full && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
    ImGui::TextUnformatted(full.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

// Text typed while nothing had the keyboard (handle_shortcuts) lands at the end of the
// field once it is active, with the cursor after it (not replacing a selection).
int take_typed_text(ImGuiInputTextCallbackData* data) {
  auto& s = *static_cast<AppState*>(data->UserData);
  if (!s.ui.keys.focus_tokens) return 0;
  data->ClearSelection();
  data->CursorPos = data->BufTextLen;
  if (!s.ui.keys.tokens_insert.empty()) data->InsertChars(data->CursorPos, s.ui.keys.tokens_insert.c_str());
  data->CursorPos = data->BufTextLen;
  s.ui.keys.tokens_insert.clear();
  s.ui.keys.focus_tokens = false;
  return 0;
}
}  // namespace

void draw_tokens(AppState& s) {
  Session& ses = s.doc.session;
  s.hooks.token_cells.clear();
  if (s.ui.edit.token_text_stale && !ImGui::IsAnyItemActive()) sync_token_text(s);
  // Wrapped: a narrow panel with a large font cut "(T = 6)", the count, off.
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("Tokens, separated by spaces (T = %d)", ses.num_tokens());
  ImGui::PopTextWrapPos();
  ImGui::SetNextItemWidth(-1.0f);
  if (s.ui.keys.focus_tokens && !ImGui::IsAnyItemActive()) ImGui::SetKeyboardFocusHere();
  if (input_text_multiline(s, "##tokens", s.ui.edit.token_text, ImVec2(-1.0f, ImGui::GetTextLineHeight() * 3.2f),
                           ImGuiInputTextFlags_CallbackAlways, take_typed_text, &s)) {
    apply_token_text(s, s.ui.edit.token_text);
  }
  record_widget(s, "tokens");
  if (!ImGui::IsItemActive() && split_tokens(s.ui.edit.token_text).empty()) s.ui.edit.token_text_stale = true;

  const int d_in = ses.d_in();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float value_w = ImGui::CalcTextSize("-0.00").x + style.FramePadding.x * 2.0f;
  // Long tokens are elided in a column of at most ten characters (full text on hover), so
  // the values keep their room; the table scrolls sideways to every column.
  float token_w = ImGui::CalcTextSize("token").x;
  for (const auto& t : ses.tokens) token_w = std::max(token_w, ImGui::CalcTextSize(t.c_str()).x);
  token_w = std::min(token_w, ImGui::CalcTextSize("abcdefghij").x);
  // ImGui 1.86 tables hold at most 64 columns: past kMaxValueColumns, a slider picks the
  // first column of the window shown.
  const int window = std::min(d_in, kMaxValueColumns);
  s.ui.edit.first_column = std::clamp(s.ui.edit.first_column, 0, std::max(0, d_in - window));
  const int first = s.ui.edit.first_column;
  // One line under the field, always there: the table's caption, or in its place a refusal of
  // what was typed in the field or a note that typing went there. A note coming or going never
  // moves the table below (under the pointer of someone about to drag a value); a long line is
  // cut with an ellipsis, the whole of it on hover.
  const bool refused = s.ui.edit.refusal_where == "tokens" && glfwGetTime() < s.ui.edit.refusal_until;
  const bool typed = !refused && glfwGetTime() - s.ui.keys.typed_to_tokens_at < 8.0;
  const std::string caption = "Embeddings (" + std::to_string(ses.num_tokens()) + " x " + std::to_string(d_in) +
                              "): drag, or double-click to type; scroll sideways for every column";
  const std::string note = refused ? s.ui.edit.refusal
                           : typed ? "Typed with no field selected: it went into the tokens (Ctrl+Z takes it back)."
                                   : caption;
  const ImVec4 colour = refused ? kErrorText
                        : typed ? ImVec4(1.0f, 0.75f, 0.3f, 1.0f)
                                : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
  const std::string shown = elide(note, ImGui::GetContentRegionAvail().x);
  ImGui::TextColored(colour, "%s", shown.c_str());
  if (refused) record_widget(s, "refusal");
  if (typed) record_widget(s, "typed_note");
  if (shown != note && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", note.c_str());
  if (d_in > window) {
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 7.0f);
    const std::string fmt = "x" + std::to_string(first) + " to x" + std::to_string(first + window - 1);
    ImGui::SliderInt("columns shown", &s.ui.edit.first_column, 0, d_in - window, fmt.c_str(),
                     ImGuiSliderFlags_AlwaysClamp);
  }
  draw_refusal(s, "table");
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  const float height = std::max(ImGui::GetContentRegionAvail().y, ImGui::GetFrameHeight() * 4.0f);
  const ImVec2 table_pos = ImGui::GetCursorScreenPos();
  s.hooks.widgets["embedding_table"] = {table_pos.x, table_pos.y, table_pos.x + ImGui::GetContentRegionAvail().x,
                                        table_pos.y + height};
  if (!ImGui::BeginTable("embeddings", 3 + window, flags, ImVec2(0.0f, height))) return;
  ImGui::TableSetupScrollFreeze(3, 1);  // #, token and the move buttons stay while the values scroll
  ImGui::TableSetupColumn("#");
  ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthFixed, token_w);
  ImGui::TableSetupColumn("move");
  for (int j = 0; j < window; ++j)
    ImGui::TableSetupColumn(("x" + std::to_string(first + j)).c_str(), ImGuiTableColumnFlags_WidthFixed, value_w);
  ImGui::TableHeadersRow();

  // Edits are applied after the table: a refused one puts the whole session back.
  int move_from = -1, move_to = -1, remove = -1, edit_row = -1, edit_col = -1;
  float edit_value = 0.0f;
  ImGuiListClipper clipper;
  clipper.Begin(ses.num_tokens());
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::PushID(i);
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextDisabled("%d", i);
      ImGui::TableSetColumnIndex(1);
      token_cell(s, ses.tokens[static_cast<std::size_t>(i)], token_w, i);
      ImGui::TableSetColumnIndex(2);
      if (ImGui::ArrowButton("up", ImGuiDir_Up)) {
        move_from = i;
        move_to = i - 1;
      }
      ImGui::SameLine(0, 2);
      if (ImGui::ArrowButton("down", ImGuiDir_Down)) {
        move_from = i;
        move_to = i + 1;
      }
      if (i == 0) record_widget(s, "token0_down");
      ImGui::SameLine(0, 2);
      if (ImGui::SmallButton("x")) remove = i;
      if (i == 0) record_widget(s, "token0_remove");
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Remove this token");
      const auto& row = ses.embeddings[static_cast<std::size_t>(i)];
      for (int jj = 0; jj < window; ++jj) {
        const int j = first + jj;
        ImGui::TableSetColumnIndex(3 + jj);
        ImGui::PushID(j);
        ImGui::SetNextItemWidth(value_w);
        // Dragging stays within the format's limit; a typed value past it is refused
        // (mark_input_dirty validates) with the reason above the table.
        float v = row[static_cast<std::size_t>(j)];
        const auto lim = static_cast<float>(Limits::kMaxAbsValue);
        if (ImGui::DragFloat("##v", &v, 0.01f, -lim, lim, "%.2f") && v != row[static_cast<std::size_t>(j)]) {
          edit_row = i;
          edit_col = j;
          edit_value = v;
        }
        if (i == 0 && j == 0) record_widget(s, "embedding0_0");
        if (i == 0 && j == d_in - 1) record_widget(s, "embedding0_last");
        ImGui::PopID();
      }
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  if (edit_row >= 0) {
    const auto r = static_cast<std::size_t>(edit_row);
    ses.embeddings[r][static_cast<std::size_t>(edit_col)] = edit_value;
    mark_input_dirty(s, "change " + short_token(ses.tokens[r]) + " x" + std::to_string(edit_col), "table");
  }
  if (move_from >= 0) move_token(s, move_from, move_to);
  if (remove >= 0) remove_token(s, remove);
}

}  // namespace mhaviz::gui
