// Tokens and their embeddings: a text field (split on whitespace) and a T x d_in table
// edited by dragging or typing (double-click or Ctrl+click a value to type it).
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <string>

#include "app_state.hpp"

namespace mhaviz::gui {

namespace {
constexpr int kMaxShownDims = 8;
}

void draw_tokens(AppState& s) {
  Session& ses = s.doc.session;
  if (s.ui.token_text_stale && !ImGui::IsAnyItemActive()) sync_token_text(s);
  ImGui::TextDisabled("Tokens, separated by spaces (T = %d)", ses.num_tokens());
  ImGui::SetNextItemWidth(-1.0f);
  if (ImGui::InputTextMultiline("##tokens", &s.ui.token_text,
                                ImVec2(-1.0f, ImGui::GetTextLineHeight() * 3.2f))) {
    apply_token_text(s, s.ui.token_text);
  }
  record_widget(s, "tokens");
  if (!ImGui::IsItemActive() && split_tokens(s.ui.token_text).empty()) s.ui.token_text_stale = true;

  const int d_in = ses.d_in();
  const float value_w = ImGui::CalcTextSize("-0.00").x + ImGui::GetStyle().FramePadding.x * 2.0f;
  // As many value columns as fit beside #, token and the move buttons.
  const ImGuiStyle& style = ImGui::GetStyle();
  float token_w = ImGui::CalcTextSize("token").x;
  for (const auto& t : ses.tokens) token_w = std::max(token_w, ImGui::CalcTextSize(t.c_str()).x);
  token_w = std::min(token_w, ImGui::CalcTextSize("abcdefghij").x);
  const float move_w = ImGui::GetFrameHeight() * 2.0f + ImGui::CalcTextSize("x").x + style.FramePadding.x * 2.0f + 4.0f;
  const float index_w = ImGui::CalcTextSize(std::to_string(ses.num_tokens()).c_str()).x;
  const float fixed_w = index_w + token_w + move_w + style.CellPadding.x * 6.0f + style.ScrollbarSize;
  const int fit = static_cast<int>((ImGui::GetContentRegionAvail().x - fixed_w) / (value_w + style.CellPadding.x * 2.0f));
  const int shown = std::clamp(std::min(d_in, kMaxShownDims), 1, std::max(1, fit));
  ImGui::PushTextWrapPos(0.0f);
  if (shown < d_in) {
    ImGui::TextDisabled("Embeddings (%d x %d), first %d columns: drag, or double-click to type", ses.num_tokens(), d_in,
                        shown);
  } else {
    ImGui::TextDisabled("Embeddings (%d x %d): drag, or double-click to type", ses.num_tokens(), d_in);
  }
  ImGui::PopTextWrapPos();
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingFixedFit;
  const float height = std::max(ImGui::GetContentRegionAvail().y, ImGui::GetFrameHeight() * 4.0f);
  const int cols = 3 + shown;
  if (!ImGui::BeginTable("embeddings", cols, flags, ImVec2(0.0f, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#");
  ImGui::TableSetupColumn("token");
  ImGui::TableSetupColumn("move");
  for (int j = 0; j < shown; ++j) ImGui::TableSetupColumn(("x" + std::to_string(j)).c_str());
  ImGui::TableHeadersRow();

  int move_from = -1, move_to = -1, remove = -1;
  ImGuiListClipper clipper;
  clipper.Begin(ses.num_tokens());
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::PushID(i);
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextDisabled("%d", i);
      ImGui::TableSetColumnIndex(1);
      ImGui::TextUnformatted(ses.tokens[static_cast<std::size_t>(i)].c_str());
      ImGui::TableSetColumnIndex(2);
      if (ImGui::ArrowButton("up", ImGuiDir_Up)) { move_from = i; move_to = i - 1; }
      ImGui::SameLine(0, 2);
      if (ImGui::ArrowButton("down", ImGuiDir_Down)) { move_from = i; move_to = i + 1; }
      if (i == 0) record_widget(s, "token0_down");
      ImGui::SameLine(0, 2);
      if (ImGui::SmallButton("x")) remove = i;
      if (i == 0) record_widget(s, "token0_remove");
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Remove this token");
      auto& row = ses.embeddings[static_cast<std::size_t>(i)];
      for (int j = 0; j < shown; ++j) {
        ImGui::TableSetColumnIndex(3 + j);
        ImGui::PushID(j);
        ImGui::SetNextItemWidth(value_w);
        if (ImGui::DragFloat("##v", &row[static_cast<std::size_t>(j)], 0.01f, -10.0f, 10.0f, "%.2f")) {
          mark_input_dirty(s);
        }
        if (i == 0 && j == 0) record_widget(s, "embedding0_0");
        ImGui::PopID();
      }
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  if (move_from >= 0) move_token(s, move_from, move_to);
  if (remove >= 0) remove_token(s, remove);
}

}  // namespace mhaviz::gui
