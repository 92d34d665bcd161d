// recover_session on every numeric field of a session at 0, negative, huge and fractional
// values (and the wrong type): each recovered session passes validate_session, holds the
// value nearest to the one written, and lists the repair under the field's name. Files
// with num_heads 0 once reached d_out % num_heads (SIGFPE) on the way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>

#include "test_util.hpp"

namespace mhaviz {
namespace {

using nlohmann::json;

// seed003-wrapper: 6 tokens of d_in 3, batch 2, wrapper of 2 heads of d_out 2, seed 123.
json base() { return json::parse(test::slurp(test::data_path("reference/sessions/seed003-wrapper.json"))); }

// The base as a weight_split of d_out 6, so that num_heads must divide d_out.
json split6() {
  json j = base();
  j["model"]["variant"] = "weight_split";
  j["model"]["d_out"] = 6;
  return j;
}

// The base with a view (version 2): head 1 of 2, batch item 1 of 2.
json with_view() {
  json j = base();
  j["version"] = 2;
  j["view"] = {{"stage", "masked"}, {"head", 1}, {"batch", 1}, {"walk_step", 5}};
  return j;
}

struct Case {
  const char* field;                         // the field named in the repair
  std::function<json()> start;               // the file before the edit
  std::function<void(json&)> edit;           // writes the bad value
  std::function<bool(const Session&)> want;  // the value recovered
  const char* value;                         // what want checks, for the failure message
};

std::string all_repairs(const Recovered& r) {
  std::string a;
  for (const std::string& x : r.repairs) a += "\n  " + x;
  return a;
}

constexpr auto kU64Max = std::numeric_limits<std::uint64_t>::max();

TEST(SessionRecover, EveryNumericFieldAtZeroNegativeHugeAndFractionalValues) {
  const auto set = [](const char* key, json v) { return [key, v](json& j) { j[key] = v; }; };
  const auto model = [](const char* key, json v) { return [key, v](json& j) { j["model"][key] = v; }; };
  const auto view = [](const char* key, json v) { return [key, v](json& j) { j["view"][key] = v; }; };
  const std::vector<Case> cases = {
      {"batch", base, set("batch", 0), [](const Session& s) { return s.batch == 1; }, "1"},
      {"batch", base, set("batch", -3), [](const Session& s) { return s.batch == 1; }, "1"},
      {"batch", base, set("batch", 1e300), [](const Session& s) { return s.batch == Limits::kMaxBatch; }, "the limit"},
      {"batch", base, set("batch", kU64Max), [](const Session& s) { return s.batch == Limits::kMaxBatch; },
       "the limit"},
      {"batch", base, set("batch", 2.6), [](const Session& s) { return s.batch == 3; }, "3"},
      {"batch", base, set("batch", "two"), [](const Session& s) { return s.batch == 1; }, "1"},
      {"model.d_out", base, model("d_out", 0), [](const Session& s) { return s.model.d_out == 1; }, "1"},
      {"model.d_out", base, model("d_out", -4), [](const Session& s) { return s.model.d_out == 1; }, "1"},
      {"model.d_out", base, model("d_out", 2.5), [](const Session& s) { return s.model.d_out == 3; }, "3"},
      // 8192 features for one wrapper head: the second head no longer fits.
      {"model.d_out", base, model("d_out", 1e6),
       [](const Session& s) { return s.model.d_out == Limits::kMaxDim && s.model.num_heads == 1; },
       "the limit, 1 head"},
      {"model.num_heads", base, model("num_heads", 0), [](const Session& s) { return s.model.num_heads == 1; }, "1"},
      {"model.num_heads", base, model("num_heads", -2), [](const Session& s) { return s.model.num_heads == 1; }, "1"},
      {"model.num_heads", base, model("num_heads", 10000),
       [](const Session& s) { return s.model.num_heads == Limits::kMaxHeads; }, "the limit"},
      {"model.num_heads", base, model("num_heads", 1.5), [](const Session& s) { return s.model.num_heads == 2; }, "2"},
      {"model.num_heads", split6, model("num_heads", 0), [](const Session& s) { return s.model.num_heads == 1; }, "1"},
      {"model.num_heads", split6, model("num_heads", -6), [](const Session& s) { return s.model.num_heads == 1; }, "1"},
      {"model.num_heads", split6, model("num_heads", 10000), [](const Session& s) { return s.model.num_heads == 6; },
       "6"},
      {"model.num_heads", split6, model("num_heads", 4.4), [](const Session& s) { return s.model.num_heads == 3; },
       "3"},
      {"model.num_heads", split6, model("num_heads", nullptr), [](const Session& s) { return s.model.num_heads == 2; },
       "2"},
      // Wrapper heads concatenate: 128 heads of 64 fill the 8192 features.
      {"model.num_heads",
       [] {
         json j = base();
         j["model"]["d_out"] = 64;
         return j;
       },
       model("num_heads", 10000), [](const Session& s) { return s.model.num_heads == Limits::kMaxDim / 64; }, "128"},
      {"model.context_length", base, model("context_length", 0),
       [](const Session& s) { return s.model.context_length == 6; }, "6 (the tokens)"},
      {"model.context_length", base, model("context_length", -5),
       [](const Session& s) { return s.model.context_length == 6; }, "6 (the tokens)"},
      {"model.context_length", base, model("context_length", 1e9),
       [](const Session& s) { return s.model.context_length == Limits::kMaxContext; }, "the limit"},
      {"model.context_length", base, model("context_length", 7.5),
       [](const Session& s) { return s.model.context_length == 8; }, "8"},
      {"model.dropout", base, model("dropout", -0.1), [](const Session& s) { return s.model.dropout == 0.0; }, "0"},
      {"model.dropout", base, model("dropout", 1.0), [](const Session& s) { return s.model.dropout == 0.0; }, "0"},
      {"model.dropout", base, model("dropout", 1e300), [](const Session& s) { return s.model.dropout == 0.0; }, "0"},
      {"model.dropout", base, model("dropout", "0.1"), [](const Session& s) { return s.model.dropout == 0.0; }, "0"},
      {"model.seed", base, model("seed", -1), [](const Session& s) { return s.model.seed == 0; }, "0"},
      {"model.seed", base, model("seed", -0.7), [](const Session& s) { return s.model.seed == 0; }, "0"},
      {"model.seed", base, model("seed", 1e300), [](const Session& s) { return s.model.seed == kU64Max; }, "2^64 - 1"},
      {"model.seed", base, model("seed", 2.5), [](const Session& s) { return s.model.seed == 3; }, "3"},
      {"model.seed", base, model("seed", "abc"), [](const Session& s) { return s.model.seed == ModelConfig{}.seed; },
       "123"},
      {"model.causal", base, model("causal", 1), [](const Session& s) { return s.model.causal; }, "true"},
      {"model.qkv_bias", base, model("qkv_bias", nullptr), [](const Session& s) { return !s.model.qkv_bias; }, "false"},
      // The view's head and batch item within this model's sizes (2 heads, batch 2).
      {"view.head", with_view, view("head", -1), [](const Session& s) { return s.view->head == 0; }, "0"},
      {"view.head", with_view, view("head", 2), [](const Session& s) { return s.view->head == 1; }, "1 (the last)"},
      {"view.head", with_view, view("head", 99), [](const Session& s) { return s.view->head == 1; }, "1 (the last)"},
      {"view.head", with_view, view("head", 1e300), [](const Session& s) { return s.view->head == 1; }, "1 (the last)"},
      {"view.head", with_view, view("head", 0.4), [](const Session& s) { return s.view->head == 0; }, "0"},
      {"view.batch", with_view, view("batch", -1), [](const Session& s) { return s.view->batch == 0; }, "0"},
      {"view.batch", with_view, view("batch", 2), [](const Session& s) { return s.view->batch == 1; }, "1 (the last)"},
      {"view.batch", with_view, view("batch", 1e300), [](const Session& s) { return s.view->batch == 1; },
       "1 (the last)"},
      {"view.batch", with_view, view("batch", 0.6), [](const Session& s) { return s.view->batch == 1; }, "1"},
      {"view.walk_step", with_view, view("walk_step", -3), [](const Session& s) { return s.view->walk_step == 0; },
       "0"},
      {"view.walk_step", with_view, view("walk_step", kMaxWalkSteps),
       [](const Session& s) { return s.view->walk_step == kMaxWalkSteps - 1; }, "the last"},
      {"view.walk_step", with_view, view("walk_step", 1e300),
       [](const Session& s) { return s.view->walk_step == kMaxWalkSteps - 1; }, "the last"},
      {"view.walk_step", with_view, view("walk_step", 2.5), [](const Session& s) { return s.view->walk_step == 3; },
       "3"},
      {"view.stage", with_view, view("stage", 3), [](const Session& s) { return s.view->stage == Stage::Weights; },
       "weights"},
      {"view.stage", with_view, view("stage", "softmax"),
       [](const Session& s) { return s.view->stage == Stage::Weights; }, "weights"},
      {"view.colormap", with_view, view("colormap", "jet"),
       [](const Session& s) { return s.view->colormap == "viridis"; }, "viridis"},
      {"view.walk_pane", with_view, view("walk_pane", 2), [](const Session& s) { return s.view->walk_pane == 0; }, "q"},
      {"view.enlarged", with_view, view("enlarged", 1), [](const Session& s) { return !s.view->enlarged; }, "false"},
      // A model that shrinks under a saved view: the view's head follows it.
      {"model.num_heads", with_view, model("num_heads", 0),
       [](const Session& s) { return s.model.num_heads == 1 && s.view->head == 0; }, "1 head, view.head 0"},
  };
  for (const Case& c : cases) {
    json j = c.start();
    c.edit(j);
    std::string pointer = std::string("/") + c.field;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const json::json_pointer at(pointer);
    const std::string what = std::string(c.field) + " = " + (j.contains(at) ? j[at].dump() : std::string("missing"));
    Recovered r;
    try {
      r = recover_session(j.dump());
    } catch (const SessionError& e) {
      ADD_FAILURE() << what << ": not recovered: " << e.what();
      continue;
    }
    EXPECT_NO_THROW(validate_session(r.session)) << what;
    EXPECT_TRUE(c.want(r.session)) << what << ": recovered value is not " << c.value << all_repairs(r);
    const bool named = std::any_of(r.repairs.begin(), r.repairs.end(),
                                   [&](const std::string& x) { return x.rfind(std::string(c.field) + ": ", 0) == 0; });
    EXPECT_TRUE(named) << what << ": no repair names " << c.field << all_repairs(r);
    if (j.contains("view")) {
      EXPECT_TRUE(r.session.view.has_value()) << what << ": the view was dropped" << all_repairs(r);
    }
  }
}

// The sizes a file gives by its arrays: the token count and d_in (the rows' length).
TEST(SessionRecover, TokenCountAndRowLengthWithinTheLimits) {
  json j = base();
  j["tokens"] = json::array();
  j["embeddings"] = json::array();
  for (int i = 0; i < Limits::kMaxTokens + 5; ++i) {
    j["tokens"].push_back("t" + std::to_string(i % 10));
    j["embeddings"].push_back({0.5, -0.5, 0.25});
  }
  Recovered r = recover_session(j.dump());
  EXPECT_EQ(r.session.num_tokens(), Limits::kMaxTokens);
  EXPECT_EQ(r.session.model.context_length, Limits::kMaxTokens);  // raised to the tokens kept
  EXPECT_NO_THROW(validate_session(r.session));
  EXPECT_NE(all_repairs(r).find("tokens: 4101 tokens cut to 4096"), std::string::npos) << all_repairs(r);

  j = base();  // rows of 0 values: d_in 1, each row the token's own vector
  for (json& row : j["embeddings"]) row = json::array();
  r = recover_session(j.dump());
  EXPECT_EQ(r.session.d_in(), 1);
  EXPECT_EQ(r.session.embeddings[0], token_embedding("Your", 1));
  EXPECT_NE(all_repairs(r).find("embeddings[0]: 0 values made 1"), std::string::npos) << all_repairs(r);
  EXPECT_NO_THROW(validate_session(r.session));

  j = base();  // rows over the d_in limit: cut to it
  for (json& row : j["embeddings"]) row = json(std::vector<double>(Limits::kMaxDim + 808, 0.5));
  r = recover_session(j.dump());
  EXPECT_EQ(r.session.d_in(), Limits::kMaxDim);
  EXPECT_NE(all_repairs(r).find("embeddings[5]: 9000 values made 8192"), std::string::npos) << all_repairs(r);
  EXPECT_NO_THROW(validate_session(r.session));

  j = base();  // rows past the last token: dropped, and said
  j["embeddings"].push_back({1, 2, 3});
  r = recover_session(j.dump());
  EXPECT_EQ(r.session.embeddings.size(), 6u);
  EXPECT_NE(all_repairs(r).find("embeddings: 7 rows for 6 tokens"), std::string::npos) << all_repairs(r);

  // No token at all, or a number past a double: nothing to recover, said in one line.
  j = base();
  j["tokens"] = json::array();
  EXPECT_THROW(recover_session(j.dump()), SessionError);
  EXPECT_THROW(recover_session(R"({"format": "mhaviz-session", "batch": 1e400})"), SessionError);
}

// A view that is not an object is dropped (the document kept); its unknown fields too.
TEST(SessionRecover, AViewThatIsNotAnObjectIsDroppedAndTheFileIsVersion1) {
  json j = with_view();
  j["view"] = 3;
  Recovered r = recover_session(j.dump());
  EXPECT_FALSE(r.session.view.has_value());
  EXPECT_NE(all_repairs(r).find("view: 3 dropped (not an object)"), std::string::npos) << all_repairs(r);
  EXPECT_NE(session_to_json(r.session).find("\"version\": 1"), std::string::npos);

  j = with_view();
  j["view"]["zoom"] = 2;
  r = recover_session(j.dump());
  ASSERT_TRUE(r.session.view.has_value());
  EXPECT_EQ(r.session.view->stage, Stage::Masked);  // the rest as saved
  EXPECT_EQ(r.session.view->walk_step, 5);
  EXPECT_EQ(r.repairs, std::vector<std::string>{"view.zoom: unknown field dropped"});
}

}  // namespace
}  // namespace mhaviz
