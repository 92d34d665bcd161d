// Session format: parsing, one-line errors naming field and value, round trips, atomic
// writes, lessons, token embeddings.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>

#include <functional>

#include <filesystem>

#include "test_util.hpp"

namespace mhaviz {
namespace {

using nlohmann::json;

json base_session() { return json::parse(test::slurp(test::data_path("reference/sessions/seed003-wrapper.json"))); }

std::string error_of(const std::string& text) {
  try {
    parse_session(text);
  } catch (const SessionError& e) {
    return e.what();
  }
  return "";
}

struct BadCase {
  const char* what;
  std::function<void(json&)> edit;
  const char* field;  // the message starts with "<field>: "
  const char* value;  // and names the value
};

TEST(Session, EveryBadValueNamesFieldAndValue) {
  const std::vector<BadCase> cases = {
      {"d_out not divisible", [](json& j) { j["model"]["variant"] = "weight_split"; j["model"]["d_out"] = 7; }, "model.d_out", "7"},
      {"unknown variant", [](json& j) { j["model"]["variant"] = "grouped"; }, "model.variant", "\"grouped\""},
      {"T > context_length", [](json& j) { j["model"]["context_length"] = 5; }, "tokens", "6"},
      {"dropout 1", [](json& j) { j["model"]["dropout"] = 1.0; }, "model.dropout", "1"},
      {"dropout negative", [](json& j) { j["model"]["dropout"] = -0.1; }, "model.dropout", "-0.1"},
      {"dropout string", [](json& j) { j["model"]["dropout"] = "0.1"; }, "model.dropout", "\"0.1\""},
      {"zero heads", [](json& j) { j["model"]["num_heads"] = 0; }, "model.num_heads", "0"},
      {"negative d_out", [](json& j) { j["model"]["d_out"] = -4; }, "model.d_out", "-4"},
      {"fractional d_out", [](json& j) { j["model"]["d_out"] = 2.5; }, "model.d_out", "2.5"},
      {"huge d_out", [](json& j) { j["model"]["d_out"] = 1000000; }, "model.d_out", "1000000"},
      {"huge batch", [](json& j) { j["batch"] = 1000; }, "batch", "1000"},
      {"batch bool", [](json& j) { j["batch"] = true; }, "batch", "true"},
      {"causal string", [](json& j) { j["model"]["causal"] = "yes"; }, "model.causal", "\"yes\""},
      {"negative seed", [](json& j) { j["model"]["seed"] = -1; }, "model.seed", "-1"},
      {"missing model.d_out", [](json& j) { j["model"].erase("d_out"); }, "model.d_out", "missing"},
      {"missing tokens", [](json& j) { j.erase("tokens"); }, "tokens", "missing"},
      {"extra field", [](json& j) { j["colour"] = "red"; }, "colour", "\"red\""},
      {"extra model field", [](json& j) { j["model"]["heads"] = 2; }, "model.heads", "2"},
      {"empty tokens", [](json& j) { j["tokens"] = json::array(); j["embeddings"] = json::array(); }, "tokens", "empty"},
      {"token not string", [](json& j) { j["tokens"][2] = 5; }, "tokens[2]", "5"},
      {"ragged", [](json& j) { j["embeddings"][3] = {0.1, 0.2}; }, "embeddings[3]", "2 values"},
      {"empty row", [](json& j) { for (auto& r : j["embeddings"]) r = json::array(); }, "embeddings[0]", "empty"},
      {"rows != tokens", [](json& j) { j["embeddings"].erase(5); }, "embeddings", "5 rows"},
      {"huge value", [](json& j) { j["embeddings"][1][2] = 1e308; }, "embeddings[1][2]", "1e+308"},
      {"string value", [](json& j) { j["embeddings"][0][0] = "x"; }, "embeddings[0][0]", "\"x\""},
      {"long token", [](json& j) { j["tokens"][0] = std::string(300, 'a'); }, "tokens[0]", "300 bytes"},
      {"wrong format", [](json& j) { j["format"] = "other"; }, "format", "\"other\""},
      {"wrong version", [](json& j) { j["version"] = 4; }, "version", "4"},
      {"view in version 1", [](json& j) { j["view"] = {{"stage", "masked"}}; }, "view", "version\": 2"},
      {"view not object", [](json& j) { j["version"] = 2; j["view"] = 5; }, "view", "an integer"},
      {"view stage", [](json& j) { j["version"] = 2; j["view"] = {{"stage", "soft"}}; }, "view.stage", "\"soft\""},
      {"view head", [](json& j) { j["version"] = 2; j["view"] = {{"head", 2}}; }, "view.head", "2"},
      {"view head negative", [](json& j) { j["version"] = 2; j["view"] = {{"head", -1}}; }, "view.head", "-1"},
      {"view batch", [](json& j) { j["version"] = 2; j["view"] = {{"batch", 2}}; }, "view.batch", "2"},
      {"view colormap", [](json& j) { j["version"] = 2; j["view"] = {{"colormap", "jet"}}; }, "view.colormap", "\"jet\""},
      {"view flag", [](json& j) { j["version"] = 2; j["view"] = {{"log_scale", 1}}; }, "view.log_scale", "1"},
      {"view step", [](json& j) { j["version"] = 2; j["view"] = {{"walk_step", 64}}; }, "view.walk_step", "64"},
      {"view pane", [](json& j) { j["version"] = 2; j["view"] = {{"walk_pane", "x"}}; }, "view.walk_pane", "\"x\""},
      {"view numbers", [](json& j) { j["version"] = 2; j["view"] = {{"walk_numbers", 1}}; }, "view.walk_numbers", "1"},
      {"view unknown", [](json& j) { j["version"] = 2; j["view"] = {{"zoom", 2}}; }, "view.zoom", "2"},
      {"memory", [](json& j) {
         j["tokens"] = json::array();
         j["embeddings"] = json::array();
         for (int i = 0; i < 600; ++i) {
           j["tokens"].push_back("w");
           j["embeddings"].push_back({0.1, 0.2, 0.3});
         }
         j["model"]["d_out"] = 64; j["model"]["num_heads"] = 64; j["model"]["context_length"] = 600; j["batch"] = 64;
       }, "model", "GiB"},
  };
  for (const auto& c : cases) {
    json j = base_session();
    c.edit(j);
    const std::string msg = error_of(j.dump());
    ASSERT_FALSE(msg.empty()) << c.what << ": accepted";
    EXPECT_EQ(msg.rfind(std::string(c.field) + ": ", 0), 0u) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.value), std::string::npos) << c.what << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.what;
  }
}

TEST(Session, MalformedAndHostileJson) {
  EXPECT_EQ(error_of("{\"format\": ").rfind("session: malformed JSON", 0), 0u);
  EXPECT_EQ(error_of("[1, 2]").rfind("session: expected a JSON object", 0), 0u);
  EXPECT_EQ(error_of("{\"a\": NaN}").rfind("session: malformed JSON", 0), 0u);
  EXPECT_EQ(error_of(std::string(100000, '[')).rfind("session: JSON nested deeper", 0), 0u);
  EXPECT_EQ(error_of("").rfind("session: malformed JSON", 0), 0u);
  // Found by the fuzzer: a float past the double range is json::out_of_range, not parse_error.
  EXPECT_EQ(error_of("[20E4320000000").rfind("session: malformed JSON: number overflow", 0), 0u);
  EXPECT_EQ(error_of("{\"batch\": 1e400}").rfind("session: malformed JSON: number overflow", 0), 0u);
  // Found by the fuzzer: an unknown key holding a newline must not break the one-line message.
  const std::string msg = error_of("{\"format\": \"mhaviz-session\", \"vari\\nt\": 1}");
  EXPECT_EQ(msg, "vari\\x0at: unknown field (value 1)");
  EXPECT_LT(error_of("{\"" + std::string(500, 'k') + "\": 1}").size(), 80u);
}

// The field checks the app's editors call are the parser's own: the same message for the
// same value, whether it comes from a file or from a cell.
TEST(Session, FieldChecksAreTheParsersChecks) {
  json j = base_session();
  j["embeddings"][0][0] = 1e9;
  const std::string from_file = error_of(j.dump());
  std::string from_cell, as_written;
  try {
    check_embedding_value(1e9, "embeddings[0][0]");
  } catch (const SessionError& e) {
    from_cell = e.what();
  }
  try {
    check_embedding_value(1e9, "embeddings[0][0]", "1000000000.0");  // as the file writes it
  } catch (const SessionError& e) {
    as_written = e.what();
  }
  EXPECT_EQ(as_written, from_file);
  EXPECT_EQ(from_cell, "embeddings[0][0]: 1e+09 is not a finite number within ±1e6");
  EXPECT_NO_THROW(check_embedding_value(1e6, "x"));
  EXPECT_NO_THROW(check_embedding_value(-1e6, "x"));
  EXPECT_THROW(check_embedding_value(std::nan(""), "x"), SessionError);
  EXPECT_THROW(check_embedding_value(-1.0000001e6, "x"), SessionError);

  j = base_session();
  j["tokens"][1] = std::string(300, 'a');
  std::string from_field;
  try {
    check_token(std::string(300, 'a'), "tokens[1]");
  } catch (const SessionError& e) {
    from_field = e.what();
  }
  EXPECT_EQ(from_field, error_of(j.dump()));
  EXPECT_NE(from_field.find("300 bytes"), std::string::npos);
  EXPECT_NO_THROW(check_token(std::string(256, 'a'), "t"));
  EXPECT_THROW(check_token("", "t"), SessionError);
}

TEST(Session, RecoverKeepsWhatItCanAndSaysWhatItChanged) {
  json j = base_session();
  j["embeddings"][0][0] = 1e9;
  j["embeddings"][2][1] = -5e7;
  j["tokens"][1] = std::string(255, 'a') + "\xc3\xa9" + "bbbb";  // 261 bytes: cut before the é
  j["batch"] = 1000;
  j["model"]["context_length"] = 2;
  j["model"]["colour"] = "red";
  const Recovered r = recover_session(j.dump());
  EXPECT_EQ(r.session.num_tokens(), 6);
  EXPECT_EQ(r.session.tokens[0], "Your");
  EXPECT_EQ(r.session.tokens[1], std::string(255, 'a'));  // a whole character, never half of é
  EXPECT_FLOAT_EQ(r.session.embeddings[0][0], 1e6f);
  EXPECT_FLOAT_EQ(r.session.embeddings[2][1], -1e6f);
  EXPECT_FLOAT_EQ(r.session.embeddings[0][1], base_session()["embeddings"][0][1].get<float>());  // the rest untouched
  EXPECT_EQ(r.session.batch, 64);
  EXPECT_EQ(r.session.model.context_length, 6);
  const std::string all = [&] {
    std::string a;
    for (const auto& x : r.repairs) a += x + "\n";
    return a;
  }();
  EXPECT_NE(all.find("embeddings[0][0]: 1e+09 clamped to 1e+06"), std::string::npos) << all;
  EXPECT_NE(all.find("tokens[1]: token of 261 bytes cut to 255"), std::string::npos) << all;
  EXPECT_NE(all.find("model.colour: unknown field dropped"), std::string::npos) << all;
  EXPECT_NE(all.find("batch: 1000 set to 64"), std::string::npos) << all;
  EXPECT_EQ(r.repairs.size(), 6u) << all;
  EXPECT_NO_THROW(validate_session(r.session));

  // A valid file comes back as it is, with nothing to report.
  const Recovered same = recover_session(base_session().dump());
  EXPECT_TRUE(same.repairs.empty());
  EXPECT_EQ(session_to_json(same.session), session_to_json(parse_session(base_session().dump())));

  // Split variants get a divisor; nothing usable is an error, not an empty session.
  j = base_session();
  j["model"]["variant"] = "weight_split";
  j["model"]["d_out"] = 6;
  j["model"]["num_heads"] = 4;
  EXPECT_EQ(recover_session(j.dump()).session.model.num_heads, 3);
  EXPECT_THROW(recover_session("{\"tokens\": []}"), SessionError);
  EXPECT_THROW(recover_session("not json"), SessionError);
  EXPECT_THROW(recover_session("[1, 2]"), SessionError);
}

// Version 2 adds the optional "view"; version 1 files load as before and a session
// without a view is still written as version 1.
TEST(Session, ViewRoundTripsAndVersion1StaysVersion1) {
  const Session v1 = parse_session(base_session().dump());
  EXPECT_FALSE(v1.view.has_value());
  EXPECT_NE(session_to_json(v1).find("\"version\": 1"), std::string::npos);

  json j = base_session();
  j["version"] = 2;
  j["view"] = {{"stage", "masked"}, {"head", 1},          {"colormap", "magma"},  {"walkthrough", true},
               {"walk_step", 5},      {"walk_pane", "all"}, {"walk_numbers", false}};
  const Session v2 = parse_session(j.dump());
  ASSERT_TRUE(v2.view.has_value());
  EXPECT_EQ(v2.view->stage, Stage::Masked);
  EXPECT_EQ(v2.view->head, 1);
  EXPECT_EQ(v2.view->colormap, "magma");
  EXPECT_TRUE(v2.view->walkthrough);
  EXPECT_EQ(v2.view->walk_step, 5);
  EXPECT_EQ(v2.view->walk_pane, 3);
  EXPECT_FALSE(v2.view->walk_numbers);
  EXPECT_TRUE(v2.view->walk_weights);  // absent: the default
  EXPECT_TRUE(v2.view->shared_scale);  // absent: the default
  EXPECT_FALSE(v2.view->log_scale);
  const std::string text = session_to_json(v2);
  EXPECT_NE(text.find("\"version\": 2"), std::string::npos);
  const Session back = parse_session(text);
  EXPECT_EQ(back.view, v2.view);
  EXPECT_EQ(session_to_json(back), text);
  // A version 2 file may leave the view out.
  j.erase("view");
  EXPECT_FALSE(parse_session(j.dump()).view.has_value());

  // Recovery brings a view that does not fit to the nearest one this model shows, and keeps the document.
  j = base_session();
  j["version"] = 2;
  j["view"] = {{"head", 7}};
  j["embeddings"][0][0] = 1e9;
  const Recovered r = recover_session(j.dump());
  ASSERT_TRUE(r.session.view.has_value());
  EXPECT_EQ(r.session.view->head, 1);
  EXPECT_EQ(r.session.tokens, v1.tokens);
  EXPECT_EQ(r.repairs, (std::vector<std::string>{"embeddings[0][0]: 1e+09 clamped to 1e+06", "view.head: 7 set to 1"}));
}

TEST(Session, RoundTripsExactly) {
  for (const auto& l : lessons()) {
    const Session s = lesson(l.name);
    const std::string text = session_to_json(s);
    const Session back = parse_session(text);
    EXPECT_EQ(back.tokens, s.tokens) << l.name;
    EXPECT_EQ(back.embeddings, s.embeddings) << l.name;
    EXPECT_EQ(session_to_json(back), text) << l.name;
  }
  // Floats are written with the fewest digits that read back exactly.
  EXPECT_NE(session_to_json(lesson("seed003-wrapper")).find("0.43"), std::string::npos);
  EXPECT_EQ(session_to_json(lesson("seed003-wrapper")).find("0.4300000"), std::string::npos);
}

TEST(Session, LessonsAreValidAndTheDefaultComesFirst) {
  ASSERT_EQ(lessons().front().name, kDefaultLesson);
  for (const auto& l : lessons()) EXPECT_NO_THROW(validate_session(lesson(l.name))) << l.name;
  const Session g = lesson("gpt2-small-256");
  EXPECT_EQ(g.num_tokens(), 256);
  EXPECT_EQ(g.d_in(), 768);
  EXPECT_EQ(forward_cost(g.model, g.d_in(), 256, 1).parameters, 2360064);
  EXPECT_THROW(lesson("no-such-lesson"), SessionError);
}

TEST(Session, AtomicWriteKeepsOldFileOnFailure) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhaviz-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "s.json").string();
  write_file_atomic(path, "first");
  EXPECT_EQ(test::slurp(path), "first");
  write_file_atomic(path, "second");
  EXPECT_EQ(test::slurp(path), "second");
  // Writing into a missing directory fails with a one-line message naming the path.
  try {
    write_file_atomic((dir / "missing" / "x.json").string(), "x");
    FAIL() << "no error";
  } catch (const SessionError& e) {
    EXPECT_NE(std::string(e.what()).find("missing/x.json"), std::string::npos);
  }
  // A read-only directory: the old file stays intact and no temporary is left behind.
  if (::geteuid() != 0) {
    ::chmod(dir.c_str(), 0555);
    EXPECT_THROW(write_file_atomic(path, "third"), SessionError);
    ::chmod(dir.c_str(), 0755);
    EXPECT_EQ(test::slurp(path), "second");
  }
  EXPECT_THROW(write_file_atomic(dir.string(), "onto a directory"), SessionError);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

// Failures that root cannot bypass (CI runs as root, where a read-only directory is no
// obstacle): a path whose parent is a regular file, and a full disk. Each must leave the old
// file as it was and no temporary file beside it.
std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(Session, AtomicWriteUnderAFileFails) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhaviz-test-notdir-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "plain").string();
  write_file_atomic(file, "old");
  try {
    write_file_atomic(file + "/x.json", "new");
    FAIL() << "writing under a regular file succeeded";
  } catch (const SessionError& e) {
    EXPECT_NE(std::string(e.what()).find("plain/x.json"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
  EXPECT_EQ(test::slurp(file), "old");
  EXPECT_EQ(files_in(dir), 1u);
  std::filesystem::remove_all(dir);
}

// A full disk, made in a child process by RLIMIT_FSIZE (which binds root too): writes past
// 16 bytes fail with EFBIG. Writing in place (truncate + write) instead of temp + rename
// would leave the old file cut short; the atomic write must leave it whole.
TEST(Session, AtomicWriteOnAFullDiskKeepsTheOldFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhaviz-test-full-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "s.json").string();
  const std::string old_text = "the old session, intact";
  write_file_atomic(path, old_text);
  const std::string big(4096, 'x');
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // EFBIG from write() instead of a signal
    const rlimit lim{16, 16};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(3);
    try {
      write_file_atomic(path, big);
    } catch (const SessionError& e) {
      ::_exit(std::string(e.what()).find("s.json") != std::string::npos ? 0 : 4);
    }
    ::_exit(5);  // the write succeeded past the limit
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setrlimit failed, 4: the error names no path, 5: no error";
  EXPECT_EQ(test::slurp(path), old_text) << "the old file was changed by a failed write";
  EXPECT_EQ(files_in(dir), 1u) << "a temporary file was left behind";
  // Without the limit the same write goes through, and still leaves one file.
  write_file_atomic(path, big);
  EXPECT_EQ(test::slurp(path), big);
  EXPECT_EQ(files_in(dir), 1u);
  std::filesystem::remove_all(dir);
}

TEST(Session, TokenEmbeddingsAreDeterministicLookups) {
  EXPECT_EQ(token_embedding("journey", 8), token_embedding("journey", 8));
  EXPECT_NE(token_embedding("journey", 8), token_embedding("Journey", 8));
  const auto v = token_embedding("step", 16);
  ASSERT_EQ(v.size(), 16u);
  for (float x : v) {
    EXPECT_GE(x, -1.0f);
    EXPECT_LE(x, 1.0f);
    EXPECT_FLOAT_EQ(x * 100.0f, std::round(x * 100.0f));
  }
  // Wider vectors extend narrower ones: changing d_in adds or drops columns only.
  const auto w = token_embedding("step", 20);
  EXPECT_TRUE(std::equal(v.begin(), v.end(), w.begin()));
  EXPECT_EQ(split_tokens("  Your journey\tstarts\n"), (std::vector<std::string>{"Your", "journey", "starts"}));
  EXPECT_TRUE(split_tokens(" \t ").empty());
}

}  // namespace
}  // namespace mhaviz
