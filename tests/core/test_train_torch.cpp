// The trainer against PyTorch: tests/models/train_reference.py (fixture train_reference) trains
// the same configurations with torch.optim.AdamW and writes its parameters, gradients and
// losses into MHAVIZ_TRAIN_REF. From torch's initial parameters (which init_model must give bit
// for bit) and the same batches: every gradient at step 1 within 1e-4 of the tensor's largest
// value, and each of the first 50 losses within 1e-4 relative, on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "json_file.hpp"
#include "mhaviz/safetensors.hpp"
#include "mhaviz/train.hpp"
#include "test_util.hpp"
#include "train/torch_random.hpp"

namespace mhaviz {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const fs::path kRef = MHAVIZ_TRAIN_REF;

using test::read_json;

// An int64 .npy file (numpy.save): its shape and values.
struct NpyI64 {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> values;
};
NpyI64 read_npy_i64(const fs::path& p) {
  const std::string bytes = test::slurp(p.string());
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  std::uint16_t header_len = 0;
  std::memcpy(&header_len, bytes.data() + 8, 2);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<i8'"), std::string::npos) << header;
  NpyI64 out;
  std::smatch shape;
  EXPECT_TRUE(std::regex_search(header, shape, std::regex("'shape': \\(([0-9, ]*)\\)"))) << header;
  std::stringstream dims(shape[1].str());
  for (std::string d; std::getline(dims, d, ',');)
    if (d.find_first_not_of(' ') != std::string::npos) out.shape.push_back(std::stoll(d));
  out.values.resize((bytes.size() - 10 - header_len) / 8);
  std::memcpy(out.values.data(), bytes.data() + 10 + header_len, out.values.size() * 8);
  return out;
}

train::GptTrainConfig config_of(const json& c) {
  train::GptTrainConfig g;
  g.vocab_size = c["vocab_size"];
  g.context_length = c["context_length"];
  g.emb_dim = c["emb_dim"];
  g.n_heads = c["n_heads"];
  g.n_layers = c["n_layers"];
  g.attn_only = c["attn_only"];
  g.qkv_bias = c["qkv_bias"];
  return g;
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(TrainTorch, InitialParametersAreTorchsBitForBit) {
  const json manifest = read_json(kRef / "manifest.json");  // a local: a range-for over a temporary's member dangles
  for (const json& c : manifest["configs"]) {
    const std::string name = c["name"];
    const train::GptTrainModel m = train::init_model(config_of(c), c["seed"].get<std::uint64_t>());
    const SafetensorsFile f = SafetensorsFile::open(kRef / name / "init.safetensors");
    ASSERT_EQ(f.tensors().size(), m.layout.size()) << name;
    for (std::size_t i = 0; i < m.layout.size(); ++i) {
      const StTensor& t = f.tensors()[i];  // in offset order: torch's parameters() order
      EXPECT_EQ(t.name, m.layout[i].name) << name;
      EXPECT_EQ(t.shape, m.layout[i].shape) << name << " " << t.name;
      const std::vector<float> torch_values = f.read(t);
      const auto mine = m.values(m.layout[i].name);
      std::size_t differ = 0;
      for (std::size_t k = 0; k < torch_values.size() && k < mine.size(); ++k)
        differ += bits(torch_values[k]) != bits(mine[k]);
      EXPECT_EQ(differ, 0u) << name << " " << t.name << ": values whose bits differ from torch's";
    }
  }
}

TEST(TrainTorch, NormalDrawsAreTorchsBitForBit) {
  const SafetensorsFile f = SafetensorsFile::open(kRef / "normal.safetensors");
  const json manifest = read_json(kRef / "manifest.json");
  for (const json& d : manifest["normal"]) {
    const std::uint64_t seed = d["seed"];
    train::TorchGenerator gen(seed);
    int i = 0;
    for (std::int64_t n : d["sizes"]) {
      const std::string name = "seed" + std::to_string(seed) + "." + std::to_string(i++);
      const std::vector<float> torch_values = f.read(*f.find(name));
      std::vector<float> mine(static_cast<std::size_t>(n));
      train::torch_normal_(gen, mine.data(), n, 0.0f, 1.0f);
      ASSERT_EQ(mine.size(), torch_values.size()) << name;
      std::size_t differ = 0;
      for (std::size_t k = 0; k < mine.size(); ++k) differ += bits(torch_values[k]) != bits(mine[k]);
      EXPECT_EQ(differ, 0u) << name << " (n = " << n << "): draws whose bits differ from torch's";
    }
  }
}

// Max |a − b| over a tensor, relative to its largest |b|.
double relative_max_diff(std::span<const float> a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// Largest |value| of a span.
double max_abs(std::span<const float> v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// Step 1's gradients against torch's. A bias of W_key has a gradient of exactly 0 (softmax
// ignores the constant q·b_key added to a row of scores): torch's and ours are rounding noise
// there, so for a tensor whose torch gradient is below 1e-6 of the model's largest, both must
// be; every other tensor is held to a relative error of 1e-4. Returns the worst error.
double check_gradients(const train::GptTrainModel& m, const std::vector<float>& grads,
                       const SafetensorsFile& torch_file, const std::string& label) {
  double g_max = 0, worst = 0;
  for (const StTensor& t : torch_file.tensors()) g_max = std::max(g_max, max_abs(torch_file.read(t)));
  for (const auto& t : m.layout) {
    const std::vector<float> theirs = torch_file.read(*torch_file.find(t.name));
    const std::span<const float> mine(grads.data() + t.offset, static_cast<std::size_t>(t.numel()));
    if (max_abs(theirs) < 1e-6 * g_max) {
      EXPECT_LT(max_abs(mine), 1e-6 * g_max)
          << label << " " << t.name << ": torch's gradient is 0 to rounding, ours not";
      continue;
    }
    const double d = relative_max_diff(mine, theirs);
    worst = std::max(worst, d);
    EXPECT_LE(d, 1e-4) << label << " gradient of " << t.name;
  }
  return worst;
}

class TrainTorch : public test::OnBackend {};

TEST_P(TrainTorch, GradientsAtStepOneAndTheFirstFiftyLosses) {
  const json manifest = read_json(kRef / "manifest.json");
  for (const json& c : manifest["configs"]) {
    const std::string name = c["name"], label = std::string(backend_name(GetParam())) + " " + name;
    const train::GptTrainConfig cfg = config_of(c);
    train::GptTrainModel m = train::init_model(cfg, c["seed"].get<std::uint64_t>());
    const NpyI64 batches = read_npy_i64(kRef / name / "batches.npy");
    const int B = c["batch"];
    ASSERT_EQ(batches.shape, (std::vector<std::int64_t>{manifest["steps"], B, cfg.context_length + 1})) << name;
    const std::vector<double> losses = read_json(kRef / name / "losses.json");
    const SafetensorsFile grads_file = SafetensorsFile::open(kRef / name / "grads.safetensors");
    const SafetensorsFile final_file = SafetensorsFile::open(kRef / name / "final.safetensors");

    train::AdamW opt;
    opt.lr = c["lr"];
    opt.weight_decay = c["weight_decay"];
    train::StepWorkspace ws;
    std::vector<float> grads(m.params.size());
    const std::size_t per_step = static_cast<std::size_t>(B * (cfg.context_length + 1));
    double worst_loss = 0, worst_grad = 0;
    for (std::size_t s = 0; s < losses.size(); ++s) {
      const std::vector<std::int32_t> tokens(batches.values.begin() + static_cast<std::ptrdiff_t>(s * per_step),
                                             batches.values.begin() + static_cast<std::ptrdiff_t>((s + 1) * per_step));
      const double loss = train::loss_and_gradients(m, tokens, B, ws, grads);
      const double rel = std::fabs(loss - losses[s]) / std::fabs(losses[s]);
      worst_loss = std::max(worst_loss, rel);
      EXPECT_LE(rel, 1e-4) << label << " step " << s + 1 << ": " << loss << " vs torch " << losses[s];
      if (s == 0) worst_grad = check_gradients(m, grads, grads_file, label);
      opt.update(m.params, grads);
    }
    // W_key's bias aside: AdamW turns its noise gradient into steps of ±lr on both sides.
    double worst_param = 0;
    for (const auto& t : m.layout)
      if (!t.name.ends_with("W_key.bias"))
        worst_param =
            std::max(worst_param, relative_max_diff(m.values(t.name), final_file.read(*final_file.find(t.name))));
    std::printf(
        "%-22s step-1 gradients %.2e, %zu losses %.2e, parameters after them %.2e (max |mhaviz - torch| / max |torch|; "
        "W_key.bias aside)\n",
        label.c_str(), worst_grad, losses.size(), worst_loss, worst_param);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TrainTorch, ::testing::Values(Backend::Avx512, Backend::Avx2, Backend::OpenBlas),
                         test::backend_label);

}  // namespace
}  // namespace mhaviz
