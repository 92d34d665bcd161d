// The lesson's heatmap panel: a toolbar (stage, head, batch, scale, colormap, capture) and
// the lesson figure (figure/lesson_figure.cpp: every head's (T, T) matrix or one head
// enlarged, token labels, colour bar, legend) drawn through the canvas; hover shows a cell's
// numbers, a click selects a head, a double click enlarges it.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app_state.hpp"
#include "figure/figure.hpp"

namespace mhaviz::gui {
namespace {

bool signed_stage(Stage st) { return st == Stage::Scores || st == Stage::Masked || st == Stage::Scaled; }

// [SECTION] Hover
void cell_tooltip(const AppState& s, int head, int i, int j) {
  const Trace& tr = s.compute.trace;
  const int b = s.view.batch;
  const auto& tokens = s.compute.tokens;
  const bool masked = tr.masked(i, j);
  ImGui::BeginTooltip();
  ImGui::Text("Head %d, batch %d", head, b);
  const WideChars& wide = s.ui.window.wide;  // an emoji as the atlas draws it
  ImGui::Text("Query (row %d): %s", i, wide.shown(tokens[static_cast<std::size_t>(i)]).c_str());
  ImGui::Text("Key (column %d): %s", j, wide.shown(tokens[static_cast<std::size_t>(j)]).c_str());
  ImGui::Separator();
  ImGui::Text("Raw score q\xC2\xB7k:    %.4f", static_cast<double>(tr.stage_value(Stage::Scores, b, head, i, j)));
  if (masked && tr.hidden_by(i, j) == MaskRule::Window) {
    ImGui::Text("Masked: yes (outside the window: %d - %d >= W = %d) -> -inf", i, j, tr.config.sliding_window);
  } else if (masked) {
    ImGui::Text("Masked: yes (key after query) -> -inf");
  }
  const float scaled = tr.stage_value(Stage::Scaled, b, head, i, j);
  if (std::isinf(scaled))
    ImGui::Text("Scaled score:      -inf");
  else if (tr.config.query_pre_attn_scalar > 0)
    ImGui::Text("Scaled score:      %.4f  (x query_pre_attn_scalar^-0.5 = %g^-0.5 = %.4f)", static_cast<double>(scaled),
                tr.config.query_pre_attn_scalar, static_cast<double>(tr.scale()));
  else
    ImGui::Text("Scaled score:      %.4f  (x 1/sqrt(%d) = %.4f)", static_cast<double>(scaled), tr.head_dim,
                static_cast<double>(tr.scale()));
  ImGui::Text("Weight (softmax):  %.4f", static_cast<double>(tr.stage_value(Stage::Weights, b, head, i, j)));
  if (tr.dropout_applied()) {
    ImGui::Text("Dropout: %s -> %.4f", tr.kept(b, head, i, j) ? "kept (scaled by 1/(1-p))" : "dropped",
                static_cast<double>(tr.stage_value(Stage::Dropped, b, head, i, j)));
  } else {
    ImGui::Text("Dropout: none drawn (%s)", tr.config.training ? "p = 0" : "eval mode");
  }
  double sum = 0, sum_d = 0;
  for (int k = 0; k < tr.tokens; ++k) {
    sum += static_cast<double>(tr.stage_value(Stage::Weights, b, head, i, k));
    sum_d += static_cast<double>(tr.stage_value(Stage::Dropped, b, head, i, k));
  }
  if (tr.dropout_applied())
    ImGui::Text("Row sum: %.4f  (after dropout %.4f)", sum, sum_d);
  else
    ImGui::Text("Row sum: %.4f", sum);
  ImGui::EndTooltip();
}

// [SECTION] Toolbar
constexpr const char* kShort[kStageCount] = {"1 Scores", "2 Masked", "3 Scaled", "4 Weights", "5 Dropout"};

// Continues the row if an item of width w still fits, else starts a new row.
void flow(float w) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= right) ImGui::SameLine();
}

float check_w(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
}

float button_w(const char* label) { return ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.0f; }

void draw_toolbar(AppState& s) {
  for (int i = 0; i < kStageCount; ++i) {
    if (i > 0) flow(check_w(kShort[i]));
    const Stage st = static_cast<Stage>(i);
    if (ImGui::RadioButton(kShort[i], s.view.stage == st)) s.view.stage = st;
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%s  (key %d)", std::string(stage_title(st)).c_str(), i + 1);
    }
  }
  const Trace& tr = s.compute.trace;
  const float fh = ImGui::GetFontSize();
  // Second row: head navigation, batch, scale, colormap.
  char head_text[48];
  std::snprintf(head_text, sizeof head_text, "head %d of %d", s.view.head, std::max(1, tr.heads));
  ImGui::BeginGroup();
  if (ImGui::ArrowButton("prevhead", ImGuiDir_Left)) s.view.head = std::max(0, s.view.head - 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Previous head  ([)");
  ImGui::SameLine();
  ImGui::TextUnformatted(head_text);
  ImGui::SameLine();
  if (ImGui::ArrowButton("nexthead", ImGuiDir_Right))
    s.view.head = std::min(std::max(0, tr.heads - 1), s.view.head + 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Next head  (])");
  ImGui::EndGroup();
  const char* enlarge = s.view.enlarged ? "All heads" : "Enlarge";
  flow(button_w(enlarge));
  if (ImGui::Button(enlarge)) s.view.enlarged = !s.view.enlarged;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Show the selected head large / all heads  (E, or double-click a head)");
  if (tr.batch > 1) {
    const float w = fh * 5.5f;
    flow(w + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("batch item").x);
    ImGui::SetNextItemWidth(w);
    int b = s.view.batch;
    if (ImGui::InputInt("batch item", &b)) s.view.batch = std::clamp(b, 0, tr.batch - 1);
  }
  flow(check_w("shared scale"));
  ImGui::Checkbox("shared scale", &s.settings.shared_scale);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("One colour scale for all heads (off: each head its own range)");
  // Both always there (one of them greyed out): the toolbar keeps its rows whatever the stage,
  // so the heatmaps below never move when the stage changes.
  ImGui::BeginDisabled(!signed_stage(s.view.stage));
  flow(check_w("one scale for 1-3"));
  ImGui::Checkbox("one scale for 1-3", &s.settings.scores_one_scale);
  record_widget(s, "scores_one_scale");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(
        "Raw, masked and scaled scores (stages 1-3) on one colour range: stage 3's division by sqrt(head_dim)\nthen "
        "shows as paler colours (each stage on its own range looks the same as the one before)");
  ImGui::EndDisabled();
  ImGui::BeginDisabled(signed_stage(s.view.stage));
  flow(check_w("log"));
  ImGui::Checkbox("log", &s.settings.log_weights);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Logarithmic colour scale for weights: with many tokens most weights are tiny (~1/T)");
  ImGui::EndDisabled();
  flow(fh * 6);
  ImGui::SetNextItemWidth(fh * 6);
  // The preview names the map the heatmaps use: signed scores show in the diverging map
  // whichever one is picked for the weights, unless that is turned off below.
  const Colormap shown = color_scale(0.0f, 1.0f, 0.0f, signed_stage(s.view.stage), s.settings.colormap,
                                     s.settings.diverging_for_signed, false)
                             .cmap;
  const std::string preview(colormap_name(shown));
  if (ImGui::BeginCombo("##colormap", preview.c_str())) {
    for (int i = 0; i < kColormapCount; ++i) {
      const Colormap c = static_cast<Colormap>(i);
      if (ImGui::Selectable(std::string(colormap_title(c)).c_str(), c == s.settings.colormap)) s.settings.colormap = c;
    }
    ImGui::Separator();
    ImGui::Checkbox("diverging map for signed scores", &s.settings.diverging_for_signed);
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) {
    if (shown != s.settings.colormap)
      ImGui::SetTooltip("Colormap: signed scores use the diverging map; %s is for the weights",
                        std::string(colormap_name(s.settings.colormap)).c_str());
    else
      ImGui::SetTooltip("Colormap");
  }
  flow(button_w("Capture"));
  capture_button(s);
}

}  // namespace

// [SECTION] Panel
void draw_heatmaps(AppState& s) {
  refresh(s);  // controls drawn earlier this frame may have changed the input
  if (!s.compute.have_trace) {
    ImGui::TextWrapped("No attention to show: %s", s.compute.error.c_str());
    return;
  }
  draw_toolbar(s);
  ImGui::Separator();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  if (avail.x < 50 || avail.y < 50) return;
  ScreenFigure& f = s.renderer.lesson;
  const figure::Options o = figure_options(s, s.view.enlarged ? figure::View::Head : figure::View::Grid, avail);
  try {
    AppState* sp = &s;
    f.ensure(o, s.compute.generation,
             [sp](const figure::Options& x) { return figure::build_figure(sp->compute.trace, sp->compute.tokens, x); });
    f.stem = (o.view == figure::View::Head ? "head" + std::to_string(o.head) : std::string("heads")) + "-" +
             std::string(stage_name(o.stage));
  } catch (const std::exception& e) {
    ImGui::TextWrapped("%s", e.what());
    return;
  }
  s.renderer.centre = &f;
  draw_figure(s, f, origin);
  for (const figure::HeatmapInfo& h : f.fig.heatmaps)
    s.ui.drawn.cell_layout.push_back({h.head, origin.x + h.x0, origin.y + h.y0,
                                      origin.x + h.x0 + h.cell * static_cast<float>(h.cols),
                                      origin.y + h.y0 + h.cell * static_cast<float>(h.rows), h.rows, h.cols,
                                      h.scale.vmin, h.scale.vmax, h.scale.cmap, h.scale.log});
  if (const figure::Hit* bar = f.fig.hit("colorbar")) {
    const figure::HeatmapInfo* any = f.fig.heatmaps.empty() ? nullptr : &f.fig.heatmaps.front();
    const ColorScale sc = any ? any->scale : ColorScale{};
    s.ui.drawn.colorbar_layout = {-1,
                                  origin.x + bar->x0,
                                  origin.y + bar->y0,
                                  origin.x + bar->x1,
                                  origin.y + bar->y1,
                                  256,
                                  1,
                                  sc.vmin,
                                  sc.vmax,
                                  sc.cmap,
                                  sc.log};
  }
  // Interaction: the figure is one invisible button; what is under the pointer says the rest.
  ImGui::SetCursorScreenPos(origin);
  ImGui::InvisibleButton("lesson_canvas", ImVec2(std::max(1.0f, static_cast<float>(f.fig.width)),
                                                 std::max(1.0f, static_cast<float>(f.fig.height))));
  if (!ImGui::IsItemHovered() || s.opts.ignore_mouse) return;
  const CellUnder c = cell_under(f, ImGui::GetIO().MousePos);
  if (c.heatmap < 0) return;
  const figure::HeatmapInfo& h = f.fig.heatmaps[static_cast<std::size_t>(c.heatmap)];
  if (ImGui::IsItemClicked()) s.view.head = h.head;
  if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    s.view.head = h.head;
    s.view.enlarged = !s.view.enlarged;
  }
  // The cell under the pointer, outlined (the screen's only addition to the figure).
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 c0 = to_screen(f, h.x0 + static_cast<float>(c.col) * h.cell, h.y0 + static_cast<float>(c.row) * h.cell);
  dl->AddRect(c0, ImVec2(c0.x + h.cell, c0.y + h.cell), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
  dl->AddRect(ImVec2(c0.x - 1, c0.y - 1), ImVec2(c0.x + h.cell + 1, c0.y + h.cell + 1), IM_COL32(0, 0, 0, 255), 0, 0,
              1.0f);
  cell_tooltip(s, h.head, c.row, c.col);
}

}  // namespace mhaviz::gui
