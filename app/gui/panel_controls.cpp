// Model controls: variant, sizes, heads (only valid choices), dropout, mask, bias, seed, batch.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "app_state.hpp"
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

}  // namespace

void draw_controls(AppState& s) {
  ModelConfig& c = s.doc.session.model;
  const float label_w = ImGui::GetFontSize() * 8.5f;
  ImGui::PushItemWidth(-label_w);

  // [SECTION] Variant
  if (ImGui::BeginCombo("variant", std::string(variant_name(c.variant)).c_str())) {
    for (Variant v : kVariants) {
      if (ImGui::Selectable(std::string(variant_name(v)).c_str(), v == c.variant) && v != c.variant) {
        c = with_variant(c, v);
        s.ui.preferred_heads = c.num_heads;
        mark_model_dirty(s);
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kVariantSwitchNote);
    }
    ImGui::EndCombo();
  }
  record_frame(s, "variant");
  const std::string variant_help =
      "wrapper: a list of single-head modules, each with its own W_query, W_key, W_value projecting to d_out; "
      "outputs concatenated.\nweight_split: one W per Q/K/V of d_out columns, split into num_heads heads of "
      "d_out / num_heads, then out_proj.\nfused_qkv: one Linear producing q, k, v together, chunked per head "
      "(the Transformer tutorial's qkv_layer).\n" + std::string(kVariantSwitchNote);
  help_marker(variant_help.c_str());

  // [SECTION] Sizes
  int d_in = s.doc.session.d_in();
  if (ImGui::SliderInt("d_in", &d_in, 1, 2048, "%d", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp)) {
    set_d_in(s, d_in);
  }
  if (!ImGui::IsItemActive()) s.ui.d_in_stash.clear();
  record_frame(s, "d_in");
  int d_out = c.d_out;
  if (ImGui::SliderInt("d_out", &d_out, 1, 2048, "%d", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp) &&
      d_out != c.d_out) {
    c.d_out = d_out;
    // Keep a valid head count, nearest to the one the user chose (not drifting while dragging).
    if (s.ui.preferred_heads <= 0) s.ui.preferred_heads = c.num_heads;
    c.num_heads = nearest_valid_heads(c, s.ui.preferred_heads);
    mark_model_dirty(s);
  }
  record_frame(s, "d_out");

  const std::vector<int> choices = valid_head_counts(c);
  int idx = 0;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == c.num_heads) idx = static_cast<int>(i);
  }
  const std::string heads_fmt = std::to_string(c.num_heads);
  if (ImGui::SliderInt("num_heads", &idx, 0, static_cast<int>(choices.size()) - 1, heads_fmt.c_str(),
                       ImGuiSliderFlags_AlwaysClamp | ImGuiSliderFlags_NoInput)) {
    const int h = choices[static_cast<std::size_t>(std::clamp(idx, 0, static_cast<int>(choices.size()) - 1))];
    if (h != c.num_heads) {
      c.num_heads = h;
      s.ui.preferred_heads = h;
      mark_model_dirty(s);
    }
  }
  record_frame(s, "num_heads");
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
    mark_model_dirty(s);
  }
  record_frame(s, "dropout");
  int mode = c.training ? 0 : 1;
  ImGui::TextUnformatted("mode");
  ImGui::SameLine(ImGui::GetFontSize() * 4.0f);
  if (ImGui::RadioButton("train", mode == 0)) mode = 0;
  ImGui::SameLine();
  if (ImGui::RadioButton("eval (no dropout)", mode == 1)) mode = 1;
  if ((mode == 0) != c.training) {
    c.training = mode == 0;
    mark_model_dirty(s);
  }
  if (ImGui::Checkbox("causal mask", &c.causal)) mark_model_dirty(s);
  ImGui::SameLine();
  if (ImGui::Checkbox("qkv_bias", &c.qkv_bias)) mark_model_dirty(s);

  // [SECTION] Context, seed, batch
  int ctx = c.context_length;
  if (ImGui::InputInt("context_length", &ctx, 1, 16)) {
    ctx = std::clamp(ctx, 1, Limits::kMaxContext);
    if (ctx != c.context_length) {
      c.context_length = ctx;
      mark_model_dirty(s);
    }
  }
  std::uint64_t seed = c.seed;
  const std::uint64_t seed_step = 1, seed_fast = 100;
  if (ImGui::InputScalar("seed", ImGuiDataType_U64, &seed, &seed_step, &seed_fast, "%llu") && seed != c.seed) {
    c.seed = seed;
    mark_model_dirty(s);
  }
  int batch = s.doc.session.batch;
  if (ImGui::SliderInt("batch", &batch, 1, std::max(8, s.doc.session.batch), "%d", ImGuiSliderFlags_AlwaysClamp) &&
      batch != s.doc.session.batch) {
    s.doc.session.batch = batch;
    mark_input_dirty(s);
  }
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
        mark_model_dirty(s);
      }
    }
  }
}

}  // namespace mhaviz::gui
