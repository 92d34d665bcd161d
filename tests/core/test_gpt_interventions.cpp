// Interventions (gpt_interventions.hpp) against torch: tests/models/make_interventions.py
// writes three checkpoints (GPT-2 layout with a tied head, the book's GPTModel, the book's
// attention-only model) and what a hooked torch forward computes on them: ablated runs'
// attention weights and logits, the ablation sweep, both patching grids, every logit-lens
// entry and the norm-weighted attention. Compared on every backend the CPU runs, with the
// largest difference printed per tensor; plus the invariants no reference is needed for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gpt_test_util.hpp"
#include "interventions_test_util.hpp"
#include "json_file.hpp"
#include "mhaviz/gpt_interventions.hpp"
#include "mhaviz/safetensors.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const fs::path kDir = MHAVIZ_INTERVENTIONS;

struct Case {
  std::string name;
  GptModel model;
  SafetensorsFile expected;
  std::vector<int> clean, corrupt;
  TokenMetric logprob, diff;
};

std::vector<float> want(const Case& c, const std::string& name) { return test::expected_tensor(c.expected, name); }
using test::rel_diff;

std::vector<Case> load_cases() {
  const json manifest = test::read_json(kDir / "manifest.json");
  std::vector<Case> cases;
  for (const json& c : manifest["checkpoints"]) {
    const std::string name = c["name"];
    GptModel model = load_gpt(kDir / name);
    prepare_gpt_forward(model);
    cases.push_back({name, std::move(model),
                     SafetensorsFile::open(kDir / name / "reference" / "interventions.safetensors"), manifest["clean"],
                     manifest["corrupt"], TokenMetric{manifest["target"], -1},
                     TokenMetric{manifest["target"], manifest["vs"]}});
  }
  return cases;
}

// (T, V) logits of every position of a trace.
std::vector<float> all_logits(const GptModel& m, const GptTrace& tr) {
  std::vector<float> out;
  for (int pos = 0; pos < tr.tokens(); ++pos) {
    const std::vector<float> row = gpt_logits(m, tr, pos);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

class Interventions : public test::BackendTest {};

TEST_P(Interventions, AblatedRunsMatchTorch) {
  const json manifest = test::read_json(kDir / "manifest.json");
  for (const Case& c : load_cases()) {
    const GptTrace clean = gpt_forward(c.model, c.clean);
    for (std::size_t n = 0; n < manifest["ablations"].size(); ++n) {
      const json& a = manifest["ablations"][n];
      Intervention iv;
      for (const json& h : a["heads"]) iv.ablate.push_back({h[0], h[1]});
      iv.mode = a["mode"] == "mean" ? AblationMode::Mean : AblationMode::Zero;
      const GptTrace run = gpt_forward_intervened(c.model, clean, iv);
      const std::string label = std::string(GetParam()) + " " + c.name + " ablate" + std::to_string(n);
      std::vector<float> weights;
      for (const GptLayerTrace& L : run.layers)
        weights.insert(weights.end(), L.weights.data.begin(), L.weights.data.end());
      EXPECT_LT(rel_diff(weights, want(c, "ablate" + std::to_string(n) + ".weights"), label + " weights"), 2e-6f);
      EXPECT_LT(
          rel_diff(all_logits(c.model, run), want(c, "ablate" + std::to_string(n) + ".logits"), label + " logits"),
          1e-5f);
      EXPECT_EQ(run.logits_last.data, gpt_logits(c.model, run, run.tokens() - 1)) << label;
      // Layers before the first ablated one are the clean run's, bit for bit.
      for (int l = 0; l < iv.first_layer(c.model.config.n_layer); ++l)
        EXPECT_EQ(run.layers[static_cast<std::size_t>(l)].resid.data,
                  clean.layers[static_cast<std::size_t>(l)].resid.data);
    }
  }
}

TEST_P(Interventions, SweepAndPatchingGridsMatchTorch) {
  for (const Case& c : load_cases()) {
    const std::string label = std::string(GetParam()) + " " + c.name;
    const GptTrace clean = gpt_forward(c.model, c.clean), corrupt = gpt_forward(c.model, c.corrupt);
    const auto sweep = ablation_sweep(c.model, clean, c.logprob, AblationMode::Zero);
    ASSERT_TRUE(sweep);
    EXPECT_EQ(sweep->rows, c.model.config.n_layer);
    EXPECT_EQ(sweep->cols, c.model.config.n_head);
    EXPECT_LT(rel_diff(sweep->values, want(c, "sweep"), label + " sweep"), 2e-5f);
    const auto heads = patch_sweep(c.model, clean, corrupt, c.diff, PatchPer::Head);
    ASSERT_TRUE(heads);
    EXPECT_LT(rel_diff(heads->values, want(c, "patch_head"), label + " patch_head"), 1e-4f);
    const auto resid = patch_sweep(c.model, clean, corrupt, c.diff, PatchPer::LayerPosition);
    ASSERT_TRUE(resid);
    EXPECT_EQ(resid->cols, clean.tokens());
    EXPECT_LT(rel_diff(resid->values, want(c, "patch_resid"), label + " patch_resid"), 1e-4f);
    // The last block's residual at the last position is all the head reads there: patched
    // from the clean run it restores the clean logits, so the effect is exactly 1.
    EXPECT_EQ(resid->at(resid->rows - 1, resid->cols - 1), 1.0f) << label;
    // Before the changed token (position 8) nothing differs: no effect.
    EXPECT_EQ(resid->at(0, 0), 0.0f) << label;
  }
}

TEST_P(Interventions, EveryLensEntryMatchesTorchAndTheLastLayerIsTheModelsLogits) {
  for (const Case& c : load_cases()) {
    const std::string label = std::string(GetParam()) + " " + c.name;
    const GptTrace tr = gpt_forward(c.model, c.clean);
    const int L = c.model.config.n_layer, T = tr.tokens(), V = c.model.config.vocab_size;
    std::vector<float> lens;
    for (int l = 0; l < L; ++l) {
      const std::vector<float> x = lens_logits(c.model, tr, l);
      lens.insert(lens.end(), x.begin(), x.end());
    }
    EXPECT_LT(rel_diff(lens, want(c, "clean.lens"), label + " lens"), 1e-5f);
    const std::vector<float> last = lens_logits(c.model, tr, L - 1);
    for (int pos = 0; pos < T; ++pos)
      EXPECT_TRUE(
          std::equal(last.begin() + pos * V, last.begin() + (pos + 1) * V, gpt_logits(c.model, tr, pos).begin()))
          << label << " position " << pos;
    EXPECT_TRUE(std::equal(last.end() - V, last.end(), tr.logits_last.data.begin())) << label;
    // The table: every top-k entry's probability is torch's softmax of that lens row.
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
          // Logits agree to ~1e-6 of their scale (up to 35 here); a probability to p(1 − p) of that.
          EXPECT_NEAR(e.p, std::exp(static_cast<double>(row[e.id]) - mx) / sum, 1e-5)
              << label << " " << l << "," << pos;
          if (i > 0) {
            EXPECT_GE(table.at(l, pos, i - 1).p, e.p);
          }
        }
        int rank = 0;
        for (int i = 0; i < V; ++i) rank += row[i] > row[c.logprob.target];
        EXPECT_EQ(table.rank[static_cast<std::size_t>(l) * T + pos], rank) << label << " " << l << "," << pos;
      }
    const NextToken next = next_token(c.model, tr, T - 1, 5);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(table.at(L - 1, T - 1, i).id, next.top[static_cast<std::size_t>(i)].id);
      EXPECT_EQ(table.at(L - 1, T - 1, i).p, next.top[static_cast<std::size_t>(i)].p);
    }
  }
}

TEST_P(Interventions, NormWeightedAttentionMatchesTorch) {
  for (const Case& c : load_cases()) {
    const GptTrace tr = gpt_forward(c.model, c.clean);
    std::vector<float> all;
    for (int l = 0; l < c.model.config.n_layer; ++l) {
      const Tensor t = norm_weighted_attention(c.model, tr, l);
      EXPECT_EQ(t.shape, tr.layers[static_cast<std::size_t>(l)].weights.shape);
      all.insert(all.end(), t.data.begin(), t.data.end());
    }
    EXPECT_LT(rel_diff(all, want(c, "clean.norm_weighted"), std::string(GetParam()) + " " + c.name + " norm-weighted"),
              2e-6f);
  }
}

TEST_P(Interventions, AnEmptyInterventionIsTheCleanRunBitForBit) {
  for (const Case& c : load_cases()) {
    const GptTrace clean = gpt_forward(c.model, c.clean);
    Intervention none;
    none.ablate = {};
    // An empty intervention recomputes nothing; one on the last layer that patches a head
    // from the run itself recomputes the last layer, with the same bits.
    const GptTrace same = gpt_forward_intervened(c.model, clean, none);
    EXPECT_EQ(same.logits_last.data, clean.logits_last.data) << c.name;
    Intervention self;
    self.source = &clean;
    self.patch_heads = {{c.model.config.n_layer - 1, 0}};
    const GptTrace patched = gpt_forward_intervened(c.model, clean, self);
    EXPECT_EQ(patched.layers.back().resid.data, clean.layers.back().resid.data) << c.name;
    EXPECT_EQ(patched.logits_last.data, clean.logits_last.data) << c.name;
    EXPECT_EQ(patched.model, nullptr);  // never a prefix gpt_forward reuses as clean
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Interventions, ::testing::ValuesIn(test::kBackendNames));

// Random weights, 2 heads of 4, a vocabulary of 11 and a context of 8.
GptModel tiny_gpt(int layers, bool tied, unsigned seed) {
  GptConfig cfg;
  cfg.n_layer = layers;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.n_ctx = 8;
  cfg.vocab_size = 11;
  return test::random_gpt(cfg, tied, seed);
}

TEST(InterventionInput, BadHeadsPositionsAndLengthsAreRefusedNamingTheField) {
  const GptModel m = tiny_gpt(2, true, 3);
  const std::vector<int> ids{1, 2, 3};
  const GptTrace tr = gpt_forward(m, ids);
  auto refused = [&](const Intervention& iv, const std::string& part) {
    try {
      gpt_forward_intervened(m, tr, iv);
      ADD_FAILURE() << "accepted, expected " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused(parse_ablation("2.0"), "ablate: head 2.0");
  refused(parse_ablation("0.2"), "ablate: head 0.2");
  Intervention resid;
  resid.source = &tr;
  resid.patch_resid = {{0, 3}};
  refused(resid, "patch: residual 0@3");
  Intervention nosrc;
  nosrc.patch_heads = {{0, 0}};
  refused(nosrc, "no run");
  const std::vector<int> longer{1, 2, 3, 4};
  const GptTrace other = gpt_forward(m, longer);
  EXPECT_THROW(patch_sweep(m, tr, other, TokenMetric{1, 2}, PatchPer::Head), std::invalid_argument);
  EXPECT_THROW(patch_sweep(m, tr, tr, TokenMetric{1, 2}, PatchPer::Head), std::invalid_argument);  // nothing to restore
  EXPECT_THROW(ablation_sweep(m, tr, TokenMetric{11, -1}, AblationMode::Zero), std::invalid_argument);
  for (const char* bad : {"", "5", "5.", ".1", "a.b", "1.1:avg", "1.1,,2.0", "-1.0"})
    EXPECT_THROW(parse_ablation(bad), std::invalid_argument) << bad;
  const Intervention iv = parse_ablation("5.1,6.9:mean");
  EXPECT_EQ(iv.ablate, (std::vector<HeadIndex>{{5, 1}, {6, 9}}));
  EXPECT_EQ(iv.mode, AblationMode::Mean);
  EXPECT_EQ(parse_ablation("0.0:zero").mode, AblationMode::Zero);
}

TEST(InterventionInput, ASweepStopsWhenToldAndCountsEveryRun) {
  const GptModel m = tiny_gpt(3, false, 4);
  const std::vector<int> ids{1, 2, 3, 4};
  const GptTrace tr = gpt_forward(m, ids);
  int calls = 0;
  const auto all = ablation_sweep(m, tr, TokenMetric{3, -1}, AblationMode::Mean, [&](int done, int total) {
    EXPECT_EQ(done, ++calls);
    EXPECT_EQ(total, 6);
    return true;
  });
  EXPECT_TRUE(all);
  EXPECT_EQ(calls, 6);
  calls = 0;
  EXPECT_FALSE(ablation_sweep(m, tr, TokenMetric{3, -1}, AblationMode::Zero, [&](int, int) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace mhaviz
