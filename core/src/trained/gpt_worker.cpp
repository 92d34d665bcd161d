#include "mhaviz/gpt_worker.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "mhaviz/hf_model.hpp"
#include "mhaviz/kernel_tuning.hpp"

namespace mhaviz {

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

// [SECTION] Facts of either kind
int ModelFacts::sliding_layers() const {
  return static_cast<int>(std::count_if(window.begin(), window.end(), [](int w) { return w > 0; }));
}

int ModelFacts::sliding_window() const {
  const auto it = std::find_if(window.begin(), window.end(), [](int w) { return w > 0; });
  return it == window.end() ? 0 : *it;
}

ModelFacts model_facts(const GptModel& m) {
  const GptConfig& c = m.config;
  ModelFacts f;
  f.model_type = m.layout == GptLayout::HuggingFace ? "gpt2" : "book";
  f.architecture = m.layout == GptLayout::HuggingFace ? "GPT-2 layout"
                   : c.attn_only                      ? "the book's GPTModel, attention-only"
                                                      : "the book's GPTModel";
  f.layers = c.n_layer;
  f.heads = f.kv_heads = c.n_head;
  f.width = c.n_embd;
  f.head_dim = c.head_dim();
  f.vocab = c.vocab_size;
  f.context = c.n_ctx;
  f.window.assign(static_cast<std::size_t>(c.n_layer), 0);
  f.parameters = m.parameter_count();
  return f;
}

ModelFacts model_facts(const HfModel& m) {
  const HfConfig& c = m.config;
  ModelFacts f;
  f.hf = true;
  f.model_type = c.model_type;
  f.architecture = std::string(hf_arch_name(c.arch));
  f.layers = c.num_hidden_layers;
  f.heads = c.num_attention_heads;
  f.kv_heads = c.num_key_value_heads;
  f.width = c.hidden_size;
  f.head_dim = c.head_dim;
  f.vocab = c.vocab_size;
  // A config without max_position_embeddings limits nothing (as `dump --model` reads it).
  f.context = c.max_position_embeddings > 0 ? c.max_position_embeddings : 1 << 30;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    f.window.push_back(c.sliding[static_cast<std::size_t>(l)] ? c.sliding_window : 0);
  f.parameters = m.parameter_count();
  return f;
}

const Tensor& GptWorker::Result::weights(int layer) const {
  const auto l = static_cast<std::size_t>(layer);
  return trace ? trace->layers.at(l).weights : hf_trace->layers.at(l).weights;
}

AttentionMask GptWorker::Result::mask(int layer) const {
  const auto l = static_cast<std::size_t>(layer);
  return trace ? trace->layers.at(l).mask : hf_trace->layers.at(l).mask;
}

GptWorker::GptWorker() : thread_([this] { run(); }) {}

GptWorker::~GptWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cancel_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GptWorker::open(const std::filesystem::path& path) {
  {
    std::lock_guard lock(mu_);
    pending_open_ = path;
    cancel_ = status_.loading;  // a load under way gives way to this one
  }
  cv_.notify_all();
}

void GptWorker::cancel_open() {
  std::lock_guard lock(mu_);
  pending_open_.reset();
  if (status_.loading) cancel_ = true;
}

void GptWorker::set_text(std::string text, PromptOptions options) { request(Request{std::move(text), options, {}}); }

void GptWorker::set_ids(std::vector<int> ids) { request(Request{std::nullopt, {}, std::move(ids)}); }

void GptWorker::request(Request r) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(r);
  }
  cv_.notify_all();
}

GptWorker::Status GptWorker::status() const {
  std::lock_guard lock(mu_);
  Status s = status_;
  if (s.computing) s.computing_ms = ms_since(compute_start_);
  s.idle = !busy_ && !pending_open_ && !pending_;
  return s;
}

std::optional<GptWorker::Loaded> GptWorker::loaded() const {
  std::lock_guard lock(mu_);
  return loaded_;
}

std::shared_ptr<const GptWorker::Result> GptWorker::result() const {
  std::lock_guard lock(mu_);
  return result_;
}

void GptWorker::wait_idle() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !busy_ && !pending_open_ && !pending_; });
}

// [SECTION] worker thread
void GptWorker::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || pending_open_ || pending_; });
    if (stop_) return;
    busy_ = true;
    if (pending_open_) {
      const std::filesystem::path path = *pending_open_;
      pending_open_.reset();
      cancel_ = false;
      // Loading from here on, under the same lock: a cancel_open() from now on reaches it.
      status_.loading = true;
      status_.loading_path = path;
      status_.load_fraction = 0;
      lock.unlock();
      do_open(path);
    } else {
      const Request r = std::move(*pending_);
      pending_.reset();
      lock.unlock();
      do_forward(r);
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void GptWorker::do_open(const std::filesystem::path& path) {
  auto finish = [&](const std::string& error) {
    std::lock_guard lock(mu_);
    status_.loading = false;
    status_.load_fraction = 0;
    if (!error.empty()) status_.error = error;
  };
  try {
    Loaded l;
    l.path = path;
    if (is_hf_model_folder(path)) {
      auto model = std::make_shared<const HfModel>(load_hf_model(path));
      l.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_folder(model->folder, model->config.vocab_size));
      l.facts = model_facts(*model);
      l.hf = std::move(model);
      // load_hf_model has no progress to ask: a cancel during it drops the model it read.
      if (cancel_) throw LoadCancelled("cancelled");
    } else {
      auto model = std::make_shared<GptModel>(load_gpt(path, [this](std::uint64_t done, std::uint64_t total) {
        std::lock_guard lock(mu_);
        status_.load_fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
        return !cancel_.load();
      }));
      l.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_folder(model->folder, model->config.vocab_size));
      prepare_gpt_forward(*model);
      l.facts = model_facts(*model);
      l.model = std::move(model);
    }
    std::lock_guard lock(mu_);
    loaded_ = std::move(l);
    // Traces of the old model must never be reused for the new one, even at the same address.
    current_.reset();
    spare_.reset();
    hf_current_.reset();
    hf_spare_.reset();
    status_.loading = false;
    status_.load_fraction = 0;
    status_.error.clear();
    if (!pending_ && last_) pending_ = last_;  // the same text on the new model
  } catch (const LoadCancelled&) {
    finish("");
  } catch (const std::exception& e) {
    finish(e.what());
  }
}

// Encodes r's text without holding the lock (a long pasted text takes seconds, and the
// drawing thread takes the lock to read status and results). False: the text has an error,
// now in status.
bool GptWorker::encode(const Request& r, const Loaded& model, std::vector<int>& ids) {
  {
    std::lock_guard lock(mu_);
    status_.tokenizing = true;
  }
  Prompt p = encode_prompt(*model.tokenizer, *r.text, r.options, model.limits());
  std::lock_guard lock(mu_);
  status_.tokenizing = false;
  if (!p.error.empty()) {
    status_.error = p.error;
    return false;
  }
  ids = std::move(p.ids);
  return true;
}

// The older of the two GPT traces, unless a reader still holds it; else a copy of the newest
// when the new ids start as its ids do (made here, outside the lock): copying rows costs
// less than computing them again, and typing faster than the forward while the app still
// shows the trace before would otherwise recompute every row.
std::shared_ptr<GptTrace> GptWorker::gpt_work(const std::vector<int>& ids) {
  std::shared_ptr<GptTrace> work;
  std::shared_ptr<const GptTrace> base;
  {
    std::lock_guard lock(mu_);
    if (spare_ && spare_.use_count() == 1)
      work = spare_;
    else if (current_ && !current_->ids.empty() && !ids.empty() && current_->ids.front() == ids.front())
      base = current_;
    spare_.reset();
  }
  if (!work) work = base ? std::make_shared<GptTrace>(*base) : std::make_shared<GptTrace>();
  return work;
}

// The older HF trace unless a reader holds it (its buffers reused), else a fresh one.
std::shared_ptr<HfTrace> GptWorker::hf_work() {
  std::lock_guard lock(mu_);
  std::shared_ptr<HfTrace> work = hf_spare_ && hf_spare_.use_count() == 1 ? hf_spare_ : std::make_shared<HfTrace>();
  hf_spare_.reset();
  return work;
}

void GptWorker::do_forward(const Request& r) {
  std::optional<Loaded> model;
  {
    std::lock_guard lock(mu_);
    last_ = r;
    model = loaded_;
    if (!model) {
      status_.error = "no model is open";
      return;
    }
  }
  std::vector<int> ids = r.ids;
  if (r.text && !encode(r, *model, ids)) return;
  std::shared_ptr<GptTrace> work;
  std::shared_ptr<HfTrace> hf;
  {
    std::lock_guard lock(mu_);
    status_.computing = true;
    compute_start_ = Clock::now();
  }
  // A fresh settings directory's first large forward would calibrate the kernels inside it (up
  // to a second) and show that as the forward's time: the largest product (an MLP's, or the
  // LM head's one row) settles the record before the clock starts.
  const std::int64_t T = static_cast<std::int64_t>(ids.size());
  if (model->hf) {
    const HfConfig& c = model->hf->config;
    tune_kernels_for(std::max(T * c.hidden_size * c.intermediate_size, std::int64_t{c.hidden_size} * c.vocab_size));
  } else {
    const GptModel& g = *model->model;
    const std::int64_t C = g.config.n_embd, F = g.blocks.empty() ? 0 : g.blocks[0].fc.out;
    tune_kernels_for(std::max(T * C * std::max(3 * C, F), C * g.config.vocab_size));
  }
  const auto t0 = Clock::now();
  std::string error;
  try {
    if (model->hf) {
      hf = hf_work();
      hf_forward(*model->hf, ids, *hf);
    } else {
      work = gpt_work(ids);
      gpt_forward(*model->model, ids, *work);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double ms = ms_since(t0);
  std::lock_guard lock(mu_);
  status_.computing = false;
  if (!error.empty()) {
    status_.error = error;  // the trace is dropped: a trace a forward stopped in is never reused
    return;
  }
  status_.error.clear();
  auto res = std::make_shared<Result>();
  res->loaded = *model;
  res->trace = work;
  res->hf_trace = hf;
  res->forward_ms = ms;
  res->recomputed_from = work ? work->recomputed_from : hf ? hf->recomputed_from : 0;
  res->generation = ++status_.generation;
  if (work) {
    spare_ = std::move(current_);
    current_ = std::move(work);
  } else {
    hf_spare_ = std::move(hf_current_);
    hf_current_ = std::move(hf);
  }
  result_ = std::move(res);
}

}  // namespace mhaviz
