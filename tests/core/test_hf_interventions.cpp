// Interventions on Qwen3, Qwen2, Gemma 3 and Llama checkpoints (hf_interventions.hpp) against
// torch: tests/models/make_hf_interventions.py writes a tied Qwen3, a Gemma 3 with two sliding
// layers, a BF16 sharded Qwen2 with q/k/v biases and an F16 Llama with one K/V head for four
// and an o_proj bias, and what a hooked float64 forward of the book's
// modules computes on them: ablated runs' weights and logits, the sweep, both patching grids,
// every logit-lens entry and norm-weighted attention. Compared on every backend the CPU runs,
// the largest difference printed per tensor; plus the invariants no reference is needed for.
// The reference is float64 (as the forward's own test), so the bounds are float32's rounding
// over three blocks: a few 1e-6 of the largest value, where the GPT test's float32 torch is closer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gpt_test_util.hpp"
#include "interventions_test_util.hpp"
#include "json_file.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/safetensors.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const fs::path kDir = MHAVIZ_HF_INTERVENTIONS;

struct Case {
  std::string name;
  HfModel model;
  SafetensorsFile expected;
  std::vector<int> clean, corrupt;
  TokenMetric logprob, diff;
};

std::vector<float> want(const Case& c, const std::string& name) { return test::expected_tensor(c.expected, name); }
using test::rel_diff;

// Loaded for the backend the test set (the kernel's panels are packed as the model loads).
std::vector<Case> load_cases() {
  const json manifest = test::read_json(kDir / "manifest.json");
  std::vector<Case> cases;
  for (const json& c : manifest["checkpoints"]) {
    const std::string name = c["name"];
    cases.push_back({name, load_hf_model(kDir / name),
                     SafetensorsFile::open(kDir / name / "reference" / "interventions.safetensors"), manifest["clean"],
                     manifest["corrupt"], TokenMetric{manifest["target"], -1},
                     TokenMetric{manifest["target"], manifest["vs"]}});
  }
  return cases;
}

std::vector<float> all_logits(const HfModel& m, const HfTrace& tr) {
  std::vector<float> out;
  for (int pos = 0; pos < tr.tokens(); ++pos) {
    const std::vector<float> row = hf_logits(m, tr, pos);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

std::vector<float> all_weights(const HfTrace& tr) {
  std::vector<float> out;
  for (const HfLayerTrace& L : tr.layers) out.insert(out.end(), L.weights.data.begin(), L.weights.data.end());
  return out;
}

class HfInterventions : public test::BackendTest {};

TEST_P(HfInterventions, AblatedRunsMatchTorch) {
  const json manifest = test::read_json(kDir / "manifest.json");
  for (const Case& c : load_cases()) {
    const HfTrace clean = hf_forward(c.model, c.clean);
    for (std::size_t n = 0; n < manifest["ablations"].size(); ++n) {
      const json& a = manifest["ablations"][n];
      HfIntervention iv;
      for (const json& h : a["heads"]) iv.ablate.push_back({h[0], h[1]});
      iv.mode = a["mode"] == "mean" ? AblationMode::Mean : AblationMode::Zero;
      const HfTrace run = hf_forward_intervened(c.model, clean, iv);
      const std::string label = std::string(GetParam()) + " " + c.name + " ablate" + std::to_string(n);
      EXPECT_LT(rel_diff(all_weights(run), want(c, "ablate" + std::to_string(n) + ".weights"), label + " weights"),
                1e-5f);
      EXPECT_LT(
          rel_diff(all_logits(c.model, run), want(c, "ablate" + std::to_string(n) + ".logits"), label + " logits"),
          1e-5f);
      EXPECT_EQ(run.logits_last.data, hf_logits(c.model, run, run.tokens() - 1)) << label;
      for (int l = 0; l < iv.first_layer(c.model.config.num_hidden_layers); ++l)
        EXPECT_EQ(run.layers[static_cast<std::size_t>(l)].resid.data,
                  clean.layers[static_cast<std::size_t>(l)].resid.data);
    }
  }
}

TEST_P(HfInterventions, SweepAndPatchingGridsMatchTorch) {
  for (const Case& c : load_cases()) {
    const std::string label = std::string(GetParam()) + " " + c.name;
    const HfTrace clean = hf_forward(c.model, c.clean), corrupt = hf_forward(c.model, c.corrupt);
    const auto sweep = ablation_sweep(c.model, clean, c.logprob, AblationMode::Zero);
    ASSERT_TRUE(sweep);
    EXPECT_EQ(sweep->rows, c.model.config.num_hidden_layers);
    EXPECT_EQ(sweep->cols, c.model.config.num_attention_heads);
    EXPECT_LT(rel_diff(sweep->values, want(c, "sweep"), label + " sweep"), 1e-4f);
    const auto heads = patch_sweep(c.model, clean, corrupt, c.diff, PatchPer::Head);
    ASSERT_TRUE(heads);
    EXPECT_LT(rel_diff(heads->values, want(c, "patch_head"), label + " patch_head"), 1e-4f);
    const auto resid = patch_sweep(c.model, clean, corrupt, c.diff, PatchPer::LayerPosition);
    ASSERT_TRUE(resid);
    EXPECT_EQ(resid->cols, clean.tokens());
    EXPECT_LT(rel_diff(resid->values, want(c, "patch_resid"), label + " patch_resid"), 1e-4f);
    // The last residual at the last position is all the LM head reads there: exactly 1.
    EXPECT_EQ(resid->at(resid->rows - 1, resid->cols - 1), 1.0f) << label;
    // Before the changed token (position 8) nothing differs: no effect.
    for (int l = 0; l < resid->rows; ++l)
      for (int pos = 0; pos < 8; ++pos) EXPECT_EQ(resid->at(l, pos), 0.0f) << label << " " << l << "@" << pos;
  }
}

TEST_P(HfInterventions, EveryLensEntryMatchesTorchAndTheLastLayerIsTheModelsLogits) {
  for (const Case& c : load_cases()) {
    const std::string label = std::string(GetParam()) + " " + c.name;
    const HfTrace tr = hf_forward(c.model, c.clean);
    const int L = c.model.config.num_hidden_layers, T = tr.tokens(), V = c.model.config.vocab_size;
    std::vector<float> lens;
    for (int l = 0; l < L; ++l) {
      const std::vector<float> x = lens_logits(c.model, tr, l);
      lens.insert(lens.end(), x.begin(), x.end());
    }
    EXPECT_LT(rel_diff(lens, want(c, "clean.lens"), label + " lens"), 1e-5f);
    EXPECT_LT(rel_diff(all_logits(c.model, tr), want(c, "clean.logits"), label + " logits"), 1e-5f);
    const std::vector<float> last = lens_logits(c.model, tr, L - 1);
    for (int pos = 0; pos < T; ++pos)
      EXPECT_TRUE(std::equal(last.begin() + pos * V, last.begin() + (pos + 1) * V, hf_logits(c.model, tr, pos).begin()))
          << label << " position " << pos;
    EXPECT_TRUE(std::equal(last.end() - V, last.end(), tr.logits_last.data.begin())) << label;
    const LogitLens table = logit_lens(c.model, tr, 5, c.logprob.target);
    const std::vector<float> ref = want(c, "clean.lens");
    for (int l = 0; l < L; ++l)
      for (int pos = 0; pos < T; ++pos) {
        const float* row = ref.data() + (static_cast<std::size_t>(l) * T + pos) * V;
        const float mx = *std::max_element(row, row + V);
        double sum = 0;
        for (int i = 0; i < V; ++i) sum += std::exp(static_cast<double>(row[i]) - mx);
        for (int i = 0; i < table.k; ++i) {
          const TokenProbability& e = table.at(l, pos, i);
          EXPECT_NEAR(e.p, std::exp(static_cast<double>(row[e.id]) - mx) / sum, 1e-5)
              << label << " " << l << "," << pos;
        }
        int rank = 0;
        for (int i = 0; i < V; ++i) rank += row[i] > row[c.logprob.target];
        EXPECT_EQ(table.rank[static_cast<std::size_t>(l) * T + pos], rank) << label << " " << l << "," << pos;
      }
  }
}

TEST_P(HfInterventions, NormWeightedAttentionMatchesTorch) {
  for (const Case& c : load_cases()) {
    const HfTrace tr = hf_forward(c.model, c.clean);
    std::vector<float> all;
    for (int l = 0; l < c.model.config.num_hidden_layers; ++l) {
      const Tensor t = norm_weighted_attention(c.model, tr, l);
      EXPECT_EQ(t.shape, tr.layers[static_cast<std::size_t>(l)].weights.shape);
      all.insert(all.end(), t.data.begin(), t.data.end());
    }
    EXPECT_LT(rel_diff(all, want(c, "clean.norm_weighted"), std::string(GetParam()) + " " + c.name + " norm-weighted"),
              1e-5f);
  }
}

TEST_P(HfInterventions, AnEmptyInterventionIsTheCleanRunBitForBit) {
  for (const Case& c : load_cases()) {
    const HfTrace clean = hf_forward(c.model, c.clean);
    const HfTrace same = hf_forward_intervened(c.model, clean, HfIntervention{});
    EXPECT_EQ(same.logits_last.data, clean.logits_last.data) << c.name;
    // A head patched from the run itself on the first layer recomputes every layer, with the
    // same bits as the clean forward.
    HfIntervention self;
    self.source = &clean;
    self.patch_heads = {{0, 1}};
    const HfTrace patched = hf_forward_intervened(c.model, clean, self);
    EXPECT_EQ(all_weights(patched), all_weights(clean)) << c.name;
    EXPECT_EQ(patched.layers.back().resid.data, clean.layers.back().resid.data) << c.name;
    EXPECT_EQ(patched.logits_last.data, clean.logits_last.data) << c.name;
    EXPECT_EQ(patched.model_serial, 0u);  // never rows hf_forward keeps as clean
    // An edit at the last position into the clean run's trace keeps the residual rows before it.
    HfTrace edited = clean;
    std::vector<int> ids = c.clean;
    ids.back() = (ids.back() + 1) % c.model.config.vocab_size;
    hf_forward(c.model, ids, edited);
    const HfTrace fresh = hf_forward(c.model, ids);
    if (c.model.config.num_hidden_layers > 0 && backend() != Backend::OpenBlas) {
      EXPECT_EQ(edited.recomputed_from, static_cast<int>(ids.size()) - 1) << c.name;
      for (std::size_t l = 0; l < fresh.layers.size(); ++l) {
        EXPECT_EQ(edited.layers[l].resid.data, fresh.layers[l].resid.data) << c.name << " layer " << l;
        EXPECT_EQ(edited.layers[l].context.data, fresh.layers[l].context.data) << c.name << " layer " << l;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HfInterventions, ::testing::ValuesIn(test::kBackendNames));

TEST(HfInterventionInput, BadHeadsPositionsAndLengthsAreRefusedNamingTheField) {
  const HfModel m = load_hf_model(kDir / "qwen3_tied");
  const std::vector<int> ids{1, 2, 3};
  const HfTrace tr = hf_forward(m, ids);
  auto refused = [&](const HfIntervention& iv, const std::string& part) {
    try {
      hf_forward_intervened(m, tr, iv);
      ADD_FAILURE() << "accepted, expected " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  HfIntervention layer;
  layer.ablate = {{3, 0}};
  refused(layer, "ablate: head 3.0 is not in the model's 3 layers × 4 heads");
  HfIntervention head;
  head.ablate = {{0, 4}};
  refused(head, "ablate: head 0.4");
  HfIntervention resid;
  resid.source = &tr;
  resid.patch_resid = {{0, 3}};
  refused(resid, "patch: residual 0@3");
  HfIntervention nosrc;
  nosrc.patch_heads = {{0, 0}};
  refused(nosrc, "no run");
  const std::vector<int> longer{1, 2, 3, 4};
  const HfTrace other = hf_forward(m, longer);
  EXPECT_THROW(patch_sweep(m, tr, other, TokenMetric{1, 2}, PatchPer::Head), std::invalid_argument);
  EXPECT_THROW(patch_sweep(m, tr, tr, TokenMetric{1, 2}, PatchPer::Head), std::invalid_argument);
  EXPECT_THROW(ablation_sweep(m, tr, TokenMetric{300, -1}, AblationMode::Zero), std::invalid_argument);
  EXPECT_THROW(lens_logits(m, tr, 3), std::out_of_range);
  EXPECT_THROW(norm_weighted_attention(m, tr, -1), std::out_of_range);
  int calls = 0;
  EXPECT_FALSE(ablation_sweep(m, tr, TokenMetric{3, -1}, AblationMode::Zero, [&](int, int) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace mhaviz
