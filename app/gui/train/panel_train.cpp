// The Train view's left panel: the next run's settings as valid choices only, Start / Pause /
// Step / Reset, where the checkpoint is, the scrubber over the probe's snapshots, the
// ablation of the selected head, "Open in model view"; and the actions behind them.
//
// Index
//   [SECTION] Choices
//   [SECTION] Actions
//   [SECTION] The panel
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "app_state.hpp"
#include "text_fields.hpp"

namespace mhaviz::gui {
namespace fs = std::filesystem;
namespace {

// [SECTION] Choices
// What each control offers. Every combination the panel can make passes validate_settings:
// d_model only as multiples of the heads, contexts only those the induction task can fill
// with its 64 tokens.
constexpr int kVocab = 64;
// The worker's nice value: under load the window's frames go first and the training takes the
// rest of the CPU (measured: README, "The Train view").
constexpr int kTrainNice = 10;
const int kHeads[] = {1, 2, 4, 8};
const int kWidths[] = {16, 32, 48, 64, 96, 128};
const int kContexts[] = {16, 24, 32, 48, 64};
const int kBatches[] = {8, 16, 32, 64, 128};
const double kRates[] = {1e-3, 3e-3, 1e-2, 2e-2, 3e-2};
const double kDecays[] = {0.0, 0.01, 0.1, 0.3};
const int kSteps[] = {100, 250, 500, 1000, 1500, 2000, 3000, 5000};

bool context_fits(const TrainUi& t, int T) {
  return t.task != 0 || (T >= train::kInductionMinContext && train::induction_min_vocab(T) <= kVocab);
}

template <class V, std::size_t N>
bool combo(AppState& s, const char* label, const char* id, V& value, const V (&choices)[N], const char* fmt,
           bool (*allowed)(const TrainUi&, V) = nullptr) {
  char shown[32];
  std::snprintf(shown, sizeof shown, fmt, value);
  bool changed = false;
  if (ImGui::BeginCombo(label, shown)) {
    for (const V v : choices) {
      if (allowed && !allowed(s.train, v)) continue;
      char item[32];
      std::snprintf(item, sizeof item, fmt, v);
      if (ImGui::Selectable(item, v == value)) value = v, changed = true;
    }
    ImGui::EndCombo();
  }
  record_widget(s, id);
  return changed;
}

bool width_fits(const TrainUi& t, int d) { return d % t.heads == 0; }
bool context_allowed(const TrainUi& t, int T) { return context_fits(t, T); }

constexpr train::TaskKind kTasks[] = {train::TaskKind::Induction, train::TaskKind::Copy, train::TaskKind::Text};

std::string tokenizer_of(const TrainUi& t) { return t.gpt2_tokens ? t.tokenizer_dir : std::string(); }

train::TrainSettings settings_of(const TrainUi& t) {
  train::TrainSettings s;
  s.task = kTasks[t.task];
  if (s.task == train::TaskKind::Text) {
    s.text_path = fs::absolute(t.text_path).string();
    s.tokenizer_path = tokenizer_of(t).empty() ? std::string() : fs::absolute(tokenizer_of(t)).string();
  }
  s.model.n_layers = t.layers;
  s.model.n_heads = t.heads;
  s.model.emb_dim = t.d_model;
  s.model.context_length = t.context;
  s.model.vocab_size = kVocab;
  s.model.attn_only = t.attn_only;
  s.batch = t.batch;
  s.lr = t.lr;
  s.weight_decay = t.weight_decay;
  s.seed = static_cast<std::uint64_t>(t.seed);
  return s;
}

// [SECTION] Actions
// A new folder for the run under the app's state folder: runs/TASK-YYYYMMDD-HHMMSS[-N].
fs::path new_run_folder(const AppState& s) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  const fs::path base =
      fs::path(s.paths.state_dir) / "runs" / (std::string(train::task_name(kTasks[s.train.task])) + "-" + stamp);
  fs::path p = base;
  for (int n = 2; fs::exists(p); ++n) p = base.string() + "-" + std::to_string(n);
  return p;
}

}  // namespace

bool make_train_run(AppState& s) {
  TrainUi& t = s.train;
  if (t.worker) return true;
  try {
    TrainWorker::Plan plan;
    plan.settings = settings_of(t);
    plan.steps = std::max<std::int64_t>(t.steps, t.until);
    const fs::path dir = new_run_folder(s);
    fs::create_directories(dir);
    plan.model_file = dir / "model.safetensors";
    plan.pause_at = t.until;
    plan.nice = kTrainNice;
    plan.alone = true;
    t.worker = std::make_unique<TrainWorker>(std::move(plan));
    t.error.clear();
    t.scrub = -1;
    t.seen = 0;
  } catch (const std::exception& e) {
    t.error = e.what();
    notify(s, "Training not started: " + t.error, true);
    return false;
  }
  return true;
}

void poll_train(AppState& s) {
  TrainUi& t = s.train;
  if (!t.worker) {
    if (t.snap) t.snap.reset(), ++t.data;
    return;
  }
  if (t.worker->generation() != t.seen) {
    t.seen = t.worker->generation();
    t.snap = t.worker->snapshot();
    ++t.data;
  }
}

bool train_busy(const AppState& s) { return s.train.worker && s.train.worker->busy(); }

bool train_can_start(const TrainUi& t) {
  const bool running = t.snap && t.snap->running;
  const bool done = t.snap && t.snap->step >= t.snap->target;
  // A text run waits for a file that passes its check (the reason is shown above Start).
  const bool no_text = !t.worker && kTasks[t.task] == train::TaskKind::Text && !t.text.error.empty();
  return !running && !done && !no_text;
}

// Closing: the run pauses (its checkpoint written) and the view takes its last snapshot.
void finish_training(AppState& s) {
  TrainUi& t = s.train;
  if (!t.worker) return;
  t.worker->pause();
  while (t.worker->busy()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  poll_train(s);
}

// [SECTION] The panel
namespace {

// The text task's file and tokens, and what the check said of them: one line naming the file
// and the reason it cannot be trained on, or its size.
void text_controls(AppState& s) {
  TrainUi& t = s.train;
  ImGui::SetNextItemWidth(-1.0f);
  input_text_with_hint(s, "##train_text", "a text file (path)", t.text_path);
  record_widget(s, "train_text");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("A UTF-8 text, e.g. a short story: the model learns to continue it (mhaviz train --task text)");
  // GPT-2's tokenizer where a folder of its files is known (the model view's, offered once, or
  // one typed).
  if (t.tokenizer_dir.empty() && !t.tokenizer_offered && !s.gpt.path.empty()) {
    const fs::path p(s.gpt.path);
    const std::string dir = p.extension() == ".safetensors" ? p.parent_path().string() : p.string();
    if (has_tokenizer_files(dir)) t.tokenizer_dir = dir, t.tokenizer_offered = true;
  }
  const bool have = has_tokenizer_files(t.tokenizer_dir);
  if (!have) t.gpt2_tokens = false;
  int tokens = t.gpt2_tokens ? 1 : 0;
  if (ImGui::RadioButton("characters", &tokens, 0)) t.gpt2_tokens = false;
  record_widget(s, "train_text_chars");
  ImGui::SameLine();
  ImGui::BeginDisabled(!have);
  if (ImGui::RadioButton("GPT-2's tokens", &tokens, 1)) t.gpt2_tokens = true;
  ImGui::EndDisabled();
  record_widget(s, "train_text_gpt2");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", have ? "GPT-2's tokenizer from the folder below (a vocabulary of 50,257: a larger model)"
                                 : "Needs a folder with GPT-2's vocab.json and merges.txt (or tokenizer.json) below");
  ImGui::SetNextItemWidth(-1.0f);
  input_text_with_hint(s, "##train_tokenizer", "GPT-2 tokenizer folder", t.tokenizer_dir);
  record_widget(s, "train_tokenizer");
  // Checked again only when what it depends on changed (it reads and tokenizes the file).
  const std::string key =
      t.text_path + '\n' + tokenizer_of(t) + '\n' + std::to_string(t.context) + '\n' + std::to_string(t.batch);
  if (key != t.text_checked) {
    t.text = check_train_text(t.text_path, tokenizer_of(t), t.context, t.batch);
    t.text_checked = key;
  }
  if (!t.text.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
    ImGui::TextWrapped("%s", t.text.error.c_str());
    ImGui::PopStyleColor();
    record_widget(s, "train_text_error");
  } else {
    ImGui::TextDisabled("%s %s, a vocabulary of %d", thousands(t.text.tokens).c_str(),
                        t.text.characters ? "characters" : "tokens", t.text.vocab);
  }
}

void settings_controls(AppState& s) {
  TrainUi& t = s.train;
  const bool fixed = t.worker != nullptr;
  // Fields leave their labels' room: at ImGui's default (two thirds of the panel) "weight decay"
  // was cut to "weight dec" on a narrow panel with a large font.
  ImGui::PushItemWidth(-labelled_width(0.0f, "weight decay"));
  ImGui::BeginDisabled(fixed);
  const char* tips[] = {
      ("Random tokens with a segment that repeats once later (lengths 5, 9, 13 never trained, only probed): the "
       "induction-head experiment"),
      "A random half and the same half again: a sanity task any model with attention learns",
      "Your own text (a short story, as chapter 5 of the book trains on): windows of it at random offsets"};
  for (int k = 0; k < 3; ++k) {
    if (k > 0) ImGui::SameLine();
    if (ImGui::RadioButton(std::string(train::task_name(kTasks[k])).c_str(), &t.task, k) && !context_fits(t, t.context))
      t.context = 32;
    record_widget(s, ("train_task_" + std::string(train::task_name(kTasks[k]))).c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tips[k]);
  }
  if (kTasks[t.task] == train::TaskKind::Text) text_controls(s);
  ImGui::SliderInt("layers", &t.layers, 1, 4);
  record_widget(s, "train_layers");
  if (combo(s, "heads", "train_heads", t.heads, kHeads, "%d") && t.d_model % t.heads != 0)
    t.d_model = std::max(t.heads, t.d_model / t.heads * t.heads);
  combo(s, "d_model", "train_d_model", t.d_model, kWidths, "%d", &width_fits);
  ImGui::TextDisabled("head_dim %d (d_model / heads)", t.d_model / t.heads);
  ImGui::Checkbox("attention-only", &t.attn_only);
  record_widget(s, "train_attn_only");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "x += att(x): no LayerNorm, no MLP (the induction-head experiment); off: the book's GPTModel "
        "blocks");
  combo(s, "context", "train_context", t.context, kContexts, "%d", &context_allowed);
  combo(s, "batch", "train_batch", t.batch, kBatches, "%d");
  combo(s, "lr", "train_lr", t.lr, kRates, "%g");
  combo(s, "weight decay", "train_wd", t.weight_decay, kDecays, "%g");
  combo(s, "steps", "train_steps", t.steps, kSteps, "%d");
  if (ImGui::InputInt("seed", &t.seed)) t.seed = std::clamp(t.seed, 0, 1 << 30);
  record_widget(s, "train_seed");
  ImGui::EndDisabled();
  ImGui::PopItemWidth();
  if (fixed) ImGui::TextDisabled("Reset to change the settings.");
  if (!t.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
    ImGui::TextWrapped("%s", t.error.c_str());
    ImGui::PopStyleColor();
  }
}

void transport(AppState& s) {
  TrainUi& t = s.train;
  const bool running = t.snap && t.snap->running;
  const bool done = t.snap && t.snap->step >= t.snap->target;
  ImGui::BeginDisabled(!train_can_start(t));
  if (ImGui::Button(t.worker && t.snap && t.snap->step > 0 ? "Resume" : "Start") && make_train_run(s)) t.worker->run();
  record_widget(s, "train_start");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!running);
  if (ImGui::Button("Pause")) t.worker->pause();
  record_widget(s, "train_pause");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!train_can_start(t));
  if (ImGui::Button("Step") && make_train_run(s)) t.worker->step();
  record_widget(s, "train_step");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!t.worker);
  if (ImGui::Button("Reset")) {
    t.worker.reset();  // writes the checkpoint of steps not yet written, in the run's folder
    t.layer = t.head = -1;
    poll_train(s);
  }
  record_widget(s, "train_reset");
  ImGui::EndDisabled();
  if (!t.snap) {
    ImGui::TextWrapped("Start trains on a worker thread, one step at a time; the window keeps drawing.");
    return;
  }
  const TrainSnapshot& n = *t.snap;
  ImGui::Text("step %lld of %lld%s", static_cast<long long>(n.step), static_cast<long long>(n.target),
              running ? "" : (done ? " (done)" : " (paused)"));
  if (n.tokens_per_s > 0)
    ImGui::TextDisabled("%s tokens/s", thousands(static_cast<std::int64_t>(n.tokens_per_s)).c_str());
  if (!n.checkpoint.empty()) {
    text_path_wrapped("Checkpoint (step " + std::to_string(n.saved_step) + "): " + n.checkpoint);
    record_widget(s, "train_checkpoint");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "Written on pause, every 250 steps, at the end and on closing (with config.json and the "
          "optimizer's state beside it)");
  }
  if (!n.error.empty()) ImGui::TextColored(kErrorText, "%s", n.error.c_str());
  ImGui::BeginDisabled(running || n.checkpoint.empty());
  if (ImGui::Button("Open in model view")) open_model(s, n.checkpoint);
  record_widget(s, "train_open_model");
  ImGui::EndDisabled();
}

// The scrubber over the probe's snapshots (one every 25 steps): the heads as they were then,
// and the step marked on the plots.
void replay(AppState& s) {
  TrainUi& t = s.train;
  if (!t.snap || t.snap->probes.empty()) return;
  ImGui::Separator();
  const int last = static_cast<int>(t.snap->probes.size()) - 1;
  int shown = t.scrub < 0 ? last : std::min(t.scrub, last);
  char fmt[48];
  std::snprintf(fmt, sizeof fmt, "step %lld",
                static_cast<long long>(t.snap->probes[static_cast<std::size_t>(shown)]->step));
  ImGui::PushItemWidth(-labelled_width(0.0f, "scores shown"));
  if (ImGui::SliderInt("snapshot", &shown, 0, last, fmt)) t.scrub = shown == last ? -1 : shown, ++t.data;
  record_widget(s, "train_scrub");
  bool live = t.scrub < 0;
  if (ImGui::Checkbox("follow the training", &live)) t.scrub = live ? -1 : last, ++t.data;
  record_widget(s, "train_live");
  const char* names[kHeadPatternCount];
  for (int k = 0; k < kHeadPatternCount; ++k) names[k] = head_pattern_name(kHeadPatterns[k]).data();
  if (ImGui::Combo("scores shown", &t.pattern, names, kHeadPatternCount)) ++t.data;
  record_widget(s, "train_pattern");
  ImGui::PopItemWidth();
}

// The selected head's output removed on the probe: how much the copy's loss rises.
void ablation(AppState& s) {
  TrainUi& t = s.train;
  if (!t.snap) return;
  if (t.layer < 0) {
    ImGui::TextDisabled("Click a head in the grid to select it (and ablate it).");
    return;
  }
  char label[48];
  std::snprintf(label, sizeof label, "Ablate head %d.%d", t.layer, t.head);
  ImGui::BeginDisabled(t.snap->running);
  if (ImGui::Button(label)) t.worker->ablate(t.layer, t.head);
  record_widget(s, "train_ablate");
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "The probe's loss with this head's context zeroed before out_proj, at the current step "
        "(pause first)");
  const auto& a = t.snap->ablation;
  if (!a) return;
  ImGui::TextWrapped("Head %d.%d ablated at step %lld, on the probe: loss %.3f \xE2\x86\x92 %.3f", a->layer, a->head,
                     static_cast<long long>(a->step), a->loss, a->loss_ablated);
  if (std::isfinite(a->loss_repeat))
    ImGui::TextWrapped("on the copy: %.3f \xE2\x86\x92 %.3f", a->loss_repeat, a->loss_repeat_ablated);
  record_widget(s, "train_ablation");
}

}  // namespace

void draw_train_panel(AppState& s) {
  settings_controls(s);
  ImGui::Separator();
  transport(s);
  replay(s);
  ablation(s);
}

}  // namespace mhaviz::gui
