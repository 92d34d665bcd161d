// The model view: every layer × head of a trained GPT as a thumbnail (GL textures pooled as
// `mhaviz render --view model` pools them), a detector's scores under them and its top five
// framed; the clicked head large beside them, with query/key tokens and the weight on hover.
// Everything shown comes from ModelViewData (model_view.hpp) and the worker's trace.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app_state.hpp"
#include "figure/walk_values.hpp"

namespace mhaviz::gui {
namespace {

const ImU32 kTopColor = IM_COL32(230, 85, 13, 255);       // the figure's accent
const ImU32 kSelectedColor = IM_COL32(0, 114, 178, 255);  // the figure's selected frame

void frame_rect(ImDrawList* dl, float x0, float y0, float x1, float y1, ImU32 c) {
  dl->AddRect(ImVec2(x0 - 2, y0 - 2), ImVec2(x1 + 2, y1 + 2), c, 0.0f, 0, 2.0f);
}

HeatmapDraw quad(const ColorScale& sc, unsigned tex, float x0, float y0, float side, int n, bool dark) {
  HeatmapDraw d;
  if (!dark) d.hatch_a = {199, 199, 199, 255}, d.hatch_b = {235, 235, 235, 255}, d.gap_color = {245, 245, 245, 255};
  d.tex = tex;
  d.x0 = x0, d.y0 = y0, d.x1 = x0 + side, d.y1 = y0 + side;
  d.vmin = sc.vmin, d.vmax = sc.vmax, d.colormap = sc.cmap, d.log_scale = sc.log;
  d.cols = d.rows = n;
  d.gap = side / static_cast<float>(n) >= 12.0f ? 1.0f : 0.0f;
  return d;
}

// [SECTION] The grid of thumbnails
void draw_grid(AppState& s, const ModelViewData& v, ImVec2 origin, ImVec2 size) {
  ModelUi& m = s.model;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fh = ImGui::GetFontSize();
  const int L = v.n_layer, H = v.n_head;
  const bool scored = !v.scores.empty();
  const float left = ImGui::CalcTextSize("L00").x + 8.0f, top = fh + 4.0f;
  const float gap = 6.0f, below = scored ? fh + 2.0f : 0.0f;
  const float side = std::floor(std::max(8.0f, std::min((size.x - left) / static_cast<float>(H) - gap,
                                                        (size.y - top) / static_cast<float>(L) - gap - below)));
  m.thumb_side_px = static_cast<int>(side);
  const float gx = origin.x + left, gy = origin.y + top;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int h = 0; h < H; ++h) {
    const std::string lab = "H" + std::to_string(h);
    const float w = ImGui::CalcTextSize(lab.c_str()).x;
    if (w < side + gap)
      dl->AddText(ImVec2(gx + static_cast<float>(h) * (side + gap) + (side - w) * 0.5f, origin.y), text, lab.c_str());
  }
  m.hover_k = -1;
  for (int l = 0; l < L; ++l) {
    const float ty = gy + static_cast<float>(l) * (side + gap + below);
    const std::string lab = "L" + std::to_string(l);
    dl->AddText(ImVec2(origin.x, ty + (side - fh) * 0.5f), text, lab.c_str());
    for (int h = 0; h < H; ++h) {
      const int k = l * H + h;
      const float tx = gx + static_cast<float>(h) * (side + gap);
      const auto& tex = s.renderer.model_thumbs[static_cast<std::size_t>(k)];
      draw_heatmap_quad(s, quad(v.thumbs.scale, tex.tex, tx, ty, side, v.thumbs.n, s.settings.dark));
      s.ui.model_cells.push_back({k, tx, ty, tx + side, ty + side, v.thumbs.n, v.thumbs.n, v.thumbs.scale.vmin,
                                  v.thumbs.scale.vmax, v.thumbs.scale.cmap, v.thumbs.scale.log});
      ImGui::SetCursorScreenPos(ImVec2(tx, ty));
      ImGui::PushID(k);
      if (ImGui::InvisibleButton("thumb", ImVec2(side, side))) {
        m.layer = l;
        m.head = h;
      }
      ImGui::PopID();
      record_widget(s, ("thumb_" + std::to_string(l) + "_" + std::to_string(h)).c_str());
      const bool top5 = std::find(v.top.begin(), v.top.end(), k) != v.top.end();
      if (l == m.layer && h == m.head)
        frame_rect(dl, tx, ty, tx + side, ty + side, kSelectedColor);
      else if (top5)
        frame_rect(dl, tx, ty, tx + side, ty + side, kTopColor);
      const float score = scored ? v.scores[static_cast<std::size_t>(k)] : 0.0f;
      if (scored) {
        // "0.83" as the capture prints it; ".83" where the thumbnail is narrower (hover tells all).
        char buf[16];
        if (std::isfinite(score))
          std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(score));
        else
          std::snprintf(buf, sizeof buf, "\xE2\x80\x93");
        const char* shown = buf;
        if (ImGui::CalcTextSize(shown).x > side - 2.0f && buf[0] == '0') shown = buf + 1;
        const float w = ImGui::CalcTextSize(shown).x;
        if (w <= side - 2.0f)
          dl->AddText(ImVec2(tx + (side - w) * 0.5f, ty + side + 1.0f), top5 ? kTopColor : dim, shown);
      }
      if (ImGui::IsItemHovered()) {
        m.hover_k = k;
        ImGui::BeginTooltip();
        ImGui::Text("Head %d.%d (layer %d, head %d)", l, h, l, h);
        if (scored) {
          const std::string name(head_pattern_name(kHeadPatterns[v.key.pattern]));
          if (std::isfinite(score))
            ImGui::Text("%s score %.3f%s", name.c_str(), static_cast<double>(score), top5 ? "  (top five)" : "");
          else
            ImGui::Text("%s: no score (no row qualifies)", name.c_str());
        }
        ImGui::TextDisabled("click: show it large");
        ImGui::EndTooltip();
      }
    }
  }
}

// [SECTION] The selected head, large
void draw_big(AppState& s, const ModelViewData& v, ImVec2 origin, ImVec2 size) {
  ModelUi& m = s.model;
  const int T = v.tokens;
  const float fh = ImGui::GetFontSize();
  ImGui::SetCursorScreenPos(origin);
  ImGui::BeginGroup();  // new lines start at origin.x, not at the window's left
  ImGui::Text("Head %d.%d", m.layer, m.head);
  ImGui::SameLine();
  ImGui::TextDisabled("rows: queries, columns: keys");
  if (ImGui::Button("Open layer in the walkthrough")) open_layer_walkthrough(s, m.layer);
  record_widget(s, "model_view_walk");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Layer %d as the book's MultiHeadAttention: its LayerNorm output is X, its weights are "
        "W_query, W_key, W_value and out_proj",
        m.layer);
  // The buttons wrap within this half of the panel.
  const auto next_fits = [&](const char* label) {
    const float w = ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.0f;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= origin.x + size.x) ImGui::SameLine();
  };
  next_fits("Capture head");
  if (ImGui::Button("Capture head")) capture(s, CaptureKind::Head);
  next_fits("Capture layer");
  if (ImGui::Button("Capture layer")) capture(s, CaptureKind::Grid);
  ImGui::EndGroup();
  const float label_w = std::min(ImGui::CalcTextSize("abcdefgh").x, size.x * 0.2f) + 6.0f;
  // Key labels above the columns when a cell is as tall as a line (then also wide enough
  // for short tokens); longer ones are left to the hover.
  const float y_top = ImGui::GetCursorScreenPos().y + 4.0f;
  const bool labels = std::min(size.x - label_w, origin.y + size.y - y_top) / static_cast<float>(T) >= fh + 2.0f;
  const float y0 = y_top + (labels ? fh + 4.0f : 0.0f);
  const float side = std::floor(std::max(16.0f, std::min(size.x - label_w, origin.y + size.y - y0)));
  const float x0 = origin.x + label_w;
  const ColorScale& sc = v.thumbs.scale;
  draw_heatmap_quad(s, quad(sc, s.renderer.model_big.tex, x0, y0, side, T, s.settings.dark));
  const int k = m.layer * v.n_head + m.head;
  s.ui.model_big = {k, x0, y0, x0 + side, y0 + side, T, T, sc.vmin, sc.vmax, sc.cmap, sc.log};
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float cell = side / static_cast<float>(T);
  if (labels && cell >= fh) {
    for (int i = 0; i < T; ++i) {
      const std::string& t = v.token_strings[static_cast<std::size_t>(i)];
      const ImVec2 sz = ImGui::CalcTextSize(t.c_str());
      if (sz.x <= label_w - 4.0f)
        dl->AddText(ImVec2(x0 - 4.0f - sz.x, y0 + (static_cast<float>(i) + 0.5f) * cell - sz.y * 0.5f),
                    ImGui::GetColorU32(ImGuiCol_Text), t.c_str());
      if (sz.x <= cell - 2.0f)
        dl->AddText(ImVec2(x0 + (static_cast<float>(i) + 0.5f) * cell - sz.x * 0.5f, y0 - 2.0f - sz.y),
                    ImGui::GetColorU32(ImGuiCol_Text), t.c_str());
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(x0, y0));
  ImGui::InvisibleButton("big", ImVec2(side, side));
  record_widget(s, "model_big");
  if (!ImGui::IsItemHovered()) return;
  const ImVec2 mp = ImGui::GetIO().MousePos;
  const int i = std::clamp(static_cast<int>((mp.y - y0) / cell), 0, T - 1);
  const int j = std::clamp(static_cast<int>((mp.x - x0) / cell), 0, T - 1);
  const auto& w = s.renderer.model_big.values;
  ImGui::BeginTooltip();
  ImGui::Text("Head %d.%d", m.layer, m.head);
  ImGui::Text("query %d \xE2\x80\x9C%s\xE2\x80\x9D \xE2\x86\x92 key %d \xE2\x80\x9C%s\xE2\x80\x9D", i,
              v.token_strings[static_cast<std::size_t>(i)].c_str(), j,
              v.token_strings[static_cast<std::size_t>(j)].c_str());
  if (j > i)
    ImGui::TextDisabled("masked: the key comes after the query");
  else if (static_cast<int>(w.size()) == T * T)
    ImGui::Text("weight %s", figure::format_value(w[static_cast<std::size_t>(i * T + j)]).c_str());
  ImGui::EndTooltip();
}

}  // namespace

// The strip below: the tensors the view shows and what the forward cost.
void draw_model_shapes(AppState& s) {
  const ModelUi& m = s.model;
  if (!m.result || !m.view) return;
  const GptConfig& c = m.result->loaded.model->config;
  const ModelViewData& v = *m.view;
  ImGui::Text(
      "ids (%d) \xE2\x86\x92 wte[ids] + wpe (1, %d, %d) \xE2\x86\x92 %d blocks: LayerNorm \xE2\x86\x92 q,k,v (1, %d, "
      "%d, %d) "
      "\xE2\x86\x92 attn_weights (1, %d, %d, %d) \xE2\x86\x92 ... \xE2\x86\x92 logits (%d)",
      v.tokens, v.tokens, c.n_embd, c.n_layer, c.n_head, v.tokens, c.head_dim(), c.n_head, v.tokens, v.tokens,
      c.vocab_size);
  ImGui::TextDisabled("Parameters: %s   last forward %s (rows %d to %d computed)",
                      thousands(m.result->loaded.model->parameter_count()).c_str(), ms_text(m.result->forward_ms).c_str(),
                      m.result->recomputed_from, v.tokens - 1);
}

void draw_model_view(AppState& s) {
  ModelUi& m = s.model;
  if (!m.view) {
    const char* what = !m.error.empty() ? m.error.c_str()
                       : m.text.empty() ? "Type a text in the box on the left: every layer and head shows here."
                                        : "Computing the first forward...";
    ImGui::TextWrapped("%s", what);
    return;
  }
  const ModelViewData& v = *m.view;
  sync_model_textures(s);
  const float fh = ImGui::GetFontSize();
  if (ImGui::Button("Capture")) capture(s, CaptureKind::Shown);
  record_widget(s, "model_capture");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Save the model view as `mhaviz render --view model` draws it (F12)");
  ImGui::SameLine();
  const std::string excerpt =
      m.probe ? "a random sequence repeated twice"
              : "\xE2\x80\x9C" + (m.text.size() > 48 ? m.text.substr(0, 48) + "\xE2\x80\xA6" : m.text) + "\xE2\x80\x9D";
  ImGui::Text("Every layer \xC3\x97 head on %s", excerpt.c_str());
  ImGui::TextDisabled("%d tokens \xC2\xB7 each thumbnail: queries down, keys across%s \xC2\xB7 click one", v.tokens,
                      v.thumbs.f > 1 ? ", each pixel the largest weight of its block" : "");
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool big = m.layer >= 0 && m.layer < v.n_layer && m.head >= 0 && m.head < v.n_head;
  const float grid_w = big ? std::floor(avail.x * 0.5f) : avail.x;
  draw_grid(s, v, o, ImVec2(grid_w, avail.y));
  s.ui.model_big = CellLayout{};
  if (big) draw_big(s, v, ImVec2(o.x + grid_w + fh, o.y), ImVec2(avail.x - grid_w - fh, avail.y));
}

}  // namespace mhaviz::gui
