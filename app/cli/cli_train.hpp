// `mhaviz train`: a small GPT trained from scratch on the induction, copy or text task
// (core: mhaviz/trainer.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace mhaviz::cli {

struct TrainOptions {
  std::vector<std::string> task{"induction"};  // induction | copy | text FILE
  std::string tokenizer;                       // --tokenizer DIR (text): GPT-2's tokenizer, else characters
  int layers = 2, heads = 4, d_model = 64, vocab = 64, context = 32, batch = 64;
  bool attn_only = false, full = false, qkv_bias = false;
  double lr = 1e-2, weight_decay = 0.1;
  std::int64_t steps = 2000;
  std::uint64_t seed = 123;
  int eval_every = 50;
  std::string output, log, dump_batches, backend = "auto";
  bool resume = false, quiet = false;
  const CLI::App* app = nullptr;  // the subcommand, to tell which options were given
};
void add_train(CLI::App& app, TrainOptions& o);
int run_train(const TrainOptions& o);

}  // namespace mhaviz::cli
