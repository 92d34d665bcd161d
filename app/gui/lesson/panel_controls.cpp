// Model controls: variant, sizes, heads (only valid choices), dropout, mask, bias, seed, batch.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "app_state.hpp"
#include "slider_steps.hpp"
#include "variant_edit.hpp"

namespace mhaviz::gui {
namespace {

constexpr Variant kVariants[] = {Variant::Wrapper, Variant::WeightSplit, Variant::FusedQkv};

void help_marker(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

std::string join(const std::vector<int>& v, std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < max_items; ++i) {
    if (i) out += ", ";
    out += std::to_string(v[i]);
  }
  if (v.size() > max_items) out += ", ...";
  return out;
}

// A slider over `steps` (the value shown, not the index), or, after Ctrl+click on it, a
// field to type any value (Enter applies, Escape or leaving cancels). True when `value`
// was changed; the caller's edit validates it like any other.
bool step_slider(AppState& s, const char* label, int& value, const std::vector<int>& steps) {
  Ui& ui = s.ui;
  if (ui.edit.typing_slider == label) {
    if (ui.edit.typing_focus) ImGui::SetKeyboardFocusHere();
    ui.edit.typing_focus = false;
    const std::string id = std::string(label) + "##typed";
    const bool enter = ImGui::InputInt(id.c_str(), &ui.edit.typing_value, 0, 0, ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::IsItemHovered() || ImGui::IsItemActive()) ImGui::SetTooltip("Type a value, then Enter (Escape cancels)");
    if (enter) {
      ui.edit.typing_slider.clear();
      value = ui.edit.typing_value;
      return true;
    }
    if (ImGui::IsItemDeactivated() || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) ui.edit.typing_slider.clear();
    return false;
  }
  const bool ctrl_click = ImGui::GetIO().KeyCtrl && ImGui::IsMouseClicked(0);
  int idx = nearest_step(steps, value);
  const std::string shown = std::to_string(value);
  const bool moved = ImGui::SliderInt(label, &idx, 0, static_cast<int>(steps.size()) - 1, shown.c_str(),
                                      ImGuiSliderFlags_AlwaysClamp | ImGuiSliderFlags_NoInput);
  if (ImGui::IsItemHovered() && !ImGui::IsItemActive()) ImGui::SetTooltip("Drag for the next size; Ctrl+click to type one");
  if (ctrl_click && ImGui::IsItemHovered()) {
    ui.edit.typing_slider = label;
    ui.edit.typing_value = value;
    ui.edit.typing_focus = true;
    return false;
  }
  if (!moved) return false;
  const int v = steps[static_cast<std::size_t>(std::clamp(idx, 0, static_cast<int>(steps.size()) - 1))];
  if (v == value) return false;
  value = v;
  return true;
}

}  // namespace

void draw_controls(AppState& s) {
  ModelConfig& c = s.doc.session.model;
  const float label_w = ImGui::GetFontSize() * 8.5f;
  ImGui::PushItemWidth(-label_w);

  // [SECTION] Variant
  if (ImGui::BeginCombo("variant", std::string(variant_name(c.variant)).c_str())) {
    for (Variant v : kVariants) {
      if (ImGui::Selectable(std::string(variant_name(v)).c_str(), v == c.variant) && v != c.variant) {
        c = with_variant(c, v, s.settings.variant_keeps_d_out ? VariantKeeps::DOut : VariantKeeps::HeadDim);
        s.ui.edit.preferred_heads = c.num_heads;
        mark_model_dirty(s, "switch to " + std::string(variant_name(v)), "variant");
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kVariantSwitchNote);
    }
    // What a switch keeps: the same heads, or the book's comparison at one d_out.
    ImGui::Separator();
    ImGui::TextDisabled("switching keeps");
    if (ImGui::RadioButton("num_heads and head_dim (the same heads)", !s.settings.variant_keeps_d_out))
      s.settings.variant_keeps_d_out = false;
    if (ImGui::RadioButton("d_out, as the book compares them", s.settings.variant_keeps_d_out)) s.settings.variant_keeps_d_out = true;
    record_widget(s, "keep_d_out");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "The wrapper's heads each give d_out columns; weight_split divides d_out among its heads\n"
          "(MultiHeadAttention(d_out=2, num_heads=2): heads of head_dim 1, as in the book)");
    ImGui::EndCombo();
  }
  record_frame(s, "variant");
  const std::string variant_help =
      "wrapper: a list of single-head modules, each with its own W_query, W_key, W_value projecting to d_out; "
      "outputs concatenated.\nweight_split: one W per Q/K/V of d_out columns, split into num_heads heads of "
      "d_out / num_heads, then out_proj.\nfused_qkv: one Linear producing q, k, v together, chunked per head "
      "(the Transformer tutorial's qkv_layer).\n" + std::string(kVariantSwitchNote);
  help_marker(variant_help.c_str());
  draw_refusal(s, "variant");


  // [SECTION] Sizes
  int d_in = s.doc.session.d_in();
  if (step_slider(s, "d_in", d_in, size_steps(d_in, Limits::kMaxDim))) set_d_in(s, d_in);
  if (!ImGui::IsItemActive()) s.ui.edit.d_in_stash.clear();
  record_frame(s, "d_in");
  draw_refusal(s, "d_in");
  int d_out = c.d_out;
  if (step_slider(s, "d_out", d_out, size_steps(c.d_out, Limits::kMaxDim)) && d_out != c.d_out) {
    c.d_out = d_out;
    // Keep a valid head count, nearest to the one the user chose (not drifting while dragging).
    if (s.ui.edit.preferred_heads <= 0) s.ui.edit.preferred_heads = c.num_heads;
    c.num_heads = nearest_valid_heads(c, s.ui.edit.preferred_heads);
    mark_model_dirty(s, "change d_out", "d_out");
  }
  record_frame(s, "d_out");
  draw_refusal(s, "d_out");

  const std::vector<int> choices = valid_head_counts(c);
  int heads = c.num_heads;
  if (step_slider(s, "num_heads", heads, choices) && heads != c.num_heads) {
    c.num_heads = heads;
    if (mark_model_dirty(s, "change num_heads", "num_heads")) s.ui.edit.preferred_heads = heads;
  }
  record_frame(s, "num_heads");
  draw_refusal(s, "num_heads");
  if (c.variant == Variant::Wrapper) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("wrapper: every head has its own d_out = %d columns", c.d_out);
    ImGui::PopTextWrapPos();
  } else {
    ImGui::TextDisabled("head_dim = d_out / num_heads = %d", c.num_heads > 0 ? c.d_out / c.num_heads : 0);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("Only divisors of d_out = %d split evenly into heads: %s", c.d_out, join(choices, 9).c_str());
    ImGui::PopTextWrapPos();
  }

  // [SECTION] Dropout and mask
  float p = static_cast<float>(c.dropout);
  if (ImGui::SliderFloat("dropout", &p, 0.0f, 0.9f, "%.2f", ImGuiSliderFlags_AlwaysClamp)) {
    c.dropout = static_cast<double>(p);
    mark_model_dirty(s, "change dropout", "dropout");
  }
  record_frame(s, "dropout");
  draw_refusal(s, "dropout");
  int mode = c.training ? 0 : 1;
  ImGui::TextUnformatted("mode");
  ImGui::SameLine(ImGui::GetFontSize() * 4.0f);
  if (ImGui::RadioButton("train", mode == 0)) mode = 0;
  ImGui::SameLine();
  if (ImGui::RadioButton("eval (no dropout)", mode == 1)) mode = 1;
  if ((mode == 0) != c.training) {
    c.training = mode == 0;
    mark_model_dirty(s, c.training ? "switch to train mode" : "switch to eval mode", "mode");
  }
  if (ImGui::Checkbox("causal mask", &c.causal)) mark_model_dirty(s, c.causal ? "turn the causal mask on" : "turn the causal mask off", "mode");
  ImGui::SameLine();
  if (ImGui::Checkbox("qkv_bias", &c.qkv_bias)) mark_model_dirty(s, c.qkv_bias ? "turn qkv_bias on" : "turn qkv_bias off", "mode");
  draw_refusal(s, "mode");

  // [SECTION] Context, seed, batch
  int ctx = c.context_length;
  if (ImGui::InputInt("context_length", &ctx, 1, 16)) {
    ctx = std::clamp(ctx, 1, Limits::kMaxContext);
    if (ctx != c.context_length) {
      c.context_length = ctx;
      mark_model_dirty(s, "change context_length", "context_length");
    }
  }
  draw_refusal(s, "context_length");
  std::uint64_t seed = c.seed;
  const std::uint64_t seed_step = 1, seed_fast = 100;
  if (ImGui::InputScalar("seed", ImGuiDataType_U64, &seed, &seed_step, &seed_fast, "%llu") && seed != c.seed) {
    c.seed = seed;
    mark_model_dirty(s, "change seed", "seed");
  }
  draw_refusal(s, "seed");
  int batch = s.doc.session.batch;
  if (ImGui::SliderInt("batch", &batch, 1, std::max(8, s.doc.session.batch), "%d", ImGuiSliderFlags_AlwaysClamp) &&
      batch != s.doc.session.batch) {
    s.doc.session.batch = batch;
    mark_input_dirty(s, "change batch", "batch");
  }
  draw_refusal(s, "batch");
  ImGui::PopItemWidth();

  if (!s.compute.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.35f, 1.0f));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(s.compute.error.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
    const int T = s.doc.session.num_tokens();
    if (T > c.context_length) {
      if (ImGui::Button("Set context_length to the token count")) {
        c.context_length = T;
        mark_model_dirty(s, "change context_length", "context_length");
      }
    }
  }
}

}  // namespace mhaviz::gui
