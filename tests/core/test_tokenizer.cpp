// GPT-2's tokenizer against the real vocabulary (fetched by tests/models/fetch_gpt2_vocab.sh
// into MHAVIZ_GPT2_VOCAB) and against an independent encoder's ids for varied text, plus the
// broken tokenizer files of the checkpoint catalogue.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "load_error_util.hpp"
#include "mhaviz/tokenizer.hpp"
#include "model_test_util.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::kGpt2Vocab;
using test::kGptModels;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Tokenizer& gpt2() {
  static const Tokenizer t = Tokenizer::from_files(kGpt2Vocab / "vocab.json", kGpt2Vocab / "merges.txt");
  return t;
}

std::string error_of(const std::function<void()>& f) { return test::load_error_of(f); }

TEST(Tokenizer, KnownIdsOfGpt2) {
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().eot_id(), 50256);
  EXPECT_EQ(gpt2().encode("Hello world"), (std::vector<int>{15496, 995}));
  EXPECT_EQ(gpt2().encode("Every effort moves you"), (std::vector<int>{6109, 3626, 6100, 345}));
  EXPECT_EQ(gpt2().encode("Your journey starts with one step"), (std::vector<int>{7120, 7002, 4940, 351, 530, 2239}));
  EXPECT_EQ(gpt2().encode(""), std::vector<int>{});
}

TEST(Tokenizer, SameIdsAsTheReferenceEncoderOnVariedText) {
  const json expected = json::parse(slurp(kGpt2Vocab / "expected_ids.json"));
  ASSERT_GE(expected["cases"].size(), 20u);
  for (const json& c : expected["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(gpt2().encode(text), c["ids"].get<std::vector<int>>()) << "text: " << json(text).dump();
    EXPECT_EQ(gpt2().decode(gpt2().encode(text)), text);
  }
}

TEST(Tokenizer, EndOfTextIsTheSpecialTokenAndSplitsItsNeighbours) {
  const std::vector<int> a = gpt2().encode("a"), b = gpt2().encode(" b");
  std::vector<int> want = a;
  want.push_back(50256);
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(gpt2().encode("a<|endoftext|> b"), want);
  EXPECT_EQ(gpt2().encode("<|endoftext|><|endoftext|>"), (std::vector<int>{50256, 50256}));
  EXPECT_EQ(gpt2().decode({50256}), "<|endoftext|>");
  EXPECT_EQ(gpt2().display_token(50256), "<|endoftext|>");
  // Only the exact text: a near miss is ordinary punctuation and letters.
  const std::vector<int> near = gpt2().encode("<|endoftext|");
  EXPECT_EQ(std::count(near.begin(), near.end(), 50256), 0);
}

TEST(Tokenizer, InvalidUtf8IsEncodedByteByByteAndDecodesBack) {
  for (const std::string& text : {std::string("ok \xff\xfe bytes"), std::string("\xc3"), std::string("a\xe6\x97"),
                                  std::string("\xed\xa0\x80 surrogate"), std::string("\0 nul", 5)}) {
    const std::vector<int> ids = gpt2().encode(text);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(gpt2().decode(ids), text) << json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

TEST(Tokenizer, DisplayShowsTheLeadingSpaceAndEscapesWhatCannotBeSeen) {
  EXPECT_EQ(gpt2().display_token(995), "\xE2\x90\xA3world");  // " world"
  EXPECT_EQ(gpt2().display_token(15496), "Hello");
  EXPECT_EQ(gpt2().display_token(gpt2().encode("\n")[0]), "\\n");
  EXPECT_EQ(gpt2().display_token(gpt2().encode("\t")[0]), "\\t");
  // Tokens of spaces alone show every space (a run of spaces is never an empty-looking label).
  std::string shown;
  for (const int id : gpt2().encode("    ")) shown += gpt2().display_token(id);
  EXPECT_EQ(shown, "\xE2\x90\xA3\xE2\x90\xA3\xE2\x90\xA3\xE2\x90\xA3");
  // A token holding part of a multi-byte character shows its bytes.
  const std::vector<int> emoji = gpt2().encode("\xF0\x9F\x91\x8B");  // 👋: more than one token
  ASSERT_GT(emoji.size(), 1u);
  EXPECT_NE(gpt2().display_token(emoji[0]).find("\\x"), std::string::npos) << gpt2().display_token(emoji[0]);
  // Whole characters show as themselves, whatever tokens they fall into.
  std::string cafe;
  for (const int id : gpt2().encode(" caf\xC3\xA9")) cafe += gpt2().display_token(id);
  EXPECT_EQ(cafe,
            "\xE2\x90\xA3"
            "caf\xC3\xA9");
  EXPECT_THROW(gpt2().decode_token(50257), std::out_of_range);
  EXPECT_THROW(gpt2().decode_token(-1), std::out_of_range);
}

TEST(Tokenizer, TokenizerJsonGivesTheSameIds) {
  // A Hugging Face tokenizer.json of the same vocabulary, merges both as "a b" and as pairs.
  const json vocab = json::parse(slurp(kGpt2Vocab / "vocab.json"));
  json merges_str = json::array(), merges_pair = json::array();
  std::istringstream in(slurp(kGpt2Vocab / "merges.txt"));
  std::string line;
  std::getline(in, line);  // #version
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto sp = line.find(' ');
    merges_str.push_back(line);
    merges_pair.push_back({line.substr(0, sp), line.substr(sp + 1)});
  }
  const fs::path dir = fs::temp_directory_path() / ("mhaviz-tok-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string text = "Every effort moves you, caf\xC3\xA9 \xF0\x9F\x9A\x80 1234 <|endoftext|> it's";
  for (const json* merges : {&merges_str, &merges_pair}) {
    std::ofstream(dir / "tokenizer.json")
        << json{{"version", "1.0"}, {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", *merges}}}}.dump();
    EXPECT_EQ(Tokenizer::from_folder(dir).encode(text), gpt2().encode(text));
  }
  fs::remove_all(dir);
}

// A model folder without tokenizer files runs on ids; with any of them, from_folder decides (and
// refuses a half pair).
TEST(Tokenizer, AModelFolderWithoutTokenizerFilesTakesIds) {
  const fs::path dir = fs::temp_directory_path() / ("mhaviz-tok-model-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen3", "vocab_size": 40})";
  const Tokenizer ids = Tokenizer::from_folder(dir, 40);
  EXPECT_EQ(ids.encode("3 17 0 39"), (std::vector<int>{3, 17, 0, 39}));
  EXPECT_EQ(ids.display_token(17), "17");
  EXPECT_EQ(ids.refuse("3 17"), "");
  EXPECT_EQ(ids.refuse("3 40"),
            "\"40\" is not a token of this model: its tokens are the numbers 0 to 39, separated by spaces (the folder "
            "has no tokenizer.json, nor vocab.json + merges.txt: copy the files the model was published with beside it "
            "to type text)");
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
  EXPECT_NE(error_of([&] { Tokenizer::from_folder(dir, 40); }).find("vocab.json: does not exist"), std::string::npos);
  fs::remove(dir / "merges.txt");
  std::ofstream(dir / "tokenizer.json") << "{";
  EXPECT_NE(error_of([&] { Tokenizer::from_folder(dir, 40); }).find("tokenizer.json: not valid JSON"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Tokenizer, EveryBrokenFileIsOneLineNamingIt) {
  const std::string vocab = R"({"a": 0})", merges = "#version: 0.2\n";
  EXPECT_NE(error_of([&] { Tokenizer::from_strings("", merges, "t"); }).find("t vocab.json: empty file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::from_strings("{", merges, "t"); }).find("t vocab.json: not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::from_strings("[1]", "a b\n", "t"); }).find("expected an object"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::from_strings(R"({"a": "x"})", "a b\n", "t"); }).find("not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Tokenizer::from_strings(R"({"a": 0, "b": 0})", "a b\n", "t");
            }).find("id 0 is given to two tokens"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::from_strings(vocab, "a b\n", "t"); }).find("has no token for byte 0x00"),
            std::string::npos);
  // The real vocabulary with merges that do not fit it.
  const std::string real = slurp(kGpt2Vocab / "vocab.json");
  EXPECT_NE(error_of([&] { Tokenizer::from_strings(real, merges, "t"); }).find("t merges.txt: holds no merges"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Tokenizer::from_strings(real, "#version: 0.2\nĠ t\nnot-a-pair\n", "t");
            }).find("t merges.txt: line 3 \"not-a-pair\" is not two tokens separated by one space"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Tokenizer::from_strings(real, "zzzzqq x\n", "t");
            }).find("names \"zzzzqq\", which is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Tokenizer::from_strings(real, "x q\n", "t");
            }).find("makes \"xq\", which is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_folder("/nonexistent-mhaviz"); }).find("no tokenizer"), std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_files("/dev/null", "/dev/null"); }).find("/dev/null: is not a regular file"),
            std::string::npos);
}

TEST(Tokenizer, BrokenTokenizersOfTheCheckpointCatalogue) {
  const json manifest = json::parse(slurp(kGptModels / "bad" / "manifest.json"));
  int seen = 0;
  for (const json& c : manifest["cases"]) {
    if (c["stage"] != "tokenizer") continue;
    ++seen;
    const std::string msg =
        error_of([&] { Tokenizer::from_folder(kGptModels / "bad" / c["path"].get<std::string>()); });
    EXPECT_NE(msg.find(c["error"].get<std::string>()), std::string::npos) << c["name"] << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
  EXPECT_EQ(seen, 4);
  // And every good checkpoint's tiny tokenizer loads.
  EXPECT_EQ(Tokenizer::from_folder(kGptModels / "hf_f32").vocab_size(), 263);
}

TEST(Tokenizer, TenKilobytesOfEnglishEncodeAlikeColdAndCached) {
  std::string text;
  while (text.size() < 10000)
    text += "The quick brown fox jumps over the lazy dog, and the teacher explains attention heads. ";
  const Tokenizer t = Tokenizer::from_files(kGpt2Vocab / "vocab.json", kGpt2Vocab / "merges.txt");  // a cold cache
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = t.encode(text).size();
  const double cold = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(t.encode(text).size(), n);
  const double warm = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  std::printf("10 KB, %zu tokens: %.2f ms cold, %.2f ms with the word cache\n", n, cold, warm);
}

}  // namespace
}  // namespace mhaviz
