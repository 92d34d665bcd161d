// The model view: the figure of figure/model_figure.cpp (every layer × head of a trained GPT
// as a thumbnail, a detector's scores and top five, the selected head large with its tokens
// and weights), built off the drawing thread (model_view.hpp) and drawn through the canvas,
// the very figure F12 captures. Around it only widgets: a toolbar, tooltips, a click that
// selects a head or closes the large one, Esc.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "app_state.hpp"
#include "figure/interv_figures.hpp"
#include "figure/walk_values.hpp"

namespace mhaviz::gui {
namespace {

bool head_selected(const ModelUi& m) { return m.layer >= 0 && m.head >= 0; }

// The figure's options for a canvas: the screen's typography and theme, the weights' colours.
figure::Options model_options(const AppState& s, ImVec2 canvas) {
  figure::Options o;
  o.canvas = {std::floor(canvas.x), std::floor(canvas.y)};
  o.type = screen_type();
  o.dark = s.settings.dark;
  o.caption = false;
  // Weights are not signed: the diverging map would centre them on nothing.
  o.colormap = s.settings.colormap == Colormap::Diverging ? Colormap::Viridis : s.settings.colormap;
  o.values = s.settings.show_values && !s.opts.hide_cell_values;
  return o;
}

// [SECTION] Toolbar
// SameLine, or a new line where a button labelled `label` would be cut at the window's edge
// (on a 1024 × 768 window with a head selected, Sweep and Logit lens were past it).
void next_button(const char* label) { same_line_or_wrap(button_width(label)); }

// A button that shows `what` in the centre, lit while it does; pressed again: the heads.
void show_button(AppState& s, const char* label, ModelUi::Show what, const char* widget) {
  ModelUi& m = s.gpt;
  next_button(label);
  const bool on = m.show == what;
  if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
  if (ImGui::Button(label)) m.show = on ? ModelUi::Show::Heads : what;
  if (on) ImGui::PopStyleColor();
  record_widget(s, widget);
}

// Sweep (each head ablated alone, on its own thread), its progress and Cancel while it runs,
// and the switches to its grid and to the logit lens table (again: the heads).
void sweep_tools(AppState& s) {
  ModelUi& m = s.gpt;
  next_button(m.sweep_job ? "sweep 100 / 100 heads" : "Sweep");
  if (m.sweep_job) {
    const int done = m.sweep_job->done(), total = std::max(1, m.sweep_job->total());
    char buf[48];
    std::snprintf(buf, sizeof buf,
                  m.sweep_job->per_position() ? "patch %d / %d layers \xC3\x97 positions" : "sweep %d / %d heads", done,
                  total);
    ImGui::ProgressBar(static_cast<float>(done) / static_cast<float>(total), ImVec2(ImGui::GetFontSize() * 10.0f, 0.0f),
                       buf);
    record_widget(s, "model_sweep_progress");
    ImGui::SameLine();
    ImGui::BeginDisabled(m.sweep_job->cancelling());
    if (ImGui::Button("Cancel")) m.sweep_job->cancel();
    ImGui::EndDisabled();
    record_widget(s, "model_sweep_cancel");
  } else {
    // Before a forward has run (the text does not tokenize yet) there is nothing to sweep.
    ImGui::BeginDisabled(!m.result);
    if (ImGui::Button("Sweep")) start_sweep(s);
    record_widget(s, "model_sweep");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "Ablate each head alone (%s) and show the layers \xC3\x97 heads grid of the change in %s",
          m.ablation_mode == AblationMode::Mean ? "replaced by its mean" : "zeroed",
          m.sweep_vs.empty() ? "the target's log-probability" : "the logit difference target \xE2\x88\x92 vs");
    if (!m.corrupt_text.empty()) {
      next_button("Patch");
      if (ImGui::Button("Patch")) start_sweep(s, true);
      record_widget(s, "model_patch");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(m.patch_per == PatchPer::Head
                              ? "Run the corrupted text, patch each head's output (at every position) from this "
                                "text's run into it, and show the layers \xC3\x97 heads grid of how much of the "
                                "target's metric comes back: 1 = fully restored, 0 = no effect"
                              : "Run the corrupted text, patch the residual stream after each layer at each "
                                "position from this text's run into it, and show the layers \xC3\x97 positions grid "
                                "of how much of the target's metric comes back: 1 = fully restored, 0 = no effect");
    }
    ImGui::EndDisabled();
  }
  if (m.sweep)
    show_button(s, m.sweep->patching() ? "Patching grid" : "Sweep grid", ModelUi::Show::Sweep, "model_show_sweep");
  ImGui::BeginDisabled(!m.result);
  show_button(s, "Logit lens", ModelUi::Show::Lens, "model_show_lens");
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "What each layer would predict if the model stopped there: the final norm and the LM head on the residual "
        "after each layer.\nThe table: layers \xC3\x97 positions, the top token and its probability.");
}

void toolbar(AppState& s) {
  ModelUi& m = s.gpt;
  if (ImGui::Button("Capture")) capture(s, CaptureKind::Shown);
  record_widget(s, "model_capture");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Save the model view as shown (F12), as `mhaviz render --view model` draws it");
  // The selected head's buttons with the heads shown (a grid fills the toolbar's line otherwise).
  // (Once a forward is shown: before it, whether its layers can open is not known.)
  const bool heads = m.result && head_selected(m) && m.show == ModelUi::Show::Heads;
  if (heads && layer_walk_reason(m).empty()) {  // the lesson's module: the walkthrough and its captures
    next_button("Open layer in the walkthrough");
    if (ImGui::Button("Open layer in the walkthrough")) open_layer_walkthrough(s, m.layer);
    record_widget(s, "model_view_walk");
    if (ImGui::IsItemHovered()) {
      if (m.result && m.result->loaded.hf)
        ImGui::SetTooltip(
            "Layer %d as the book's GroupedQueryAttention: its input RMSNorm output is X, q_proj, k_proj, v_proj and "
            "o_proj are W_query, W_key, W_value and out_proj, with the layer's QK-norm, RoPE and window",
            m.layer);
      else
        ImGui::SetTooltip(
            "Layer %d as the book's MultiHeadAttention: its LayerNorm output is X, its weights are W_query, W_key, "
            "W_value and out_proj",
            m.layer);
    }
    next_button("Capture head");
    if (ImGui::Button("Capture head")) capture(s, CaptureKind::Head);
    record_widget(s, "model_capture_head");
    next_button("Capture layer");
    if (ImGui::Button("Capture layer")) capture(s, CaptureKind::Grid);
    record_widget(s, "model_capture_layer");
  }
  sweep_tools(s);
  // A forward that takes a while (an edit early in a long text): its progress, the last view
  // still shown and the window still answering.
  const GptWorker::Status st = m.worker->status();
  if (st.computing && st.computing_ms > 100.0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "recomputing %.1f s", st.computing_ms / 1000.0);
    ImGui::SameLine();
    // On the toolbar's line whatever room is left (a line more would move the figure).
    const float w = std::min(ImGui::GetFontSize() * 9.0f, ImGui::GetContentRegionAvail().x);
    const float t = static_cast<float>(std::fmod(st.computing_ms / 1000.0, 1.0));
    if (w >= ImGui::GetFontSize() * 3.0f) {
      ImGui::ProgressBar(t, ImVec2(w, 0.0f), buf);
      record_widget(s, "model_view_computing");
    }
  }
  // What a click does, where there is room for it (nothing before a view: no head to click).
  if (!m.view) return;
  char hint[96];
  if (m.show == ModelUi::Show::Sweep && m.sweep)
    std::snprintf(hint, sizeof hint, "click a cell to show its head large");
  else if (m.show == ModelUi::Show::Lens)
    std::snprintf(hint, sizeof hint, "layers down, positions across: each layer's guess");
  else if (head_selected(m))
    std::snprintf(hint, sizeof hint, "head %d.%d large: click it or Esc to close", m.layer, m.head);
  else
    std::snprintf(hint, sizeof hint, "click a head to show it large");
  ImGui::SameLine();
  if (ImGui::CalcTextSize(hint).x <= ImGui::GetContentRegionAvail().x) {
    ImGui::TextDisabled("%s", hint);
    record_widget(s, "model_view_hint");
  } else
    ImGui::NewLine();
}

// Before the first view: what the worker is doing, or why nothing shows (waiting_line), with
// a load's progress.
void waiting(const AppState& s) {
  const Waiting w = waiting_line(s);
  if (w.error)
    text_error_wrapped(w.text);
  else
    text_words_wrapped(w.text);
  if (const GptWorker::Status st = s.gpt.worker->status(); st.loading) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", st.load_fraction * 100.0);
    ImGui::ProgressBar(static_cast<float>(st.load_fraction), ImVec2(ImGui::GetFontSize() * 20.0f, 0.0f), buf);
  }
}

// [SECTION] Hover and clicks
void thumbnail_tooltip(const ModelViewData& v, int k) {
  const int l = k / v.n_head, h = k % v.n_head;
  ImGui::BeginTooltip();
  ImGui::Text("Head %d.%d (layer %d, head %d)", l, h, l, h);
  if (const int g = v.view.group(); g > 1)
    ImGui::Text("reads K/V head %d, shared with query heads %d to %d", h / g, h / g * g, h / g * g + g - 1);
  if (const int W = v.view.window(l); W > 0) ImGui::Text("sliding window: each query sees its last %d keys", W);
  if (!v.view.scores.empty()) {
    const float score = v.view.scores[static_cast<std::size_t>(k)];
    const std::string name = v.view.pattern;
    const bool top = std::find(v.top.begin(), v.top.end(), k) != v.top.end();
    if (std::isfinite(score))
      ImGui::Text("%s score %.3f%s", name.c_str(), static_cast<double>(score), top ? "  (top five)" : "");
    else
      ImGui::Text("%s: no score (no row qualifies)", name.c_str());
  }
  ImGui::TextDisabled("click: show it large; Ctrl+click: ablate it (again: restore)");
  ImGui::EndTooltip();
}

void big_tooltip(const ModelViewData& v, const figure::HeatmapInfo& h, int i, int j, ModelUi& m,
                 const WideChars& wide) {
  const std::string& q = v.token_strings[static_cast<std::size_t>(i)];
  const std::string& k = v.token_strings[static_cast<std::size_t>(j)];
  char line[160];
  std::snprintf(line, sizeof line, "query %d \xE2\x80\x9C%s\xE2\x80\x9D \xE2\x86\x92 key %d \xE2\x80\x9C%s\xE2\x80\x9D",
                i, q.c_str(), j, k.c_str());
  m.hover_big = line;
  ImGui::BeginTooltip();
  ImGui::Text("Head %d.%d", m.layer, m.head);
  ImGui::TextUnformatted(wide.shown(line).c_str());  // an emoji as the atlas draws it
  const std::size_t at = static_cast<std::size_t>(i) * static_cast<std::size_t>(h.cols) + static_cast<std::size_t>(j);
  if (h.windowed(at))
    ImGui::TextDisabled("masked: the key is outside the sliding window (%d or more tokens back)",
                        v.view.window(m.layer));
  else if (h.hidden(at))
    ImGui::TextDisabled("masked: the key comes after the query");
  else
    ImGui::Text("weight %s", figure::format_value(h.values[at]).c_str());
  ImGui::TextDisabled("click: close it (or Esc)");
  ImGui::EndTooltip();
}

// The figure is one invisible button; what is under the pointer says the rest.
void interact(AppState& s, const ScreenFigure& f, const ModelViewData& v) {
  ModelUi& m = s.gpt;
  ImGui::SetCursorScreenPos(f.origin);
  ImGui::InvisibleButton("model_canvas", ImVec2(std::max(1.0f, static_cast<float>(f.fig.width)),
                                                std::max(1.0f, static_cast<float>(f.fig.height))));
  const bool keys_free = !ImGui::GetIO().WantTextInput && !ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId) &&
                         s.ui.dialog.kind == Dialog::None;
  if (keys_free && head_selected(m) && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false))
    m.layer = m.head = -1;
  if (!ImGui::IsItemHovered() || s.opts.ignore_mouse) return;
  const CellUnder c = cell_under(f, ImGui::GetIO().MousePos);
  const int thumbs = v.n_layer * v.n_head;
  if (c.heatmap < 0) return;
  const figure::HeatmapInfo& h = f.fig.heatmaps[static_cast<std::size_t>(c.heatmap)];
  if (c.heatmap < thumbs) {
    m.hover_k = c.heatmap;
    thumbnail_tooltip(v, c.heatmap);
    const HeadIndex head{c.heatmap / v.n_head, c.heatmap % v.n_head};
    if (ImGui::IsItemClicked() && (ImGui::GetIO().KeyCtrl || ImGui::GetIO().KeyShift))
      toggle_ablation(m, head);
    else if (ImGui::IsItemClicked())
      m.layer = head.layer, m.head = head.head;
    return;
  }
  // The large head: the cell under the pointer outlined, its tokens and weight.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 c0 = to_screen(f, h.x0 + static_cast<float>(c.col) * h.cell, h.y0 + static_cast<float>(c.row) * h.cell);
  if (h.cell >= 4.0f) {
    dl->AddRect(c0, ImVec2(c0.x + h.cell, c0.y + h.cell), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
    dl->AddRect(ImVec2(c0.x - 1, c0.y - 1), ImVec2(c0.x + h.cell + 1, c0.y + h.cell + 1), IM_COL32(0, 0, 0, 255), 0, 0,
                1.0f);
  }
  big_tooltip(v, h, c.row, c.col, m, s.ui.window.wide);
  if (ImGui::IsItemClicked()) m.layer = m.head = -1;
}

// A grid in the centre: one invisible button; the cell under the pointer, or -1s.
CellUnder grid_cell(AppState& s, const ScreenFigure& f) {
  ImGui::SetCursorScreenPos(f.origin);
  ImGui::InvisibleButton("model_grid_canvas", ImVec2(std::max(1.0f, static_cast<float>(f.fig.width)),
                                                     std::max(1.0f, static_cast<float>(f.fig.height))));
  if (!ImGui::IsItemHovered() || s.opts.ignore_mouse) return {};
  const CellUnder c = cell_under(f, ImGui::GetIO().MousePos);
  return c.heatmap == 0 && c.row >= 0 && c.col >= 0 ? c : CellUnder{};
}

// The sweep's or patching's grid: a cell's effect on hover; a click on a head's cell shows that
// head (a layer × position cell is no head).
void interact_sweep(AppState& s, const ScreenFigure& f, const SweepData& d) {
  ModelUi& m = s.gpt;
  const CellUnder c = grid_cell(s, f);
  if (c.heatmap < 0) return;
  m.hover_k = c.row * d.grid.cols + c.col;
  const double value = static_cast<double>(d.grid.at(c.row, c.col));
  const char* metric = d.target.metric.vs < 0 ? "log p" : "logit difference";
  ImGui::BeginTooltip();
  if (d.per_position())
    ImGui::Text(
        "The residual after layer %d at position %d (\xE2\x80\x9C%s\xE2\x80\x9D) patched from this text's run "
        "into the corrupted one",
        c.row, c.col, d.view.col_names[static_cast<std::size_t>(c.col)].c_str());
  else if (d.patching())
    ImGui::Text("Head %d.%d patched from this text's run into the corrupted one", c.row, c.col);
  else
    ImGui::Text("Head %d.%d ablated alone", c.row, c.col);
  if (d.patching())
    ImGui::Text("effect %.4f  (1 = restored; %s clean %.4f, corrupted %.4f)", value, metric, d.grid.clean,
                d.grid.corrupt);
  else
    ImGui::Text("\xCE\x94 %s %+.4f  (clean %.4f)", metric, value, d.grid.clean);
  if (!d.per_position()) ImGui::TextDisabled("click: show this head large");
  ImGui::EndTooltip();
  if (ImGui::IsItemClicked() && !d.per_position()) {
    m.layer = c.row, m.head = c.col;
    m.show = ModelUi::Show::Heads;
  }
}

// The lens table: a cell's layer, position, top token and its probability on hover.
void interact_lens(AppState& s, const ScreenFigure& f, const figure::GridView& g) {
  const CellUnder c = grid_cell(s, f);
  if (c.heatmap < 0) return;
  const std::size_t k =
      static_cast<std::size_t>(c.row) * static_cast<std::size_t>(g.cols) + static_cast<std::size_t>(c.col);
  ImGui::BeginTooltip();
  ImGui::Text("After layer %d, position %d (\xE2\x80\x9C%s\xE2\x80\x9D)", c.row, c.col,
              g.col_names[static_cast<std::size_t>(c.col)].c_str());
  ImGui::Text("top next token \xE2\x80\x9C%s\xE2\x80\x9D  p = %.4g", g.cell_text.empty() ? "" : g.cell_text[k].c_str(),
              static_cast<double>(g.values[k]));
  ImGui::TextDisabled("click: rank the lens token (typed on the left) at this position");
  ImGui::EndTooltip();
  if (ImGui::IsItemClicked()) s.gpt.lens_position = c.col;
}

// The sweep's grid or the lens table in the centre: the figure render --view sweep | lens
// draws for this canvas, rebuilt when the grid or the canvas changes.
void draw_grid(AppState& s, ImVec2 origin) {
  ModelUi& m = s.gpt;
  ScreenFigure& f = s.renderer.model_grid;
  const bool lens = m.show == ModelUi::Show::Lens;
  // The grid stays alive in the rebuild function, so its address names it while it is shown.
  const std::shared_ptr<const figure::GridView> g =
      lens ? m.view->lens : std::shared_ptr<const figure::GridView>(m.sweep, &m.sweep->view);
  f.ensure(m.fig, reinterpret_cast<std::uintptr_t>(g.get()),
           [g](const figure::Options& o) { return figure::build_grid_figure(*g, o); });
  draw_figure(s, f, origin);
  s.renderer.centre = &f;
  if (lens)
    interact_lens(s, f, *g);
  else
    interact_sweep(s, f, *m.sweep);
}

// The tests' and sidecars' record of where the heatmaps are (framebuffer pixels).
void record_cells(AppState& s, const ScreenFigure& f, int thumbs) {
  for (std::size_t k = 0; k < f.fig.heatmaps.size(); ++k) {
    const figure::HeatmapInfo& h = f.fig.heatmaps[k];
    const ImVec2 a = to_screen(f, h.x0, h.y0);
    const CellLayout c{h.head,
                       a.x,
                       a.y,
                       a.x + h.cell * static_cast<float>(h.cols),
                       a.y + h.cell * static_cast<float>(h.rows),
                       h.rows,
                       h.cols,
                       h.scale.vmin,
                       h.scale.vmax,
                       h.scale.cmap,
                       h.scale.log};
    if (static_cast<int>(k) < thumbs)
      s.ui.drawn.model_cells.push_back(c);
    else
      s.ui.drawn.model_big = c;
  }
}

}  // namespace

// The strip below: the tensors the view shows and what the forward cost.
void draw_model_shapes(AppState& s) {
  const ModelUi& m = s.gpt;
  if (!m.result || !m.view) return;
  const ModelViewData& v = *m.view;
  if (m.result->loaded.hf) {
    const ModelFacts& f = m.result->loaded.facts;
    ImGui::TextWrapped(
        "ids (%d) \xE2\x86\x92 embed_tokens (1, %d, %d) \xE2\x86\x92 %d %s blocks: RMSNorm \xE2\x86\x92 q (1, %d, %d, "
        "%d), "
        "k,v (1, %d, %d, %d) \xE2\x86\x92 RoPE \xE2\x86\x92 attn_weights (1, %d, %d, %d) \xE2\x86\x92 ... \xE2\x86\x92 "
        "logits (%d)",
        v.tokens, v.tokens, f.width, f.layers, f.architecture.c_str(), f.heads, v.tokens, f.head_dim, f.kv_heads,
        v.tokens, f.head_dim, f.heads, v.tokens, v.tokens, f.vocab);
    ImGui::TextDisabled("Parameters: %s   last forward %s (rows %d to %d computed)", thousands(f.parameters).c_str(),
                        ms_text(m.result->forward_ms).c_str(), m.result->recomputed_from, v.tokens - 1);
    return;
  }
  const GptConfig& c = m.result->loaded.model->config;
  // Attention-only blocks (mhaviz train --attn-only) have no LayerNorm before q, k, v.
  ImGui::TextWrapped(
      "ids (%d) \xE2\x86\x92 wte[ids] + wpe (1, %d, %d) \xE2\x86\x92 %d %s blocks: %sq,k,v (1, %d, %d, %d) "
      "\xE2\x86\x92 attn_weights (1, %d, %d, %d) \xE2\x86\x92 ... \xE2\x86\x92 logits (%d)",
      v.tokens, v.tokens, c.n_embd, c.n_layer, c.attn_only ? "attention-only" : "transformer",
      c.attn_only ? "" : "LayerNorm \xE2\x86\x92 ", c.n_head, v.tokens, c.head_dim(), c.n_head, v.tokens, v.tokens,
      c.vocab_size);
  ImGui::TextDisabled("Parameters: %s   last forward %s (rows %d to %d computed)",
                      thousands(m.result->loaded.model->parameter_count()).c_str(),
                      ms_text(m.result->forward_ms).c_str(), m.result->recomputed_from, v.tokens - 1);
}

Waiting waiting_line(const AppState& s) {
  const ModelUi& m = s.gpt;
  if (m.view || !m.worker) return {};
  const GptWorker::Status st = m.worker->status();
  if (st.loading) return {"Loading " + st.loading_path.string(), false};
  // A text that does not tokenize, or a first model that did not open, is said in red in the
  // panel beside what caused it (the text box, Open model…); with the panel shown the view
  // says where to look instead of repeating it.
  if (!m.error.empty() && s.view.show_controls && (m.error == m.tokens.error || m.path.empty()))
    return {m.path.empty() ? "Nothing to show: the model did not open. The line in red under Open model..., on the "
                             "left, says why."
                           : "Nothing to show: the text does not tokenize. The line in red under the text box, on "
                             "the left, says why.",
            false};
  if (!m.error.empty()) return {m.error, true};
  return {m.text.empty() ? "Type a text in the box on the left: every layer and head shows here."
                         : "Computing the first forward...",
          false};
}

void draw_model_view(AppState& s) {
  ModelUi& m = s.gpt;
  m.drawn_frame = s.frame;
  m.hover_k = -1;
  m.hover_big.clear();
  toolbar(s);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The next view is laid out for this canvas (poll_model derives it off this thread).
  if (avail.x >= 50 && avail.y >= 50) {
    m.fig = model_options(s, avail);
    m.fig_known = true;
  }
  if (!m.view) {
    waiting(s);
    return;
  }
  if (shown_grid(m)) {
    draw_grid(s, origin);
    return;
  }
  ScreenFigure& f = s.renderer.model;
  draw_figure(s, f, origin);
  s.renderer.centre = &f;
  const ModelViewData& v = *m.view;
  record_cells(s, f, v.n_layer * v.n_head);
  interact(s, f, v);
}

}  // namespace mhaviz::gui
