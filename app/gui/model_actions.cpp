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
#include "mhaviz/safetensors.hpp"

namespace mhaviz::gui {

// [SECTION] Open, text, probe
void open_model(AppState& s, const std::string& path) {
  ModelUi& m = s.model;
  if (!m.worker) m.worker = std::make_unique<GptWorker>();
  m.error.clear();
  m.worker->open(path);
  // The first open sends the text box (the worker reruns its last request on every later
  // model). Not decided by loaded(): a small model may already be loaded by now.
  if (!m.requested && !m.text.empty()) {
    m.worker->set_text(m.text, {m.prepend_eot ? SpecialFirst::EndOfText : SpecialFirst::None});
    m.requested = true;
  }
}

void set_model_text(AppState& s, std::string text) {
  ModelUi& m = s.model;
  m.text = std::move(text);
  m.probe = false;
  if (m.worker) {
    m.worker->set_text(m.text, {m.prepend_eot ? SpecialFirst::EndOfText : SpecialFirst::None});
    m.requested = true;
  }
}

void run_induction_probe(AppState& s) {
  ModelUi& m = s.model;
  const auto loaded = m.worker ? m.worker->loaded() : std::nullopt;
  if (!loaded) return;
  try {
    m.worker->set_ids(figure::induction_probe(*loaded->model, *loaded->tokenizer));
    m.requested = m.probe = true;
    m.pattern = static_cast<int>(HeadPattern::Induction);
  } catch (const std::exception& e) {
    m.error = e.what();
  }
}

bool model_busy(const AppState& s) {
  if (!s.model.worker) return false;
  const GptWorker::Status st = s.model.worker->status();
  return st.loading || st.tokenizing || st.computing || s.model.deriving.valid() ||
         st.generation != s.model.seen_generation;
}

bool model_view_active(const AppState& s) { return s.model.show && !s.model.path.empty(); }

// [SECTION] Poll: once a frame, never waits
namespace {

ModelViewKey wanted_key(const AppState& s, const GptWorker::Result& r) {
  ModelViewKey k;
  k.generation = r.generation;
  const int T = r.trace->tokens();
  k.f = figure::thumbnail_factor(T, static_cast<float>(std::max(8, s.model.thumb_side_px)));
  k.pattern = s.model.pattern;
  k.position = s.model.position;
  k.cmap = s.settings.colormap == Colormap::Diverging ? Colormap::Viridis : s.settings.colormap;
  k.log = s.settings.log_weights || T >= 64;  // as `mhaviz render --view model` chooses
  return k;
}

}  // namespace

void poll_model(AppState& s) {
  ModelUi& m = s.model;
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
  if (st.error != m.error && !st.error.empty()) notify(s, st.error, true);  // also in the status bar
  m.error = st.error;
  // A model that finished loading becomes the one shown.
  if (const auto loaded = m.worker->loaded(); loaded && loaded->path.string() != m.path) {
    // Another model: its heads are not the old ones (the first keeps --model-head).
    if (!m.path.empty()) m.layer = m.head = m.position = -1;
    m.path = loaded->path.string();
    add_recent_model(s, m.path);
    m.show = true;
    notify(s, "Opened model " + m.path);
  }
  // A derived view that is ready replaces the one shown.
  if (m.deriving.valid() && m.deriving.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      m.view = m.deriving.get();
      m.result = m.deriving_result;
    } catch (const std::exception& e) {
      m.error = e.what();
    }
    m.deriving_result.reset();
  }
  const auto r = m.worker->result();
  m.seen_generation = st.generation;
  if (!r || m.deriving.valid()) return;
  const ModelViewKey key = wanted_key(s, *r);
  if (m.view && m.view->key == key) return;
  // Pooling 144 heads of 1024² weights and scoring them takes tens of milliseconds at
  // GPT-2-small size: on a thread of its own, the last view shown meanwhile.
  m.deriving_result = r;
  m.deriving = std::async(std::launch::async,
                          [r, key] { return std::make_shared<const ModelViewData>(derive_model_view(*r, key)); });
}

// [SECTION] A layer in the walkthrough

// Writes the layer's parameters as STATE_DIR/layers/MODEL-layer-N.safetensors (atomic) and
// returns its absolute path; throws std::runtime_error naming the path when it cannot.
static std::string save_layer_weights(const AppState& s, const ParameterFile& params, int layer) {
  namespace fs = std::filesystem;
  std::string stem = fs::path(s.model.path).filename().string();
  if (stem == "model.safetensors" || stem.empty()) stem = fs::path(s.model.path).parent_path().filename().string();
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  const fs::path dir = fs::absolute(fs::path(s.paths.state_dir) / "layers");
  const fs::path file = dir / (stem + "-layer-" + std::to_string(layer) + ".safetensors");
  std::vector<StWriteTensor> out;
  for (const auto& [name, t] : params.tensors) out.push_back({name, t.shape, t.values.data()});
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": " + ec.message());
  write_safetensors_f32(file, out, {{"mhaviz", "layer " + std::to_string(layer) + " of " + s.model.path}});
  return file.string();
}
// The layer as the book's weight-split module (gpt_layer.hpp): its parameters go into the
// session as model.weights, its LayerNorm output is X, so every lesson panel and the
// walkthrough show that layer's real numbers.
void open_layer_walkthrough(AppState& s, int layer) {
  ModelUi& m = s.model;
  if (!m.result || layer < 0) return;
  const GptModel& gm = *m.result->loaded.model;
  if (layer >= gm.config.n_layer) return;
  try {
    const GptTrace& tr = *m.result->trace;
    std::vector<std::string> tokens;
    for (const int id : tr.ids) tokens.push_back(m.result->loaded.tokenizer->display_token(id));
    Session ses = gpt_layer_session(gm, layer, tokens, tr.layers[static_cast<std::size_t>(layer)].x.data);
    const Model mod = weight_split_from_gpt_layer(gm, layer);
    auto params = std::make_shared<ParameterFile>();
    for (const Linear& l : mod.layers) {
      params->tensors[l.name + ".weight"] = {{l.out, l.in}, l.weight};
      if (!l.bias.empty()) params->tensors[l.name + ".bias"] = {{l.out}, l.bias};
    }
    // The parameters go into a real file beside the autosave, so that an edit of this
    // document autosaves a session whose model.weights loads again on the next start.
    params->path = save_layer_weights(s, *params, layer);
    ses.model.weights = std::move(params);
    const std::string origin =
        "layer " + std::to_string(layer) + " of " + std::filesystem::path(m.path).filename().string();
    set_document(s, std::move(ses), "", origin);
    // A layer of a model is not an edit to save: the autosave keeps the last lesson.
    s.autosaved_revision = s.doc.revision;
    s.walkthrough.open = true;
    m.show = false;
    notify(s, "Walkthrough of " + origin +
                  ": its LayerNorm output is X, its weights are W_query, W_key, W_value, out_proj");
  } catch (const std::exception& e) {
    notify(s, e.what(), true);
  }
}

}  // namespace mhaviz::gui
