// The trained model's side panel: which model (File → Open model…, recent models, loading
// progress with Cancel), the text box tokenized as you type, the head detector, the selected
// head, and the next-token predictions. It draws what model_view.hpp computed.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "text_fields.hpp"

namespace mhaviz::gui {

std::string ms_text(double ms) {
  if (ms < 0) return "not timed";
  char buf[32];
  std::snprintf(buf, sizeof buf,
                ms < 0.1   ? "%.1f \xC2\xB5s"
                : ms < 1.0 ? "%.3f ms"
                           : "%.2f ms",
                ms < 0.1 ? ms * 1000.0 : ms);
  return buf;
}
namespace {

void error_line(const std::string& e) {
  if (!e.empty()) text_error_wrapped(e);
}

// Small buttons flowing over lines as wide as the panel. Returns the one clicked, or -1.
int flow_chips(const std::vector<std::string>& chips) {
  const float right = ImGui::GetContentRegionAvail().x + ImGui::GetCursorScreenPos().x;
  int clicked = -1;
  for (std::size_t i = 0; i < chips.size(); ++i) {
    const float w = ImGui::CalcTextSize(chips[i].c_str()).x + ImGui::GetStyle().FramePadding.x * 2.0f;
    if (i > 0) {
      ImGui::SameLine(0.0f, 3.0f);
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::SmallButton(chips[i].c_str())) clicked = static_cast<int>(i);
    ImGui::PopID();
  }
  return clicked;
}

// A context a config leaves open (1 << 30, model_facts) is not printed.
std::string context_text(const ModelFacts& f) {
  return f.context < (1 << 30) ? ", context " + std::to_string(f.context) : std::string();
}

// [SECTION] Which model, loading
void draw_source(AppState& s, const GptWorker::Status& st) {
  ModelUi& m = s.gpt;
  if (m.path.empty()) {
    ImGui::TextWrapped(
        "No model open. A Hugging Face GPT-2 folder or the book's GPTModel (model.safetensors + "
        "config.json + the tokenizer files), or a Qwen3, Qwen2, Llama or Gemma 3 folder (config.json, "
        "model.safetensors or its shards, tokenizer.json).");
  } else {
    text_path_wrapped(m.path);
    // Before a forward succeeds too, so that the panel still says what was opened.
    if (const std::optional<ModelFacts> f = shown_facts(m)) text_dim_wrapped(facts_line(*f));
  }
  if (ImGui::Button("Open model...")) {
    m.open_dialog = m.open_dialog_just_opened = true;
    m.open_edit = m.path;
  }
  record_widget(s, "model_open");
  if (st.loading) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "loading %.0f%%", st.load_fraction * 100.0);
    ImGui::ProgressBar(static_cast<float>(st.load_fraction), ImVec2(-ImGui::GetFontSize() * 5.0f, 0.0f), buf);
    record_widget(s, "model_progress");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) m.worker->cancel_open();
    record_widget(s, "model_cancel");
    ImGui::TextDisabled("%s", st.loading_path.string().c_str());
  }
}

// [SECTION] Text, tokens
void draw_text(AppState& s, const GptWorker::Status& st) {
  ModelUi& m = s.gpt;
  ImGui::TextDisabled("Text (tokenized as you type)");
  ImGui::SetNextItemWidth(-1.0f);
  if (input_text_multiline(s, "##model_text", m.text, ImVec2(-1.0f, ImGui::GetTextLineHeight() * 3.2f)))
    set_model_text(s, m.text);
  record_widget(s, "model_text");
  const auto loaded = m.worker ? m.worker->loaded() : std::nullopt;
  if (loaded && loaded->facts.hf) {
    // tokenizer.json's template (Llama 3.1's <|begin_of_text|>, Gemma 3's <bos>); a switch only
    // where it puts some token around the text (Qwen's and ids without a tokenizer put none).
    if (const Tokenizer& tok = *loaded->tokenizer; !tok.special_prefix().empty() || !tok.special_suffix().empty()) {
      bool special = !m.no_special;
      if (ImGui::Checkbox("Special tokens as the tokenizer adds them", &special)) {
        m.no_special = !special;
        set_model_text(s, m.text);
      }
      record_widget(s, "model_special");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "The tokens tokenizer.json's template puts around a text, as Hugging Face's tokenizers add them: "
            "<|begin_of_text|> (Llama 3.1, 3.2), <bos> (Gemma 3).");
    }
  } else if (!loaded || loaded->tokenizer->eot_id() >= 0 || m.prepend_eot) {
    // Not offered where the vocabulary has no <|endoftext|> (a folder without vocab.json, a
    // synthetic task's model): it could only put an error under the text. Still drawn while it
    // is on (--prepend-eot, or a model opened after one that had it), so that it can be cleared.
    if (ImGui::Checkbox("<|endoftext|> first", &m.prepend_eot)) set_model_text(s, m.text);
    record_widget(s, "model_eot");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "Many heads park attention on the first token (the attention sink); TransformerLens puts "
          "<|endoftext|> there so that a real word is not the sink.");
  }
  if (!loaded) return;
  // The tokens as the model's tokenizer splits them, cached on the text (the tokenizer is thread-safe).
  if (m.tokens_tok != loaded->tokenizer.get() || m.tokens_text != m.text || m.tokens_eot != m.prepend_eot ||
      m.tokens_no_special != m.no_special) {
    m.tokens = tokenize_for_display(*loaded->tokenizer, m.text, prompt_options(m), loaded->facts.context);
    m.tokens_tok = loaded->tokenizer.get();
    m.tokens_text = m.text;
    m.tokens_eot = m.prepend_eot;
    m.tokens_no_special = m.no_special;
  }
  if (m.induction_probe && m.view) {
    ImGui::TextWrapped("Showing the induction probe: %d random tokens, then the same again.", (m.view->tokens - 1) / 2);
  } else {
    ImGui::Text("%zu tokens%s", m.tokens.tokens.size(),
                (loaded->facts.context < (1 << 30) ? " (" + context_text(loaded->facts).substr(2) + ")" : "").c_str());
    // Chips: each token in a frame, the leading space shown as a visible mark.
    const std::size_t shown = std::min<std::size_t>(m.tokens.tokens.size(), 200);
    std::vector<std::string> chips;  // an emoji as the atlas draws it (wide_chars.hpp)
    for (std::size_t i = 0; i < shown; ++i) chips.push_back(s.ui.window.wide.to_field(m.tokens.tokens[i]));
    flow_chips(chips);
    if (shown < m.tokens.tokens.size()) ImGui::TextDisabled("... %zu more", m.tokens.tokens.size() - shown);
  }
  error_line(m.tokens.error.empty() ? m.error : m.tokens.error);
  if (st.computing && st.computing_ms > 100.0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "forward: %.0f ms", st.computing_ms);
    // A forward's length is not known ahead: the bar sweeps while it runs.
    const float t = static_cast<float>(std::fmod(st.computing_ms / 1000.0, 1.0));
    ImGui::ProgressBar(t, ImVec2(-1.0f, 0.0f), buf);
    record_widget(s, "model_computing");
  } else if (m.result) {
    ImGui::TextDisabled("forward %s (from row %d)", ms_text(m.result->forward_ms).c_str(), m.result->recomputed_from);
  }
}

// "+1.20 pp" / "-0.031 pp": a change of probability in percentage points.
std::string change_text(float dp) {
  char buf[32];
  const double pp = static_cast<double>(dp) * 100.0;
  std::snprintf(buf, sizeof buf, std::fabs(pp) >= 0.1 ? "%+.2f pp" : "%+.2g pp", pp);
  return buf;
}

// [SECTION] Interventions: ablated heads, the sweep's target, norm-weighted attention
// A one-line field `width` wide (-1: the panel's), its hint inside while empty, the test
// hooks' name (widget) and a tooltip.
void text_field(AppState& s, std::string& value, float width, const char* hint, const char* widget,
                const char* tooltip) {
  ImGui::SetNextItemWidth(width);
  input_text_with_hint(s, (std::string("##") + widget).c_str(), hint, value);
  record_widget(s, widget);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tooltip);
}

void draw_sweep_target(AppState& s) {
  ModelUi& m = s.gpt;
  const float w = ImGui::GetFontSize() * 5.0f;
  text_field(s, m.sweep_target, w, "last token", "model_sweep_target",
             "The token the sweep judges at the last position, e.g. \" Mary\" (the leading space is part of it).\n"
             "Empty: the text's own last token, judged from the position before it.");
  ImGui::SameLine();
  ImGui::TextUnformatted("vs");
  ImGui::SameLine();
  text_field(s, m.sweep_vs, w, "none", "model_sweep_vs",
             "A second token: the sweep then judges the logit difference target \xE2\x88\x92 vs (e.g. \" John\").");
  ImGui::SameLine();
  ImGui::TextDisabled("sweep target");
  text_field(s, m.corrupt_text, -1.0f, "corrupted text (patching)", "model_corrupt_text",
             "A text of as many tokens as the text above, e.g. the same with two names swapped: \"Patch\" then "
             "asks which heads carry what the difference changes.");
  if (m.corrupt_text.empty()) return;
  int per = m.patch_per == PatchPer::LayerPosition ? 1 : 0;
  ImGui::TextDisabled("patch");
  ImGui::SameLine();
  if (ImGui::RadioButton("each head", &per, 0)) m.patch_per = PatchPer::Head;
  record_widget(s, "model_patch_per_head");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Each head's output (its context, at every position): the layers \xC3\x97 heads grid.");
  ImGui::SameLine();
  if (ImGui::RadioButton("layer \xC3\x97 position", &per, 1)) m.patch_per = PatchPer::LayerPosition;
  record_widget(s, "model_patch_per_position");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "The residual stream after each layer at one position: the layers \xC3\x97 positions grid, where the "
        "information the difference changes sits, layer by layer.");
}

// With the lens table shown: the token it ranks after each layer (one token, as the sweep's
// target is typed) at the position clicked in the table.
void draw_lens_token(AppState& s) {
  ModelUi& m = s.gpt;
  if (m.show != ModelUi::Show::Lens || !m.result) return;
  text_field(s, m.lens_token, ImGui::GetFontSize() * 5.0f, "token", "model_lens_token",
             "A token (e.g. \" Mary\", the leading space part of it): its rank and probability after each layer, "
             "beside the lens table, at the position clicked in the table (the last by default).");
  ImGui::SameLine();
  ImGui::TextDisabled("lens: rank of a token");
  if (m.lens_token.empty()) return;
  std::string error;
  typed_token(*m.result->loaded.tokenizer, m.lens_token, "lens token", error);
  error_line(error);
  if (error.empty() && m.view && m.view->lens_position >= 0)
    ImGui::TextDisabled("at position %d (click a column for another)", m.view->lens_position);
}

void draw_interventions(AppState& s) {
  ModelUi& m = s.gpt;
  ImGui::Checkbox("Norm-weighted attention", &m.norm_weighted);
  record_widget(s, "model_norm_weighted");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Each weight \xCE\xB1 times the length of what that key sends: its value vector after this head's part of "
        "the output projection, \xE2\x80\x96"
        "f(x)\xE2\x80\x96 (Kobayashi et al. 2020).\nA head parking its weight "
        "on a first token whose value is near zero (the attention sink) then shows where its output really comes "
        "from.");
  draw_sweep_target(s);
  draw_lens_token(s);
  if (m.ablate.empty()) {
    ImGui::TextDisabled("Ctrl+click a head: ablate it");
    return;
  }
  std::string heads;
  for (const HeadIndex& h : m.ablate)
    heads += (heads.empty() ? "" : ", ") + std::to_string(h.layer) + "." + std::to_string(h.head);
  ImGui::TextWrapped("Ablated: %s", heads.c_str());
  int mode = m.ablation_mode == AblationMode::Mean ? 1 : 0;
  if (ImGui::RadioButton("zero", &mode, 0)) m.ablation_mode = AblationMode::Zero;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The head's output (its context, before the output projection) set to 0.");
  ImGui::SameLine();
  if (ImGui::RadioButton("mean", &mode, 1)) m.ablation_mode = AblationMode::Mean;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The head's output replaced at every position by its mean over the positions of this text.");
  ImGui::SameLine();
  if (ImGui::SmallButton("Restore all")) m.ablate.clear();
  record_widget(s, "model_restore");
  // The clean run's on a line of its own where both do not fit (a random model's losses of
  // tens of nats put the pair past the panel's edge at 1280 × 800).
  if (m.view && m.view->has_ablation() && std::isfinite(m.view->loss)) {
    char clean[64];
    std::snprintf(clean, sizeof clean, "(clean %.4f, %+.4f)", m.view->clean_loss, m.view->loss - m.view->clean_loss);
    ImGui::Text("loss on the text %.4f", m.view->loss);
    same_line_or_wrap(ImGui::CalcTextSize(clean).x);
    ImGui::TextUnformatted(clean);
  }
}

// [SECTION] Detector, next token
void draw_detector(AppState& s) {
  ModelUi& m = s.gpt;
  const char* current = m.pattern < 0 ? "none" : head_pattern_name(kHeadPatterns[m.pattern]).data();
  // Its label kept whole on a narrow panel (a 1024 × 768 window at 24 px cut it to "Head det").
  ImGui::SetNextItemWidth(
      std::min(ImGui::GetFontSize() * 11.0f, ImGui::GetContentRegionAvail().x - labelled_width(0.0f, "Head detector")));
  if (ImGui::BeginCombo("Head detector", current)) {
    if (ImGui::Selectable("none", m.pattern < 0)) m.pattern = -1;
    for (int i = 0; i < kHeadPatternCount; ++i) {
      if (ImGui::Selectable(head_pattern_name(kHeadPatterns[i]).data(), m.pattern == i)) m.pattern = i;
    }
    ImGui::EndCombo();
  }
  record_widget(s, "model_detector");
  if (ImGui::Button("Build the induction sequence")) run_induction_probe(s);
  record_widget(s, "model_probe");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Random tokens, then the same tokens again: an induction head looks at the token that "
        "followed the current one last time.");
  if (m.view && !m.view->top.empty()) {
    ImGui::TextUnformatted("Top five:");
    std::vector<std::string> chips;
    for (const int k : m.view->top) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%s  %.2f", head_label(k, m.view->n_head).c_str(),
                    static_cast<double>(m.view->view.scores[static_cast<std::size_t>(k)]));
      chips.push_back(buf);
    }
    // A chip selects its head.
    const int clicked = flow_chips(chips);
    if (clicked >= 0) {
      m.layer = m.view->top[static_cast<std::size_t>(clicked)] / m.view->n_head;
      m.head = m.view->top[static_cast<std::size_t>(clicked)] % m.view->n_head;
    }
  }
}

void draw_next_token(AppState& s) {
  ModelUi& m = s.gpt;
  if (!m.view || m.view->tokens == 0) return;
  const ModelViewData& v = *m.view;
  int pos = v.position;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8.0f);
  if (ImGui::SliderInt("position", &pos, 0, v.tokens - 1)) m.position = pos == v.tokens - 1 ? -1 : pos;
  record_widget(s, "model_position");
  ImGui::SameLine();
  ImGui::TextDisabled("after \xE2\x80\x9C%s\xE2\x80\x9D",
                      s.ui.window.wide.to_field(v.token_strings[static_cast<std::size_t>(v.position)]).c_str());
  if (ImGui::BeginTable("next", 2)) {
    ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 6.0f);
    ImGui::TableSetupColumn("p", ImGuiTableColumnFlags_WidthStretch);
    for (std::size_t i = 0; i < v.next.size(); ++i) {
      const NextRow& r = v.next[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(s.ui.window.wide.to_field(r.token).c_str());
      ImGui::TableNextColumn();
      // With heads ablated, the change from the clean run in percentage points beside.
      const std::string shown =
          v.has_ablation() ? v.next_shown[i] + "  (" + change_text(r.p - r.clean_p) + ")" : v.next_shown[i];
      ImGui::ProgressBar(r.p, ImVec2(-1.0f, 0.0f), shown.c_str());
      record_widget(s, ("model_next_" + std::to_string(i)).c_str());
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("p = %.6g  (softmax of the logits at position %d)\nlog p = %.4f  (natural log)%s",
                          static_cast<double>(r.p), v.position, r.logp,
                          v.has_ablation() ? ("\nclean run: p = " + std::to_string(r.clean_p)).c_str() : "");
    }
    ImGui::EndTable();
  }
}

}  // namespace

std::string facts_line(const ModelFacts& c) {
  std::string line =
      c.architecture + ": " + std::to_string(c.layers) + " layers \xC3\x97 " + std::to_string(c.heads) + " heads";
  if (c.kv_heads < c.heads) line += " sharing " + std::to_string(c.kv_heads) + " K/V heads";
  if (c.sliding_layers() > 0)
    line += ", " + std::to_string(c.sliding_layers()) + " sliding (W = " + std::to_string(c.sliding_window()) + ")";
  return line + ", " + std::to_string(c.width) + " wide" + context_text(c) + ", vocabulary " + std::to_string(c.vocab);
}

void draw_model_panel(AppState& s) {
  ModelUi& m = s.gpt;
  const GptWorker::Status st = m.worker ? m.worker->status() : GptWorker::Status{};
  draw_source(s, st);
  if (!m.worker) return;
  if (m.path.empty()) error_line(m.error);  // the first model failed to load
  ImGui::Separator();
  draw_text(s, st);
  if (!m.view) return;
  ImGui::Separator();
  draw_detector(s);
  ImGui::Separator();
  draw_interventions(s);
  if (m.layer >= 0) {
    ImGui::Separator();
    ImGui::Text("Head %d.%d", m.layer, m.head);
    if (const std::string why = layer_walk_reason(m); why.empty()) {
      if (ImGui::Button("Open layer in the walkthrough")) open_layer_walkthrough(s, m.layer);
      record_widget(s, "model_walk");
    } else {  // where the button would be: why the lesson cannot show this model's layers exactly
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::TextWrapped("Open layer in the walkthrough: %s", why.c_str());
      ImGui::PopStyleColor();
      record_widget(s, "model_walk_refused");
    }
  }
  ImGui::Separator();
  ImGui::TextUnformatted("Next token");
  draw_next_token(s);
}

// [SECTION] File → Open model…
void draw_model_open_dialog(AppState& s) {
  ModelUi& m = s.gpt;
  if (!m.open_dialog) return;
  const char* name = "Open model";
  if (m.open_dialog_just_opened) ImGui::OpenPopup(name);
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopupModal(name, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    if (!m.open_dialog_just_opened) m.open_dialog = false;
    m.open_dialog_just_opened = false;
    return;
  }
  ImGui::TextUnformatted("A model folder, or its .safetensors file:");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30.0f);
  if (m.open_dialog_just_opened) ImGui::SetKeyboardFocusHere();
  const bool enter = input_text(s, "##model_path", m.open_edit, ImGuiInputTextFlags_EnterReturnsTrue);
  record_widget(s, "model_path");
  bool open_now = false;
  if (!s.settings.recent_models.empty()) {
    ImGui::TextDisabled("Recent models:");
    for (std::size_t i = 0; i < s.settings.recent_models.size(); ++i) {
      const std::string& p = s.settings.recent_models[i];
      // A click fills the field (the popup stays); a double click opens it.
      if (ImGui::Selectable(p.c_str(), m.open_edit == p,
                            ImGuiSelectableFlags_DontClosePopups | ImGuiSelectableFlags_AllowDoubleClick)) {
        m.open_edit = p;
        if (ImGui::IsMouseDoubleClicked(0)) open_now = true;
      }
      record_widget(s, ("model_recent_" + std::to_string(i)).c_str());
    }
  }
  bool close = false;
  if (ImGui::Button("Open") || enter || open_now) {
    open_model(s, m.open_edit);
    close = true;
  }
  record_widget(s, "model_path_open");
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) close = true;
  if (close) {
    m.open_dialog = false;
    ImGui::CloseCurrentPopup();
  }
  m.open_dialog_just_opened = false;
  ImGui::EndPopup();
}

}  // namespace mhaviz::gui
