// tokenizer.json BPE as today's models ship it: the real files of Qwen3, Llama 3, Llama 3.1
// and Gemma 3 (fetched by tests/models/fetch_hf_tokenizers.sh into MHAVIZ_HF_TOKENIZERS)
// against the ids @lenml/tokenizers gives in node for varied text, with and without the
// special tokens each post-processor adds; then hand-made files for the steps the real ones
// do not use, and every refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "load_error_util.hpp"
#include "mhaviz/tokenizer.hpp"
#include "trained/tokenizer_impl.hpp"

namespace mhaviz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const fs::path kDir = MHAVIZ_HF_TOKENIZERS;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Tokenizer& real(const std::string& name) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    it = loaded.emplace(name, Tokenizer::from_folder(kDir / name)).first;
    std::printf("%s: loaded in %.0f ms\n", name.c_str(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return it->second;
}

// The reference's ids for the texts of tests/data/tokenizer_texts_hf.json (expected_ids.json)
// or of tests/models/random_texts.py (expected_random_ids.json), read once.
const json& expected(const std::string& file = "expected_ids.json") {
  static std::map<std::string, json> read;
  auto it = read.find(file);
  if (it == read.end()) it = read.emplace(file, json::parse(slurp(kDir / file))).first;
  return it->second;
}

std::string error_of(const std::function<void()>& f) { return test::load_error_of(f); }

std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

class RealTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(RealTokenizer, SameIdsAsTheReferenceEncoderWithAndWithoutSpecialTokens) {
  const Tokenizer& t = real(GetParam());
  const json& cases = expected()["tokenizers"][GetParam()];
  ASSERT_GE(cases.size(), 40u);
  int differ = 0;
  for (const json& c : cases) {
    const std::string text = c["text"];
    const auto ids = t.encode(text), plain = t.encode(text, false);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>()) << "text: " << quoted(text);
    EXPECT_EQ(plain, c["ids_plain"].get<std::vector<int>>()) << "text: " << quoted(text);
    differ += ids != plain;
  }
  // Llama 3.1 and Gemma 3 put their BOS before every text (the empty one too); Qwen3 and
  // the first Llama 3 files add nothing.
  const bool adds = GetParam() == "llama3_1" || GetParam() == "gemma3";
  EXPECT_EQ(differ, adds ? static_cast<int>(cases.size()) : 0);
  EXPECT_EQ(t.special_prefix().size(), adds ? 1u : 0u);
}

TEST_P(RealTokenizer, SameIdsAsTheReferenceEncoderOnRandomTexts) {
  // A differential run: every script block, controls, private use, tags and special tokens
  // mixed at random (random_texts.py). Reports the first few texts that differ, whole.
  const Tokenizer& t = real(GetParam());
  const json& cases = expected("expected_random_ids.json")["tokenizers"][GetParam()];
  ASSERT_EQ(cases.size(), 400u);
  int differ = 0;
  for (const json& c : cases) {
    const std::string text = c["text"];
    const bool same = t.encode(text) == c["ids"].get<std::vector<int>>() &&
                      t.encode(text, false) == c["ids_plain"].get<std::vector<int>>();
    if (!same && ++differ <= 3) ADD_FAILURE() << "ids differ from @lenml/tokenizers' on " << quoted(text);
  }
  EXPECT_EQ(differ, 0) << "texts of 400";
}

TEST_P(RealTokenizer, EveryTokenDecodesAndDisplaysOnOneLineAndAnyBytesEncode) {
  const Tokenizer& t = real(GetParam());
  for (int id = 0; id < t.vocab_size(); id += 7) {
    std::string shown;
    try {
      shown = t.display_token(id);
    } catch (const std::out_of_range&) {
      continue;  // an id the vocabulary does not use
    }
    EXPECT_FALSE(shown.empty()) << id;
    EXPECT_EQ(shown.find('\n'), std::string::npos) << id;
  }
  // Text without special tokens and already in NFC comes back whole; so does invalid UTF-8
  // (byte-level tokens or byte-fallback tokens hold any byte).
  for (const std::string& text :
       {std::string("Hello world"), std::string("caf\xC3\xA9 \xF0\x9F\x9A\x80 \xE6\x97\xA5\xE6\x9C\xAC 1234567"),
        std::string("a  b\n\n\tc "), std::string("ok \xff\xfe bytes"), std::string("\xc3"), std::string("a\xe6\x97"),
        std::string("\0 nul", 5)})
    EXPECT_EQ(t.decode(t.encode(text, false)), text) << GetParam() << " " << quoted(text);
  std::string text;
  while (text.size() < 10000)
    text += "The quick brown fox jumps over the lazy dog, and the teacher explains attention heads. ";
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = t.encode(text).size();
  std::printf("%s: 10 KB, %zu tokens, in %.2f ms\n", GetParam().c_str(), n,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_GT(n, 1000u);
}

TEST_P(RealTokenizer, KnownIdsTokensAndDisplay) {
  const Tokenizer& t = real(GetParam());
  const std::vector<int> journey = t.encode("Your journey starts with one step");
  if (GetParam() == "qwen3") {
    EXPECT_EQ(journey, (std::vector<int>{7771, 11618, 8471, 448, 825, 3019}));
    EXPECT_EQ(t.vocab_size(), 151669);
    EXPECT_EQ(t.token_id("<|im_start|>"), 151644);
    EXPECT_TRUE(t.is_special(151644));
    EXPECT_TRUE(t.is_added(t.token_id("<think>")));
    EXPECT_FALSE(t.is_special(t.token_id("<think>")));
    EXPECT_EQ(t.eot_id(), 151643);
    // Byte-level vocabularies: GPT-2's convention, a leading space as "␣".
    EXPECT_EQ(t.display_token(t.encode(" world")[0]), "\xE2\x90\xA3world");
  } else if (GetParam() == "gemma3") {
    EXPECT_EQ(journey.front(), 2);      // <bos>
    EXPECT_EQ(t.vocab_size(), 262145);  // <image_soft_token> is 262144
    // The token as spelled, "▁world"; byte-fallback tokens as their byte.
    const auto world = t.encode(" world", false);
    ASSERT_EQ(world.size(), 1u);
    EXPECT_EQ(t.display_token(world[0]), "\xE2\x96\x81world");
    EXPECT_EQ(t.decode_token(world[0]), " world");
    EXPECT_EQ(t.display_token(t.token_id("<0x0A>")), "\\n");
    EXPECT_EQ(t.display_token(t.token_id("<0xE6>")), "\\xE6");
    EXPECT_EQ(t.decode_token(t.token_id("<0xE6>")), "\xE6");
    EXPECT_EQ(t.display_token(2), "<bos>");
  } else {
    EXPECT_EQ(t.vocab_size(), 128256);
    EXPECT_EQ(journey.front() == 128000, GetParam() == "llama3_1");  // <|begin_of_text|>
    EXPECT_TRUE(t.is_special(128000));
  }
}

INSTANTIATE_TEST_SUITE_P(Files, RealTokenizer, ::testing::Values("qwen3", "llama3", "llama3_1", "gemma3"));

// [SECTION] Unicode as node has it
// Every code point's general category as node's tables give it (unicode_tables.json, which the
// fetch step makes with the node the expected ids come from): what the Digits pre-tokenizer and
// single_word read (general_category) and what a regex's \p{..} matches. PCRE2's tables (Unicode
// 14 on Debian 12) leave out some 15,000 letters, digits, marks and symbols node has; utf8proc's
// (15) the classes and decompositions of a hundred marks and composites. A failure here names the
// first code point or text that differs: run scripts/unicode_delta.sh.
const json& node_tables() {
  static const json j = json::parse(slurp(kDir / "unicode_tables.json"));
  return j;
}

// (first, last, category name) runs of node's table, surrogates left out (never in UTF-8).
template <class F>
void each_code_point(F f) {
  for (const json& r : node_tables()["runs"]) {
    const std::string name = r[2];
    for (std::uint32_t cp = r[0]; cp <= r[1].get<std::uint32_t>(); ++cp)
      if (cp < 0xD800 || cp > 0xDFFF) f(cp, name);
  }
}

std::string category_name(utf8proc_category_t c) {
  static const char* const names[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                      "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                      "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
  return names[c];
}

TEST(NewerUnicode, EveryCodePointHasNodesGeneralCategory) {
  int checked = 0, differ = 0;
  each_code_point([&](std::uint32_t cp, const std::string& name) {
    ++checked;
    const std::string got = category_name(tok::general_category(cp));
    if (got != name && ++differ <= 3) ADD_FAILURE() << "U+" << std::hex << cp << ": " << got << ", node " << name;
  });
  EXPECT_EQ(checked, 0x110000 - 0x800);
  EXPECT_EQ(differ, 0) << "code points whose category is not node's (" << node_tables()["unicode"] << ")";
}

TEST(NewerUnicode, RegexClassesMatchWhatNodesMatch) {
  // Every code point in one text; each class must match exactly those node gives its category.
  std::string text;
  std::vector<std::size_t> offsets;  // of each code point in text, ascending
  std::vector<std::uint32_t> cps;
  std::vector<std::string> names;
  each_code_point([&](std::uint32_t cp, const std::string& name) {
    offsets.push_back(text.size());
    cps.push_back(cp);
    names.push_back(name);
    tok::append_utf8(text, cp);
  });
  for (const char* c : {"L", "N", "M", "Lu", "Ll", "Lo", "Lm", "Mn", "Mc", "Nd", "Nl", "No", "P", "S", "Cf"}) {
    const tok::Pattern p = tok::Pattern::regex(std::string("\\p{") + c + "}", "test");
    std::size_t matched = 0, want = 0;
    for (const auto& [b, e] : p.find(text)) {
      const auto i = static_cast<std::size_t>(std::lower_bound(offsets.begin(), offsets.end(), b) - offsets.begin());
      ASSERT_EQ(names[i].rfind(c, 0), 0u)
          << "\\p{" << c << "} matched U+" << std::hex << cps[i] << ", node's " << names[i];
      ++matched;
    }
    for (const std::string& n : names) want += n.rfind(c, 0) == 0;
    EXPECT_EQ(matched, want) << "\\p{" << c << "}: the code points node gives that category";
  }
}

TEST(NewerUnicode, NormalFormsAreNodes) {
  // Runs of bases and marks of every script (those Unicode added since utf8proc's tables among
  // them), each with node's NFC, NFD, NFKC and NFKD.
  using K = tok::Normalizer::Kind;
  const json& texts = node_tables()["texts"];
  ASSERT_GE(texts.size(), 1000u);
  const std::pair<K, const char*> forms[] = {{K::NFC, "NFC"}, {K::NFD, "NFD"}, {K::NFKC, "NFKC"}, {K::NFKD, "NFKD"}};
  int differ = 0;
  for (const json& t : texts) {
    const std::string text = t[0];
    for (std::size_t f = 0; f < 4; ++f) {
      tok::Normalizer n;
      n.kind = forms[f].first;
      const std::string want = t[f + 1];
      if (tok::normalize({n}, text) != want && ++differ <= 3)
        ADD_FAILURE() << forms[f].second << " of " << quoted(text) << " is not node's " << quoted(want);
    }
  }
  EXPECT_EQ(differ, 0) << "of " << texts.size() << " texts in four forms";
}

TEST(HfTokenizer, WhiteSpaceIsUnicodesAsInHuggingFacesRegexEngine) {
  // \s is Unicode's White_Space, as in Oniguruma (the tokenizers library's engine). Where
  // JavaScript's \s differs, @lenml/tokenizers parts from Hugging Face and mhaviz follows
  // Hugging Face: JavaScript's \s takes U+FEFF and leaves U+0085. So "  \uFEFF  w" splits as
  // " ", " \uFEFF" (a space and a non-space symbol), " ", " w" here and in Hugging Face, where
  // the JavaScript port takes all four spaces and U+FEFF as one run of spaces.
  const Tokenizer& t = real("qwen3");
  auto pieces = [&](std::string_view text) {
    std::vector<std::string> out;
    for (const int id : t.encode(text)) out.push_back(t.decode_token(id));
    return out;
  };
  EXPECT_EQ(pieces("z  \xEF\xBB\xBF  w"), (std::vector<std::string>{"z", " ", " \xEF\xBB\xBF", " ", " w"}));
  // U+180E is not (PCRE2's own \s takes it): with the apostrophe it is one run of symbols,
  // and "'s" no contraction. All three engines agree here.
  const std::vector<std::string> mvs = pieces("a\xE1\xA0\x8E's");
  ASSERT_GE(mvs.size(), 2u);
  EXPECT_EQ(mvs.back(), "s");
  EXPECT_EQ(mvs[mvs.size() - 2].back(), '\'');
}

// [SECTION] hand-made tokenizer.json files
// A tiny SentencePiece-style BPE: characters a, b, c, ▁, merges "a b" and "▁ a", byte tokens.
json tiny(json normalizer, json pre_tokenizer, json added = json::array()) {
  json vocab = {{"<unk>", 0},
                {"a", 1},
                {"b", 2},
                {"c", 3},
                {"\xE2\x96\x81", 4},
                {"ab", 5},
                {"\xE2\x96\x81"
                 "a",
                 6}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 7 + b;
  }
  const json space = {{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}};
  const json decoders = json::array({space, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}});
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"vocab", vocab},
            {"merges", {"a b", "\xE2\x96\x81 a"}}}}};
}

Tokenizer load(const json& j) { return Tokenizer::from_tokenizer_json_string(j.dump(), "t.json"); }

TEST(HfTokenizer, ReplaceNormalizerMergesAndByteFallback) {
  const json space = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}};
  const Tokenizer t = load(tiny(space, nullptr));
  // "ab a" -> "ab▁a" -> [ab, ▁a]; "é" is not in the vocabulary: its two bytes.
  EXPECT_EQ(t.encode("ab a"), (std::vector<int>{5, 6}));
  EXPECT_EQ(t.encode("\xC3\xA9"), (std::vector<int>{7 + 0xC3, 7 + 0xA9}));
  EXPECT_EQ(t.decode(t.encode("ab a \xC3\xA9")), "ab a \xC3\xA9");
}

TEST(HfTokenizer, UnknownCharactersFuseIntoOneUnkWithoutByteFallback) {
  json j = tiny(nullptr, nullptr);
  j["model"]["byte_fallback"] = false;
  EXPECT_EQ(load(j).encode("a\xC3\xA9\xC3\xA9"
                           "b"),
            (std::vector<int>{1, 0, 2}));
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(load(j).encode("a\xC3\xA9\xC3\xA9"
                           "b"),
            (std::vector<int>{1, 0, 0, 2}));
}

TEST(HfTokenizer, SplitBehaviorsAndDigits) {
  auto split = [](const char* delimiter, const char* behavior) {
    return json{{"type", "Split"}, {"pattern", {{"String", delimiter}}}, {"behavior", behavior}, {"invert", false}};
  };
  // The pieces the BPE sees decide whether "ab" merges across the delimiter.
  EXPECT_EQ(load(tiny(nullptr, split("b", "Isolated"))).encode("abab"), (std::vector<int>{1, 2, 1, 2}));
  EXPECT_EQ(load(tiny(nullptr, split("b", "Removed"))).encode("abab"), (std::vector<int>{1, 1}));
  EXPECT_EQ(load(tiny(nullptr, split("b", "MergedWithPrevious"))).encode("abab"), (std::vector<int>{5, 5}));
  EXPECT_EQ(load(tiny(nullptr, split("a", "MergedWithNext"))).encode("abab"), (std::vector<int>{5, 5}));
  EXPECT_EQ(load(tiny(nullptr, split("a", "MergedWithPrevious"))).encode("abab"), (std::vector<int>{1, 2, 1, 2}));
  EXPECT_EQ(load(tiny(nullptr, split("c", "Contiguous"))).encode("accab"), (std::vector<int>{1, 3, 3, 5}));
  json inverted = split("b", "Removed");
  inverted["invert"] = true;  // the matches are kept, the rest removed
  EXPECT_EQ(load(tiny(nullptr, inverted)).encode("abab"), (std::vector<int>{2, 2}));
  // A regex's \s is Unicode's White_Space, in a class or not; \S its complement; an escaped
  // backslash before an s is a backslash. U+180E (E1 A0 8E) is not white space, U+0085 (C2 85)
  // is.
  auto regex = [](const char* re) {
    return json{{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Removed"}, {"invert", false}};
  };
  const std::vector<int> mvs = {7 + 0xE1, 7 + 0xA0, 7 + 0x8E};
  EXPECT_EQ(load(tiny(nullptr, regex(R"(\s)"))).encode("a \xE1\xA0\x8E b"),
            (std::vector<int>{1, mvs[0], mvs[1], mvs[2], 2}));
  EXPECT_EQ(load(tiny(nullptr, regex(R"([c\s])")))
                .encode("a\xE1\xA0\x8E\xC2\x85"
                        "c b"),
            (std::vector<int>{1, mvs[0], mvs[1], mvs[2], 2}));
  EXPECT_EQ(load(tiny(nullptr, regex(R"(\S)"))).encode("a\xE1\xA0\x8E\t"), (std::vector<int>{7 + '\t'}));
  EXPECT_EQ(load(tiny(nullptr, regex(R"(\\s)"))).encode("a\\sb"), (std::vector<int>{1, 2}));
  EXPECT_EQ(load(tiny(nullptr, regex(R"(\s)")))
                .encode("a\xC2\x85"
                        "b"),
            (std::vector<int>{1, 2}));
  // Digits, one by one: "a1b" splits before and after the digit.
  const json digits = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_EQ(load(tiny(nullptr, digits)).encode("ab12"), (std::vector<int>{5, 7 + '1', 7 + '2'}));
}

// A regex that can match nothing splits, and replaces, between characters (tokenizers finds its
// empty matches, Oniguruma's way); the code before skipped them and saw one piece.
TEST(HfTokenizer, EmptyMatchesSplitAndReplaceBetweenCharacters) {
  const json nothing = {{"type", "Split"}, {"pattern", {{"Regex", ""}}}, {"behavior", "Isolated"}, {"invert", false}};
  EXPECT_EQ(load(tiny(nullptr, nothing)).encode("abab"), (std::vector<int>{1, 2, 1, 2}));
  // "b*" matches nothing before each "a", "b" itself, and nothing again only where no match ended.
  const json bs = {{"type", "Split"}, {"pattern", {{"Regex", "b*"}}}, {"behavior", "Removed"}, {"invert", false}};
  EXPECT_EQ(load(tiny(nullptr, bs)).encode("abbab"), (std::vector<int>{1, 1}));
  const json space = {{"type", "Replace"}, {"pattern", {{"Regex", ""}}}, {"content", "\xE2\x96\x81"}};
  EXPECT_EQ(load(tiny(space, nullptr)).encode("ab"), (std::vector<int>{6, 4, 2, 4}));
  // After an empty match the search goes on a character later, not a byte: inside "é" PCRE2
  // matched nothing more, and the "a" after it stayed as it was.
  EXPECT_EQ(load(tiny(space, nullptr))
                .encode("\xC3\xA9"
                        "a"),
            (std::vector<int>{4, 7 + 0xC3, 7 + 0xA9, 6, 4}));
}

// An empty String matches nothing (tokenizers' literal patterns): a Replace normalizer leaves
// the text and a Replace decoder the tokens as they are (the decoder's grew each token forever).
TEST(HfTokenizer, EmptyStringReplacesNothing) {
  json j = tiny({{"type", "Replace"}, {"pattern", {{"String", ""}}}, {"content", "x"}}, nullptr);
  j["decoder"]["decoders"][0]["pattern"]["String"] = "";
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("ab"), (std::vector<int>{5}));
  EXPECT_EQ(t.decode({6}),
            "\xE2\x96\x81"
            "a");
}

// tokenizer.json may leave ids out; a model's rows may go past its tokenizer's ids.
TEST(HfTokenizer, IdsLeftOutNameNoToken) {
  const json late = {{"id", 300},       {"content", "<late>"}, {"special", true},     {"normalized", false},
                     {"lstrip", false}, {"rstrip", false},     {"single_word", false}};
  const Tokenizer t = load(tiny(nullptr, nullptr, json::array({late})));
  EXPECT_EQ(t.vocab_size(), 301);
  EXPECT_TRUE(t.has_token(0));
  EXPECT_TRUE(t.has_token(300));
  EXPECT_FALSE(t.has_token(263));
  EXPECT_FALSE(t.has_token(299));
  EXPECT_FALSE(t.has_token(301));
  EXPECT_FALSE(t.has_token(-1));
  EXPECT_THROW(t.decode_token(299), std::out_of_range);
  EXPECT_EQ(t.decode({1, 299, 2, 300, 400}), "ab<late>");
}

TEST(HfTokenizer, AddedTokensLongestFirstAndTheirFlags) {
  json added = json::array();
  added.push_back({{"id", 300},
                   {"content", "<x>"},
                   {"special", true},
                   {"normalized", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"single_word", false}});
  added.push_back({{"id", 301},
                   {"content", "<x><y>"},
                   {"special", true},
                   {"normalized", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"single_word", false}});
  added.push_back({{"id", 302},
                   {"content", "ba"},
                   {"special", false},
                   {"normalized", false},
                   {"lstrip", true},
                   {"rstrip", true},
                   {"single_word", true}});
  const Tokenizer t = load(tiny(nullptr, nullptr, added));
  EXPECT_EQ(t.encode("a<x><y>b<x>"), (std::vector<int>{1, 301, 2, 300}));
  // single_word: "ba" inside a word is ordinary text; alone, it takes the spaces around it.
  EXPECT_EQ(t.encode("aba"), (std::vector<int>{5, 1}));
  EXPECT_EQ(t.encode("a  ba  c"), (std::vector<int>{1, 302, 3}));
  EXPECT_EQ(t.vocab_size(), 303);
  EXPECT_EQ(t.display_token(301), "<x><y>");
}

TEST(HfTokenizer, TemplateAddsItsTokensAroundTheText) {
  json j = tiny(nullptr, nullptr);
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single",
                          {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                           {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                         {"special_tokens",
                          {{"<s>", {{"id", "<s>"}, {"ids", {3}}, {"tokens", {"c"}}}},
                           {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"b"}}}}}}};
  EXPECT_EQ(load(j).encode("a"), (std::vector<int>{3, 1, 2}));
  EXPECT_EQ(load(j).encode("a", false), (std::vector<int>{1}));
  EXPECT_EQ(load(j).encode(""), (std::vector<int>{3, 2}));
  // An id in a hole between the vocabulary and an added token is no token (the fuzzer found
  // a template putting it in front of every text, which decode_token then refused).
  json added = json::array();
  added.push_back({{"id", 300},
                   {"content", "<x>"},
                   {"special", true},
                   {"normalized", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"single_word", false}});
  json holed = tiny(nullptr, nullptr, added);
  holed["post_processor"] = j["post_processor"];
  holed["post_processor"]["special_tokens"]["<s>"]["ids"] = {290};
  EXPECT_NE(error_of([&] { load(holed); }).find("post_processor.special_tokens[\"<s>\"] id 290 is not a token"),
            std::string::npos)
      << error_of([&] { load(holed); });
}

TEST(HfTokenizer, EveryRefusalIsOneLineNamingTheFieldAndWhatIsSupported) {
  auto err = [](const json& j) { return error_of([&] { load(j); }); };
  json j = tiny(nullptr, nullptr);
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(err(j).find("t.json: model.type is \"WordPiece\": mhaviz reads BPE tokenizers only"), std::string::npos)
      << err(j);
  j = tiny({{"type", "BertNormalizer"}}, nullptr);
  EXPECT_NE(err(j).find("normalizer.type \"BertNormalizer\" is not supported (mhaviz reads NFC"), std::string::npos)
      << err(j);
  j = tiny(nullptr, {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Metaspace"}}}}});
  EXPECT_NE(err(j).find("pre_tokenizer.pretokenizers[0].type \"Metaspace\" is not supported"), std::string::npos)
      << err(j);
  j = tiny(nullptr, nullptr);
  j["decoder"] = {{"type", "Strip"}};
  EXPECT_NE(err(j).find("decoder.type \"Strip\" is not supported"), std::string::npos) << err(j);
  j["decoder"] = nullptr;
  j["post_processor"] = {{"type", "BertProcessing"}};
  EXPECT_NE(err(j).find("post_processor.type \"BertProcessing\" is not supported"), std::string::npos) << err(j);
  j = tiny(nullptr, {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}});
  EXPECT_NE(err(j).find("does not compile"), std::string::npos) << err(j);
  j = tiny(nullptr, {{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}});
  EXPECT_NE(err(j).find("pre_tokenizer.behavior \"Sideways\" is not"), std::string::npos) << err(j);
  // A template's Sequence piece that is not {"id": "A"}: refused with the piece (it threw
  // nlohmann's type_error, which nothing caught).
  for (const json& sequence :
       {json(nullptr), json("A"), json(0), json::array(), json{{"id", nullptr}}, json{{"id", 0}}}) {
    j = tiny(nullptr, nullptr);
    j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"Sequence", sequence}}}}};
    EXPECT_NE(err(j).find("post_processor.single holds {\"Sequence\":" + sequence.dump() + "}: only one sequence, A"),
              std::string::npos)
        << err(j);
  }
  j = tiny(nullptr, nullptr);
  j["model"]["unk_token"] = "<nope>";
  EXPECT_NE(err(j).find("model.unk_token \"<nope>\" is not in model.vocab"), std::string::npos) << err(j);
  j = tiny(nullptr, nullptr);
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(err(j).find("model.dropout is 0.1"), std::string::npos) << err(j);
  j = tiny(nullptr, {{"type", "ByteLevel"}});
  EXPECT_NE(err(j).find("pre_tokenizer.add_prefix_space is missing: ByteLevel needs true or false"), std::string::npos)
      << err(j);
  j = tiny(nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", nullptr}});
  EXPECT_NE(err(j).find("pre_tokenizer.add_prefix_space is null: ByteLevel needs true or false"), std::string::npos)
      << err(j);
  j = tiny(nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", false}});
  EXPECT_NE(err(j).find("has no token for byte 0x00"), std::string::npos) << err(j);
  j = tiny(nullptr, nullptr);
  j["added_tokens"] = {{{"id", 1}, {"content", "<z>"}}};
  EXPECT_NE(err(j).find("added_tokens[0] \"<z>\" has id 1, which model.vocab gives to \"a\""), std::string::npos)
      << err(j);
  EXPECT_NE(
      error_of([] { Tokenizer::from_tokenizer_json_string("{\"model\": ", "t.json"); }).find("t.json: not valid JSON"),
      std::string::npos);
  for (const auto& m : {err(tiny({{"type", "Lowercase"}}, nullptr)), err(j)})
    EXPECT_EQ(m.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace mhaviz
