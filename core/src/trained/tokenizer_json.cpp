// A Hugging Face tokenizer.json read into the pipeline of tokenizer_impl.hpp. The format is
// the serde form of the tokenizers library's Tokenizer: "model" (here BPE: vocab, merges as
// "a b" or ["a", "b"], unk_token, fuse_unk, byte_fallback, ignore_merges), "added_tokens"
// (id, content, special, normalized, lstrip, rstrip, single_word), "normalizer",
// "pre_tokenizer", "post_processor" and "decoder", each an object with a "type" (and
// "Sequence" holding a list of them) or null. What mhaviz does not implement is refused
// with the list of what it does.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer_impl.hpp"

namespace mhaviz {

namespace {

using json = nlohmann::json;
using tok::fail;

constexpr const char* kNormalizers = "NFC, NFD, NFKC, NFKD, Replace, Prepend, Sequence";
constexpr const char* kPreTokenizers = "Split, ByteLevel, Digits, Sequence";
constexpr const char* kPostProcessors = "TemplateProcessing, ByteLevel, Sequence";
constexpr const char* kDecoders = "ByteLevel, Replace, ByteFallback, Fuse, Sequence";

struct Reader {
  std::string_view source;

  std::string type_of(const json& j, const std::string& where) const {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
      fail(source, where + " has no \"type\" string");
    return j["type"].get<std::string>();
  }
  bool flag(const json& j, const char* key, bool fallback, const std::string& where) const {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_boolean()) fail(source, where + "." + key + " is " + j[key].dump() + ", not true or false");
    return j[key].get<bool>();
  }
  std::string text(const json& j, const char* key, const std::string& where) const {
    if (!j.contains(key) || !j[key].is_string()) fail(source, where + "." + key + " is missing or not a string");
    return j[key].get<std::string>();
  }
  const json& list(const json& j, const char* key, const std::string& where) const {
    if (!j.contains(key) || !j[key].is_array()) fail(source, where + "." + key + " is missing or not a list");
    return j[key];
  }
  // {"String": "x"} or {"Regex": "..."}.
  tok::Pattern pattern(const json& j, const std::string& where) const {
    if (j.is_object() && j.contains("String") && j["String"].is_string())
      return tok::Pattern::literal(j["String"].get<std::string>());
    if (j.is_object() && j.contains("Regex") && j["Regex"].is_string())
      return tok::Pattern::regex(j["Regex"].get<std::string>(), std::string(source) + " " + where);
    fail(source, where + " is " + j.dump() + ", not {\"String\": ...} or {\"Regex\": ...}");
  }

  void normalizer(const json& j, const std::string& where, std::vector<tok::Normalizer>& out) const {
    if (j.is_null()) return;
    const std::string type = type_of(j, where);
    using K = tok::Normalizer::Kind;
    tok::Normalizer n;
    if (type == "Sequence") {
      const json& steps = list(j, "normalizers", where);
      for (std::size_t k = 0; k < steps.size(); ++k)
        normalizer(steps[k], where + ".normalizers[" + std::to_string(k) + "]", out);
      return;
    }
    if (type == "NFC")
      n.kind = K::NFC;
    else if (type == "NFD")
      n.kind = K::NFD;
    else if (type == "NFKC")
      n.kind = K::NFKC;
    else if (type == "NFKD")
      n.kind = K::NFKD;
    else if (type == "Replace") {
      n.kind = K::Replace;
      n.pattern = pattern(j.value("pattern", json()), where + ".pattern");
      n.content = text(j, "content", where);
    } else if (type == "Prepend") {
      n.kind = K::Prepend;
      n.content = text(j, "prepend", where);
    } else {
      fail(source, where + ".type \"" + type + "\" is not supported (mhaviz reads " + kNormalizers + ")");
    }
    out.push_back(std::move(n));
  }

  void pre_tokenizer(const json& j, const std::string& where, std::vector<tok::PreTokenizer>& out) const {
    if (j.is_null()) return;
    const std::string type = type_of(j, where);
    using K = tok::PreTokenizer::Kind;
    tok::PreTokenizer p;
    if (type == "Sequence") {
      const json& steps = list(j, "pretokenizers", where);
      for (std::size_t k = 0; k < steps.size(); ++k)
        pre_tokenizer(steps[k], where + ".pretokenizers[" + std::to_string(k) + "]", out);
      return;
    }
    if (type == "Split") {
      p.kind = K::Split;
      p.pattern = pattern(j.value("pattern", json()), where + ".pattern");
      p.invert = flag(j, "invert", false, where);
      const std::string b = text(j, "behavior", where);
      using B = tok::SplitBehavior;
      if (b == "Removed")
        p.behavior = B::Removed;
      else if (b == "Isolated")
        p.behavior = B::Isolated;
      else if (b == "MergedWithPrevious")
        p.behavior = B::MergedWithPrevious;
      else if (b == "MergedWithNext")
        p.behavior = B::MergedWithNext;
      else if (b == "Contiguous")
        p.behavior = B::Contiguous;
      else
        fail(source, where + ".behavior \"" + b +
                         "\" is not Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
    } else if (type == "ByteLevel") {
      p.kind = K::ByteLevel;
      // tokenizers requires add_prefix_space (a file without it does not load there, and the
      // JavaScript port takes it as false); use_regex defaults to true in both.
      if (!j.contains("add_prefix_space") || !j["add_prefix_space"].is_boolean())
        fail(source, where + ".add_prefix_space is " +
                         (j.contains("add_prefix_space") ? j["add_prefix_space"].dump() : "missing") +
                         ": ByteLevel needs true or false");
      p.add_prefix_space = j["add_prefix_space"].get<bool>();
      p.use_regex = flag(j, "use_regex", true, where);
      p.pattern = tok::gpt2_pattern();
    } else if (type == "Digits") {
      p.kind = K::Digits;
      p.individual_digits = flag(j, "individual_digits", false, where);
    } else {
      fail(source, where + ".type \"" + type + "\" is not supported (mhaviz reads " + kPreTokenizers + ")");
    }
    out.push_back(std::move(p));
  }

  // TemplateProcessing's "single" template: special tokens before and after sequence A.
  void post_processor(const json& j, const std::string& where, Tokenizer::Impl& impl) const {
    if (j.is_null()) return;
    const std::string type = type_of(j, where);
    if (type == "ByteLevel") return;  // offsets only: ids unchanged
    if (type == "Sequence") {
      const json& steps = list(j, "processors", where);
      for (std::size_t k = 0; k < steps.size(); ++k)
        post_processor(steps[k], where + ".processors[" + std::to_string(k) + "]", impl);
      return;
    }
    if (type != "TemplateProcessing")
      fail(source, where + ".type \"" + type + "\" is not supported (mhaviz reads " + kPostProcessors + ")");
    const json& single = list(j, "single", where);
    const json specials = j.value("special_tokens", json::object());
    bool seen_a = false;
    impl.prefix.clear();
    impl.suffix.clear();
    for (const json& piece : single) {
      if (piece.contains("Sequence")) {
        const json& sequence = piece["Sequence"];
        if (!sequence.is_object() || !sequence.contains("id") || sequence["id"] != "A" || seen_a)
          fail(source, where + ".single holds " + piece.dump() + ": only one sequence, A");
        seen_a = true;
      } else if (piece.contains("SpecialToken") && piece["SpecialToken"].contains("id") &&
                 piece["SpecialToken"]["id"].is_string()) {
        const std::string name = piece["SpecialToken"]["id"];
        if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array())
          fail(source, where + ".special_tokens has no ids for \"" + name + "\"");
        for (const json& id : specials[name]["ids"]) {
          if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
              id.get<std::int64_t>() >= static_cast<std::int64_t>(impl.token_of.size()) ||
              impl.token_of[static_cast<std::size_t>(id.get<std::int64_t>())].empty())  // a hole in the ids
            fail(source, where + ".special_tokens[\"" + name + "\"] id " + id.dump() + " is not a token");
          (seen_a ? impl.suffix : impl.prefix).push_back(id.get<int>());
        }
      } else {
        fail(source, where + ".single holds " + piece.dump() + ", not a SpecialToken or a Sequence");
      }
    }
    if (!seen_a) fail(source, where + ".single has no Sequence A");
  }

  struct Decoding {
    bool byte_level = false, byte_fallback = false;
    std::vector<std::pair<std::string, std::string>> replace;
  };
  void decoder(const json& j, const std::string& where, Decoding& d) const {
    if (j.is_null()) return;
    const std::string type = type_of(j, where);
    if (type == "Sequence") {
      const json& steps = list(j, "decoders", where);
      for (std::size_t k = 0; k < steps.size(); ++k)
        decoder(steps[k], where + ".decoders[" + std::to_string(k) + "]", d);
    } else if (type == "ByteLevel") {
      d.byte_level = true;
    } else if (type == "ByteFallback") {
      d.byte_fallback = true;
    } else if (type == "Fuse") {  // joins the tokens' strings: decode() concatenates already
    } else if (type == "Replace") {
      const json& p = j.value("pattern", json());
      if (!p.is_object() || !p.contains("String") || !p["String"].is_string())
        fail(source, where + ".pattern is " + p.dump() + ": only {\"String\": ...} is supported in a decoder");
      // An empty string matches nothing in tokenizers (and replacing it forever grew each
      // token until memory ran out).
      const std::string content = text(j, "content", where);
      if (!p["String"].get_ref<const std::string&>().empty())
        d.replace.emplace_back(p["String"].get<std::string>(), content);
    } else {
      fail(source, where + ".type \"" + type + "\" is not supported (mhaviz reads " + kDecoders + ")");
    }
  }

  void model(const json& m, Tokenizer::Impl& impl) const {
    if (m.contains("type") && m["type"] != "BPE")
      fail(source, "model.type is " + m["type"].dump() +
                       ": mhaviz reads BPE tokenizers only (GPT-2, Qwen, Llama 3, Gemma 3), not WordPiece, Unigram or "
                       "WordLevel");
    if (!m.contains("vocab")) fail(source, "has no model.vocab");
    if (!m.contains("merges") || !m["merges"].is_array()) fail(source, "has no model.merges list");
    if (m.contains("dropout") && !m["dropout"].is_null() &&
        !(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0))
      fail(source, "model.dropout is " + m["dropout"].dump() + ": BPE dropout (random merges) is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (m.contains(key) && !m[key].is_null() && m[key] != "")
        fail(source, std::string("model.") + key + " is " + m[key].dump() + ": only null or \"\" is supported");
    impl.set_vocab(m["vocab"], std::string(source) + " model.vocab");
    std::vector<std::pair<std::string, std::string>> merges;
    for (const json& e : m["merges"]) {
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const std::size_t sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
          fail(source, "merge " + std::to_string(merges.size() + 1) + " \"" + s +
                           "\" is not two tokens separated by one space");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        fail(source,
             "merge " + std::to_string(merges.size() + 1) + " is " + e.dump() + ", not \"a b\" or [\"a\", \"b\"]");
      }
    }
    impl.set_merges(merges, std::string(source) + " model.merges", false);
    const std::string where = "model";
    impl.bpe.fuse_unk = flag(m, "fuse_unk", false, where);
    impl.bpe.byte_fallback = flag(m, "byte_fallback", false, where);
    impl.bpe.ignore_merges = flag(m, "ignore_merges", false, where);
    if (m.contains("unk_token") && !m["unk_token"].is_null()) {
      const std::string unk = text(m, "unk_token", where);
      const auto it = impl.bpe.vocab.find(unk);
      if (it == impl.bpe.vocab.end()) fail(source, "model.unk_token \"" + unk + "\" is not in model.vocab");
      impl.bpe.unk = it->second;
    }
  }

  void added_tokens(const json& list_json, Tokenizer::Impl& impl) const {
    if (!list_json.is_array()) fail(source, "added_tokens is not a list");
    for (std::size_t k = 0; k < list_json.size(); ++k) {
      const json& a = list_json[k];
      const std::string where = "added_tokens[" + std::to_string(k) + "]";
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer())
        fail(source, where + " has no integer id");
      const auto id = a["id"].get<std::int64_t>();
      if (id < 0 || id >= 1 << 24) fail(source, where + ".id " + std::to_string(id) + " is outside [0, 2^24)");
      tok::AddedToken t;
      t.id = static_cast<int>(id);
      t.content = text(a, "content", where);
      if (t.content.empty()) fail(source, where + ".content is empty");
      t.special = flag(a, "special", false, where);
      t.normalized =
          flag(a, "normalized", !t.special, where);  // tokenizers' AddedToken: special ones are not normalized
      t.lstrip = flag(a, "lstrip", false, where);
      t.rstrip = flag(a, "rstrip", false, where);
      t.single_word = flag(a, "single_word", false, where);
      if (const auto it = impl.bpe.vocab.find(t.content); it != impl.bpe.vocab.end() && it->second != t.id)
        fail(source, where + " \"" + t.content + "\" has id " + std::to_string(id) + " but model.vocab gives it " +
                         std::to_string(it->second));
      if (static_cast<std::size_t>(t.id) < impl.token_of.size() &&
          !impl.token_of[static_cast<std::size_t>(t.id)].empty() &&
          impl.token_of[static_cast<std::size_t>(t.id)] != t.content)
        fail(source, where + " \"" + t.content + "\" has id " + std::to_string(id) + ", which model.vocab gives to \"" +
                         impl.token_of[static_cast<std::size_t>(t.id)] + "\"");
      impl.added.push_back(std::move(t));
    }
  }
};

}  // namespace

std::unique_ptr<Tokenizer::Impl> parse_tokenizer_json(const json& j, std::string_view source) {
  const Reader r{source};
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) fail(source, "has no \"model\" object");
  auto impl = std::make_unique<Tokenizer::Impl>();
  r.model(j["model"], *impl);
  // A file of nothing but the model (as older GPT-2 exports write) is GPT-2's byte-level BPE.
  const bool bare = !j.contains("pre_tokenizer") && !j.contains("normalizer") && !j.contains("decoder") &&
                    !j.contains("added_tokens");
  Reader::Decoding dec;
  if (bare) {
    tok::PreTokenizer p;
    p.kind = tok::PreTokenizer::Kind::ByteLevel;
    p.use_regex = true;
    p.pattern = tok::gpt2_pattern();
    impl->pre_tokenizers.push_back(std::move(p));
    if (const auto it = impl->bpe.vocab.find("<|endoftext|>"); it != impl->bpe.vocab.end())
      impl->added.push_back({"<|endoftext|>", it->second, true, false, false, false, false});
    dec.byte_level = true;
  } else {
    r.added_tokens(j.value("added_tokens", json::array()), *impl);
    r.normalizer(j.value("normalizer", json()), "normalizer", impl->normalizers);
    r.pre_tokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer", impl->pre_tokenizers);
    r.decoder(j.value("decoder", json()), "decoder", dec);
  }
  const bool byte_level_input =
      std::any_of(impl->pre_tokenizers.begin(), impl->pre_tokenizers.end(),
                  [](const tok::PreTokenizer& p) { return p.kind == tok::PreTokenizer::Kind::ByteLevel; });
  if (byte_level_input) impl->check_byte_level(std::string(source) + " model.vocab");
  impl->finish(dec.byte_level, dec.replace, dec.byte_fallback);
  r.post_processor(j.value("post_processor", json()), "post_processor", *impl);
  return impl;
}

}  // namespace mhaviz
