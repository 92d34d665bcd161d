// The model view's ablation sweep and activation patching (see model_sweep.hpp).
#include "model_sweep.hpp"

#include <chrono>
#include <stdexcept>
#include <type_traits>

#include "figure/gpt_figures.hpp"
#include "mhaviz/model_kinds.hpp"

namespace mhaviz::gui {

int typed_token(const Tokenizer& tok, const std::string& text, const char* field, std::string& error) {
  const std::vector<int> ids = tok.encode(text, false);
  if (ids.size() == 1) return ids.front();
  error = std::string(field) + ": '" + text + "' is " + std::to_string(ids.size()) +
          " tokens, not one token of the vocabulary";
  return -1;
}

SweepTarget sweep_target(const Tokenizer& tok, const std::vector<int>& text_ids, const std::string& target,
                         const std::string& vs) {
  SweepTarget t;
  if (!target.empty()) {
    t.ids = text_ids;
    t.metric.target = typed_token(tok, target, "target", t.error);
  } else if (text_ids.size() >= 2) {
    t.ids.assign(text_ids.begin(), text_ids.end() - 1);
    t.metric.target = text_ids.back();
  } else {
    t.error = "target: the text is one token, with no next token to judge; type a target";
  }
  if (t.error.empty() && !vs.empty()) t.metric.vs = typed_token(tok, vs, "vs", t.error);
  return t;
}

SweepTarget patch_target(const Tokenizer& tok, const std::vector<int>& text_ids, const std::vector<int>& corrupt_ids,
                         const std::string& target, const std::string& vs, PatchPer per) {
  if (corrupt_ids.size() != text_ids.size()) {
    SweepTarget t;
    t.error = "corrupted text: " + std::to_string(corrupt_ids.size()) + " tokens, the text has " +
              std::to_string(text_ids.size()) + " (patching needs equally many)";
    return t;
  }
  SweepTarget t = sweep_target(tok, text_ids, target, vs);
  if (t.error.empty())
    t.corrupt.assign(corrupt_ids.begin(), corrupt_ids.begin() + static_cast<std::ptrdiff_t>(t.ids.size()));
  t.per = per;
  return t;
}

namespace {

// The sweep of target on r's forward of m (or of its prefix), its grid and figure; null when
// progress says stop.
template <class Model>
std::shared_ptr<const SweepData> run_sweep(const Model& m, const GptWorker::Result& r, const SweepTarget& target,
                                           AblationMode mode, const SweepProgress& progress) {
  using Trace = std::remove_cvref_t<decltype(r.clean(m))>;
  const Tokenizer& tok = *r.loaded.tokenizer;
  // The text box's forward when the sweep judges its last position, else its prefix's.
  const bool whole = target.ids == r.ids();
  const Trace prefix = whole ? Trace{} : model_forward(m, target.ids);
  const Trace& clean = whole ? r.clean(m) : prefix;
  const bool patching = !target.corrupt.empty();
  auto g = patching ? patch_sweep(m, clean, model_forward(m, target.corrupt), target.metric, target.per, progress)
                    : ablation_sweep(m, clean, target.metric, mode, progress);
  if (!g) return nullptr;
  auto d = std::make_shared<SweepData>();
  d->target = target;
  d->text_ids = r.ids();
  d->mode = mode;
  d->grid = std::move(*g);
  const std::vector<std::string> tokens = figure::display_tokens(tok, target.ids);
  d->view = patching ? figure::patch_view(m, d->grid, tok, target.metric, target.per, tokens,
                                          figure::display_tokens(tok, target.corrupt), r.loaded.path.string())
                     : figure::sweep_view(m, d->grid, tok, target.metric, mode, tokens, r.loaded.path.string());
  return d;
}

}  // namespace

SweepJob::SweepJob(std::shared_ptr<const GptWorker::Result> r, SweepTarget target, AblationMode mode,
                   std::function<void(int)> after_run) {
  const ModelFacts& c = r->loaded.facts;
  text_ids_ = r->ids();
  per_position_ = !target.corrupt.empty() && target.per == PatchPer::LayerPosition;
  total_ = c.layers * (per_position_ ? static_cast<int>(target.ids.size()) : c.heads);
  future_ =
      std::async(std::launch::async, [this, r, target = std::move(target), mode, after_run = std::move(after_run)]() {
        const SweepProgress progress = [&](int done, int) {
          done_ = done;
          if (after_run) after_run(done);
          return !cancel_.load();
        };
        if (r->loaded.hf) return run_sweep(*r->loaded.hf, *r, target, mode, progress);
        return run_sweep(*r->loaded.model, *r, target, mode, progress);
      });
}

SweepJob::~SweepJob() {
  cancel_ = true;
  if (future_.valid()) future_.wait();
}

bool SweepJob::finished() const {
  return future_.valid() && future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

std::shared_ptr<const SweepData> SweepJob::take() { return future_.get(); }

}  // namespace mhaviz::gui
