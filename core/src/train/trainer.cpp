// A training run (trainer.hpp): settings checked once, then steps, probes and batches. The
// files a run leaves are written and read in checkpoint.cpp.
#include "mhaviz/trainer.hpp"

#include <cmath>
#include <cstdio>
#include <span>
#include <utility>

namespace mhaviz::train {
namespace {

std::string gib(std::int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30));
  return s;
}

// Mean of the losses at the positions of one role, or nothing when no position has it.
std::optional<double> mean_where(const std::vector<float>& losses, const std::vector<std::uint8_t>& roles, Role role) {
  double sum = 0;
  std::int64_t n = 0;
  for (std::size_t i = 0; i < losses.size(); ++i)
    if (roles[i] == role) {
      sum += losses[i];
      ++n;
    }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

// losses: (B·T) every position's loss of batch b.
Losses losses_of(double loss, const std::vector<float>& losses, const Batch& b) {
  return {loss, mean_where(losses, b.roles, kFirst), mean_where(losses, b.roles, kRepeat)};
}

static_assert(sizeof(int) == sizeof(std::int32_t), "token ids are read as int by the head detectors");

}  // namespace

std::int64_t training_bytes(const TrainSettings& s) {
  const GptTrainConfig& c = s.model;
  const std::int64_t C = c.emb_dim, T = c.context_length, V = c.vocab_size, L = c.n_layers, H = c.n_heads;
  const std::int64_t params = static_cast<std::int64_t>(parameter_layout(c).back().offset) + V * C;
  // Floats kept per position: the residual stream, each block's (q, k, v, weights, context,
  // and in the full family the norms, the MLP's 4C twice), logits and probabilities, and the
  // backward's scratch.
  std::int64_t per_row = (L + 1) * C + L * (3 * C + H * T + C) + 2 * V + 2 * C + 9 * C + V;
  if (!c.attn_only) per_row += L * (11 * C + 4) + C + 2;
  return 4 * (4 * params + static_cast<std::int64_t>(s.batch) * T * per_row);
}

void validate_settings(const TrainSettings& s) {
  validate_config(s.model);
  if (s.batch < 1 || s.batch > 65536)
    throw TrainError("--batch: " + std::to_string(s.batch) + " is out of range [1, 65536]");
  if (!(std::isfinite(s.lr) && s.lr > 0 && s.lr <= 10))
    throw TrainError("--lr: " + std::to_string(s.lr) + " is not a learning rate in (0, 10]");
  if (!(std::isfinite(s.weight_decay) && s.weight_decay >= 0 && s.lr * s.weight_decay < 1))
    throw TrainError("--weight-decay: " + std::to_string(s.weight_decay) +
                     " is not in [0, 1 / lr) (AdamW multiplies every parameter by 1 - lr * weight_decay each step)");
  if (const std::int64_t bytes = training_bytes(s); bytes > kTrainMemoryLimit)
    throw TrainError("--batch: " + std::to_string(s.batch) + " sequences of " + std::to_string(s.model.context_length) +
                     " tokens with this model need about " + gib(bytes) + " to train, over the limit of " +
                     gib(kTrainMemoryLimit) + " (fewer sequences, a shorter context or a smaller model or vocabulary)");
}

Trainer::Trainer(const TrainSettings& settings, TaskData data) : settings_(settings), data_(std::move(data)) {
  settings_.model.vocab_size = data_.vocab_size;
  validate_settings(settings_);
  model_ = init_model(settings_.model, settings_.seed);
  ready();
}

void Trainer::ready() {
  opt_.lr = settings_.lr;
  opt_.weight_decay = settings_.weight_decay;
  grads_.assign(model_.params.size(), 0.0f);
  probe_ = make_probe(data_, settings_.model.context_length);
}

void Trainer::batch(std::int64_t step, Batch& out) const {
  make_batch(data_, settings_.seed, step, settings_.batch, settings_.model.context_length, out);
}

StepStats Trainer::step() {
  const std::int64_t s = opt_.step + 1;
  batch(s, batch_);
  const double loss = loss_and_gradients(model_, batch_.tokens, batch_.B, step_, grads_);
  opt_.update(model_.params, grads_);
  const Losses losses = losses_of(loss, step_.losses, batch_);
  return {s, losses};
}

EvalStats Trainer::evaluate() {
  const GptTrainConfig& c = model_.config;
  const int T = c.context_length, H = c.n_heads;
  const std::size_t TT = static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  EvalStats e;
  e.step = opt_.step;
  e.losses = losses_of(forward(model_, probe_.tokens, probe_.B, probe_acts_), probe_acts_.losses, probe_);
  e.heads.assign(static_cast<std::size_t>(c.n_layers),
                 std::vector<std::array<std::optional<float>, kHeadPatternCount>>(static_cast<std::size_t>(H)));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::vector<float>& att = probe_acts_.layers[static_cast<std::size_t>(l)].att;
    for (int h = 0; h < H; ++h)
      for (int k = 0; k < kHeadPatternCount; ++k) {
        double sum = 0;
        int n = 0;
        for (int b = 0; b < probe_.B; ++b) {
          const std::span<const float> w(
              att.data() + (static_cast<std::size_t>(b) * H + static_cast<std::size_t>(h)) * TT, TT);
          const std::span<const int> tokens(
              probe_acts_.inputs.data() + static_cast<std::size_t>(b) * static_cast<std::size_t>(T),
              static_cast<std::size_t>(T));
          if (const std::optional<float> s = score_head(kHeadPatterns[k], w, tokens)) {
            sum += *s;
            ++n;
          }
        }
        if (n > 0)
          e.heads[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)][static_cast<std::size_t>(k)] =
              static_cast<float>(sum / n);
      }
  }
  return e;
}

std::filesystem::path optimizer_state_path(const std::filesystem::path& model_file) {
  std::filesystem::path p = model_file;
  return p.replace_extension(".adamw");
}

}  // namespace mhaviz::train
