// The book's bonus variants (gqa, mla) and the sliding window: random sessions against every
// intermediate PyTorch computed for them (tests/models/make_reference.py --random, a fixture in
// the build tree), the loop oracle against the fast forward, the session format's version 3
// and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "test_util.hpp"

namespace mhaviz {
namespace {

using nlohmann::json;

// [SECTION] against PyTorch

// Every tensor of ours that PyTorch also computed, within 1e-5 + 1e-4·|x| (parameters 1e-6
// relative), and the same set of names (dropout_keep aside, which torch does not hold).
void expect_every_intermediate(const std::vector<NamedTensor>& ours, const json& want, const std::string& label) {
  std::size_t compared = 0;
  for (const NamedTensor& nt : ours) {
    if (nt.name == "dropout_keep") continue;
    ASSERT_TRUE(want.contains(nt.name)) << label << ": PyTorch has no " << nt.name;
    const json& w = want[nt.name];
    ASSERT_EQ(nt.tensor.shape, w["shape"].get<Shape>()) << label << ": shape of " << nt.name;
    const auto data = w["data"].get<std::vector<double>>();
    ASSERT_EQ(nt.tensor.data.size(), data.size()) << label << ": " << nt.name;
    const bool parameter = nt.name.ends_with(".weight") || nt.name.ends_with(".bias");
    for (std::size_t i = 0; i < data.size(); ++i) {
      const double tol = parameter ? 1e-6 * std::fabs(data[i]) : 1e-5 + 1e-4 * std::fabs(data[i]);
      ASSERT_NEAR(nt.tensor.data[i], data[i], tol) << label << ": " << nt.name << "[" << i << "]";
    }
    ++compared;
  }
  EXPECT_EQ(compared, want.size()) << label << ": PyTorch holds tensors mhaviz does not name";
}

TEST(VariantTorch, RandomSessionsEqualPyTorch) {
  const std::filesystem::path dir = MHAVIZ_VARIANT_REFERENCE;
  int sessions = 0, dropped = 0, windowed = 0, normed = 0, rotated = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "sessions")) {
    const std::string name = entry.path().stem().string();
    const Session s = parse_session(test::slurp(entry.path().string()));
    const json want = json::parse(test::slurp((dir / "expected" / (name + ".json")).string()))["tensors"];
    const Model model = build_model(s.model, s.d_in());
    const Trace fast = forward(model, s.input_tensor());
    expect_every_intermediate(named_tensors(model, fast), want, name + " (fast)");
    const Trace slow = forward_reference(model, s.input_tensor());
    expect_every_intermediate(named_tensors(model, slow), want, name + " (oracle)");
    // Dropout zeroes exactly the entries PyTorch zeroed.
    const auto w = want["attn_weights"]["data"].get<std::vector<double>>();
    const auto wd = want["attn_weights_dropped"]["data"].get<std::vector<double>>();
    for (std::size_t i = 0; i < w.size(); ++i)
      if (w[i] != 0.0) {
        ASSERT_EQ(wd[i] == 0.0, fast.weights_after_dropout().data[i] == 0.0f) << name << " dropout " << i;
      }
    ++sessions;
    dropped += fast.dropout_applied() ? 1 : 0;
    windowed += s.model.sliding_window > 0 ? 1 : 0;
    normed += s.model.qk_norm ? 1 : 0;
    rotated += s.model.rope_base != 0.0 ? 1 : 0;
  }
  // The generator's mix: every kind, in training with dropout and without.
  EXPECT_GE(sessions, 24);
  EXPECT_GE(dropped, 4);
  EXPECT_GE(windowed, 8);
  EXPECT_GE(normed, 8);
  EXPECT_GE(rotated, 8);
}

// [SECTION] the fast forward against its oracle, on every backend

class VariantBackends : public test::OnBackend {};

TEST_P(VariantBackends, FastEqualsOracle) {
  std::mt19937 gen(77);
  for (int i = 0; i < 60; ++i) {
    const Variant v = i % 3 == 0 ? Variant::Mla : i % 3 == 1 ? Variant::Gqa : Variant::WeightSplit;
    Session s = test::random_session(gen, v, i % 2 == 0);
    if (v == Variant::Gqa) {
      s.model.num_kv_groups = s.model.num_heads;
      while (s.model.num_kv_groups > 1 && (i / 3) % 2 == 0) {  // half multi-head, half fewer K/V heads
        --s.model.num_kv_groups;
        if (s.model.num_heads % s.model.num_kv_groups == 0) break;
      }
    }
    if (v == Variant::Mla) s.model.latent_dim = 1 + i % 5;
    if (i % 4 == 1) {
      s.model.causal = true;
      s.model.sliding_window = 1 + i % 4;
    }
    s.model.qk_norm = i % 5 < 2;
    if (v != Variant::Mla && head_dim(s.model) % 2 == 0 && i % 7 < 4) s.model.rope_base = i % 2 ? 10000.0 : 10.0;
    validate_session(s);
    const Model m = build_model(s.model, s.d_in());
    const Trace fast = forward(m, s.input_tensor()), slow = forward_reference(m, s.input_tensor());
    EXPECT_EQ(fast.cost.parameters, m.parameter_count()) << "session " << i;
    const auto a = named_tensors(m, fast), b = named_tensors(m, slow);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t t = 0; t < a.size(); ++t) {
      ASSERT_EQ(a[t].name, b[t].name);
      ASSERT_EQ(a[t].tensor.shape, b[t].tensor.shape) << a[t].name;
      for (std::size_t e = 0; e < a[t].tensor.data.size(); ++e)
        ASSERT_NEAR(a[t].tensor.data[e], b[t].tensor.data[e], 1e-5 + 1e-4 * std::fabs(b[t].tensor.data[e]))
            << "session " << i << " " << a[t].name << "[" << e << "]";
    }
  }
}
// Widths that fall on the kernel's 32-column panels: the stacked q | k | v product then writes
// each column block straight into its tensor (forward.cpp, project); still the oracle's values,
// with as many K/V heads as query heads, fewer, and the wrapper's per-head blocks.
TEST_P(VariantBackends, PanelAlignedStackedBlocksEqualOracle) {
  std::mt19937 gen(91);
  int compared = 0;
  for (const auto& [v, groups] : {std::pair{Variant::WeightSplit, 4}, {Variant::Gqa, 2}, {Variant::Wrapper, 4}}) {
    Session s = test::random_session(gen, v, true);
    s.model.d_out = 128;
    s.model.num_heads = 4;
    if (v == Variant::Gqa) s.model.num_kv_groups = groups;
    validate_session(s);
    const Model m = build_model(s.model, s.d_in());
    const Trace fast = forward(m, s.input_tensor()), slow = forward_reference(m, s.input_tensor());
    const auto a = named_tensors(m, fast), b = named_tensors(m, slow);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t t = 0; t < a.size(); ++t) {
      ASSERT_EQ(a[t].tensor.shape, b[t].tensor.shape) << a[t].name;
      for (std::size_t e = 0; e < a[t].tensor.data.size(); ++e)
        ASSERT_NEAR(a[t].tensor.data[e], b[t].tensor.data[e], 1e-5 + 1e-4 * std::fabs(b[t].tensor.data[e]))
            << variant_name(v) << " " << a[t].name << "[" << e << "]";
      ++compared;
    }
  }
  EXPECT_GT(compared, 30);
}

INSTANTIATE_TEST_SUITE_P(Backends, VariantBackends,
                         ::testing::Values(Backend::Avx512, Backend::Avx2, Backend::OpenBlas), test::backend_label);

// [SECTION] shapes and the mask's rules

Session gqa_session(int heads, int groups, int window = 0) {
  Session s = lesson("book-weight-split-3d");
  s.model.variant = Variant::Gqa;
  s.model.num_heads = heads;
  s.model.d_out = 2 * heads;
  s.model.num_kv_groups = groups;
  s.model.sliding_window = window;
  validate_session(s);
  return s;
}

TEST(Variants, GqaReadsEachKvHeadFromItsGroupOfQueryHeads) {
  const Session s = gqa_session(6, 2);
  const Model m = build_model(s.model, s.d_in());
  // GroupedQueryAttention's creation order: W_key, W_value (to 2 heads of 2), W_query, out_proj without bias.
  ASSERT_EQ(m.layers.size(), 4u);
  EXPECT_EQ(m.layers[0].name, "W_key");
  EXPECT_EQ(m.layers[0].out, 4);
  EXPECT_EQ(m.layers[2].name, "W_query");
  EXPECT_TRUE(m.layer("out_proj").bias.empty());
  const Trace t = forward(m, s.input_tensor());
  const int T = s.num_tokens();
  EXPECT_EQ(t.k.shape, (Shape{2, 2, T, 2}));
  EXPECT_EQ(t.k_expanded.shape, (Shape{2, 6, T, 2}));
  // repeat_interleave: query heads 0-2 read K/V head 0, 3-5 head 1 ([K1, K1, K1, K2, K2, K2]).
  for (int h = 0; h < 6; ++h)
    for (int i = 0; i < T; ++i)
      for (int d = 0; d < 2; ++d) {
        EXPECT_EQ(t.k_expanded.at({1, h, i, d}), t.k.at({1, h / 3, i, d}));
        EXPECT_EQ(t.v_expanded.at({1, h, i, d}), t.v.at({1, h / 3, i, d}));
      }
  EXPECT_EQ(t.cost.parameters, m.parameter_count());
}

TEST(Variants, MlaKeepsItsLatentAndDefaultWidth) {
  Session s = lesson("book-weight-split-3d");
  const std::string text = session_to_json(s);
  json j = json::parse(text);
  j["version"] = 3;
  j["model"]["variant"] = "mla";
  const Session mla = parse_session(j.dump());
  EXPECT_EQ(mla.model.latent_dim, 16);  // max(16, d_out // 8)
  const Model m = build_model(mla.model, mla.d_in());
  const Trace t = forward(m, mla.input_tensor());
  EXPECT_EQ(t.latent.shape, (Shape{2, s.num_tokens(), 16}));
  EXPECT_EQ(m.layer("W_UK").in, 16);
  EXPECT_EQ(t.cost.parameters, m.parameter_count());
  EXPECT_EQ(default_latent_dim(1024), 128);
}

TEST(Variants, WindowHidesWhatTheCausalMaskLeaves) {
  const Session s = gqa_session(2, 1, 3);
  const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
  for (int i = 0; i < t.tokens; ++i)
    for (int j = 0; j < t.tokens; ++j) {
      const MaskRule want = j > i ? MaskRule::Causal : i - j >= 3 ? MaskRule::Window : MaskRule::Visible;
      EXPECT_EQ(t.hidden_by(i, j), want) << i << ", " << j;
      EXPECT_EQ(t.masked(i, j), want != MaskRule::Visible);
      if (want != MaskRule::Visible) {
        EXPECT_EQ(t.weights.at({0, 1, i, j}), 0.0f);
      }
    }
}

// [SECTION] the session format's version 3

json v3(const std::string& variant) {
  json j = json::parse(session_to_json(lesson("book-weight-split-3d")));
  j["version"] = 3;
  j["model"]["variant"] = variant;
  j["model"]["d_out"] = 6;
  j["model"]["num_heads"] = 3;
  if (variant == "gqa") j["model"]["num_kv_groups"] = 1;
  return j;
}

// A session of v3("gqa") made another variant: without the K/V heads only gqa has.
void as_variant(json& j, const std::string& variant) {
  j["model"]["variant"] = variant;
  j["model"].erase("num_kv_groups");
}

std::string error_of(const json& j) {
  try {
    parse_session(j.dump());
  } catch (const SessionError& e) {
    return e.what();
  }
  return "";
}

TEST(Variants, VersionThreeRoundTripsAndOlderFilesStayOlder) {
  for (const std::string variant : {"gqa", "mla"}) {
    json j = v3(variant);
    j["model"]["sliding_window"] = 2;
    const Session s = parse_session(j.dump());
    const std::string again = session_to_json(s);
    EXPECT_EQ(json::parse(again)["version"], 3);
    EXPECT_EQ(session_to_json(parse_session(again)), again);
  }
  json rotated = v3("weight_split");
  rotated["model"]["rope_base"] = 500000.0;
  rotated["model"]["qk_norm"] = true;
  const std::string written = session_to_json(parse_session(rotated.dump()));
  EXPECT_EQ(json::parse(written)["model"]["rope_base"], 500000.0);
  EXPECT_EQ(json::parse(written)["model"]["qk_norm"], true);
  EXPECT_EQ(json::parse(written)["version"], 3);
  // The fields a trained model's layer carries (hf_layer.hpp) round-trip with their values.
  json layer = v3("gqa");
  layer["model"]["rope_base"] = 500000.0;
  layer["model"]["rope_inv_freq"] = {0.0078125};
  layer["model"]["qk_norm"] = true;
  layer["model"]["qk_norm_eps"] = 1e-5;
  layer["model"]["query_pre_attn_scalar"] = 24;
  layer["model"]["out_dim"] = 5;
  const Session ls = parse_session(layer.dump());
  EXPECT_EQ(ls.model.rope_inv_freq, std::vector<double>{0.0078125});
  EXPECT_EQ(ls.model.qk_norm_eps, 1e-5);
  EXPECT_EQ(ls.model.query_pre_attn_scalar, 24.0);
  EXPECT_EQ(output_dim(ls.model), 5);
  const std::string layer_text = session_to_json(ls);
  EXPECT_EQ(session_to_json(parse_session(layer_text)), layer_text);
  EXPECT_EQ(forward(build_model(ls.model, ls.d_in()), ls.input_tensor()).output.shape,
            (Shape{ls.batch, ls.num_tokens(), 5}));
  // A weight_split without a window is written as before.
  EXPECT_EQ(json::parse(session_to_json(lesson("book-weight-split-3d")))["version"], 1);
  json null_window = v3("weight_split");
  null_window["model"]["sliding_window"] = nullptr;
  EXPECT_EQ(parse_session(null_window.dump()).model.sliding_window, 0);
}

struct Refusal {
  const char* what;
  std::function<void(json&)> edit;
  const char* starts;  // "field: value"
};

TEST(Variants, EveryBadCombinationNamesFieldAndValue) {
  const std::vector<Refusal> cases = {
      {"groups not dividing heads",
       [](json& j) {
         j["model"]["num_heads"] = 3;
         j["model"]["num_kv_groups"] = 2;
       },
       "model.num_kv_groups: 2 does not divide model.num_heads = 3"},
      {"more groups than heads", [](json& j) { j["model"]["num_kv_groups"] = 6; }, "model.num_kv_groups: 6"},
      {"zero groups", [](json& j) { j["model"]["num_kv_groups"] = 0; }, "model.num_kv_groups: 0"},
      {"gqa without groups", [](json& j) { j["model"].erase("num_kv_groups"); }, "model.num_kv_groups: missing"},
      {"groups on weight_split", [](json& j) { j["model"]["variant"] = "weight_split"; }, "model.num_kv_groups: 1"},
      {"window without causal",
       [](json& j) {
         j["model"]["sliding_window"] = 2;
         j["model"]["causal"] = false;
       },
       "model.sliding_window: 2 needs model.causal"},
      {"window below 1", [](json& j) { j["model"]["sliding_window"] = 0; }, "model.sliding_window: 0"},
      {"window negative", [](json& j) { j["model"]["sliding_window"] = -3; }, "model.sliding_window: -3"},
      {"window on the wrapper",
       [](json& j) {
         as_variant(j, "wrapper");
         j["model"]["sliding_window"] = 2;
       },
       "model.sliding_window: 2 is set but model.variant = \"wrapper\""},
      {"latent_dim below 1",
       [](json& j) {
         as_variant(j, "mla");
         j["model"]["latent_dim"] = 0;
       },
       "model.latent_dim: 0"},
      {"latent_dim on gqa", [](json& j) { j["model"]["latent_dim"] = 4; }, "model.latent_dim: 4 is set"},
      {"gqa in version 2", [](json& j) { j["version"] = 2; }, "model.variant: \"gqa\" needs \"version\": 3"},
      {"window in version 1",
       [](json& j) {
         j["version"] = 1;
         as_variant(j, "weight_split");
         j["model"]["sliding_window"] = 2;
       },
       "model.sliding_window: needs \"version\": 3 (value 2)"},
      {"version 4", [](json& j) { j["version"] = 4; }, "version: 4"},
      {"RoPE with an odd head_dim",
       [](json& j) {
         j["model"]["d_out"] = 9;
         j["model"]["rope_base"] = 10000;
       },
       "model.rope_base: 10000 needs an even head_dim, but d_out / num_heads = 3"},
      {"RoPE on mla",
       [](json& j) {
         as_variant(j, "mla");
         j["model"]["d_out"] = 12;
         j["model"]["rope_base"] = 10000;
       },
       "model.rope_base: 10000 is set but model.variant = \"mla\" has no RoPE here (real MLA models rotate"},
      {"RoPE on the wrapper",
       [](json& j) {
         as_variant(j, "wrapper");
         j["model"]["rope_base"] = 10000;
       },
       "model.rope_base: 10000 is set but model.variant = \"wrapper\""},
      {"RoPE base 1", [](json& j) { j["model"]["rope_base"] = 1; }, "model.rope_base: 1 is out of range"},
      {"RoPE base negative", [](json& j) { j["model"]["rope_base"] = -5; }, "model.rope_base: -5 is out of range"},
      {"RoPE base a string", [](json& j) { j["model"]["rope_base"] = "1e4"; }, "model.rope_base: expected a number"},
      {"RoPE base 0", [](json& j) { j["model"]["rope_base"] = 0; }, "model.rope_base: expected a number"},
      {"QK-norm on the wrapper",
       [](json& j) {
         as_variant(j, "wrapper");
         j["model"]["qk_norm"] = true;
       },
       "model.qk_norm: true is set but model.variant = \"wrapper\""},
      {"QK-norm not a bool", [](json& j) { j["model"]["qk_norm"] = 1; }, "model.qk_norm: "},
      {"qk_norm_eps without QK-norm", [](json& j) { j["model"]["qk_norm_eps"] = 1e-5; },
       "model.qk_norm_eps: 1e-05 is set but model.qk_norm is false"},
      {"qk_norm_eps 0",
       [](json& j) {
         j["model"]["qk_norm"] = true;
         j["model"]["qk_norm_eps"] = 0;
       },
       "model.qk_norm_eps: 0 is out of range (0, 1]"},
      {"rope_inv_freq without RoPE", [](json& j) { j["model"]["rope_inv_freq"] = {0.5}; },
       "model.rope_inv_freq: is set but model.rope_base is null"},
      {"rope_inv_freq of another head_dim",
       [](json& j) {
         j["model"]["rope_base"] = 10000;
         j["model"]["rope_inv_freq"] = {1.0, 0.5};
       },
       "model.rope_inv_freq: 2 values, but head_dim / 2 = 1"},
      {"rope_inv_freq negative",
       [](json& j) {
         j["model"]["rope_base"] = 10000;
         j["model"]["rope_inv_freq"] = {-1.0};
       },
       "model.rope_inv_freq[0]: -1 is not a positive number"},
      {"rope_inv_freq a string",
       [](json& j) {
         j["model"]["rope_base"] = 10000;
         j["model"]["rope_inv_freq"] = {"1"};
       },
       "model.rope_inv_freq[0]: expected a number"},
      {"query_pre_attn_scalar on the wrapper",
       [](json& j) {
         as_variant(j, "wrapper");
         j["model"]["query_pre_attn_scalar"] = 24;
       },
       "model.query_pre_attn_scalar: 24 is set but model.variant = \"wrapper\""},
      {"query_pre_attn_scalar 0", [](json& j) { j["model"]["query_pre_attn_scalar"] = 0; },
       "model.query_pre_attn_scalar: 0 is out of range"},
      {"out_dim on weight_split",
       [](json& j) {
         as_variant(j, "weight_split");
         j["model"]["out_dim"] = 4;
       },
       "model.out_dim: 4 is set but model.variant = \"weight_split\" projects to d_out"},
      {"out_dim 0", [](json& j) { j["model"]["out_dim"] = 0; }, "model.out_dim: 0 is out of range"},
      {"RoPE in version 2",
       [](json& j) {
         j["version"] = 2;
         as_variant(j, "weight_split");
         j["model"]["rope_base"] = 10000;
       },
       "model.rope_base: needs \"version\": 3 (value 10000)"},
  };
  for (const Refusal& c : cases) {
    json j = v3("gqa");
    c.edit(j);
    const std::string e = error_of(j);
    EXPECT_TRUE(e.starts_with(c.starts)) << c.what << ": got \"" << e << "\"";
    EXPECT_EQ(e.find('\n'), std::string::npos) << c.what;
  }
}

TEST(Variants, RecoveryKeepsVersionThreeAndFitsTheGroups) {
  json j = v3("gqa");
  j["model"]["num_heads"] = 6;
  j["model"]["num_kv_groups"] = 4;  // does not divide 6: the largest divisor below is 3
  j["model"]["sliding_window"] = 2;
  j["colour"] = "red";
  const Recovered r = recover_session(j.dump());
  EXPECT_EQ(r.session.model.num_kv_groups, 3);
  EXPECT_EQ(r.session.model.sliding_window, 2);
  EXPECT_NE(std::find(r.repairs.begin(), r.repairs.end(), "model.num_kv_groups: 4 set to 3, a divisor of num_heads 6"),
            r.repairs.end());
  EXPECT_EQ(json::parse(session_to_json(r.session))["version"], 3);
}

TEST(Variants, RecoveryRemovesTheRopeAModelCannotHold) {
  json j = v3("weight_split");
  j["model"]["d_out"] = 9;  // head_dim 3: no pairs to rotate
  j["model"]["rope_base"] = 10000;
  j["model"]["qk_norm"] = true;
  const Recovered r = recover_session(j.dump());
  EXPECT_EQ(r.session.model.rope_base, 0.0);
  EXPECT_TRUE(r.session.model.qk_norm);
  EXPECT_NE(std::find(r.repairs.begin(), r.repairs.end(), "model.rope_base: 10000 removed, head_dim 3 is odd"),
            r.repairs.end());
}

}  // namespace
}  // namespace mhaviz
