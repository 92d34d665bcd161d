// The heatmap panel: a toolbar (stage, batch, scale, colormap), a grid of every head's
// (T, T) matrix or one enlarged head, token labels, a colorbar and a hover tooltip.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app_state.hpp"
#include "stage_note.hpp"
#include "figure/figure.hpp"

namespace mhaviz::gui {
namespace {

// [SECTION] Helpers
bool signed_stage(Stage st) { return st == Stage::Scores || st == Stage::Masked || st == Stage::Scaled; }

using Range = ColorScale;

Range range_for(const AppState& s, int head) {
  const Renderer& r = s.renderer;
  float lo = 0, hi = 0, min_pos = 0;
  const auto take_pos = [&min_pos](float p) {
    if (p > 0.0f) min_pos = min_pos > 0.0f ? std::min(min_pos, p) : p;
  };
  if (s.settings.shared_scale) {
    lo = r.heads.empty() ? 0.0f : r.heads.front().vmin;
    hi = r.heads.empty() ? 0.0f : r.heads.front().vmax;
    for (const auto& h : r.heads) {
      lo = std::min(lo, h.vmin);
      hi = std::max(hi, h.vmax);
      take_pos(h.min_positive);
    }
  } else {
    const HeadTexture& h = r.heads[static_cast<std::size_t>(head)];
    lo = h.vmin;
    hi = h.vmax;
    take_pos(h.min_positive);
  }
  return color_scale(lo, hi, min_pos, signed_stage(s.view.stage), s.settings.colormap, s.settings.diverging_for_signed,
                     s.settings.log_weights);
}

ImU32 text_color_on(Colormap c, float t) {
  const Rgb rgb = colormap_eval(c, t);
  const float lum = 0.2126f * rgb.r + 0.7152f * rgb.g + 0.0722f * rgb.b;
  return lum > 0.5f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
}

// Token text shortened with an ellipsis to fit max_w pixels.
std::string fit_label(const std::string& text, float max_w) {
  if (ImGui::CalcTextSize(text.c_str()).x <= max_w) return text;
  std::string out = text;
  while (!out.empty()) {
    // Drop one UTF-8 code point.
    do {
      out.pop_back();
    } while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80);
    const std::string cand = out + "\xE2\x80\xA6";
    if (ImGui::CalcTextSize(cand.c_str()).x <= max_w) return cand;
  }
  return "\xE2\x80\xA6";
}

// Text rotated -90 degrees (reading bottom to top) with its baseline end at (x, y_bottom).
void add_text_vertical(ImDrawList* dl, ImVec2 bottom_left, ImU32 col, const std::string& text) {
  const int start = dl->VtxBuffer.Size;
  dl->AddText(bottom_left, col, text.c_str());
  // Rotate about bottom_left: (dx, dy) -> (dy, -dx).
  for (int i = start; i < dl->VtxBuffer.Size; ++i) {
    ImDrawVert& v = dl->VtxBuffer[i];
    const float dx = v.pos.x - bottom_left.x, dy = v.pos.y - bottom_left.y;
    v.pos = ImVec2(bottom_left.x + dy, bottom_left.y - dx);
  }
}

struct LabelPlan {
  bool show = false;
  bool vertical = false;  // column labels rotated
  float left = 0, top = 0;  // margins
  int step = 1;             // label every step-th token
};

LabelPlan plan_labels(const AppState& s, float side, int T) {
  LabelPlan p;
  if (side < 90.0f) return p;
  const float fh = ImGui::GetFontSize();
  const float cell = side / static_cast<float>(T);
  p.show = true;
  p.step = std::max(1, static_cast<int>(std::ceil(fh * 1.15f / cell)));
  float maxw = 0;
  for (const auto& t : s.compute.tokens) {
    maxw = std::max(maxw, ImGui::CalcTextSize(t.c_str()).x);
  }
  const float cap = ImGui::CalcTextSize("abcdefgh").x;
  const float w = std::min(maxw, cap);
  p.left = std::ceil(w + 6.0f);
  p.vertical = maxw > cell * static_cast<float>(p.step) - 4.0f;
  p.top = std::ceil(p.vertical ? w + 6.0f : fh + 4.0f);
  return p;
}

// [SECTION] One heatmap with labels, values and hover
struct TileResult {
  bool hovered_cell = false;
  int i = -1, j = -1;
};

TileResult draw_tile(AppState& s, int head, ImVec2 origin, float side, const LabelPlan& lp) {
  const Trace& tr = s.compute.trace;
  const int T = tr.tokens;
  const auto& tokens = s.compute.tokens;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim_col = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const float fh = ImGui::GetFontSize();

  // Title.
  char title[96];
  const Range rg = range_for(s, head);
  if (s.settings.shared_scale) {
    std::snprintf(title, sizeof title, "Head %d", head);
  } else {
    std::snprintf(title, sizeof title, "Head %d  [%s, %s]", head, figure::format_value(rg.vmin).c_str(),
                  figure::format_value(rg.vmax).c_str());
  }
  const bool selected = head == s.view.head;
  dl->AddText(ImVec2(origin.x + lp.left, origin.y), selected ? ImGui::GetColorU32(ImGuiCol_PlotHistogram) : text_col,
              title);
  const float x0 = origin.x + lp.left;
  const float y0 = origin.y + std::ceil(fh + style.ItemSpacing.y) + lp.top;
  const float x1 = x0 + side, y1 = y0 + side;
  const float cell = side / static_cast<float>(T);

  HeatmapDraw d;
  d.tex = s.renderer.heads[static_cast<std::size_t>(head)].tex;
  d.x0 = x0;
  d.y0 = y0;
  d.x1 = x1;
  d.y1 = y1;
  d.vmin = rg.vmin;
  d.vmax = rg.vmax;
  d.colormap = rg.cmap;
  d.log_scale = rg.log;
  d.cols = T;
  d.rows = T;
  d.grid = cell >= 8.0f;
  draw_heatmap_quad(s, d);
  s.ui.cell_layout.push_back({head, x0, y0, x1, y1, T, T, rg.vmin, rg.vmax, rg.cmap, rg.log});
  if (selected) dl->AddRect(ImVec2(x0 - 2, y0 - 2), ImVec2(x1 + 2, y1 + 2), ImGui::GetColorU32(ImGuiCol_PlotHistogram), 0, 0, 2.0f);

  // Labels: rows are queries, columns are keys.
  if (lp.show) {
    const float maxw = lp.left - 6.0f;
    for (int i = 0; i < T; i += lp.step) {
      const std::string lab = fit_label(tokens[static_cast<std::size_t>(i)], maxw);
      const ImVec2 sz = ImGui::CalcTextSize(lab.c_str());
      dl->AddText(ImVec2(x0 - 4 - sz.x, y0 + (static_cast<float>(i) + 0.5f) * cell - sz.y * 0.5f), text_col, lab.c_str());
    }
    for (int j = 0; j < T; j += lp.step) {
      const float cx = x0 + (static_cast<float>(j) + 0.5f) * cell;
      if (lp.vertical) {
        const std::string lab = fit_label(tokens[static_cast<std::size_t>(j)], lp.top - 6.0f);
        add_text_vertical(dl, ImVec2(cx - fh * 0.5f, y0 - 4), text_col, lab);
      } else {
        const std::string& lab = tokens[static_cast<std::size_t>(j)];
        const ImVec2 sz = ImGui::CalcTextSize(lab.c_str());
        dl->AddText(ImVec2(cx - sz.x * 0.5f, y0 - 2 - sz.y), text_col, lab.c_str());
      }
    }
  }
  if (lp.show) {
    const char* axes = "rows: queries, columns: keys";
    const float tx = x0 + ImGui::CalcTextSize(title).x + fh;
    if (tx + ImGui::CalcTextSize(axes).x <= x1) dl->AddText(ImVec2(tx, origin.y), dim_col, axes);
  }

  // Values inside cells.
  const HeadTexture& ht = s.renderer.heads[static_cast<std::size_t>(head)];
  bool values_fit = s.settings.show_values && !s.opts.hide_cell_values && cell >= fh + 4.0f && T <= 48;
  if (values_fit) {
    float widest = 0.0f;
    for (float v : ht.values) {
      if (std::isfinite(v)) widest = std::max(widest, ImGui::CalcTextSize(figure::format_value(v).c_str()).x);
    }
    values_fit = cell >= widest + 6.0f;
  }
  if (values_fit && static_cast<int>(ht.values.size()) == T * T) {
    for (int i = 0; i < T; ++i) {
      for (int j = 0; j < T; ++j) {
        const float v = ht.values[static_cast<std::size_t>(i * T + j)];
        if (std::isinf(v) && s.view.stage != Stage::Masked && s.view.stage != Stage::Scaled) continue;
        const std::string txt = figure::format_value(v);
        const ImVec2 sz = ImGui::CalcTextSize(txt.c_str());
        const float t = std::isinf(v) ? 0.0f : scale_t(rg, v);
        const ImU32 col = std::isinf(v) ? (s.settings.dark ? IM_COL32(235, 235, 235, 255) : IM_COL32(20, 20, 20, 255))
                                        : text_color_on(rg.cmap, t);
        dl->AddText(ImVec2(x0 + (static_cast<float>(j) + 0.5f) * cell - sz.x * 0.5f,
                           y0 + (static_cast<float>(i) + 0.5f) * cell - sz.y * 0.5f),
                    col, txt.c_str());
      }
    }
  }

  // Dropout stage: cells dropout zeroed are crossed out (they are not just small weights).
  if (s.view.stage == Stage::Dropped && tr.dropout_applied() && cell >= 12.0f && !s.opts.hide_cell_values &&
      T <= 64) {
    const ImU32 col = text_color_on(rg.cmap, scale_t(rg, 0.0f));
    const float r = cell * (values_fit ? 0.12f : 0.22f);
    for (int i = 0; i < T; ++i) {
      for (int j = 0; j <= i || (!tr.config.causal && j < T); ++j) {
        if (j >= T || tr.kept(s.view.batch, head, i, j)) continue;
        // With values shown, the cross sits in the corner; otherwise in the middle.
        const float cx = x0 + (static_cast<float>(j) + (values_fit ? 0.82f : 0.5f)) * cell;
        const float cy = y0 + (static_cast<float>(i) + (values_fit ? 0.2f : 0.5f)) * cell;
        dl->AddLine(ImVec2(cx - r, cy - r), ImVec2(cx + r, cy + r), col, 1.5f);
        dl->AddLine(ImVec2(cx - r, cy + r), ImVec2(cx + r, cy - r), col, 1.5f);
      }
    }
  }

  // Interaction: the tile is one invisible button.
  ImGui::SetCursorScreenPos(ImVec2(x0, y0));
  ImGui::PushID(head);
  ImGui::InvisibleButton("tile", ImVec2(side, side));
  ImGui::PopID();
  TileResult res;
  if (ImGui::IsItemClicked()) s.view.head = head;
  if (ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    s.view.head = head;
    s.view.enlarged = !s.view.enlarged;
  }
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    res.j = std::clamp(static_cast<int>((m.x - x0) / cell), 0, T - 1);
    res.i = std::clamp(static_cast<int>((m.y - y0) / cell), 0, T - 1);
    res.hovered_cell = true;
    const ImVec2 c0(x0 + static_cast<float>(res.j) * cell, y0 + static_cast<float>(res.i) * cell);
    dl->AddRect(c0, ImVec2(c0.x + cell, c0.y + cell), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
    dl->AddRect(ImVec2(c0.x - 1, c0.y - 1), ImVec2(c0.x + cell + 1, c0.y + cell + 1), IM_COL32(0, 0, 0, 255), 0, 0, 1.0f);
  }
  return res;
}

void cell_tooltip(const AppState& s, int head, int i, int j) {
  const Trace& tr = s.compute.trace;
  const int b = s.view.batch;
  const auto& tokens = s.compute.tokens;
  const bool masked = tr.masked(i, j);
  ImGui::BeginTooltip();
  ImGui::Text("Head %d, batch %d", head, b);
  ImGui::Text("Query (row %d): %s", i, tokens[static_cast<std::size_t>(i)].c_str());
  ImGui::Text("Key (column %d): %s", j, tokens[static_cast<std::size_t>(j)].c_str());
  ImGui::Separator();
  ImGui::Text("Raw score q\xC2\xB7k:    %.4f", static_cast<double>(tr.stage_value(Stage::Scores, b, head, i, j)));
  if (masked) {
    ImGui::Text("Masked: yes (key after query) -> -inf");
  }
  const float scaled = tr.stage_value(Stage::Scaled, b, head, i, j);
  if (std::isinf(scaled)) ImGui::Text("Scaled score:      -inf");
  else ImGui::Text("Scaled score:      %.4f  (x 1/sqrt(%d) = %.4f)", static_cast<double>(scaled), tr.head_dim,
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
  if (tr.dropout_applied()) ImGui::Text("Row sum: %.4f  (after dropout %.4f)", sum, sum_d);
  else ImGui::Text("Row sum: %.4f", sum);
  ImGui::EndTooltip();
}

// [SECTION] Colorbar
void draw_colorbar(AppState& s, ImVec2 origin, float height) {
  const Range rg = range_for(s, s.view.head);
  const float fh = ImGui::GetFontSize();
  const float bar_w = std::max(16.0f, fh);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  const char* caption = s.settings.shared_scale ? "all heads" : "selected head";
  dl->AddText(ImVec2(origin.x, origin.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), caption);
  const float y0 = origin.y + fh * 1.6f;
  const float y1 = origin.y + height - fh;
  if (y1 - y0 < 40) return;
  HeatmapDraw d;
  d.tex = s.renderer.colorbar.tex;
  d.x0 = origin.x;
  d.y0 = y0;
  d.x1 = origin.x + bar_w;
  d.y1 = y1;
  d.vmin = 0.0f;
  d.vmax = 1.0f;
  d.colormap = rg.cmap;
  d.cols = 1;
  d.rows = 256;
  draw_heatmap_quad(s, d);
  s.ui.colorbar_layout = {-1, d.x0, d.y0, d.x1, d.y1, 256, 1, rg.vmin, rg.vmax, rg.cmap, rg.log};
  dl->AddRect(ImVec2(d.x0 - 1, d.y0 - 1), ImVec2(d.x1 + 1, d.y1 + 1), ImGui::GetColorU32(ImGuiCol_Border));
  for (int k = 0; k <= 4; ++k) {
    const float f = static_cast<float>(k) / 4.0f;
    const float v = scale_value(rg, 1.0f - f);
    const float y = y0 + f * (y1 - y0);
    dl->AddLine(ImVec2(d.x1, y), ImVec2(d.x1 + 5, y), text_col);
    const std::string txt = figure::format_tick(v, (rg.vmax - rg.vmin) / 4.0f, rg.log);
    dl->AddText(ImVec2(d.x1 + 8, y - fh * 0.5f), text_col, txt.c_str());
  }
}

void masked_legend(AppState& s, ImVec2 pos) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fh = ImGui::GetFontSize();
  const ImU32 a = s.settings.dark ? IM_COL32(41, 41, 41, 255) : IM_COL32(199, 199, 199, 255);
  const ImU32 b = s.settings.dark ? IM_COL32(77, 77, 77, 255) : IM_COL32(235, 235, 235, 255);
  const float w = fh * 1.2f;
  dl->AddRectFilled(pos, ImVec2(pos.x + w, pos.y + fh), a);
  for (float k = -fh; k < w; k += 8.0f) {
    dl->PushClipRect(pos, ImVec2(pos.x + w, pos.y + fh), true);
    dl->AddLine(ImVec2(pos.x + k, pos.y + fh), ImVec2(pos.x + k + fh, pos.y), b, 4.0f);
    dl->PopClipRect();
  }
  dl->AddText(ImVec2(pos.x + w + 6, pos.y), ImGui::GetColorU32(ImGuiCol_Text), "masked (future key)");
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
  if (ImGui::ArrowButton("nexthead", ImGuiDir_Right)) s.view.head = std::min(std::max(0, tr.heads - 1), s.view.head + 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Next head  (])");
  ImGui::EndGroup();
  const char* enlarge = s.view.enlarged ? "All heads" : "Enlarge";
  flow(button_w(enlarge));
  if (ImGui::Button(enlarge)) s.view.enlarged = !s.view.enlarged;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Show the selected head large / all heads  (E, or double-click a head)");
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
  if (!signed_stage(s.view.stage)) {
    flow(check_w("log"));
    ImGui::Checkbox("log", &s.settings.log_weights);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("Logarithmic colour scale for weights: with many tokens most weights are tiny (~1/T)");
    }
  }
  flow(fh * 6);
  ImGui::SetNextItemWidth(fh * 6);
  // The preview names the map the heatmaps use: signed scores show in the diverging map
  // whichever one is picked for the weights, unless that is turned off below.
  const Colormap shown =
      color_scale(0.0f, 1.0f, 0.0f, signed_stage(s.view.stage), s.settings.colormap, s.settings.diverging_for_signed, false).cmap;
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
  // Third row: what is shown.
  ImGui::TextUnformatted(std::string(stage_title(s.view.stage)).c_str());
  char info[128];
  std::snprintf(info, sizeof info, "batch item %d,  %d tokens,  %d heads of head_dim %d", s.view.batch, tr.tokens,
                tr.heads, tr.head_dim);
  flow(ImGui::CalcTextSize(info).x + fh);
  ImGui::TextDisabled("  %s", info);
  const std::string note = unchanged_stage_note(s.view.stage, tr.config);
  if (!note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(note.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
    record_widget(s, "stage_note");
  }
}

}  // namespace

// [SECTION] Panel
void draw_heatmaps(AppState& s) {
  refresh(s);  // controls drawn earlier this frame may have changed the input
  sync_textures(s);
  if (!s.compute.have_trace) {
    ImGui::TextWrapped("No attention to show: %s", s.compute.error.c_str());
    return;
  }
  draw_toolbar(s);
  ImGui::Separator();
  const Trace& tr = s.compute.trace;
  const int H = tr.heads;
  const int T = tr.tokens;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float fh = ImGui::GetFontSize();
  const float colorbar_w = fh * 5.0f;
  const float legend_h = fh * 1.6f;
  const float gap = std::floor(fh * 0.9f);
  const float W = avail.x - colorbar_w;
  const float Hh = avail.y - legend_h;
  if (W < 50 || Hh < 50) return;
  const float title_h = std::ceil(fh + ImGui::GetStyle().ItemSpacing.y);

  // Choose the column count that gives the largest heatmaps, with labels if they fit.
  const int shown = s.view.enlarged ? 1 : H;
  int best_c = 1;
  float best_side = 0;
  LabelPlan best_plan;
  float best_score = 0;
  for (int c = 1; c <= shown; ++c) {
    const int r = (shown + c - 1) / c;
    const float tw = (W - gap * static_cast<float>(c - 1)) / static_cast<float>(c);
    const float th = (Hh - gap * static_cast<float>(r - 1)) / static_cast<float>(r) - title_h;
    const float bare = std::min(tw, th);
    LabelPlan lp = plan_labels(s, bare, T);
    if (lp.show) {
      // Margins shrink the heatmap, which may call for rotated labels: settle on margins
      // that fit the size they leave.
      for (int k = 0; k < 4 && lp.show; ++k) {
        const LabelPlan next = plan_labels(s, std::min(tw - lp.left, th - lp.top), T);
        if (!next.show) {
          lp = LabelPlan{};
        } else if (next.left <= lp.left && next.top <= lp.top) {
          break;
        } else {
          lp.left = std::max(lp.left, next.left);
          lp.top = std::max(lp.top, next.top);
          lp.vertical = lp.vertical || next.vertical;
          lp.step = std::max(lp.step, next.step);
        }
      }
    }
    // Two candidates per column count: without labels, and with them (token labels are
    // worth some size, so they win unless they cost much more than a quarter of it).
    const float labelled = lp.show ? std::min(tw - lp.left, th - lp.top) : 0.0f;
    if (bare > best_score) {
      best_score = bare;
      best_side = bare;
      best_c = c;
      best_plan = LabelPlan{};
    }
    // With few tokens the labels are the lesson (which word attends to which): keep them.
    const float label_bonus = T <= 32 ? 2.0f : 1.3f;
    if (lp.show && labelled * label_bonus > best_score) {
      best_score = labelled * label_bonus;
      best_side = labelled;
      best_c = c;
      best_plan = lp;
    }
  }
  // Whole pixels per cell keep every cell the same size.
  float side = best_side;
  if (side >= 4.0f * static_cast<float>(T)) side = std::floor(side / static_cast<float>(T)) * static_cast<float>(T);
  side = std::floor(side);
  const float tile_w = best_plan.left + side;
  const float tile_h = title_h + best_plan.top + side;

  s.ui.cell_layout.clear();
  TileResult hovered;
  int hovered_head = -1;
  for (int k = 0; k < shown; ++k) {
    const int head = s.view.enlarged ? s.view.head : k;
    const int col = k % best_c, row = k / best_c;
    const ImVec2 o(std::floor(origin.x + static_cast<float>(col) * (tile_w + gap)),
                   std::floor(origin.y + static_cast<float>(row) * (tile_h + gap)));
    const TileResult tr_ = draw_tile(s, head, o, side, best_plan);
    if (tr_.hovered_cell) {
      hovered = tr_;
      hovered_head = head;
    }
  }
  const int rows_used = (shown + best_c - 1) / best_c;
  const float grid_h = static_cast<float>(rows_used) * tile_h + static_cast<float>(rows_used - 1) * gap;
  const float grid_w = static_cast<float>(best_c) * tile_w + static_cast<float>(best_c - 1) * gap;
  draw_colorbar(s, ImVec2(origin.x + grid_w + gap, origin.y + title_h), std::min(grid_h - title_h, fh * 18.0f));
  float legend_x = origin.x + best_plan.left;
  if (s.view.stage != Stage::Scores && tr.config.causal) {
    masked_legend(s, ImVec2(legend_x, origin.y + grid_h + fh * 0.3f));
    legend_x += fh * 1.2f + 6.0f + ImGui::CalcTextSize("masked (future key)").x + fh * 1.5f;
  }
  if (s.view.stage == Stage::Dropped && tr.dropout_applied()) {
    char text[96];
    std::snprintf(text, sizeof text, "\xC3\x97 dropped; kept weights x 1/(1 - %.2f)", tr.config.dropout);
    ImGui::GetWindowDrawList()->AddText(ImVec2(legend_x, origin.y + grid_h + fh * 0.3f),
                                        ImGui::GetColorU32(ImGuiCol_Text), text);
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + grid_h + legend_h));
  if (hovered_head >= 0) cell_tooltip(s, hovered_head, hovered.i, hovered.j);
}

}  // namespace mhaviz::gui
