// The KV cache view's centre: a toolbar (the prefill's P, the step buttons and keys) above
// the figure of figure/kv_figure.cpp drawn through the canvas, the very figure F12 captures
// and `mhaviz render --view kv-step` draws. The decode itself is the core's (kv_cache.hpp).
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app_state.hpp"
#include "figure/kv_figure.hpp"
#include "figure/kv_memory_figure.hpp"
#include "mhaviz/kv_memory.hpp"

namespace mhaviz::gui {
namespace {

// The decode of the current trace from kv.prefill rows, made when either changed. A decoder
// runs without dropout: a session in training mode is decoded in eval mode, and the toolbar
// says so; one the cache cannot decode (no causal mask) leaves the reason in kv.error.
void update_decode(AppState& s) {
  KvUi& kv = s.kv;
  const int T = s.compute.trace.tokens;
  kv.prefill = std::clamp(kv.prefill, 1, std::max(1, T));
  if (kv.decoded_generation == s.compute.generation && kv.decoded_prefill == kv.prefill) return;
  kv.decoded_generation = s.compute.generation;
  kv.decoded_prefill = kv.prefill;
  kv.error.clear();
  kv.note.clear();
  kv.decode.reset();
  ++kv.data;
  const ModelConfig& c = s.compute.model.config;
  try {
    if (c.training && c.dropout > 0.0) {
      Model eval = s.compute.model;
      eval.config.training = false;
      kv.note = "dropout off: a decoder runs in eval mode";
      kv.decode = decode_with_cache(eval, s.compute.trace.input, kv.prefill);
    } else {
      kv.decode = decode_with_cache(s.compute.model, s.compute.trace.input, kv.prefill);
    }
  } catch (const SessionError& e) {
    kv.error = e.what();
  }
  if (kv.decode) kv.step = std::clamp(kv.step, 0, static_cast<int>(kv.decode->steps.size()) - 1);
}

void go_to(KvUi& kv, int step) {
  const int last = kv.decode ? static_cast<int>(kv.decode->steps.size()) - 1 : 0;
  const int to = std::clamp(step, 0, last);
  if (to != kv.step) ++kv.data;
  kv.step = to;
}

void handle_keys(AppState& s) {
  const ImGuiIO& io = ImGui::GetIO();
  if (s.ui.dialog.kind != Dialog::None || io.WantTextInput || io.KeyCtrl) return;
  // GLFW key codes index KeysDown in the 1.86 GLFW backend.
  KvUi& kv = s.kv;
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT, false)) go_to(kv, kv.step + 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT, false)) go_to(kv, kv.step - 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_HOME, false)) go_to(kv, 0);
  if (ImGui::IsKeyPressed(GLFW_KEY_END, false)) go_to(kv, 1 << 30);
}

void button(AppState& s, const char* label, const char* id, const char* tip, int to) {
  same_line_or_wrap(button_width(label));  // a large font on 1024 × 768 cut "End >|" at the edge
  if (ImGui::Button(label)) go_to(s.kv, to);
  record_widget(s, id);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
  ImGui::SameLine();
}

// The memory plot's model: a preset, or the lesson's module as one layer in float32 (what the
// lesson's cache holds) to its context_length.
KvModel memory_model(const AppState& s) {
  if (s.kv.preset >= 0) return kv_presets()[static_cast<std::size_t>(s.kv.preset)];
  KvModel m = kv_model_of(s.doc.session);
  m.name = "this lesson (one layer)";
  m.dtype = "fp32";
  m.dtype_bytes = 4;
  return m;
}

// Step by step, or the memory plot (with its model).
void mode_row(AppState& s) {
  KvUi& kv = s.kv;
  if (ImGui::RadioButton("cache step by step", !kv.memory)) kv.memory = false, ++kv.data;
  record_widget(s, "kv_steps");
  ImGui::SameLine();
  if (ImGui::RadioButton("memory against context", kv.memory)) kv.memory = true, ++kv.data;
  record_widget(s, "kv_memory");
  if (!kv.memory) return;
  same_line_or_wrap(labelled_width(ImGui::GetFontSize() * 12.0f, "model"));
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12.0f);
  const auto& presets = kv_presets();
  const std::string shown = kv.preset < 0 ? "this lesson" : presets[static_cast<std::size_t>(kv.preset)].name;
  if (ImGui::BeginCombo("model", shown.c_str())) {
    for (int i = -1; i < static_cast<int>(presets.size()); ++i) {
      const std::string name = i < 0 ? "this lesson" : presets[static_cast<std::size_t>(i)].name;
      if (ImGui::Selectable(name.c_str(), i == kv.preset) && i != kv.preset) kv.preset = i, ++kv.data;
    }
    ImGui::EndCombo();
  }
  record_widget(s, "kv_model");
}

void kv_toolbar(AppState& s) {
  KvUi& kv = s.kv;
  const int T = s.compute.trace.tokens;
  const float width = ImGui::GetFontSize() * 9.0f;
  ImGui::SetNextItemWidth(width);
  if (ImGui::SliderInt("prefill P", &kv.prefill, 1, std::max(1, T), "%d rows", ImGuiSliderFlags_AlwaysClamp))
    kv.step = 0;
  // The slider without its label: where a click falls is its value.
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  s.hooks.widgets["kv_prefill"] = {a.x, a.y, a.x + width, b.y};
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Rows decoded at once (the prompt); the others are decoded one at a time through the cache");
  ImGui::SameLine();
  const int last = kv.decode ? static_cast<int>(kv.decode->steps.size()) - 1 : 0;
  button(s, "|< Prefill", "kv_first", "The prefill (Home)", 0);
  button(s, "< Back", "kv_back", "The step before (\xE2\x86\x90)", kv.step - 1);
  button(s, "Step >", "kv_next", "Decode the next row (\xE2\x86\x92)", kv.step + 1);
  button(s, "End >|", "kv_last", "The last row decoded (End)", last);
  if (kv.decode) {
    const CacheStep& st = kv.decode->steps[static_cast<std::size_t>(kv.step)];
    char line[96];
    std::snprintf(line, sizeof line, "step %d of %d \xC2\xB7 %s bytes cached", kv.step, last,
                  thousands(st.bytes).c_str());
    same_line_or_wrap(ImGui::CalcTextSize(line).x);  // after the buttons' SameLine: the same line
    ImGui::TextUnformatted(line);
  } else {
    ImGui::NewLine();
  }
  if (!kv.note.empty()) {
    const std::string note = "(" + kv.note + ")";
    same_line_or_wrap(ImGui::CalcTextSize(note.c_str()).x);
    ImGui::TextDisabled("%s", note.c_str());
  }
}

}  // namespace

void draw_kv_view(AppState& s) {
  refresh(s);
  if (!s.compute.have_trace) {
    ImGui::TextWrapped("No trace: %s", s.compute.error.c_str());
    return;
  }
  update_decode(s);
  KvUi& kv = s.kv;
  mode_row(s);
  if (!kv.memory) {
    handle_keys(s);
    kv_toolbar(s);
  }
  if (!kv.decode && !kv.memory) {
    ImGui::TextColored(kErrorText, "%s", kv.error.c_str());
    record_widget(s, "kv_error");
    return;
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  figure::Options o = figure_options(s, figure::View::Grid, ImVec2(std::max(avail.x, 50.0f), std::max(avail.y, 50.0f)));
  o.colormap =
      s.settings.colormap == Colormap::Diverging ? Colormap::Viridis : s.settings.colormap;  // weights are >= 0
  o.batch = std::clamp(s.view.batch, 0, s.compute.trace.batch - 1);
  ScreenFigure& f = s.renderer.kv;
  if (kv.memory) {
    // The lesson's module follows its edits: the document's revision is part of the data.
    f.stem =
        "kv-memory-" + (kv.preset < 0 ? std::string("lesson") : kv_presets()[static_cast<std::size_t>(kv.preset)].name);
    f.ensure(o, kv.data + (s.doc.revision << 20),
             [&s](const figure::Options& opts) { return figure::build_kv_memory_figure(memory_model(s), opts); });
  } else {
    f.stem = "kv-step" + std::to_string(kv.step);
    f.ensure(o, kv.data, [&s](const figure::Options& opts) {
      return figure::build_kv_step_figure(*s.kv.decode, s.compute.tokens, s.kv.step, opts);
    });
  }
  // Taller than the canvas where the canvas is too short for readable cells (kv_figure.cpp's
  // min_cell): it scrolls, the toolbar above it stays.
  const bool scroll = begin_figure_scroll(f, "kv_scroll", avail);
  draw_figure(s, f, scroll ? ImGui::GetCursorScreenPos() : origin);
  if (scroll) end_figure_scroll(f);
  s.renderer.centre = &f;
}

}  // namespace mhaviz::gui
