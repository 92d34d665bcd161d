// Writes core/src/trained/unicode_newer.inc (see scripts/unicode_delta.sh) from node's tables
// (scripts/unicode_tables.js, JSON on standard input): the code points whose general category
// differs from PCRE2's, as runs, and for each category and UTF-8 length among them a code point
// both agree on, which the tokenizer's regexes match in place of the newer one; and the code
// points whose combining class or decompositions differ from utf8proc's, with the pairs NFC
// composes into them.
//   unicode_delta refs   the reference marks unicode_tables.js needs: one per combining class
//   unicode_delta        the table, from unicode_tables.js REFS's output
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

// In utf8proc's order (utf8proc_category_t), Cn first.
const char* const kNames[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
                              "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
constexpr int kCount = 30;

std::string utf8(unsigned cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | cp >> 6);
    s += static_cast<char>(0x80 | (cp & 63));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | cp >> 12);
    s += static_cast<char>(0x80 | (cp >> 6 & 63));
    s += static_cast<char>(0x80 | (cp & 63));
  } else {
    s += static_cast<char>(0xF0 | cp >> 18);
    s += static_cast<char>(0x80 | (cp >> 12 & 63));
    s += static_cast<char>(0x80 | (cp >> 6 & 63));
    s += static_cast<char>(0x80 | (cp & 63));
  }
  return s;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return s;
}

struct Matcher {
  pcre2_code* code;
  pcre2_match_data* md;
  explicit Matcher(const std::string& re) {
    int err = 0;
    PCRE2_SIZE at = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
    if (!code) throw std::runtime_error("does not compile: " + re);
    md = pcre2_match_data_create_from_pattern(code, nullptr);
  }
  bool operator()(unsigned cp) const {
    const std::string s = utf8(cp);
    return pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr) >= 0;
  }
};

}  // namespace

using Cps = std::vector<unsigned>;

// utf8proc's full decomposition of cp (canonical, or compatibility too); empty when it is its own.
Cps decomposition(unsigned cp, bool compat) {
  utf8proc_int32_t buf[64];
  int boundclass = UTF8PROC_BOUNDCLASS_START;
  const auto n = utf8proc_decompose_char(
      static_cast<utf8proc_int32_t>(cp), buf, 64,
      static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0)), &boundclass);
  if (n < 0 || n > 64) throw std::runtime_error("utf8proc_decompose_char failed");
  Cps out(buf, buf + n);
  return out == Cps{cp} ? Cps{} : out;
}

int ccc(unsigned cp) { return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class; }

int print_refs() {
  std::map<int, unsigned> refs;
  for (unsigned cp = 0; cp < 0x110000; ++cp)
    if (const int c = ccc(cp); c != 0 && !refs.count(c) && decomposition(cp, false).empty()) refs[c] = cp;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [c, cp] : refs) j[std::to_string(c)] = cp;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "refs") return print_refs();
  const nlohmann::json in = nlohmann::json::parse(std::cin);
  std::map<std::string, int> index;
  for (int i = 0; i < kCount; ++i) index[kNames[i]] = i;
  std::vector<int> node(0x110000);
  for (const auto& r : in.at("runs"))
    for (unsigned cp = r[0]; cp <= r[1].get<unsigned>(); ++cp) node[cp] = index.at(r[2].get<std::string>());
  std::vector<Matcher> is;
  for (int i = 0; i < kCount; ++i) is.emplace_back(std::string("^\\p{") + kNames[i] + "}$");
  const Matcher ascii_letter("(?i)^[a-z]$");
  std::vector<int> pcre(0x110000, 0);
  for (unsigned cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      pcre[cp] = node[cp];  // not UTF-8: never in a text
      continue;
    }
    for (int i = 0; i < kCount; ++i)
      if (is[i](cp)) {
        pcre[cp] = i;
        break;
      }
  }
  struct Run {
    unsigned first, last;
    int cat;
  };
  std::vector<Run> runs;
  int differ = 0;
  std::map<std::pair<int, int>, unsigned> stand_in;  // (category, UTF-8 length) -> code point
  for (unsigned cp = 0; cp < 0x110000; ++cp) {
    if (pcre[cp] == node[cp]) continue;
    ++differ;
    if (!runs.empty() && runs.back().last + 1 == cp && runs.back().cat == node[cp])
      ++runs.back().last;
    else
      runs.push_back({cp, cp, node[cp]});
    stand_in[{node[cp], static_cast<int>(utf8(cp).size())}] = 0;
  }
  for (auto& [key, cp] : stand_in) {
    const auto [cat, len] = key;
    for (unsigned c = 0x80; c < 0x110000 && cp == 0; ++c)
      if (static_cast<int>(utf8(c).size()) == len && pcre[c] == cat && node[c] == cat && !ascii_letter(c) &&
          !(c >= 0xD800 && c <= 0xDFFF))
        cp = c;
    if (cp == 0) throw std::runtime_error(std::string("no stand-in for ") + kNames[cat]);
  }
  // Normalization: node's (class, NFD, NFKD) of every code point against utf8proc's.
  struct Normal {
    int ccc = 0;
    Cps nfd, nfkd;
    const nlohmann::json* pair = nullptr;
  };
  std::map<unsigned, Normal> node_normal;
  // in.at("normal"): absent where unicode_tables.js ran without REFS.
  for (const auto& e : in.at("normal")) {
    Normal& n = node_normal[e[0].get<unsigned>()];
    n.ccc = e[1];
    n.nfd = e[2].get<Cps>();
    n.nfkd = e[3].get<Cps>();
    if (!e[4].is_null()) n.pair = &e[4];
  }
  std::vector<std::pair<unsigned, Normal>> normal_differ;
  for (unsigned cp = 0; cp < 0x110000; ++cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xAC00 && cp <= 0xD7A3)) continue;
    const auto it = node_normal.find(cp);
    const Normal want = it == node_normal.end() ? Normal{} : it->second;
    // A code point that decomposes is never ordered itself (unicode_tables.js gives it 0).
    const int old_ccc = want.nfd.empty() ? ccc(cp) : 0;
    if (want.ccc != old_ccc || want.nfd != decomposition(cp, false) || want.nfkd != decomposition(cp, true))
      normal_differ.emplace_back(cp, want);
  }
  char version[64] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
  std::printf("// Generated by scripts/unicode_delta.sh; do not edit. node %s (ICU %s, Unicode %s) against\n",
              in["node"].get<std::string>().c_str(), in["icu"].get<std::string>().c_str(),
              in["unicode"].get<std::string>().c_str());
  std::printf("// PCRE2's tables (Unicode %s): %d code points whose general category differs, in %zu runs.\n", version,
              differ, runs.size());
  std::printf("// utf8proc's tables (Unicode %s): %zu code points whose combining class or decomposition differs.\n",
              utf8proc_unicode_version(), normal_differ.size());
  std::printf("// Included by tokenizer_unicode.cpp only.\n\n");
  // std::array: a table with no entries (another pair of versions) still compiles.
  std::printf("// {first, last, category as node has it}, ascending.\n");
  std::printf("constexpr std::array<NewerRun, %zu> kNewerRuns{{\n", runs.size());
  for (const Run& r : runs)
    std::printf("    {0x%04X, 0x%04X, UTF8PROC_CATEGORY_%s},\n", r.first, r.last, upper(kNames[r.cat]).c_str());
  std::printf("}};\n\n// {category, UTF-8 length, a code point both tables give that category}.\n");
  std::printf("constexpr std::array<StandIn, %zu> kStandIns{{\n", stand_in.size());
  for (const auto& [key, cp] : stand_in)
    std::printf("    {UTF8PROC_CATEGORY_%s, %d, 0x%04X},\n", upper(kNames[key.first]).c_str(), key.second, cp);
  std::printf("}};\n");

  std::printf("\n// {code point, combining class, NFD at, length, NFKD at, length} (in kNewerDecompositions;\n");
  std::printf("// length 0: the code point is its own), ascending.\n");
  std::printf("constexpr std::array<NewerNormal, %zu> kNewerNormal{{\n", normal_differ.size());
  Cps pool;
  std::vector<std::array<unsigned, 3>> pairs;  // first, second, composite
  for (const auto& [cp, n] : normal_differ) {
    const std::size_t d = pool.size();
    pool.insert(pool.end(), n.nfd.begin(), n.nfd.end());
    const std::size_t k = pool.size();
    pool.insert(pool.end(), n.nfkd.begin(), n.nfkd.end());
    std::printf("    {0x%04X, %d, %zu, %zu, %zu, %zu},\n", cp, n.ccc, d, n.nfd.size(), k, n.nfkd.size());
    if (n.pair) pairs.push_back({(*n.pair)[0].get<unsigned>(), (*n.pair)[1].get<unsigned>(), cp});
  }
  std::printf("}};\n\nconstexpr std::array<std::uint32_t, %zu> kNewerDecompositions{{\n    ", pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) std::printf("0x%04X,%s", pool[i], i % 8 == 7 ? "\n    " : " ");
  std::printf("}};\n\n// {first, second, composite}: NFC's pairs into the code points above, ascending.\n");
  std::sort(pairs.begin(), pairs.end());
  std::printf("constexpr std::array<NewerPair, %zu> kNewerPairs{{\n", pairs.size());
  for (const auto& p : pairs) std::printf("    {0x%04X, 0x%04X, 0x%04X},\n", p[0], p[1], p[2]);
  std::printf("}};\n");
}
