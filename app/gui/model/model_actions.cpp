// A trained GPT in the app: opening one, its text, the induction probe, polling the worker
// for results and deriving the model view off the UI thread, and a layer in the walkthrough.
// Nothing here computes a forward: GptWorker does, on its thread.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "app_state.hpp"
#include "figure/gpt_figures.hpp"
#include "mhaviz/gpt_layer.hpp"
#include "mhaviz/hf_layer.hpp"
#include "mhaviz/prompt.hpp"
#include "mhaviz/safetensors.hpp"

namespace mhaviz::gui {

// [SECTION] Open, text, probe
std::string model_name(const ModelUi& m) {
  const std::filesystem::path p(m.path);
  return p.extension() == ".safetensors" ? p.parent_path().filename().string() : p.filename().string();
}

void open_model(AppState& s, const std::string& path) {
  ModelUi& m = s.gpt;
  if (!m.worker) m.worker = std::make_unique<GptWorker>();
  m.error.clear();
  m.worker->open(path);
  // The text box goes to the worker once a model has loaded (poll_model): a forward asked
  // before would fail for want of a model and hide why the load failed.
}

PromptOptions prompt_options(const ModelUi& m) {
  return {m.prepend_eot ? SpecialFirst::EndOfText : SpecialFirst::None, !m.no_special};
}

std::optional<ModelFacts> shown_facts(const ModelUi& m) {
  if (m.result) return m.result->loaded.facts;
  if (const auto loaded = m.worker ? m.worker->loaded() : std::nullopt) return loaded->facts;
  return std::nullopt;
}

std::string layer_walk_reason(const ModelUi& m) {
  if (!m.result || !m.result->loaded.hf) return {};
  return hf_layer_refusal(*m.result->loaded.hf);
}

void set_model_text(AppState& s, std::string text) {
  ModelUi& m = s.gpt;
  m.text = std::move(text);
  m.induction_probe = false;
  m.edit_at = std::chrono::steady_clock::now();
  m.edit_pending = true;
  if (m.worker) {
    m.worker->set_text(m.text, prompt_options(m));
    m.requested = true;
  }
}

void toggle_ablation(ModelUi& m, HeadIndex head) {
  const auto it = std::find(m.ablate.begin(), m.ablate.end(), head);
  if (it == m.ablate.end())
    m.ablate.push_back(head);
  else
    m.ablate.erase(it);
}

// Each head ablated alone on the forward shown, or (patch) each head's context, or each layer's
// residual at each position, patched from it into the corrupted text's run, on the sweep's own thread (a sweep under
// way goes on; Cancel stops it). A target that is not one token, or a corrupted text of another length, is said in the
// status bar.
void start_sweep(AppState& s, bool patch) {
  ModelUi& m = s.gpt;
  if (!m.result || m.sweep_job) return;
  const Tokenizer& tok = *m.result->loaded.tokenizer;
  const std::vector<int>& ids = m.result->ids();
  SweepTarget t;
  if (patch) {
    const Prompt c = encode_prompt(tok, m.corrupt_text, prompt_options(m), {m.result->loaded.facts.context, 0});
    t = c.error.empty() ? patch_target(tok, ids, c.ids, m.sweep_target, m.sweep_vs, m.patch_per) : SweepTarget{};
    if (!c.error.empty()) t.error = "corrupted " + c.error;
  } else {
    t = sweep_target(tok, ids, m.sweep_target, m.sweep_vs);
  }
  if (!t.error.empty()) {
    notify(s, t.error, true);
    return;
  }
  m.sweep_job = std::make_unique<SweepJob>(m.result, std::move(t), m.ablation_mode);
}

const figure::GridView* shown_grid(const ModelUi& m) {
  if (m.show == ModelUi::Show::Sweep && m.sweep) return &m.sweep->view;
  if (m.show == ModelUi::Show::Lens && m.view && m.view->lens) return m.view->lens.get();
  return nullptr;
}

void run_induction_probe(AppState& s) {
  ModelUi& m = s.gpt;
  const auto loaded = m.worker ? m.worker->loaded() : std::nullopt;
  if (!loaded) return;
  try {
    m.worker->set_ids(figure::induction_probe(loaded->facts, *loaded->tokenizer));
    m.requested = m.induction_probe = true;
    m.pattern = static_cast<int>(HeadPattern::Induction);
  } catch (const std::exception& e) {
    m.error = e.what();
  }
}

bool model_busy(const AppState& s) {
  if (!s.gpt.worker) return false;
  const GptWorker::Status st = s.gpt.worker->status();
  // A text sent to a model still loading waits in poll_model until it has loaded.
  const bool text_waits = !s.gpt.requested && !s.gpt.text.empty() && s.gpt.path.empty() && st.error.empty();
  // A sweep under way: its progress bar moves every frame, its grid shows the frame it ends.
  return !st.idle || text_waits || s.gpt.deriving.valid() || st.generation != s.gpt.seen_generation ||
         s.gpt.sweep_job != nullptr;
}

// [SECTION] Poll: once a frame, never waits
namespace {

ModelViewKey wanted_key(const AppState& s, const GptWorker::Result& r) {
  const ModelUi& m = s.gpt;
  ModelViewKey k;
  k.generation = r.generation;
  k.pattern = m.pattern;
  k.position = m.position;
  k.layer = m.layer;
  k.head = m.head;
  // Heads the model shown has (a smaller model opened since keeps the others for later).
  const ModelFacts& c = r.loaded.facts;
  for (const HeadIndex& h : m.ablate)
    if (h.layer < c.layers && h.head < c.heads) k.ablate.push_back(h);
  k.ablation_mode = m.ablation_mode;
  k.norm_weighted = m.norm_weighted;
  k.lens = m.show == ModelUi::Show::Lens;
  if (k.lens && !m.lens_token.empty()) {
    std::string error;  // said under the field (panel_model.cpp)
    k.lens_target = typed_token(*r.loaded.tokenizer, m.lens_token, "lens token", error);
    k.lens_position = k.lens_target >= 0 ? m.lens_position : -1;
  }
  k.fig = m.fig;
  // With many tokens most weights are near 1/T: a log scale, as `mhaviz render` chooses.
  k.fig.log_scale = s.settings.log_weights || r.tokens() >= figure::kLogScaleFromTokens;
  return k;
}

// The text box's edit is on screen when the view shows its tokens: the time it took.
void note_update(ModelUi& m, const ModelViewData& v) {
  if (!m.edit_pending || m.induction_probe || m.tokens_text != m.text || v.token_strings != m.tokens.tokens) return;
  m.edit_pending = false;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m.edit_at).count();
  m.updates.push_back({ms, v.result->forward_ms, v.result->recomputed_from, v.tokens});
  if (m.updates.size() > 64) m.updates.erase(m.updates.begin());
}

// A grid of another text than the one shown (the text edited, the probe run) would answer a
// question nobody asks any more: it is dropped, and a sweep under way for it cancelled;
// Sweep or Patch runs again for the text shown.
void drop_stale_sweep(AppState& s) {
  ModelUi& m = s.gpt;
  if (!m.result) return;
  const std::vector<int>& ids = m.result->ids();  // either kind of model
  if (m.sweep_job && m.sweep_job->text_ids() != ids) m.sweep_job->cancel();
  if (!m.sweep || m.sweep->text_ids == ids) return;
  const bool shown = m.show == ModelUi::Show::Sweep;
  m.sweep.reset();
  if (shown) {
    m.show = ModelUi::Show::Heads;
    notify(s, "The grid was for the text before the edit: press Sweep or Patch again for this one");
  }
}

// A derived view that is ready replaces the one shown; the screen draws its figure.
void take_view(AppState& s) {
  ModelUi& m = s.gpt;
  try {
    m.view = m.deriving.get();
    m.result = m.view->result;
    s.renderer.model.set(m.view->figure);
    s.renderer.model.opts = m.view->key.fig;
    note_update(m, *m.view);
    m.derive_failed = false;
    drop_stale_sweep(s);  // in the frame that shows the new text
  } catch (const std::exception& e) {
    notify(s, e.what(), true);
    m.derive_failed = true;
  }
}

// A sweep that ended: its grid shown in the centre, or a word that it was cancelled.
void take_sweep(AppState& s) {
  ModelUi& m = s.gpt;
  try {
    if (auto d = m.sweep_job->take()) {
      m.sweep = std::move(d);
      m.show = ModelUi::Show::Sweep;
      const InterventionGrid& g = m.sweep->grid;
      notify(s, std::string(m.sweep->patching() ? "Activation patching: " : "Ablation sweep: ") +
                    (m.sweep->per_position()
                         ? std::to_string(g.rows) + " layers \xC3\x97 " + std::to_string(g.cols) + " positions"
                         : std::to_string(g.rows * g.cols) + " heads"));
    } else {
      notify(s, "Sweep cancelled");
    }
  } catch (const std::exception& e) {
    notify(s, e.what(), true);
  }
  m.sweep_job.reset();
}

}  // namespace

void poll_model(AppState& s) {
  ModelUi& m = s.gpt;
  if (!m.worker) return;
  const GptWorker::Status st = m.worker->status();
  const auto now = std::chrono::steady_clock::now();
  if (st.loading || st.computing) {
    ++m.busy_frames;
    if (m.last_poll.time_since_epoch().count() != 0)
      m.busy_max_gap_ms =
          std::max(m.busy_max_gap_ms, std::chrono::duration<double, std::milli>(now - m.last_poll).count());
  }
  m.last_poll = now;
  // Also in the status bar, but for a text that does not tokenize: the text box says it already.
  if (st.error != m.error && !st.error.empty() && st.error != m.tokens.error) notify(s, st.error, true);
  m.error = st.error;
  // A model that finished loading becomes the one shown.
  if (const auto loaded = m.worker->loaded(); loaded && loaded->path.string() != m.path) {
    // Another model: its heads are not the old ones (the first keeps --model-head).
    if (!m.path.empty()) m.layer = m.head = m.position = m.lens_position = -1;
    // Nor is the last sweep's grid of it (a sweep under way stops at its next head).
    m.sweep.reset();
    if (m.show == ModelUi::Show::Sweep) m.show = ModelUi::Show::Heads;
    if (m.sweep_job) m.sweep_job->cancel();
    m.path = loaded->path.string();
    add_recent_model(s, m.path);
    // It becomes the view shown, unless the walkthrough is open.
    if (s.centre != Centre::Walkthrough) s.centre = Centre::Model;
    notify(s, "Opened model " + m.path);
    // The first model runs the text box; the worker reruns its last request on later ones.
    if (!m.requested && !m.text.empty()) {
      m.worker->set_text(m.text, prompt_options(m));
      m.requested = true;
    }
  }
  if (m.deriving.valid() && m.deriving.wait_for(std::chrono::seconds(0)) == std::future_status::ready) take_view(s);
  if (m.sweep_job && m.sweep_job->finished()) take_sweep(s);
  drop_stale_sweep(s);
  const auto r = m.worker->result();
  m.seen_generation = st.generation;
  // The figure needs the canvas the view is drawn in (known once it was drawn).
  if (!r || m.deriving.valid() || !m.fig_known) return;
  const ModelViewKey key = wanted_key(s, *r);
  if (m.view && m.view->key == key) return;
  if (m.derive_failed && m.deriving_key == key) return;  // it failed for these inputs: said once
  // Scoring, pooling and laying out 144 heads of 1024² weights take tens of milliseconds at
  // GPT-2-small size: on a thread of its own, the last view shown meanwhile.
  m.deriving_key = key;
  // The view shown goes along only for the same forward (what it computed is reused): an
  // older forward's trace held here would keep the worker from writing its next forward there.
  auto prev = m.view && m.view->result == r ? m.view : nullptr;
  m.deriving = std::async(std::launch::async, [r, key, prev] { return derive_model_view(r, key, prev); });
  // A small view is ready within a few milliseconds: shown in this frame rather than the
  // next (a frame of llvmpipe under load takes tens of milliseconds).
  if (m.deriving.wait_for(std::chrono::milliseconds(8)) == std::future_status::ready) take_view(s);
}

// [SECTION] A layer in the walkthrough

// Writes the layer's parameters as STATE_DIR/layers/MODEL-layer-N.safetensors (atomic) and
// returns its absolute path; throws std::runtime_error naming the path when it cannot.
static std::string save_layer_weights(const AppState& s, const ParameterFile& params, int layer) {
  namespace fs = std::filesystem;
  std::string stem = fs::path(s.gpt.path).filename().string();
  if (stem == "model.safetensors" || stem.empty()) stem = fs::path(s.gpt.path).parent_path().filename().string();
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  const fs::path dir = fs::absolute(fs::path(s.paths.state_dir) / "layers");
  const fs::path file = dir / (stem + "-layer-" + std::to_string(layer) + ".safetensors");
  std::vector<StWriteTensor> out;
  for (const auto& [name, t] : params.tensors) out.push_back({name, t.shape, t.values.data()});
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": " + ec.message());
  write_safetensors_f32(file, out, {{"mhaviz", "layer " + std::to_string(layer) + " of " + s.gpt.path}});
  return file.string();
}
namespace {

// The session of layer `layer` of the model shown, its parameters (path not yet set) and what
// the status bar says of it: a GPT's as the weight-split module (gpt_layer.hpp), a Qwen, Llama
// or Gemma 3 model's as gqa (hf_layer.hpp). X is the layer's norm output either way.
struct LayerLesson {
  Session session;
  std::shared_ptr<ParameterFile> params;
  std::string what;
};

LayerLesson layer_lesson(const GptWorker::Result& r, int layer) {
  const std::vector<std::string> tokens = figure::display_tokens(*r.loaded.tokenizer, r.ids());
  LayerLesson out;
  if (r.loaded.hf) {
    const HfTrace& tr = *r.hf_trace;
    out.session = hf_layer_session(*r.loaded.hf, layer, tokens, tr.layers.at(static_cast<std::size_t>(layer)).x.data);
    out.params = std::make_shared<ParameterFile>(*out.session.model.weights);
    out.what =
        "its input RMSNorm output is X, q_proj, k_proj, v_proj, o_proj are W_query, W_key, W_value, out_proj "
        "of the book's GroupedQueryAttention";
    return out;
  }
  const GptModel& gm = *r.loaded.model;
  out.session = gpt_layer_session(gm, layer, tokens, r.trace->layers.at(static_cast<std::size_t>(layer)).x.data);
  const Model mod = weight_split_from_gpt_layer(gm, layer);
  out.params = std::make_shared<ParameterFile>();
  for (const Linear& l : mod.layers) {
    out.params->tensors[l.name + ".weight"] = {{l.out, l.in}, l.weight};
    if (!l.bias.empty()) out.params->tensors[l.name + ".bias"] = {{l.out}, l.bias};
  }
  out.what = "its LayerNorm output is X, its weights are W_query, W_key, W_value, out_proj";
  return out;
}

}  // namespace

// The layer as the lesson's module: its parameters go into the session as model.weights, its
// norm output is X, so every lesson panel and the walkthrough show that layer's real numbers.
void open_layer_walkthrough(AppState& s, int layer) {
  ModelUi& m = s.gpt;
  if (!m.result || layer < 0 || layer >= m.result->loaded.facts.layers) return;
  if (const std::string why = layer_walk_reason(m); !why.empty()) {
    notify(s, why, true);
    return;
  }
  try {
    LayerLesson l = layer_lesson(*m.result, layer);
    Session& ses = l.session;
    // It opens clean, whatever the walkthrough showed before: its first step, the correct
    // merge, the walkthrough tab, the head chosen in the model view selected.
    SessionView view;
    view.walkthrough = true;
    view.head = std::clamp(m.head, 0, ses.model.num_heads - 1);
    view.log_scale = ses.num_tokens() >= figure::kLogScaleFromTokens;
    view.shared_scale = s.settings.shared_scale;
    view.colormap = std::string(colormap_name(s.settings.colormap));
    ses.view = view;
    // The parameters go into a real file beside the autosave, so that an edit of this
    // document autosaves a session whose model.weights loads again on the next start.
    l.params->path = save_layer_weights(s, *l.params, layer);
    ses.model.weights = std::move(l.params);
    const std::string origin =
        "layer " + std::to_string(layer) + " of " + std::filesystem::path(m.path).filename().string();
    set_document(s, std::move(ses), "", origin);
    // A layer of a model is not an edit to save: the autosave keeps the last lesson.
    s.autosaved_revision = s.doc.revision;
    s.autosaved_view = current_view(s);
    notify(s, "Walkthrough of " + origin + ": " + l.what);
  } catch (const std::exception& e) {
    notify(s, e.what(), true);
  }
}

}  // namespace mhaviz::gui
