// The GPT forward: fast == loop oracle on every backend, incremental == fresh bitwise,
// softmax and mask invariants, next-token probabilities. Models are built in memory with
// random weights; the checkpoint tests (test_gpt_checkpoints.cpp) hold it to PyTorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "gpt_test_util.hpp"
#include "key_panels_util.hpp"
#include "mhaviz/gpt_forward.hpp"

namespace mhaviz {
namespace {

using test::BackendTest;
using test::random_gpt;

GptConfig small_config(int n_layer, int n_head, int n_embd, int n_ctx, int vocab, bool qkv_bias) {
  GptConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.n_ctx = n_ctx;
  c.vocab_size = vocab;
  c.qkv_bias = qkv_bias;
  return c;
}

std::vector<int> random_ids(std::mt19937& gen, int T, int vocab) {
  std::uniform_int_distribution<int> d(0, vocab - 1);
  std::vector<int> ids(static_cast<std::size_t>(T));
  for (int& i : ids) i = d(gen);
  return ids;
}

// Largest |a - b| over the tensor, with -inf == -inf counted as equal.
double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double m = 0.0;
  for (std::size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i) {
    if (a.data[i] == b.data[i]) continue;
    m = std::max(m, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
  }
  return m;
}

void expect_close(const GptTrace& fast, const GptTrace& ref, double tol) {
  EXPECT_LE(max_diff(fast.embeddings, ref.embeddings), tol);
  ASSERT_EQ(fast.layers.size(), ref.layers.size());
  for (std::size_t l = 0; l < ref.layers.size(); ++l) {
    const GptLayerTrace &f = fast.layers[l], &r = ref.layers[l];
    SCOPED_TRACE("layer " + std::to_string(l));
    EXPECT_LE(max_diff(f.x, r.x), tol);
    EXPECT_LE(max_diff(f.q, r.q), tol);
    EXPECT_LE(max_diff(f.k, r.k), tol);
    EXPECT_LE(max_diff(f.v, r.v), tol);
    EXPECT_LE(max_diff(f.weights, r.weights), tol);
    EXPECT_LE(max_diff(f.context, r.context), tol);
    EXPECT_LE(max_diff(f.resid_mid, r.resid_mid), tol);
    EXPECT_LE(max_diff(f.resid, r.resid), tol);
  }
  EXPECT_LE(max_diff(fast.final_norm, ref.final_norm), tol);
  EXPECT_LE(max_diff(fast.logits_last, ref.logits_last), tol);
}

// Every stored tensor equal bit for bit (memcmp-equal floats: -inf == -inf, no NaN here).
void expect_bitwise(const GptTrace& a, const GptTrace& b) {
  auto same = [](const Tensor& x, const Tensor& y, const char* what) {
    EXPECT_EQ(x.shape, y.shape) << what;
    EXPECT_TRUE(x.data == y.data) << what << " differs";
  };
  ASSERT_EQ(a.ids, b.ids);
  same(a.embeddings, b.embeddings, "embeddings");
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const GptLayerTrace &x = a.layers[l], &y = b.layers[l];
    same(x.x, y.x, "x");
    same(x.q, y.q, "q");
    same(x.k, y.k, "k");
    same(x.v, y.v, "v");
    same(x.weights, y.weights, "weights");
    same(x.context, y.context, "context");
    same(x.resid_mid, y.resid_mid, "resid_mid");
    same(x.resid, y.resid, "resid");
  }
  same(a.final_norm, b.final_norm, "final_norm");
  same(a.logits_last, b.logits_last, "logits_last");
}

TEST_P(BackendTest, FastMatchesOracle) {
  std::mt19937 gen(7);
  struct Case {
    GptConfig c;
    bool tied;
    int T;
  };
  // Widths that fill the kernel's panels and ones that do not; T past one attention block.
  const Case cases[] = {{small_config(2, 4, 64, 96, 97, true), true, 70},
                        {small_config(1, 3, 24, 16, 41, false), false, 13},
                        {small_config(3, 2, 8, 8, 5, true), false, 1}};
  for (const Case& k : cases) {
    SCOPED_TRACE("n_embd " + std::to_string(k.c.n_embd) + " T " + std::to_string(k.T));
    GptModel m = random_gpt(k.c, k.tied, gen());
    const std::vector<int> ids = random_ids(gen, k.T, k.c.vocab_size);
    const GptTrace ref = gpt_forward_reference(m, ids);
    prepare_gpt_forward(m);
    expect_close(gpt_forward(m, ids), ref, 2e-5);
    // The oracle reads a prepared model (weights held packed only) the same way.
    expect_close(gpt_forward_reference(m, ids), ref, 0.0);
  }
}

TEST_P(BackendTest, SoftmaxRowsSumToOneAndMaskedCellsAreZero) {
  std::mt19937 gen(11);
  GptModel m = random_gpt(small_config(2, 4, 32, 200, 30, true), true, 3);
  prepare_gpt_forward(m);
  const int T = 150;
  const GptTrace tr = gpt_forward(m, random_ids(gen, T, 30));
  for (const GptLayerTrace& L : tr.layers)
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < T; ++i) {
        double sum = 0.0;
        for (int j = 0; j < T; ++j) {
          const float w = L.weights.at({0, h, i, j});
          // The layer's mask says which cells are hidden (GPT-2's: the causal one).
          ASSERT_EQ(L.mask.visible(i, j), j <= i);
          if (!L.mask.visible(i, j)) {
            ASSERT_EQ(w, 0.0f);
          } else {
            ASSERT_GE(w, 0.0f);
          }
          sum += w;
        }
        ASSERT_NEAR(sum, 1.0, 1e-5) << "head " << h << " row " << i;
      }
}

// On the kernel, a's kept key panels hold the keys a fresh forward packed, in every head. A
// forward that computed no row (a truncation) leaves them as they were: their layout (keys)
// no longer matches, and the next forward packs them all.
void expect_fresh_panels(const GptTrace& a, const GptTrace& fresh) {
  if (a.recomputed_from == a.tokens()) return;
  for (std::size_t l = 0; l < fresh.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    test::expect_panels_hold(a.layers[l].key_panels, fresh.layers[l].key_panels);
  }
}

// An edit's recompute from its first changed row equals a fresh forward, bit for bit, and
// recomputes no more than it must. On the kernel it packs only the key panels (32 keys each)
// holding keys from that row on: the others are kept, and equal a fresh forward's.
TEST_P(BackendTest, IncrementalEqualsFreshBitwise) {
  std::mt19937 gen(5);
  const int V = 40;
  GptModel m = random_gpt(small_config(2, 4, 32, 400, V, true), true, 9);
  prepare_gpt_forward(m);
  const bool blas = backend() == Backend::OpenBlas;
  std::vector<int> ids = random_ids(gen, 300, V);
  GptTrace tr = gpt_forward(m, ids);
  ASSERT_EQ(tr.recomputed_from, 0);
  auto step = [&](const std::vector<int>& next, int first_changed, const char* what) {
    SCOPED_TRACE(what);
    gpt_forward(m, next, tr);
    const int T = static_cast<int>(next.size());
    const int expected = std::min(T, blas ? first_changed / kBlasRows * kBlasRows : first_changed);
    EXPECT_EQ(tr.recomputed_from, expected);
    const GptTrace fresh = gpt_forward(m, next);
    expect_bitwise(tr, fresh);
    if (!blas) expect_fresh_panels(tr, fresh);
    ids = next;
  };
  auto edit = [&](int pos) {
    std::vector<int> next = ids;
    next[static_cast<std::size_t>(pos)] = (next[static_cast<std::size_t>(pos)] + 1) % V;
    return next;
  };
  step(edit(0), 0, "edit at 0");
  step(edit(150), 150, "edit in the middle");
  step(edit(299), 299, "edit at the last position");
  std::vector<int> longer = ids;
  longer.insert(longer.end(), {1, 2, 3});
  step(longer, 300, "append three");
  step(std::vector<int>(ids.begin(), ids.begin() + 200), 200, "truncate to 200");
  step(std::vector<int>(ids.begin(), ids.begin() + 128), 128, "truncate to a block boundary");
  std::vector<int> replaced(ids.begin(), ids.begin() + 60);
  replaced.insert(replaced.end(), {5, 6, 7, 8});
  step(replaced, 60, "truncate and type");
  gpt_forward(m, ids, tr);
  EXPECT_EQ(tr.recomputed_from, static_cast<int>(ids.size())) << "the same ids recompute nothing";
  if (blas) return;
  // An edit at the last position does not pack the first panel again: a value planted there stays.
  for (GptLayerTrace& L : tr.layers) L.key_panels.floats[0] = 1234.5f;
  gpt_forward(m, edit(static_cast<int>(ids.size()) - 1), tr);
  for (const GptLayerTrace& L : tr.layers) EXPECT_EQ(L.key_panels.floats[0], 1234.5f);
}

TEST_P(BackendTest, NextTokenIsSoftmaxOfLogits) {
  std::mt19937 gen(2);
  GptModel m = random_gpt(small_config(1, 2, 16, 32, 60, true), false, 4);
  prepare_gpt_forward(m);
  const std::vector<int> ids = random_ids(gen, 12, 60);
  const GptTrace tr = gpt_forward(m, ids);
  const NextToken last = next_token(m, tr, 11, 5);
  ASSERT_EQ(last.top.size(), 5u);
  double sum = 0.0;
  for (float p : last.probs) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  const auto argmax =
      std::max_element(tr.logits_last.data.begin(), tr.logits_last.data.end()) - tr.logits_last.data.begin();
  EXPECT_EQ(last.top[0].id, argmax);
  for (std::size_t i = 1; i < last.top.size(); ++i) EXPECT_GE(last.top[i - 1].p, last.top[i].p);
  // Any position on demand: position 3's logits are the last logits of the first 4 tokens
  // (bitwise on the kernel; OpenBLAS sums a 4-row product in another order than a 12-row one).
  const GptTrace prefix = gpt_forward(m, std::vector<int>(ids.begin(), ids.begin() + 4));
  const std::vector<float> at3 = gpt_logits(m, tr, 3);
  if (backend() != Backend::OpenBlas) {
    EXPECT_EQ(at3, prefix.logits_last.data);
  }
  for (std::size_t i = 0; i < at3.size(); ++i) ASSERT_NEAR(at3[i], prefix.logits_last.data[i], 1e-5);
  EXPECT_THROW(gpt_logits(m, tr, 12), std::out_of_range);
}

TEST_P(BackendTest, BadIdsAreRejected) {
  GptModel m = random_gpt(small_config(1, 2, 16, 8, 10, true), true, 1);
  prepare_gpt_forward(m);
  EXPECT_THROW(gpt_forward(m, std::vector<int>{}), std::invalid_argument);
  EXPECT_THROW(gpt_forward(m, std::vector<int>(9, 1)), std::invalid_argument);
  EXPECT_THROW(gpt_forward(m, std::vector<int>{1, 10}), std::invalid_argument);
  EXPECT_THROW(gpt_forward(m, std::vector<int>{-1}), std::invalid_argument);
}

// Preparing for each backend the CPU runs (skipped, and so reported, where it cannot): the
// kernels hold each Linear once (packed) and its weight reads back exactly; OpenBLAS gets the
// weights back.
TEST_P(BackendTest, PackedWeightsReadBackExactly) {
  GptModel m = random_gpt(small_config(1, 2, 40, 8, 33, true), false, 6);
  const GptModel original = m;
  prepare_gpt_forward(m);
  const GptBlock &blk = m.blocks[0], &orig = original.blocks[0];
  for (auto [l, o] :
       {std::pair{&blk.qkv, &orig.qkv}, {&blk.proj, &orig.proj}, {&blk.fc, &orig.fc}, {&blk.fc_proj, &orig.fc_proj}}) {
    EXPECT_EQ(gpt_linear_weight(*l), o->weight);
    EXPECT_TRUE(l->weight.empty() || l->packed.empty()) << "a layer held twice";
  }
  EXPECT_FALSE(m.tied_head());
}

// The edit's floor (`bench --edit-at`) reads every weight a one-row forward reads whole, as
// held: the blocks', the final norm's and the head's, and wte only where the head multiplies
// by it unpacked. Each byte is read: changing one weight changes the sum, changing a row of
// wte the forward does not read whole does not.
TEST(GptWeightRead, CountsAndReadsWhatAnEditReadsWhole) {
  for (const bool tied : {true, false})
    for (const bool prepared : {false, true}) {
      SCOPED_TRACE(std::string(tied ? "tied" : "untied") + (prepared ? ", prepared" : ""));
      GptModel m = random_gpt(small_config(2, 4, 64, 16, 97, true), tied, 5);
      if (prepared) prepare_gpt_forward(m);
      std::int64_t bytes = 0;
      auto add = [&bytes](const auto& v) { bytes += static_cast<std::int64_t>(v.size() * sizeof(v[0])); };
      auto add_linear = [&](const Linear& l) {
        add(l.weight);
        add(l.packed);
        add(l.packed_bf16);
        add(l.bias);
      };
      for (const GptBlock& b : m.blocks) {
        for (const Linear* l : {&b.qkv, &b.proj, &b.fc, &b.fc_proj}) add_linear(*l);
        for (const std::vector<float>* v : {&b.ln1_weight, &b.ln1_bias, &b.ln2_weight, &b.ln2_bias}) add(*v);
      }
      add(m.lnf_weight);
      add(m.lnf_bias);
      add_linear(m.lm_head);
      add_linear(m.tied_packed);
      const bool head_reads_wte = tied && m.tied_packed.packed.empty();
      if (head_reads_wte) add(m.wte);
      EXPECT_EQ(gpt_weight_bytes(m), bytes);
      EXPECT_EQ(head_reads_wte, tied && !prepared);

      const std::uint64_t before = gpt_read_weights(m);
      EXPECT_EQ(gpt_read_weights(m), before);
      std::vector<float>& w =
          m.blocks[1].fc_proj.packed.empty() ? m.blocks[1].fc_proj.weight : m.blocks[1].fc_proj.packed;
      w[0] = std::nextafter(w[0], 10.0f);  // its bits + 1 where it is positive, − 1 where negative
      EXPECT_NE(gpt_read_weights(m), before);
      const std::uint64_t after = gpt_read_weights(m);
      m.wpe[0] += 1.0f;
      m.wte[0] += 1.0f;
      EXPECT_EQ(gpt_read_weights(m) == after, !head_reads_wte);
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendTest, ::testing::ValuesIn(test::kBackendNames));

}  // namespace
}  // namespace mhaviz
