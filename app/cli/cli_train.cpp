// `mhaviz train`: runs a Trainer (core) with a progress line, a JSONL log, the batches as .npy,
// and a checkpoint written at the end or on Ctrl-C, all atomically.
//
// Index
//   [SECTION] options
//   [SECTION] settings: a fresh run, or a resumed one that the options must match
//   [SECTION] outputs: the log and the batches
//   [SECTION] progress
//   [SECTION] the run
#include "cli_train.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "mhaviz/backend.hpp"
#include "mhaviz/session.hpp"  // write_file_atomic, SessionError
#include "mhaviz/trainer.hpp"

namespace mhaviz::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;
using train::TrainError;

// [SECTION] options

void add_train(CLI::App& app, TrainOptions& o) {
  auto* sub = app.add_subcommand("train", "Train a small GPT from scratch and watch its heads specialise");
  o.app = sub;
  sub->add_option("--task", o.task,
                  "induction (default), copy, or text FILE (the file's text, by characters or --tokenizer)")
      ->expected(1, 2);
  sub->add_option(
      "--tokenizer", o.tokenizer,
      "With --task text: a folder with GPT-2's vocab.json + merges.txt or tokenizer.json (default: characters)");
  sub->add_option("--layers", o.layers, "Transformer blocks")->capture_default_str();
  sub->add_option("--heads", o.heads, "Attention heads per block")->capture_default_str();
  sub->add_option("--d-model", o.d_model, "Embedding width (a multiple of --heads)")->capture_default_str();
  sub->add_flag("--attn-only", o.attn_only, "Attention-only blocks, x += att(x), no LayerNorm or MLP (the default)");
  sub->add_flag("--full", o.full, "The book's GPTModel blocks: LayerNorm, attention, LayerNorm, MLP; a final norm");
  sub->add_flag("--qkv-bias", o.qkv_bias, "Biases on W_query, W_key, W_value");
  sub->add_option("--vocab", o.vocab, "Vocabulary of the induction and copy tasks")->capture_default_str();
  sub->add_option("--context", o.context, "Tokens per sequence T")->capture_default_str();
  sub->add_option("--batch", o.batch, "Sequences per step")->capture_default_str();
  sub->add_option("--lr", o.lr, "AdamW learning rate")->capture_default_str();
  sub->add_option("--weight-decay", o.weight_decay, "AdamW weight decay (every parameter)")->capture_default_str();
  sub->add_option("--steps", o.steps, "Steps in all (with --resume: including those done); 0 writes the initial model")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "torch.manual_seed of the parameters, and the seed of the batches")
      ->capture_default_str();
  sub->add_option("--eval-every", o.eval_every, "Detector scores and probe losses every K steps (0: never)")
      ->capture_default_str();
  sub->add_option("-o,--output", o.output, "The model: MODEL.safetensors, with config.json and MODEL.adamw beside it")
      ->required();
  sub->add_option("--log", o.log, "One JSON object per step (FILE.jsonl)");
  sub->add_option("--dump-batches", o.dump_batches,
                  "The batches trained on, int64 (steps, batch, context + 1) (FILE.npy)");
  sub->add_flag("--resume", o.resume, "Continue the run saved in -o (settings, AdamW's state and step from its files)");
  sub->add_option("--backend", o.backend, "Products in: auto, avx512, avx2 or openblas (as mhaviz bench)")
      ->capture_default_str();
  sub->add_flag("--quiet", o.quiet, "No progress line");
}

namespace {

bool given(const TrainOptions& o, const char* name) { return o.app && o.app->count(name) > 0; }

void choose_backend(const std::string& name) {
  if (name == "auto") return;
  Backend b{};
  if (!parse_backend(name, b)) throw TrainError("--backend: '" + name + "' is not one of auto, avx512, avx2, openblas");
  if (!set_backend(b))
    throw TrainError("--backend: '" + name + "' needs a CPU with " +
                     (b == Backend::Avx512 ? "AVX-512F" : "AVX2 and FMA") + ", which this one lacks");
}

// [SECTION] settings: a fresh run, or a resumed one that the options must match

train::TaskKind task_of(const TrainOptions& o, std::string& file) {
  train::TaskKind k{};
  if (o.task.empty() || !train::parse_task(o.task[0], k))
    throw TrainError("--task: '" + (o.task.empty() ? std::string() : o.task[0]) +
                     "' is not one of induction, copy, text FILE");
  if (k == train::TaskKind::Text && o.task.size() < 2)
    throw TrainError("--task: text needs the text's file (--task text story.txt)");
  if (k != train::TaskKind::Text && o.task.size() > 1)
    throw TrainError("--task: " + o.task[0] + " takes no file ('" + o.task[1] + "')");
  if (k != train::TaskKind::Text && given(o, "--tokenizer")) throw TrainError("--tokenizer: only with --task text");
  if (k == train::TaskKind::Text && given(o, "--vocab"))
    throw TrainError("--vocab: with --task text the vocabulary is the text's (its characters, or the tokenizer's)");
  file = o.task.size() > 1 ? o.task[1] : std::string();
  return k;
}

train::Trainer fresh(const TrainOptions& o) {
  train::TrainSettings s;
  std::string file;
  s.task = task_of(o, file);
  if (o.attn_only && o.full) throw TrainError("--full: give --attn-only or --full, not both");
  s.model.n_layers = o.layers;
  s.model.n_heads = o.heads;
  s.model.emb_dim = o.d_model;
  s.model.context_length = o.context;
  s.model.vocab_size = o.vocab;
  s.model.attn_only = !o.full;
  s.model.qkv_bias = o.qkv_bias;
  s.batch = o.batch;
  s.lr = o.lr;
  s.weight_decay = o.weight_decay;
  s.seed = o.seed;
  train::validate_settings(s);  // sizes first: they name the option the user typed
  train::TaskData data = s.task == train::TaskKind::Text ? train::text_task(file, o.tokenizer, o.context, o.batch)
                                                         : train::synthetic_task(s.task, o.vocab, o.context);
  s.text_path = data.text_path;
  s.tokenizer_path = data.tokenizer_path;
  return train::Trainer(s, std::move(data));
}

// A resumed run takes its settings from its files; an option given anyway must agree.
void check_resumed(const TrainOptions& o, const train::TrainSettings& s) {
  auto check = [&](const char* name, const std::string& mine, const std::string& theirs) {
    if (given(o, name) && mine != theirs)
      throw TrainError(std::string(name) + ": " + mine + " does not match the run being resumed (" + theirs +
                       "; --resume continues a run with the settings it began with)");
  };
  auto str = [](auto v) {
    std::ostringstream ss;
    ss << v;
    return ss.str();
  };
  if (given(o, "--task")) {
    std::string file;
    const train::TaskKind k = task_of(o, file);
    const std::string mine = std::string(train::task_name(k)) + (file.empty() ? "" : " " + fs::absolute(file).string());
    check("--task", mine, std::string(train::task_name(s.task)) + (s.text_path.empty() ? "" : " " + s.text_path));
  }
  if (given(o, "--tokenizer")) check("--tokenizer", fs::absolute(o.tokenizer).string(), s.tokenizer_path);
  check("--layers", str(o.layers), str(s.model.n_layers));
  check("--heads", str(o.heads), str(s.model.n_heads));
  check("--d-model", str(o.d_model), str(s.model.emb_dim));
  check("--vocab", str(o.vocab), str(s.model.vocab_size));
  check("--context", str(o.context), str(s.model.context_length));
  check("--batch", str(o.batch), str(s.batch));
  check("--lr", str(o.lr), str(s.lr));
  check("--weight-decay", str(o.weight_decay), str(s.weight_decay));
  check("--seed", str(o.seed), str(s.seed));
  check("--attn-only", "attention-only", s.model.attn_only ? "attention-only" : "full");
  check("--full", "full", s.model.attn_only ? "attention-only" : "full");
  check("--qkv-bias", "with", s.model.qkv_bias ? "with" : "without");
}

// [SECTION] outputs: the log and the batches

std::optional<double> nan_free(std::optional<double> v) { return v && std::isfinite(*v) ? v : std::nullopt; }

json number_or_null(std::optional<double> v) { return nan_free(v) ? json(*v) : json(nullptr); }

json eval_json(const train::EvalStats& e) {
  json heads = json::object();
  for (int k = 0; k < kHeadPatternCount; ++k) {
    json layers = json::array();
    for (const auto& layer : e.heads) {
      json row = json::array();
      for (const auto& head : layer)
        row.push_back(head[static_cast<std::size_t>(k)] ? json(*head[static_cast<std::size_t>(k)]) : json(nullptr));
      layers.push_back(row);
    }
    heads[std::string(head_pattern_name(kHeadPatterns[k]))] = layers;
  }
  return {{"loss", e.losses.loss},
          {"loss_first", number_or_null(e.losses.first)},
          {"loss_repeat", number_or_null(e.losses.repeat)},
          {"heads", heads}};
}

// The log of a resumed run starts with the lines of the steps already done, so that it reads
// as one run's; lines past the resumed step (from a run that went on without saving) go.
std::string earlier_log(const std::string& path, std::int64_t done) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<std::int64_t>() <= done)
      kept += line + "\n";
  }
  return kept;
}

// NPY 1.0, '<i8', C order: (steps, B, T + 1).
std::string batches_npy(const train::Trainer& t, std::int64_t steps) {
  const int B = t.settings().batch, T1 = t.settings().model.context_length + 1;
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" + std::to_string(steps) + ", " +
                       std::to_string(B) + ", " + std::to_string(T1) + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>(len >> 8);
  out += header;
  train::Batch b;
  for (std::int64_t s = 1; s <= steps; ++s) {
    t.batch(s, b);
    for (std::int32_t id : b.tokens) {
      const std::int64_t v = id;
      out.append(reinterpret_cast<const char*>(&v), 8);
    }
  }
  return out;
}

// [SECTION] progress

std::string seconds_text(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else
    std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return buf;
}

// "L1.2 0.91": the head with the highest score of a pattern.
std::string best_head(const train::HeadScores& heads, int pattern) {
  float best = -1;
  std::string where = "-";
  for (std::size_t l = 0; l < heads.size(); ++l)
    for (std::size_t h = 0; h < heads[l].size(); ++h)
      if (const auto& s = heads[l][h][static_cast<std::size_t>(pattern)]; s && *s > best) {
        best = *s;
        char buf[48];
        std::snprintf(buf, sizeof buf, "%zu.%zu %.2f", l, h, static_cast<double>(*s));
        where = buf;
      }
  return where;
}

std::string progress_line(const train::StepStats& s, std::int64_t total, double tokens_per_s, double left) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %lld/%lld  loss %.4f", static_cast<long long>(s.step),
                static_cast<long long>(total), s.losses.loss);
  std::string line = buf;
  if (nan_free(s.losses.first) && nan_free(s.losses.repeat)) {
    std::snprintf(buf, sizeof buf, "  (first copy %.3f, repeat %.3f)", *s.losses.first, *s.losses.repeat);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "  %.0f tokens/s  %s left", tokens_per_s, seconds_text(left).c_str());
  return line + buf;
}

std::string eval_line(const train::EvalStats& e) {
  std::string line = "  probe at step " + std::to_string(e.step) + ":";
  if (nan_free(e.losses.first) && nan_free(e.losses.repeat) && *e.losses.first > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " repeat/first loss %.3f,", *e.losses.repeat / *e.losses.first);
    line += buf;
  }
  for (int k = 0; k < kHeadPatternCount; ++k)
    line += std::string(k ? "," : "") + " " + std::string(head_pattern_name(kHeadPatterns[k])) + " " +
            best_head(e.heads, k);
  return line;
}

// [SECTION] the run

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }

// Everything a run writes, atomically, once it stops (at the last step or on a signal).
void write_outputs(const TrainOptions& o, const train::Trainer& t, const std::string& log) {
  t.save(o.output);
  if (!o.log.empty()) write_file_atomic(o.log, log);
  if (!o.dump_batches.empty()) write_file_atomic(o.dump_batches, batches_npy(t, t.steps_done()));
}

int train_loop(const TrainOptions& o, train::Trainer& t) {
  using clock = std::chrono::steady_clock;
  std::string log = o.resume && !o.log.empty() ? earlier_log(o.log, t.steps_done()) : std::string();
  const std::int64_t start = t.steps_done();
  const bool tty = ::isatty(2) != 0;
  const double tokens_per_step = static_cast<double>(t.settings().batch) * t.settings().model.context_length;
  const auto t0 = clock::now();
  auto last_print = t0;
  g_stop = 0;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  while (t.steps_done() < o.steps && !g_stop) {
    const train::StepStats s = t.step();
    const auto now = clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    json line = {{"step", s.step}, {"loss", s.losses.loss}, {"seconds", elapsed}};
    if (s.losses.first) line["loss_first"] = number_or_null(s.losses.first);
    if (s.losses.repeat) line["loss_repeat"] = number_or_null(s.losses.repeat);
    const bool eval = o.eval_every > 0 && (s.step % o.eval_every == 0 || s.step == o.steps);
    std::string eval_text;
    if (eval) {
      const train::EvalStats e = t.evaluate();
      line["eval"] = eval_json(e);
      eval_text = eval_line(e);
    }
    log += line.dump() + "\n";
    if (o.quiet) continue;
    const double done = static_cast<double>(s.step - start), per_step = elapsed / done;
    const std::string text =
        progress_line(s, o.steps, tokens_per_step / per_step, per_step * static_cast<double>(o.steps - s.step));
    if (tty && (eval || std::chrono::duration<double>(now - last_print).count() > 0.1 || s.step == o.steps)) {
      std::fprintf(stderr, "\r\033[K%s", text.c_str());
      if (eval) std::fprintf(stderr, "\n%s\n", eval_text.c_str());
      last_print = now;
    } else if (!tty && (eval || s.step == o.steps)) {
      std::fprintf(stderr, "%s\n%s", text.c_str(), eval ? (eval_text + "\n").c_str() : "");
    }
  }
  const bool stopped = g_stop != 0;
  if (!o.quiet && tty) std::fputc('\n', stderr);
  write_outputs(o, t, log);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
  if (stopped) {
    std::fprintf(stderr, "mhaviz train: stopped at step %lld of %lld; %s written (continue with --resume)\n",
                 static_cast<long long>(t.steps_done()), static_cast<long long>(o.steps), o.output.c_str());
    return 130;
  }
  if (!o.quiet)
    std::fprintf(stderr, "mhaviz train: %lld steps in %s; %s written\n", static_cast<long long>(t.steps_done() - start),
                 seconds_text(seconds).c_str(), o.output.c_str());
  return 0;
}

// An output the run will write at its end: refused now, not after the training, when its
// folder is missing or not writable or the path is a folder.
void check_writable(const char* option, const std::string& path) {
  if (path.empty()) return;
  const fs::path p(path), folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw TrainError(std::string(option) + ": '" + path + "' is a folder");
  if (!fs::is_directory(folder, ec))
    throw TrainError(std::string(option) + ": '" + folder.string() + "' is not a folder");
  if (::access(folder.c_str(), W_OK) != 0)
    throw TrainError(std::string(option) + ": cannot write in '" + folder.string() + "': " + std::strerror(errno));
}

}  // namespace

int run_train(const TrainOptions& o) {
  try {
    if (fs::path(o.output).extension() != ".safetensors")
      throw TrainError("-o: '" + o.output + "' does not end in .safetensors");
    check_writable("-o", o.output);
    check_writable("--log", o.log);
    check_writable("--dump-batches", o.dump_batches);
    if (o.steps < 0 || o.steps > 1'000'000'000)
      throw TrainError("--steps: " + std::to_string(o.steps) + " is out of range [0, 1000000000]");
    if (o.eval_every < 0) throw TrainError("--eval-every: " + std::to_string(o.eval_every) + " is negative");
    choose_backend(o.backend);
    train::Trainer t = o.resume ? train::Trainer::resume(o.output) : fresh(o);
    if (o.resume) {
      check_resumed(o, t.settings());
      if (o.steps < t.steps_done())
        throw TrainError("--steps: " + std::to_string(o.steps) + " is fewer than the " +
                         std::to_string(t.steps_done()) + " steps the run being resumed has done");
    }
    if (!o.quiet)
      std::fprintf(stderr,
                   "mhaviz train: %s, %s, %d layers x %d heads, d_model %d, vocab %d, context %d, batch %d, %lld "
                   "parameters; products in %s\n",
                   std::string(train::task_name(t.settings().task)).c_str(),
                   t.settings().model.attn_only ? "attention-only" : "full blocks", t.settings().model.n_layers,
                   t.settings().model.n_heads, t.settings().model.emb_dim, t.settings().model.vocab_size,
                   t.settings().model.context_length, t.settings().batch,
                   static_cast<long long>(t.model().parameter_count()), std::string(backend_name(backend())).c_str());
    return train_loop(o, t);
  } catch (const TrainError& e) {
    return usage_error(e.what());
  } catch (const SessionError& e) {
    return usage_error(e.what());
  }
}

}  // namespace mhaviz::cli
