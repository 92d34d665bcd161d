// A trained model, its tokenizer and its latest forward, computed on a worker thread so that
// the thread that draws never waits: open() and set_ids() return at once, status() and
// result() only copy a few fields under a lock. The model is either kind the core reads: a
// GPT-2-layout folder or the book's GPTModel (gpt.hpp), or a Qwen3, Qwen2, Llama or Gemma 3
// folder (hf_model.hpp, is_hf_model_folder); a result answers the same questions for both
// (ModelFacts, each layer's weights and mask, the ids; its trace for the rest).
//
// Results are published, never changed afterwards: result() hands out a shared_ptr to an
// immutable snapshot. The worker computes into one of two traces and publishes it; the next
// forward goes into the other one, reusing its rows as far as its ids still agree with the
// new ones (gpt_forward's and hf_forward's incremental recompute), or into a fresh trace
// while a reader still holds the old one. So an edit at the end of a long text recomputes
// only its last rows, and no published trace is ever copied.
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
#include "mhaviz/hf_model.hpp"
#include "mhaviz/prompt.hpp"
#include "mhaviz/tokenizer.hpp"

namespace mhaviz {

// What a view says of a model, whichever kind it is.
struct ModelFacts {
  bool hf = false;            // a Qwen/Llama/Gemma folder (hf_model.hpp); false: a GPT (gpt.hpp)
  std::string model_type;     // config.json's: "gpt2", "qwen3", "gemma3_text"...; "book" for the book's GPTModel
  std::string architecture;   // "GPT-2 layout", "the book's GPTModel", "Qwen3", "Gemma 3"...
  int layers = 0, heads = 0;  // query heads
  int kv_heads = 0;           // K/V heads: query head h reads K/V head h / (heads / kv_heads)
  int width = 0, head_dim = 0, vocab = 0;
  int context = 0;          // most tokens a forward takes
  std::vector<int> window;  // (layers) the sliding window W of each layer; 0: full attention
  std::int64_t parameters = 0;
  int sliding_layers() const;  // layers with a window
  int sliding_window() const;  // the first layer's window that is not 0; 0: none
};
ModelFacts model_facts(const GptModel& m);
ModelFacts model_facts(const HfModel& m);

class GptWorker {
 public:
  // A loaded model and the tokenizer found beside it: exactly one of model and hf is set.
  struct Loaded {
    std::shared_ptr<const GptModel> model;  // a GPT-2-layout folder or the book's GPTModel
    std::shared_ptr<const HfModel> hf;      // a Qwen3, Qwen2, Llama or Gemma 3 folder
    std::shared_ptr<const Tokenizer> tokenizer;
    std::filesystem::path path;  // as given to open()
    ModelFacts facts;
    // What a prompt may hold: the context, and ids below the model's vocabulary.
    PromptLimits limits() const { return {facts.context, facts.vocab}; }
  };
  // One forward's result: the trace of the loaded model's kind (trace or hf_trace), whose
  // ids are the ids it was computed for.
  struct Result {
    Loaded loaded;
    std::shared_ptr<const GptTrace> trace;    // a GPT's
    std::shared_ptr<const HfTrace> hf_trace;  // a Qwen/Llama/Gemma model's
    double forward_ms = 0;
    int recomputed_from = 0;       // first row this forward computed (tokens(): none)
    std::uint64_t generation = 0;  // increases with every published result
    // The trace of the model's kind, named by the model (for code written once for both).
    const GptTrace& clean(const GptModel&) const { return *trace; }
    const HfTrace& clean(const HfModel&) const { return *hf_trace; }
    // The same questions of either trace.
    const std::vector<int>& ids() const { return trace ? trace->ids : hf_trace->ids; }
    int tokens() const { return static_cast<int>(ids().size()); }
    const Tensor& weights(int layer) const;  // (1, H, T, T) of a layer
    AttentionMask mask(int layer) const;     // which keys that layer's queries saw
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

  // Loads path on the worker: an HF folder (is_hf_model_folder) with load_hf_model, else
  // load_gpt and prepare_gpt_forward; then Tokenizer::from_folder. A load under way is
  // cancelled (an HF folder's load reports no progress and is dropped when it ends). On
  // failure the current model stays and status().error says why.
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
  // The trace a forward of ids writes (taken under the lock), computed outside it.
  std::shared_ptr<GptTrace> gpt_work(const std::vector<int>& ids);
  std::shared_ptr<HfTrace> hf_work();

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
  std::shared_ptr<GptTrace> current_;               // the published result's trace
  std::shared_ptr<GptTrace> spare_;                 // the one before: the next forward writes it if nobody reads it
  std::shared_ptr<HfTrace> hf_current_, hf_spare_;  // the same for a Qwen/Llama/Gemma model
  std::thread thread_;
};

}  // namespace mhaviz
