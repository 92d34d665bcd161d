// A trained GPT, its tokenizer and its latest forward, computed on a worker thread so that
// the thread that draws never waits: open() and set_ids() return at once, status() and
// result() only copy a few fields under a lock.
//
// Results are published, never changed afterwards: result() hands out a shared_ptr to an
// immutable snapshot. The worker computes into one of two traces and publishes it; the next
// forward goes into the other one, reusing its rows as far as its ids still agree with the
// new ones (gpt_forward's incremental recompute), or into a fresh trace while a reader
// still holds the old one. So an edit at the end of a long text recomputes only its last
// rows, and no published trace is ever copied.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mhaviz/gpt.hpp"
#include "mhaviz/gpt_forward.hpp"
#include "mhaviz/prompt.hpp"
#include "mhaviz/tokenizer.hpp"

namespace mhaviz {

class GptWorker {
 public:
  // A loaded model and the tokenizer found beside it.
  struct Loaded {
    std::shared_ptr<const GptModel> model;
    std::shared_ptr<const Tokenizer> tokenizer;
    std::filesystem::path path;  // as given to open()
  };
  // One forward's result: trace->ids are the ids it was computed for.
  struct Result {
    Loaded loaded;
    std::shared_ptr<const GptTrace> trace;
    double forward_ms = 0;
    int recomputed_from = 0;       // first row this forward computed (trace->tokens(): none)
    std::uint64_t generation = 0;  // increases with every published result
  };
  struct Status {
    bool loading = false;
    std::filesystem::path loading_path;
    double load_fraction = 0;  // of the weight bytes read, while loading
    bool tokenizing = false;   // encoding a text, without the lock: status() and result() answer
    bool computing = false;
    double computing_ms = 0;  // how long the forward under way has run
    std::string error;        // the last failed open or forward (one line); cleared by the next success
    std::uint64_t generation = 0;
    bool idle = true;  // no load or forward under way or waiting (what wait_idle waits for)
  };

  GptWorker();
  ~GptWorker();  // cancels a load, waits for a forward to end, joins the thread
  GptWorker(const GptWorker&) = delete;
  GptWorker& operator=(const GptWorker&) = delete;

  // Loads path (load_gpt, Tokenizer::from_folder, prepare_gpt_forward) on the worker. A load
  // under way is cancelled. On failure the current model stays and status().error says why.
  void open(const std::filesystem::path& path);
  void cancel_open();
  // Text to encode with the model's tokenizer (encode_prompt, prompt.hpp) and run next. Its
  // errors (empty text, more tokens than the context, ...) go to status().error in
  // encode_prompt's words.
  void set_text(std::string text, PromptOptions options = {});
  // Ids to run next (each in [0, vocab), 1 to n_ctx of them, else status().error).
  // Only the newest request is kept: one made while a forward runs replaces any still
  // waiting. A newly opened model reruns the last request (text is tokenized anew).
  void set_ids(std::vector<int> ids);

  Status status() const;
  std::optional<Loaded> loaded() const;
  std::shared_ptr<const Result> result() const;  // null before the first forward
  // Blocks until no load or forward is under way or waiting (tests, command line).
  void wait_idle() const;

 private:
  void run();
  void do_open(const std::filesystem::path& path);
  struct Request {
    std::optional<std::string> text;  // set: tokenize this; else run ids
    PromptOptions options;
    std::vector<int> ids;
  };
  bool encode(const Request& r, const Loaded& model, std::vector<int>& ids);
  void request(Request r);
  void do_forward(const Request& r);

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::optional<std::filesystem::path> pending_open_;
  std::optional<Request> pending_;
  std::optional<Request> last_;  // rerun after a new model loads
  bool busy_ = false, stop_ = false;
  Status status_;
  std::optional<Loaded> loaded_;
  std::shared_ptr<const Result> result_;
  std::atomic<bool> cancel_{false};
  std::chrono::steady_clock::time_point compute_start_;
  std::shared_ptr<GptTrace> current_;  // the published result's trace
  std::shared_ptr<GptTrace> spare_;    // the one before: the next forward writes it if nobody reads it
  std::thread thread_;
};

}  // namespace mhaviz
