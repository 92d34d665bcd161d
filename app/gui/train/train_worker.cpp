// The Train view's worker thread (train_worker.hpp).
#include "train_worker.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "mhaviz/backend.hpp"  // set_thread_serial
#include "mhaviz/session.hpp"  // write_file_atomic
#include "train_text.hpp"

namespace mhaviz::gui {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// A published snapshot copies the curves: while training, at most every 40 ms (the window
// draws at 60 frames/s at most; a step takes some 10-50 ms).
constexpr double kPublishEvery = 0.04;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

float or_nan(const std::optional<double>& v) { return v && std::isfinite(*v) ? static_cast<float>(*v) : kNaN; }

train::TaskData task_data(const train::TrainSettings& s) {
  if (s.task == train::TaskKind::Text)
    return train::text_task(s.text_path, s.tokenizer_path, s.model.context_length, s.batch);
  return train::synthetic_task(s.task, s.model.vocab_size, s.model.context_length);
}

// B windows of T + 1 tokens of a text, spread evenly from its start to its end (the first is
// its start, what the class recognises), every target of role kOther.
train::Batch text_windows(const train::TaskData& data, int T, int B) {
  train::Batch out;
  out.B = B, out.T = T;
  const std::int64_t span = static_cast<std::int64_t>(data.text.size()) - T - 1;
  for (int b = 0; b < B; ++b) {
    const std::int64_t at = B > 1 ? span * b / (B - 1) : 0;
    out.tokens.insert(out.tokens.end(), data.text.begin() + at, data.text.begin() + at + T + 1);
  }
  out.roles.assign(static_cast<std::size_t>(B) * static_cast<std::size_t>(T), train::kOther);
  return out;
}

// The probe sequence the view shows: a text run's first lines; the induction probe's first
// sequence of its longest held-out segment (the clearest offset diagonal); else the probe's
// first.
train::Batch view_sequence(const train::Batch& probe, const train::TaskData& data) {
  if (data.kind == train::TaskKind::Text) return text_windows(data, probe.T, 1);
  int pick = 0;
  if (data.kind == train::TaskKind::Induction) pick = std::max(0, probe.B - probe.B / 3);
  train::Batch one;
  one.B = 1, one.T = probe.T;
  const std::size_t T1 = static_cast<std::size_t>(probe.T) + 1;
  one.tokens.assign(probe.tokens.begin() + static_cast<std::ptrdiff_t>(pick * T1),
                    probe.tokens.begin() + static_cast<std::ptrdiff_t>((pick + 1) * T1));
  one.roles.assign(probe.roles.begin() + static_cast<std::ptrdiff_t>(pick * probe.T),
                   probe.roles.begin() + static_cast<std::ptrdiff_t>((pick + 1) * probe.T));
  return one;
}

// The mean of the position losses whose role is `role` (kOther: every position).
double mean_loss(const std::vector<float>& losses, const std::vector<std::uint8_t>& roles, std::uint8_t role) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < losses.size() && i < roles.size(); ++i)
    if (role == train::kOther || roles[i] == role) sum += losses[i], ++n;
  return n ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

nlohmann::json number_or_null(float v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The curves as `mhaviz train --log` writes a run (one object per step; a probe's scores under
// "eval"), so that `mhaviz render --train-log` draws the app's runs too. The probe before the
// first step has no line of its own.
std::string log_text(const figure::TrainCurves& c) {
  std::string out;
  std::size_t e = 0;
  for (std::size_t k = 0; k < c.steps.size(); ++k) {
    nlohmann::json line = {{"step", c.steps[k]}, {"loss", c.loss[k]}};
    if (std::isfinite(c.loss_first[k])) line["loss_first"] = c.loss_first[k];
    if (std::isfinite(c.loss_repeat[k])) line["loss_repeat"] = c.loss_repeat[k];
    while (e < c.eval_steps.size() && c.eval_steps[e] < c.steps[k]) ++e;
    if (e < c.eval_steps.size() && c.eval_steps[e] == c.steps[k]) {
      nlohmann::json heads = nlohmann::json::object();
      for (int p = 0; p < kHeadPatternCount; ++p) {
        nlohmann::json layers = nlohmann::json::array();
        for (int l = 0; l < c.n_layer; ++l) {
          nlohmann::json row = nlohmann::json::array();
          for (int h = 0; h < c.n_head; ++h)
            row.push_back(
                number_or_null(c.eval_scores[e][static_cast<std::size_t>((l * c.n_head + h) * kHeadPatternCount + p)]));
          layers.push_back(row);
        }
        heads[std::string(head_pattern_name(kHeadPatterns[p]))] = layers;
      }
      line["eval"] = {{"heads", heads}};
    }
    out += line.dump() + "\n";
  }
  return out;
}

}  // namespace

TrainWorker::TrainWorker(Plan plan) : plan_(std::move(plan)), trainer_(plan_.settings, task_data(plan_.settings)) {
  plan_.settings = trainer_.settings();  // a text brings its vocabulary
  const train::GptTrainConfig& c = plan_.settings.model;
  figure::TrainCurves& cv = mine_.curves;
  cv.n_layer = c.n_layers, cv.n_head = c.n_heads, cv.vocab = c.vocab_size, cv.total_steps = plan_.steps;
  mine_.target = plan_.steps;
  probe_ = train::make_probe(trainer_.data(), c.context_length);
  sequence_ = view_sequence(probe_, trainer_.data());
  // A text's probe (random halves repeated) would tell its loss on no text at all.
  ablated_ =
      plan_.settings.task == train::TaskKind::Text ? text_windows(trainer_.data(), c.context_length, 16) : probe_;
  mine_.probe_tokens.assign(sequence_.tokens.begin(), sequence_.tokens.end() - 1);
  mine_.probe_names = task_token_names(trainer_.data(),
                                       std::vector<std::int32_t>(sequence_.tokens.begin(), sequence_.tokens.end() - 1));
  measure();
  publish(true);
  thread_ = std::thread([this] { loop(); });
}

TrainWorker::~TrainWorker() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void TrainWorker::run() {
  {
    std::lock_guard lk(mu_);
    running_ = true;
  }
  cv_.notify_all();
}

void TrainWorker::pause() {
  {
    std::lock_guard lk(mu_);
    running_ = false;
    steps_asked_ = 0;
    save_asked_ = true;
  }
  cv_.notify_all();
}

void TrainWorker::step() {
  {
    std::lock_guard lk(mu_);
    running_ = false;
    ++steps_asked_;
    save_asked_ = true;
  }
  cv_.notify_all();
}

void TrainWorker::ablate(int layer, int head) {
  {
    std::lock_guard lk(mu_);
    ablate_asked_ = {layer, head};
  }
  cv_.notify_all();
}

std::shared_ptr<const TrainSnapshot> TrainWorker::snapshot() const {
  std::lock_guard lk(mu_);
  return published_;
}

bool TrainWorker::busy() const {
  std::lock_guard lk(mu_);
  return working_ || running_ || steps_asked_ > 0 || save_asked_ || ablate_asked_.has_value();
}

// [SECTION] The thread
void TrainWorker::loop() {
  if (plan_.nice > 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), plan_.nice);
  if (plan_.alone) set_thread_serial(true);
  for (;;) {
    bool train = false, save_now = false;
    std::optional<std::pair<int, int>> ablation;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return quit_ || running_ || steps_asked_ > 0 || save_asked_ || ablate_asked_; });
      if (quit_) break;
      working_ = true;
      ablation = ablate_asked_;
      ablate_asked_.reset();
      if (!ablation) {
        if (trainer_.steps_done() >= plan_.steps) running_ = false, steps_asked_ = 0;
        train = running_ || steps_asked_ > 0;
        if (steps_asked_ > 0) --steps_asked_;
        save_now = !train && save_asked_;
        if (save_now) save_asked_ = false;
      }
      mine_.running = running_;
    }
    if (ablation) {
      do_ablation(ablation->first, ablation->second);
      publish(true);
    } else if (train) {
      train_one();
      const std::int64_t done = trainer_.steps_done();
      const bool last = done >= plan_.steps;
      if (plan_.pause_at > 0 && done == plan_.pause_at) {
        std::lock_guard lk(mu_);
        running_ = false, steps_asked_ = 0, save_asked_ = true;
        mine_.running = false;
      }
      if (last) {
        std::lock_guard lk(mu_);
        running_ = false, steps_asked_ = 0, save_asked_ = false;
        mine_.running = false;
      }
      if (last || (plan_.save_every > 0 && done % plan_.save_every == 0)) save();
      publish(last);
    } else if (save_now) {
      if (trainer_.steps_done() != mine_.saved_step) save();
      publish(true);
    }
    std::lock_guard lk(mu_);
    working_ = false;  // what the command did is published
  }
  // Closing: the steps trained since the last checkpoint are written.
  mine_.running = false;
  if (trainer_.steps_done() != mine_.saved_step) save();
  publish(true);
}

void TrainWorker::train_one() {
  if (started_ == 0) started_ = now_s(), started_step_ = trainer_.steps_done();
  const train::StepStats s = trainer_.step();
  mine_.step = s.step;
  mine_.curves.add_step(s.step, static_cast<float>(s.losses.loss), or_nan(s.losses.first), or_nan(s.losses.repeat));
  const double elapsed = now_s() - started_;
  if (elapsed > 0)
    mine_.tokens_per_s = static_cast<double>(s.step - started_step_) * plan_.settings.batch *
                         plan_.settings.model.context_length / elapsed;
  if (plan_.eval_every > 0 && (s.step % plan_.eval_every == 0 || s.step == plan_.steps)) measure();
  // A pause restarts the clock: tokens/s is of the training, not of the time paused.
  std::lock_guard lk(mu_);
  if (!running_) started_ = 0;
}

void TrainWorker::measure() {
  const train::EvalStats e = trainer_.evaluate();
  auto p = std::make_shared<TrainProbe>();
  p->step = trainer_.steps_done();
  const train::GptTrainConfig& c = plan_.settings.model;
  p->scores.assign(static_cast<std::size_t>(c.n_layers * c.n_heads) * kHeadPatternCount, kNaN);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      for (int k = 0; k < kHeadPatternCount; ++k)
        if (const auto& v =
                e.heads[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)][static_cast<std::size_t>(k)])
          p->scores[static_cast<std::size_t>((l * c.n_heads + h) * kHeadPatternCount + k)] = *v;
  train::forward(trainer_.model(), sequence_.tokens, 1, acts_);
  for (const auto& layer : acts_.layers) p->weights.insert(p->weights.end(), layer.att.begin(), layer.att.end());
  mine_.curves.eval_steps.push_back(p->step);
  mine_.curves.eval_scores.push_back(p->scores);
  mine_.probes.push_back(std::move(p));
}

void TrainWorker::save() {
  try {
    std::filesystem::create_directories(plan_.model_file.parent_path());
    trainer_.save(plan_.model_file);
    write_file_atomic((plan_.model_file.parent_path() / "log.jsonl").string(), log_text(mine_.curves));
    mine_.checkpoint = plan_.model_file.string();
    mine_.saved_step = trainer_.steps_done();
    mine_.error.clear();
  } catch (const std::exception& e) {
    mine_.error = std::string("checkpoint not written: ") + e.what();
  }
}

// Head `head` of layer `layer` ablated: its context zeroed before out_proj, which is out_proj's
// columns of that head set to zero (out_proj.weight is [out, in]; the head's context is the
// input columns [head·hd, (head + 1)·hd)).
void TrainWorker::do_ablation(int layer, int head) {
  const train::GptTrainConfig& c = plan_.settings.model;
  if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads) return;
  TrainAblation a;
  a.layer = layer, a.head = head, a.step = trainer_.steps_done();
  train::forward(trainer_.model(), ablated_.tokens, ablated_.B, acts_);
  a.loss = mean_loss(acts_.losses, ablated_.roles, train::kOther);
  a.loss_repeat = mean_loss(acts_.losses, ablated_.roles, train::kRepeat);
  train::GptTrainModel cut = trainer_.model();
  const std::span<float> w = cut.values("trf_blocks." + std::to_string(layer) + ".att.out_proj.weight");
  const int C = c.emb_dim, hd = c.head_dim();
  for (int o = 0; o < C; ++o) std::fill_n(w.begin() + static_cast<std::ptrdiff_t>(o * C + head * hd), hd, 0.0f);
  train::forward(cut, ablated_.tokens, ablated_.B, acts_);
  a.loss_ablated = mean_loss(acts_.losses, ablated_.roles, train::kOther);
  a.loss_repeat_ablated = mean_loss(acts_.losses, ablated_.roles, train::kRepeat);
  mine_.ablation = a;
}

void TrainWorker::publish(bool force) {
  const double t = now_s();
  if (!force && t - last_publish_ < kPublishEvery) return;
  last_publish_ = t;
  auto snap = std::make_shared<const TrainSnapshot>(mine_);
  {
    std::lock_guard lk(mu_);
    published_ = std::move(snap);
  }
  ++generation_;
}

}  // namespace mhaviz::gui
