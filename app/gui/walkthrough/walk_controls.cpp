// The walkthrough's transport controls (buttons, scrub bar, step chips, keys) and its
// options row (mode, panes, mistake); the moves themselves are walk_transport.cpp.
#include <GLFW/glfw3.h>

#include <cstdlib>

#include "walk_frame.hpp"

namespace mhaviz::gui::walk {

// [SECTION] Controls

void handle_keys(AppState& s, Walkthrough& w, int n) {
  const ImGuiIO& io = ImGui::GetIO();
  if (s.ui.dialog.kind != Dialog::None || io.WantTextInput || io.KeyCtrl) return;
  // GLFW key codes index KeysDown in the 1.86 GLFW backend (ImGuiKey_Space would never fire).
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT, false)) next_step(w, n);
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT, false)) previous_step(w, n);
  if (s.ui.keys.shortcut == ' ') toggle_play(w, n);  // a lone Space (handle_shortcuts), never one typed between words
  if (ImGui::IsKeyPressed(GLFW_KEY_HOME, false)) go_to(w, 0.0f, n);
  if (ImGui::IsKeyPressed(GLFW_KEY_END, false)) go_to(w, static_cast<float>(n - 1), n);
}

void draw_controls_row(AppState& s, const Steps& st) {
  Walkthrough& w = s.walkthrough;
  const int n = st.count();
  const float fh = ImGui::GetFontSize();
  if (ImGui::Button("|<")) go_to(w, 0.0f, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("First step (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Back")) previous_step(w, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Previous step (←)");
  s.hooks.widgets["walk_back"] = {ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y, ImGui::GetItemRectMax().x,
                                  ImGui::GetItemRectMax().y};
  ImGui::SameLine();
  if (ImGui::Button(w.playing ? "Pause ##play" : "Play  ##play", ImVec2(fh * 4.0f, 0))) toggle_play(w, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Play / pause (Space)");
  record_widget(s, "walk_play");
  ImGui::SameLine();
  if (ImGui::Button("Next >")) next_step(w, n);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Next step, animated (→)");
  record_widget(s, "walk_next");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(fh * 8.0f, ImGui::GetContentRegionAvail().x - fh * 26.0f));
  float pos = w.pos + 1.0f;
  char fmtbuf[64];
  std::snprintf(fmtbuf, sizeof fmtbuf, "step %.2f of %d", static_cast<double>(w.pos + 1.0f), n);
  if (ImGui::SliderFloat("##scrub", &pos, 1.0f, static_cast<float>(n), fmtbuf)) {
    w.pos = w.target = std::clamp(pos - 1.0f, 0.0f, static_cast<float>(n - 1));
    w.playing = false;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Scrub: fractions show the animation between two steps");
  record_widget(s, "walk_scrub");
  // On a 1024 × 768 window these go on a second line (they were past the window's edge).
  same_line_or_wrap(labelled_width(fh * 6.0f, "speed"));
  ImGui::SetNextItemWidth(fh * 6.0f);
  ImGui::SliderFloat("speed", &w.speed, 0.25f, 4.0f, "%.2fx", ImGuiSliderFlags_Logarithmic);
  same_line_or_wrap(labelled_width(ImGui::GetFrameHeight(), "numbers"));
  ImGui::Checkbox("numbers", &w.values);
  same_line_or_wrap(button_width("Capture"));
  capture_button(s);
}

// The chips on one line: where every name does not fit (with a 24-pixel font on 1280 × 800
// they took a second line, and the figure its height), the chips farthest from the current
// step show their number only, named by their tooltip. A line too narrow even so wraps.
void draw_step_chips(AppState& s, const Steps& st) {
  ImGui::SetWindowFontScale(0.85f);
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(4.0f, 2.0f));
  Walkthrough& w = s.walkthrough;
  const int n = st.count();
  const int cur = static_cast<int>(std::lround(w.target));
  const float pad = ImGui::GetStyle().FramePadding.x * 2.0f, gap = 4.0f;
  std::vector<std::string> names(static_cast<std::size_t>(n));
  std::vector<float> widths(static_cast<std::size_t>(n));
  float total = 0.0f;
  for (int i = 0; i < n; ++i) {
    const lay::Step sti = st.list[static_cast<std::size_t>(i)];
    const std::string shortname = sti == lay::Step::Input           ? "X"
                                  : sti == lay::Step::Project       ? "QKV"
                                  : sti == lay::Step::TransposeBack ? "back"
                                                                    : std::string(lay::step_name(sti));
    names[static_cast<std::size_t>(i)] = std::to_string(i + 1) + " " + shortname;
    widths[static_cast<std::size_t>(i)] = ImGui::CalcTextSize(names[static_cast<std::size_t>(i)].c_str()).x + pad;
    total += widths[static_cast<std::size_t>(i)] + (i > 0 ? gap : 0.0f);
  }
  std::vector<int> far(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) far[static_cast<std::size_t>(i)] = i;
  std::stable_sort(far.begin(), far.end(), [cur](int a, int b) { return std::abs(a - cur) > std::abs(b - cur); });
  for (int i : far) {
    if (total <= ImGui::GetContentRegionAvail().x || i == cur) break;
    const std::size_t u = static_cast<std::size_t>(i);
    names[u] = std::to_string(i + 1);
    const float bw = ImGui::CalcTextSize(names[u].c_str()).x + pad;
    total -= widths[u] - bw;
    widths[u] = bw;
  }
  for (int i = 0; i < n; ++i) {
    if (i > 0) ImGui::SameLine(0.0f, gap);
    const float bw = widths[static_cast<std::size_t>(i)];
    if (i > 0 && ImGui::GetItemRectMax().x + bw + gap > ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x)
      ImGui::NewLine();
    const bool on = i == cur;
    if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    ImGui::PushID(i);  // one id whether the chip shows its name or its number
    if (ImGui::Button((names[static_cast<std::size_t>(i)] + "##chip").c_str())) go_to(w, static_cast<float>(i), n);
    ImGui::PopID();
    record_widget(s, ("walk_chip_" + std::to_string(i + 1)).c_str());
    if (on) ImGui::PopStyleColor();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", lay::step_title(st.list[static_cast<std::size_t>(i)],
                                              lay::dims_for(st.tr.config, 1, st.tr.tokens, st.tr.d_in))
                                  .c_str());
  }
  ImGui::PopStyleVar();
  ImGui::SetWindowFontScale(1.0f);
}

void draw_options_row(AppState& s, const Steps& st) {
  Walkthrough& w = s.walkthrough;
  const Variant v = st.tr.config.variant;
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("mode:");
  ImGui::SameLine();
  const Variant vs[3] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv};
  for (Variant x : vs) {
    ImGui::SameLine();
    if (ImGui::RadioButton(std::string(variant_name(x)).c_str(), v == x) && v != x) {
      ModelConfig& c = s.doc.session.model;
      c = with_variant(
          c, x, s.settings.variant_keeps_d_out ? VariantKeeps::DOut : VariantKeeps::HeadDim);  // the Model panel's edit
      s.ui.edit.preferred_heads = c.num_heads;
      mark_model_dirty(s, "switch to " + std::string(variant_name(x)), "variant");
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kVariantSwitchNote);
  }
  if (!st.list.empty() && v != Variant::Gqa) {  // gqa draws its keys | values (at fewer heads) beside the queries
    const char* names[4] = {"Q", "K", "V", "all"};
    // The panes' switch as one group: on this line where it fits whole (a 1280-pixel window),
    // else on the next (1024: its last buttons were past the window's edge).
    float group = ImGui::CalcTextSize("  show:").x;
    for (const char* n : {names[0], names[1], names[2], names[3], "Wᵀ"})
      group += ImGui::GetStyle().ItemSpacing.x + labelled_width(ImGui::GetFrameHeight(), n);
    same_line_or_wrap(group);
    ImGui::TextDisabled("  show:");
    for (int p = 0; p < 4; ++p) {
      ImGui::SameLine();
      ImGui::RadioButton(names[p], &w.pane, p);
    }
    ImGui::SameLine();
    ImGui::Checkbox("Wᵀ", &w.show_weights);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "Draw the weight matrix (transposed) in the projection step: X · Wᵀ = Q\n(when it fits without hiding "
          "columns)");
  }
  if (st.tr.batch > 1) {
    // A narrow drag field (drag, or double-click to type) kept on this line: with +/- buttons
    // the row did not fit a 1280-pixel window, and a second line would take height from the cells.
    const float bw = ImGui::GetFontSize() * 2.5f;
    same_line_or_wrap(labelled_width(bw, "batch"));
    ImGui::SetNextItemWidth(bw);
    int b = s.view.batch;
    if (ImGui::DragInt("batch", &b, 0.05f, 0, st.tr.batch - 1, "%d", ImGuiSliderFlags_AlwaysClamp))
      s.view.batch = std::clamp(b, 0, st.tr.batch - 1);
  }
  if (v != Variant::Wrapper) {
    const bool repeat = v == Variant::Gqa;
    const char* mistake_label = repeat ? "mistake: repeat, not repeat_interleave" : "mistake: merge w/o transpose back";
    same_line_or_wrap(labelled_width(ImGui::GetFrameHeight(), mistake_label));
    const float before = w.pos;
    const lay::Dims dims = lay::dims_for(st.tr.config, 1, st.tr.tokens, st.tr.d_in);
    if (ImGui::Checkbox(mistake_label, &w.mistaken)) {
      // Stay on the same step (the merge's step list loses or regains "transpose back").
      const auto old_steps = lay::steps_for(dims, !w.mistaken);
      const lay::Step at_step = old_steps[static_cast<std::size_t>(
          std::clamp(static_cast<int>(std::lround(before)), 0, static_cast<int>(old_steps.size()) - 1))];
      const auto now_steps = lay::steps_for(dims, w.mistaken);
      int idx = 0;
      for (int i = 0; i < static_cast<int>(now_steps.size()); ++i)
        if (now_steps[static_cast<std::size_t>(i)] == at_step ||
            (at_step == lay::Step::TransposeBack && now_steps[static_cast<std::size_t>(i)] == lay::Step::Merge))
          idx = i;
      w.pos = w.target = static_cast<float>(idx);
      w.hover_step = w.pin_step = -1;
    }
    record_widget(s, "walk_mistake");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s",
                        repeat ? "Expand the K/V heads with .repeat instead of .repeat_interleave: query head i then "
                                 "reads K/V head i mod num_kv_groups, not its group's;\nsee the expand step and the "
                                 "wrong heads' scores"
                               : "The Transformer tutorial's slip: reshape (b, h, T, hd) straight to (b, T, h*hd), "
                                 "without the transpose back; see the merge step and the wrong output it leads to");
  }
}

// The inspector's lines and its softmax table, as figure::inspect wrote them.
void draw_inspection(const figure::Inspection& in) {
  for (const figure::Inspection::Item& it : in.items) {
    if (it.table.header.empty()) {
      if (it.line.dim)
        text_dim_wrapped(it.line.text);  // the hint is wider than a 1024 × 768 window's centre
      else
        ImGui::TextWrapped("%s", it.line.text.c_str());
      continue;
    }
    const figure::Inspection::Table& t = it.table;
    if (!ImGui::BeginTable("inspect_table", static_cast<int>(t.header.size()),
                           ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit))
      continue;
    for (const auto& h : t.header) ImGui::TableSetupColumn(h.c_str());
    ImGui::TableHeadersRow();
    for (const auto& row : t.rows) {
      ImGui::TableNextRow();
      for (const auto& cell : row) {
        ImGui::TableNextColumn();
        if (cell.dim)
          ImGui::TextDisabled("%s", cell.text.c_str());
        else
          ImGui::TextUnformatted(cell.text.c_str());
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace mhaviz::gui::walk
