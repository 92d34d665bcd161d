// The Train view's centre: the figure of figure/train_figure.cpp (the loss curves, the
// detectors' plots, every head on the probe) drawn through the canvas, the very figure F12
// captures; around it only a toolbar line, tooltips and a click that selects a head. And the
// strip below: the model trained and its sizes.
#include <imgui.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "figure/train_figure.hpp"

namespace mhaviz::gui {
namespace {

// The probe snapshot shown: the scrubber's, or the newest.
const TrainProbe* shown_probe(const TrainUi& t) {
  if (!t.snap || t.snap->probes.empty()) return nullptr;
  const std::size_t n = t.snap->probes.size();
  const std::size_t k = t.scrub < 0 ? n - 1 : std::min(static_cast<std::size_t>(t.scrub), n - 1);
  return t.snap->probes[k].get();
}

std::string settings_line(const train::TrainSettings& st) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s task \xC2\xB7 %d layers \xC3\x97 %d heads, %s, d_model %d, vocab %d, context %d "
                "\xC2\xB7 batch %d, AdamW lr %g, weight decay %g \xC2\xB7 seed %llu",
                std::string(train::task_name(st.task)).c_str(), st.model.n_layers, st.model.n_heads,
                st.model.attn_only ? "attention-only" : "full blocks", st.model.emb_dim, st.model.vocab_size,
                st.model.context_length, st.batch, st.lr, st.weight_decay, static_cast<unsigned long long>(st.seed));
  return buf;
}

// A click on a thumbnail selects that head; on the selected one (or the large head), closes it.
void pick_head(AppState& s, ScreenFigure& f) {
  TrainUi& t = s.train;
  ImGui::SetCursorScreenPos(f.origin);
  ImGui::InvisibleButton("train_canvas", ImVec2(std::max(1.0f, static_cast<float>(f.fig.width)),
                                                std::max(1.0f, static_cast<float>(f.fig.height))));
  if (!ImGui::IsItemHovered() || s.opts.ignore_mouse) return;
  const CellUnder c = cell_under(f, ImGui::GetIO().MousePos);
  const int heads = t.snap->curves.n_layer * t.snap->curves.n_head;
  if (c.heatmap < 0) return;
  if (c.heatmap < heads) {
    t.hover_k = c.heatmap;
    const int l = c.heatmap / t.snap->curves.n_head, h = c.heatmap % t.snap->curves.n_head;
    ImGui::SetTooltip("Head %d.%d: click to %s", l, h, l == t.layer && h == t.head ? "close it" : "show it large");
    if (ImGui::IsItemClicked()) {
      if (l == t.layer && h == t.head)
        t.layer = t.head = -1;
      else
        t.layer = l, t.head = h;
      ++t.data;
    }
  } else if (ImGui::IsItemClicked()) {
    t.layer = t.head = -1;
    ++t.data;
  }
}

}  // namespace

// The figure of the run as the view shows it, for any options (the screen's, a capture's).
figure::Figure train_view_figure(const AppState& s, const figure::Options& o) {
  const TrainUi& t = s.train;
  const TrainSnapshot& n = *t.snap;
  const train::TrainSettings& st = t.worker->plan().settings;
  figure::TrainCurves c = n.curves;
  // A text run is named by its file and how it was tokenized.
  const std::string task = st.task == train::TaskKind::Text
                               ? std::filesystem::path(st.text_path).filename().string() +
                                     (st.tokenizer_path.empty() ? " (characters)" : " (GPT-2's tokens)")
                               : "the " + std::string(train::task_name(st.task)) + " task";
  char title[320];
  std::snprintf(title, sizeof title, "Training a %d-layer %sGPT on %s \xC2\xB7 step %lld of %lld", st.model.n_layers,
                st.model.attn_only ? "attention-only " : "", task.c_str(), static_cast<long long>(n.step),
                static_cast<long long>(n.target));
  c.title = title;
  c.caption = settings_line(st);
  const TrainProbe* p = shown_probe(t);
  if (!p) return figure::build_train_figure(c, nullptr, o);
  if (t.scrub >= 0) c.marker = p->step;
  figure::ModelView m;
  m.n_layer = st.model.n_layers, m.n_head = st.model.n_heads, m.tokens = st.model.context_length;
  const std::size_t TT = static_cast<std::size_t>(m.tokens) * static_cast<std::size_t>(m.tokens);
  for (int k = 0; k < m.n_layer * m.n_head; ++k)
    m.weights.push_back(p->weights.data() + static_cast<std::size_t>(k) * TT);
  m.token_names = n.probe_names;
  char head[96];
  std::snprintf(head, sizeof head, "Every head on %s at step %lld",
                st.task == train::TaskKind::Text ? "the start of the text" : "a probe sequence",
                static_cast<long long>(p->step));
  m.title = head;
  m.pattern = std::string(head_pattern_name(kHeadPatterns[t.pattern]));
  for (int k = 0; k < m.n_layer * m.n_head; ++k)
    m.scores.push_back(p->scores[static_cast<std::size_t>(k * kHeadPatternCount + t.pattern)]);
  m.selected_layer = t.layer, m.selected_head = t.head;
  return figure::build_train_figure(c, &m, o);
}

void draw_train_view(AppState& s) {
  TrainUi& t = s.train;
  t.hover_k = -1;
  if (ImGui::Button("Capture")) capture(s, CaptureKind::Shown);
  record_widget(s, "train_capture");
  ImGui::SameLine();
  ImGui::TextDisabled("%s", t.layer >= 0 ? "click the head again to close it" : "click a head to show it large");
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (!t.snap) {
    ImGui::TextWrapped(
        "%s",
        t.task == 2
            ? "Train a small GPT on a text of your own (a short story, as chapter 5 of the book does): choose the file "
              "on the left; Start waits for one it can train on. The loss falls from chance (ln of the number of "
              "characters or tokens) as the model learns to continue the text, and the heads are shown on its start."
            : "Train a small GPT and watch its heads specialise: with the default settings (2 layers \xC3\x97 4 "
              "heads, attention-only, the induction task) the loss sits at chance for a few hundred steps, then the "
              "loss on the repeated half falls while a layer-1 head's induction score jumps (Olsson et al. 2022). "
              "Choose the settings on the left and press Start.");
    return;
  }
  figure::Options o;
  o.canvas = {std::floor(std::max(avail.x, 50.0f)), std::floor(std::max(avail.y, 50.0f))};
  o.type = screen_type();
  o.dark = s.settings.dark;
  o.caption = false;
  o.colormap = s.settings.colormap == Colormap::Diverging ? Colormap::Viridis : s.settings.colormap;
  o.values = false;
  ScreenFigure& f = s.renderer.train;
  f.stem = "train";
  f.ensure(o, t.data, [&s](const figure::Options& opts) { return train_view_figure(s, opts); });
  // Taller than the canvas on a short and narrow one (train_figure.cpp's stacked layout): scrolled.
  const bool scroll = begin_figure_scroll(f, "train_scroll", avail);
  draw_figure(s, f, scroll ? ImGui::GetCursorScreenPos() : origin);
  s.renderer.centre = &f;
  pick_head(s, f);
  if (scroll) end_figure_scroll(f);
}

void draw_train_strip(AppState& s) {
  const TrainUi& t = s.train;
  if (!t.worker) {
    ImGui::TextDisabled("No run yet: Start makes one, with its checkpoint under %s/runs", s.paths.state_dir.c_str());
    return;
  }
  const train::TrainSettings& st = t.worker->plan().settings;
  text_words_wrapped(settings_line(st));
  const std::vector<train::ParamTensor> layout = train::parameter_layout(st.model);
  const std::int64_t params = layout.back().offset + layout.back().numel();
  // Wrapped: a 1024-pixel-wide window has the strip narrower than the line.
  text_dim_wrapped("Parameters: " + thousands(params) + " \xC2\xB7 a step: " + std::to_string(st.batch) +
                   " sequences of " + std::to_string(st.model.context_length) + " tokens, forward, backward and AdamW");
}

std::string train_run_name(const AppState& s) {
  const TrainUi& t = s.train;
  if (!t.worker) return "train";
  std::string name = t.worker->plan().model_file.parent_path().filename().string();
  if (t.snap) {
    // The step the view shows: the scrubber's snapshot, else the newest.
    const auto& probes = t.snap->probes;
    const std::int64_t step = t.scrub >= 0 && t.scrub < static_cast<int>(probes.size())
                                  ? probes[static_cast<std::size_t>(t.scrub)]->step
                                  : t.snap->step;
    name += "-step" + std::to_string(step);
  }
  return name;
}

}  // namespace mhaviz::gui
