// The variants side by side (variant_compare.hpp): costs against figures counted by hand for a
// small module, KV bytes against the memory table `mhaviz kv-memory` prints, and equivalences
// whose verdicts follow the numbers.
#include <gtest/gtest.h>

#include <string>

#include "mhaviz/kv_memory.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/variant_compare.hpp"

namespace mhaviz {
namespace {

// d_in 3, T 6, b 2, 4 heads of head_dim 2 (d_out 8), no bias, causal, context_length 6.
Session small_session(Variant v = Variant::WeightSplit) {
  Session s;
  s.tokens = {"a", "b", "c", "d", "e", "f"};
  for (int t = 0; t < 6; ++t)
    s.embeddings.push_back({0.1f * static_cast<float>(t + 1), 0.5f - 0.07f * static_cast<float>(t),
                            0.3f * static_cast<float>(t % 3) - 0.2f});
  s.batch = 2;
  s.model.variant = v;
  s.model.d_out = 8;
  s.model.num_heads = 4;
  s.model.context_length = 6;
  s.model.training = false;
  if (v == Variant::Gqa) s.model.num_kv_groups = 2;
  if (v == Variant::Mla) s.model.latent_dim = 16;
  return s;
}

VariantComparison compare(const Session& s) {
  validate_session(s);
  return compare_attention_variants(build_model(s.model, s.d_in()), s.input_tensor());
}

const VariantCost& row(const VariantComparison& c, const std::string& name) {
  for (const VariantCost& r : c.costs)
    if (r.variant == name) return r;
  throw std::out_of_range(name);
}

const Equivalence* find(const VariantComparison& c, const std::string& start) {
  for (const Equivalence& e : c.equivalences)
    if (e.claim.starts_with(start)) return &e;
  return nullptr;
}

// [SECTION] Costs
TEST(VariantCompare, CostsEqualTheFiguresCountedByHand) {
  const VariantComparison c = compare(small_session());
  ASSERT_EQ(c.costs.size(), 5u);
  EXPECT_EQ(c.costs.front().variant, "MHA");
  // MHA: W_q, W_k, W_v 3·(3·8) + out_proj 8·8 + 8. FLOPs: 2·b·T·d_in·d_out per projection
  // (576 each), q·kᵀ and weights·v 2·(2·b·h·T·T·hd) = 2304, out_proj 2·b·T·8·8 = 1536.
  EXPECT_EQ(row(c, "MHA").cost.parameters, 144);
  EXPECT_EQ(row(c, "MHA").cost.flops, 3 * 576 + 2304 + 1536);
  // GQA with 2 K/V heads (h / 2): W_k and W_v 3 -> 4; out_proj without bias.
  EXPECT_EQ(row(c, "GQA").config.num_kv_groups, 2);
  EXPECT_NE(row(c, "GQA").detail.find("h / 2"), std::string::npos) << row(c, "GQA").detail;
  EXPECT_EQ(row(c, "GQA").cost.parameters, 24 + 2 * 12 + 64);
  EXPECT_EQ(row(c, "GQA").cost.flops, 2 * 2 * 6 * 3 * (8 + 8) + 2304 + 1536);
  // MQA: one K/V head of 2.
  EXPECT_EQ(row(c, "MQA").cost.parameters, 24 + 2 * 6 + 64);
  EXPECT_EQ(row(c, "MQA").cost.flops, 2 * 2 * 6 * 3 * (8 + 4) + 2304 + 1536);
  // MLA, latent max(16, 8 // 8) = 16: W_q 3·8, W_DKV 3·16, W_UK and W_UV 16·8 each, out_proj 8·8 + 8.
  EXPECT_EQ(row(c, "MLA").config.latent_dim, 16);
  EXPECT_EQ(row(c, "MLA").cost.parameters, 24 + 48 + 256 + 64 + 8);
  EXPECT_EQ(row(c, "MLA").cost.flops, 2 * 2 * 6 * (24 + 48 + 256) + 2304 + 1536);
  // SWA (window T / 2 = 3): PyTorch's masked implementation multiplies every cell, as MHA.
  EXPECT_EQ(row(c, "SWA").config.sliding_window, 3);
  EXPECT_EQ(row(c, "SWA").cost.flops, row(c, "MHA").cost.flops);
  EXPECT_EQ(row(c, "SWA").cost.parameters, 144);
  // KV bytes per token, float32: K and V of 4, 2, 1 K/V heads of 2; MLA its 16-value latent.
  EXPECT_EQ(row(c, "MHA").kv_bytes_token, 2 * 4 * 2 * 4);
  EXPECT_EQ(row(c, "GQA").kv_bytes_token, 2 * 2 * 2 * 4);
  EXPECT_EQ(row(c, "MQA").kv_bytes_token, 2 * 1 * 2 * 4);
  EXPECT_EQ(row(c, "MLA").kv_bytes_token, 16 * 4);
  EXPECT_EQ(row(c, "SWA").kv_bytes_token, row(c, "MHA").kv_bytes_token);  // the window is not full yet
  // Batch 2 at context_length 6; the window keeps 3 of them.
  EXPECT_EQ(row(c, "MHA").kv_bytes_context, 64 * 12);
  EXPECT_EQ(row(c, "GQA").kv_bytes_context, 32 * 12);
  EXPECT_EQ(row(c, "MQA").kv_bytes_context, 16 * 12);
  EXPECT_EQ(row(c, "MLA").kv_bytes_context, 64 * 12);
  EXPECT_EQ(row(c, "SWA").kv_bytes_context, 64 * 2 * 3);
}

// What `mhaviz kv-memory --session FILE --dtype fp32` prints for a gqa session with a window.
TEST(VariantCompare, KvBytesAreTheMemoryTables) {
  Session s = small_session(Variant::Gqa);
  s.model.sliding_window = 2;
  s.model.context_length = 6;
  const VariantComparison c = compare(s);
  KvModel m = kv_model_of(s);
  m.dtype = "fp32";
  m.dtype_bytes = kv_dtype_bytes("fp32");
  m.latent_dim = row(c, "MLA").config.latent_dim;
  for (const KvRow& r : kv_memory_table(m)) {
    const std::string ours = r.variant == "MHA + SWA" ? "SWA" : r.variant;
    if (ours == "GQA + SWA") continue;
    EXPECT_EQ(row(c, ours).kv_bytes_context, r.bytes) << r.variant;
  }
  EXPECT_NE(row(c, "GQA").detail.find("the session's"), std::string::npos);
  EXPECT_EQ(row(c, "SWA").config.sliding_window, 2);
  EXPECT_NE(row(c, "SWA").detail.find("the session's"), std::string::npos);
  EXPECT_EQ(row(c, "MLA").config.latent_dim, default_latent_dim(8));
}

// [SECTION] Equivalences
TEST(VariantCompare, EquivalencesFollowTheNumbers) {
  const VariantComparison c = compare(small_session());
  ASSERT_EQ(c.equivalences.size(), 6u);
  for (const Equivalence& e : c.equivalences) {
    double worst = 0;
    for (const auto& d : e.diffs) worst = std::max(worst, d.second);
    EXPECT_EQ(e.equal, worst <= kEquivalenceTolerance) << e.claim;
    // Each claim holds at this size: the equal pairs are equal, the others are not.
    EXPECT_EQ(e.equal, e.expected_equal) << e.claim << ": " << e.verdict;
    if (!e.equal) {
      EXPECT_GT(worst, 1e-3) << e.claim;
      EXPECT_TRUE(e.verdict.starts_with("differ:")) << e.verdict;
    }
  }
  // The exact pairs are the same arithmetic: bit for bit.
  for (const char* exact : {"GQA with 4 K/V heads", "Sliding window W = T", "RoPE at one token"}) {
    const Equivalence* e = find(c, exact);
    ASSERT_NE(e, nullptr) << exact;
    EXPECT_EQ(e->verdict, "bit-equal") << exact;
  }
  ASSERT_NE(find(c, "GQA with 2 K/V heads, made by mean-pooling"), nullptr);
  ASSERT_NE(find(c, "RoPE at 6 tokens"), nullptr);
  EXPECT_EQ(find(c, "RoPE at 6 tokens")->diffs.front().first, "scores");
}

TEST(VariantCompare, LeavesOutWhatTheSessionCannotMakeAndSaysWhy) {
  Session s = small_session();
  s.model.causal = false;
  s.model.d_out = 12;
  s.model.num_heads = 4;  // head_dim 3: odd, no RoPE
  const VariantComparison c = compare(s);
  EXPECT_EQ(find(c, "Sliding window"), nullptr);
  EXPECT_EQ(find(c, "RoPE"), nullptr);
  std::string notes;
  for (const std::string& n : c.notes) notes += n + "\n";
  EXPECT_NE(notes.find("needs the causal mask"), std::string::npos) << notes;
  EXPECT_NE(notes.find("head_dim 3 is odd"), std::string::npos) << notes;
  EXPECT_NE(find(c, "GQA with 4 K/V heads"), nullptr);
}

TEST(VariantCompare, MeasuresAgainstTheSessionsOwnModuleWhenItCan) {
  const VariantComparison split = compare(small_session());
  EXPECT_NE(split.base.find("this session's weight-split"), std::string::npos) << split.base;
  const VariantComparison wrapper = compare(lesson("seed003-wrapper"));
  EXPECT_NE(wrapper.base.find("not the session's"), std::string::npos) << wrapper.base;
  EXPECT_EQ(wrapper.heads * wrapper.head_dim, merged_dim(wrapper.costs.front().config));
  EXPECT_THROW(compare_attention_variants(build_model(small_session().model, 3), Tensor({2, 6, 4})),
               std::invalid_argument);
}

}  // namespace
}  // namespace mhaviz
