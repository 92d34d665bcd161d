// Model controls: variant, sizes, heads (only valid choices), dropout, mask, bias, seed, batch.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "app_state.hpp"
#include "slider_steps.hpp"
#include "variant_edit.hpp"

namespace mhaviz::gui {
namespace {

// The RoPE bases offered: a small one turns the rotation visibly within a lesson's few
// positions; 10,000 is the original transformer's and Llama 2's, 500,000 Llama 3's, 1,000,000 Qwen3's.
constexpr double kRopeBases[] = {10.0, 100.0, 10000.0, 500000.0, 1000000.0};

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
    if (ImGui::IsItemDeactivated() || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false))
      ui.edit.typing_slider.clear();
    return false;
  }
  const bool ctrl_click = ImGui::GetIO().KeyCtrl && ImGui::IsMouseClicked(0);
  int idx = nearest_step(steps, value);
  const std::string shown = std::to_string(value);
  const bool moved = ImGui::SliderInt(label, &idx, 0, static_cast<int>(steps.size()) - 1, shown.c_str(),
                                      ImGuiSliderFlags_AlwaysClamp | ImGuiSliderFlags_NoInput);
  if (ImGui::IsItemHovered() && !ImGui::IsItemActive())
    ImGui::SetTooltip("Drag for the next size; Ctrl+click to type one");
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

// A size edit: the bonus variants' fields follow (gqa's K/V heads stay a divisor, RoPE goes
// off with an odd head_dim) and the status bar says what moved.
void fit_and_mark(AppState& s, ModelConfig& c, const std::string& label, const char* where) {
  const std::string said = fit_variant_fields(c);
  if (mark_model_dirty(s, label, where) && !said.empty()) notify(s, said);
}

std::string base_name(double base) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", base);
  return buf;
}

// [SECTION] The bonus variants' options: gqa's K/V heads, mla's latent, and the window,
// QK-norm and RoPE of the split variants; each offers only what the session can hold.
void draw_variant_options(AppState& s, ModelConfig& c) {
  if (c.variant == Variant::Gqa) {
    int g = c.num_kv_groups;
    if (step_slider(s, "K/V heads", g, kv_head_choices(c)) && g != c.num_kv_groups) {
      c.num_kv_groups = g;
      mark_model_dirty(s, "change K/V heads", "kv_heads");
    }
    record_frame(s, "kv_heads");
    help_marker(
        "How many heads of keys and values W_key and W_value project to (num_kv_groups in the book's "
        "GroupedQueryAttention; its memory estimator calls the group size n_kv_groups instead). Each K/V head "
        "serves a group of query heads through repeat_interleave: 1 is multi-query attention, num_heads is "
        "ordinary multi-head attention.");
    draw_refusal(s, "kv_heads");
    const int per = c.num_kv_groups > 0 ? c.num_heads / c.num_kv_groups : 0;
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("query heads per K/V head = %d%s", per,
                        c.num_kv_groups == 1 ? " (multi-query)"
                        : per == 1           ? " (as multi-head)"
                                             : "");
    ImGui::PopTextWrapPos();
  }
  if (c.variant == Variant::Mla) {
    int latent = c.latent_dim;
    if (step_slider(s, "latent_dim", latent, size_steps(c.latent_dim, Limits::kMaxDim)) && latent != c.latent_dim) {
      c.latent_dim = latent;
      mark_model_dirty(s, "change latent_dim", "latent_dim");
    }
    record_frame(s, "latent_dim");
    help_marker(
        "W_DKV projects each token to latent_dim values, all that MLA's KV cache keeps; W_UK and W_UV bring "
        "the keys and values back up to d_out. The book's default is max(16, d_out // 8).");
    draw_refusal(s, "latent_dim");
  }
  if (!is_split(c.variant)) return;
  // One line while none is set (the chapter-3 lessons keep their room for the token table);
  // open, and held open, while one is.
  const bool set = c.sliding_window > 0 || c.qk_norm || c.rope_base != 0.0;
  if (set) ImGui::SetNextItemOpen(true, ImGuiCond_Always);
  const bool open = ImGui::TreeNodeEx("sliding window, QK-norm, RoPE", ImGuiTreeNodeFlags_NoTreePushOnOpen);
  record_widget(s, "variant_options");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The options of the book's bonus material on every split variant (%s)",
                      set ? "some are on: the section stays open" : "all off");
  if (!open) return;
  const int T = std::max(1, s.doc.session.num_tokens());
  int window = c.sliding_window;
  ImGui::BeginDisabled(!c.causal);
  const std::string shown = window == 0 ? "off" : std::to_string(window);
  if (ImGui::SliderInt("sliding window", &window, 0, std::max(T, window), shown.c_str(),
                       ImGuiSliderFlags_AlwaysClamp) &&
      window != c.sliding_window) {
    c.sliding_window = window;
    mark_model_dirty(s, window == 0 ? "turn the sliding window off" : "change the sliding window", "window");
  }
  ImGui::EndDisabled();
  record_frame(s, "window");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(c.causal ? "Key j is visible to query i only when 0 <= i - j < W (MultiHeadAttentionWithSWA): "
                                 "each query sees its W most recent tokens, itself included. 0: off."
                               : "The window looks back from each query: turn the causal mask on first.");
  draw_refusal(s, "window");

  if (ImGui::Checkbox("QK-norm", &c.qk_norm))
    mark_model_dirty(s, c.qk_norm ? "turn QK-norm on" : "turn QK-norm off", "qk_norm");
  record_widget(s, "qk_norm");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "RMSNorm over head_dim (eps 1e-6, scale starting at ones) on each head's queries and keys, "
        "before RoPE, as Qwen3's q_norm and k_norm: scores stay in a range whatever the inputs' size.");
  const int hd = c.num_heads > 0 ? c.d_out / c.num_heads : 0;
  const bool rope_fits = c.variant != Variant::Mla && hd % 2 == 0;
  bool rope = c.rope_base != 0.0;
  ImGui::SameLine();
  ImGui::BeginDisabled(!rope_fits);
  if (ImGui::Checkbox("RoPE", &rope)) {
    c.rope_base = rope ? 10000.0 : 0.0;
    c.rope_inv_freq.clear();  // a model's scaled frequencies belong to its base
    mark_model_dirty(s, rope ? "turn RoPE on" : "turn RoPE off", "rope");
  }
  ImGui::EndDisabled();
  record_widget(s, "rope");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s",
                      c.variant == Variant::Mla
                          ? "mla here has no RoPE: real MLA models rotate a separate, decoupled part of each key, "
                            "which this lesson does not model."
                      : !rope_fits ? "RoPE rotates pairs of values: it needs an even head_dim."
                                   : "Rotary position embedding: each pair (i, i + head_dim/2) of q and k turned by "
                                     "position x 1/base^(2i/head_dim), so q.k depends on how far apart they are.");
  if (rope) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    if (ImGui::BeginCombo("base", base_name(c.rope_base).c_str())) {
      for (double b : kRopeBases)
        if (ImGui::Selectable(base_name(b).c_str(), b == c.rope_base) && b != c.rope_base) {
          c.rope_base = b;
          c.rope_inv_freq.clear();
          mark_model_dirty(s, "change the RoPE base", "rope");
        }
      ImGui::EndCombo();
    }
    record_widget(s, "rope_base");
  }
  draw_refusal(s, "qk_norm");
  draw_refusal(s, "rope");
}

// [SECTION] Variant: the combo, what a switch keeps, the help.
void variant_combo(AppState& s, ModelConfig& c) {
  if (ImGui::BeginCombo("variant", std::string(variant_name(c.variant)).c_str())) {
    for (Variant v : kAllVariants) {
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
    if (ImGui::RadioButton("d_out, as the book compares them", s.settings.variant_keeps_d_out))
      s.settings.variant_keeps_d_out = true;
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
      "(the Transformer tutorial's qkv_layer).\ngqa: grouped-query attention (the book's ch04/04_gqa): fewer heads "
      "of keys and values, each shared by a group of query heads.\nmla: multi-head latent attention (ch04/05_mla): "
      "keys and values up-projected from one small latent per token.\n" +
      std::string(kVariantSwitchNote);
  help_marker(variant_help.c_str());
  draw_refusal(s, "variant");
}

// [SECTION] Sizes: d_in, d_out, num_heads and what they give, the variant's options.
void size_sliders(AppState& s, ModelConfig& c) {
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
    fit_and_mark(s, c, "change d_out", "d_out");
  }
  record_frame(s, "d_out");
  draw_refusal(s, "d_out");

  const std::vector<int> choices = valid_head_counts(c);
  int heads = c.num_heads;
  if (step_slider(s, "num_heads", heads, choices) && heads != c.num_heads) {
    c.num_heads = heads;
    const std::string said = fit_variant_fields(c);
    if (mark_model_dirty(s, "change num_heads", "num_heads")) {
      s.ui.edit.preferred_heads = heads;
      if (!said.empty()) notify(s, said);
    }
  }
  record_frame(s, "num_heads");
  draw_refusal(s, "num_heads");
  ImGui::PushTextWrapPos(0.0f);
  if (c.variant == Variant::Wrapper) {
    ImGui::TextDisabled("wrapper: every head has its own d_out = %d columns", c.d_out);
  } else {
    ImGui::TextDisabled("head_dim = d_out / num_heads = %d", c.num_heads > 0 ? c.d_out / c.num_heads : 0);
    ImGui::TextDisabled("Only divisors of d_out = %d split evenly into heads: %s", c.d_out, join(choices, 9).c_str());
  }
  ImGui::PopTextWrapPos();
  draw_variant_options(s, c);
}

// [SECTION] Dropout, train or eval mode, the causal mask and qkv_bias.
void dropout_and_mask(AppState& s, ModelConfig& c) {
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
  // Beside "train" where it fits, else under it (a narrow panel with a large font cut it).
  same_line_or_wrap(labelled_width(ImGui::GetFrameHeight(), "eval (no dropout)"));
  ImGui::SetCursorPosX(std::max(ImGui::GetCursorPosX(), ImGui::GetFontSize() * 4.0f));
  if (ImGui::RadioButton("eval (no dropout)", mode == 1)) mode = 1;
  if ((mode == 0) != c.training) {
    c.training = mode == 0;
    mark_model_dirty(s, c.training ? "switch to train mode" : "switch to eval mode", "mode");
  }
  if (ImGui::Checkbox("causal mask", &c.causal)) {
    if (!c.causal) c.sliding_window = 0;  // the window looks back from each query: it needs the mask
    mark_model_dirty(s, c.causal ? "turn the causal mask on" : "turn the causal mask off", "mode");
  }
  record_widget(s, "causal");
  ImGui::SameLine();
  if (ImGui::Checkbox("qkv_bias", &c.qkv_bias))
    mark_model_dirty(s, c.qkv_bias ? "turn qkv_bias on" : "turn qkv_bias off", "mode");
  draw_refusal(s, "mode");
}

// [SECTION] Context, seed, batch.
void context_seed_batch(AppState& s, ModelConfig& c) {
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
}

// The forward's error, with the fix for a text longer than context_length.
void compute_error(AppState& s, ModelConfig& c) {
  if (s.compute.error.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
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

}  // namespace

void draw_controls(AppState& s) {
  ModelConfig& c = s.doc.session.model;
  ImGui::PushItemWidth(-ImGui::GetFontSize() * 8.5f);  // the labels' column
  variant_combo(s, c);
  size_sliders(s, c);
  dropout_and_mask(s, c);
  context_seed_batch(s, c);
  ImGui::PopItemWidth();
  compute_error(s, c);
}

}  // namespace mhaviz::gui
