#include "mhaviz/gpt_worker.hpp"

#include <chrono>
#include <stdexcept>

namespace mhaviz {

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

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
    auto model = std::make_shared<GptModel>(load_gpt(path, [this](std::uint64_t done, std::uint64_t total) {
      std::lock_guard lock(mu_);
      status_.load_fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
      return !cancel_.load();
    }));
    auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_folder(model->folder));
    prepare_gpt_forward(*model);
    std::lock_guard lock(mu_);
    loaded_ = Loaded{std::move(model), std::move(tokenizer), path};
    // Traces of the old model must never be reused for the new one, even at the same address.
    current_.reset();
    spare_.reset();
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
  const GptConfig& c = model.model->config;
  Prompt p = encode_prompt(*model.tokenizer, *r.text, r.options, {c.n_ctx, c.vocab_size});
  std::lock_guard lock(mu_);
  status_.tokenizing = false;
  if (!p.error.empty()) {
    status_.error = p.error;
    return false;
  }
  ids = std::move(p.ids);
  return true;
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
  std::shared_ptr<const GptTrace> base;  // copied into work when work is not the spare
  {
    std::lock_guard lock(mu_);
    // The older of the two traces, unless a reader still holds it.
    if (spare_ && spare_.use_count() == 1)
      work = spare_;
    else if (current_ && !current_->ids.empty() && !ids.empty() && current_->ids.front() == ids.front())
      base = current_;
    spare_.reset();
    status_.computing = true;
    compute_start_ = Clock::now();
  }
  const auto t0 = Clock::now();
  // Else a copy of the newest trace when the new ids start as its ids do (made here, outside
  // the lock): copying rows costs less than computing them again, and typing faster than the
  // forward while the app still shows the trace before would otherwise recompute every row.
  if (!work) work = base ? std::make_shared<GptTrace>(*base) : std::make_shared<GptTrace>();
  std::string error;
  try {
    gpt_forward(*model->model, ids, *work);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double ms = ms_since(t0);
  std::lock_guard lock(mu_);
  status_.computing = false;
  if (!error.empty()) {
    status_.error = error;  // `work` is dropped: a trace a forward stopped in is never reused
    return;
  }
  status_.error.clear();
  auto res = std::make_shared<Result>();
  res->loaded = *model;
  res->trace = work;
  res->forward_ms = ms;
  res->recomputed_from = work->recomputed_from;
  res->generation = ++status_.generation;
  spare_ = std::move(current_);
  current_ = std::move(work);
  result_ = std::move(res);
}

}  // namespace mhaviz
