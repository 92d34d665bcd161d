// Unicode as the reference tokenizers see it (tokenizer_impl.hpp): general categories for the
// regexes and the Digits step, and normalization, where node's tables are newer than PCRE2's and
// utf8proc's.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "tokenizer_impl.hpp"

namespace mhaviz::tok {
namespace {

struct NewerRun {
  std::uint32_t first, last;
  utf8proc_category_t category;
};
struct StandIn {
  utf8proc_category_t category;
  int length;  // UTF-8 bytes
  std::uint32_t cp;
};
struct NewerNormal {
  std::uint32_t cp;
  int ccc;
  int nfd_at, nfd_length, nfkd_at, nfkd_length;  // in kNewerDecompositions; length 0: its own
};
struct NewerPair {
  std::uint32_t first, second, composite;
};

#include "unicode_newer.inc"

const NewerRun* newer_run(std::uint32_t cp) {
  const auto* it = std::upper_bound(std::begin(kNewerRuns), std::end(kNewerRuns), cp,
                                    [](std::uint32_t c, const NewerRun& r) { return c < r.first; });
  if (it == std::begin(kNewerRuns)) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

const NewerNormal* newer_normal(std::uint32_t cp) {
  const auto* it = std::lower_bound(std::begin(kNewerNormal), std::end(kNewerNormal), cp,
                                    [](const NewerNormal& n, std::uint32_t c) { return n.cp < c; });
  return it != std::end(kNewerNormal) && it->cp == cp ? it : nullptr;
}

// Whether utf8proc's normalization of a text holding cp may differ from node's: cp has a class or
// decomposition utf8proc does not know, or is one of a newer pair (a starter of class 0 that NFC
// composes with another, such as Tulu-Tigalari's vowel signs).
bool normalizes_newer(std::uint32_t cp) {
  return newer_normal(cp) || std::any_of(std::begin(kNewerPairs), std::end(kNewerPairs),
                                         [&](const NewerPair& p) { return p.first == cp || p.second == cp; });
}

int combining_class(std::uint32_t cp) {
  if (const NewerNormal* n = newer_normal(cp)) return n->ccc;
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

// The primary composite of a and b, or 0: node's newer pairs, then utf8proc's (a one-character
// NFC of the two; a code point utf8proc does not know passes through it and composes with nothing).
std::uint32_t composite(std::uint32_t a, std::uint32_t b) {
  const NewerPair key{a, b, 0};
  const auto* it =
      std::lower_bound(std::begin(kNewerPairs), std::end(kNewerPairs), key, [](const NewerPair& x, const NewerPair& y) {
        return x.first != y.first ? x.first < y.first : x.second < y.second;
      });
  if (it != std::end(kNewerPairs) && it->first == a && it->second == b) return it->composite;
  std::string two;
  append_utf8(two, a);
  append_utf8(two, b);
  utf8proc_uint8_t* dst = nullptr;
  const auto n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(two.data()), static_cast<utf8proc_ssize_t>(two.size()),
                   &dst, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::uint32_t out = 0;
  if (n > 0 &&
      utf8_char(std::string_view(reinterpret_cast<const char*>(dst), static_cast<std::size_t>(n)), 0, out) != n)
    out = 0;
  std::free(dst);
  return out;
}

}  // namespace

utf8proc_category_t general_category(std::uint32_t cp) {
  if (const NewerRun* r = newer_run(cp)) return r->category;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

std::string with_stand_ins(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const int len = utf8_char(text, i, cp);
    if (len <= 0) {
      ++i;
      continue;
    }
    if (const NewerRun* r = newer_run(cp)) {
      const auto* s = std::find_if(std::begin(kStandIns), std::end(kStandIns),
                                   [&](const StandIn& x) { return x.category == r->category && x.length == len; });
      // The generator writes a stand-in for every category and length its runs hold.
      if (s != std::end(kStandIns)) {
        if (out.empty()) out.assign(text);
        std::string c;
        append_utf8(c, s->cp);
        out.replace(i, c.size(), c);
      }
    }
    i += static_cast<std::size_t>(len);
  }
  return out;
}

std::optional<std::string> normalize_newer(std::string_view text, bool compose, bool compat) {
  // Code points, decoded only once one is found that utf8proc would normalize otherwise.
  std::vector<std::uint32_t> cps;
  bool newer = false;
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    const int len = utf8_char(text, i, cp);
    if (len <= 0) throw std::invalid_argument("normalize_newer: invalid UTF-8");
    if (!newer && cp >= 0x80 && normalizes_newer(cp)) {
      newer = true;
      for (std::size_t j = 0; j < i;) {  // the code points before it
        std::uint32_t before = 0;
        j += static_cast<std::size_t>(utf8_char(text, j, before));
        cps.push_back(before);
      }
    }
    if (newer) cps.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  if (!newer) return std::nullopt;
  // 1 Full decomposition of each code point (node's lists are full already).
  std::vector<std::uint32_t> d;
  for (const std::uint32_t cp : cps) {
    if (const NewerNormal* n = newer_normal(cp)) {
      const int at = compat ? n->nfkd_at : n->nfd_at, length = compat ? n->nfkd_length : n->nfd_length;
      if (length == 0) d.push_back(cp);
      d.insert(d.end(), kNewerDecompositions.data() + at, kNewerDecompositions.data() + at + length);
      continue;
    }
    utf8proc_int32_t buf[32];
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const auto n = utf8proc_decompose_char(
        static_cast<utf8proc_int32_t>(cp), buf, 32,
        static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0)), &boundclass);
    if (n < 0 || n > 32) throw std::runtime_error("utf8proc: a decomposition longer than 32");
    d.insert(d.end(), buf, buf + n);
  }
  // 2 Canonical order: each run of non-zero classes sorted by class, stably.
  std::vector<int> cc(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) cc[i] = combining_class(d[i]);
  for (std::size_t i = 1; i < d.size(); ++i)
    for (std::size_t j = i; j > 0 && cc[j] != 0 && cc[j - 1] > cc[j]; --j) {
      std::swap(d[j], d[j - 1]);
      std::swap(cc[j], cc[j - 1]);
    }
  // 3 Canonical composition: each character joins the last starter before it unless a character
  // between has class 0 or one at least its own.
  std::vector<std::uint32_t> out;
  if (compose) {
    std::vector<int> out_cc;
    std::size_t starter = std::string::npos;
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (starter != std::string::npos) {
        const int last = out_cc.back();
        const bool adjacent = starter == out.size() - 1;
        if (adjacent || (last != 0 && last < cc[i])) {
          if (const std::uint32_t p = composite(out[starter], d[i]); p != 0) {
            out[starter] = p;
            continue;
          }
        }
      }
      if (cc[i] == 0) starter = out.size();
      out.push_back(d[i]);
      out_cc.push_back(cc[i]);
    }
  } else {
    out = std::move(d);
  }
  std::string s;
  for (const std::uint32_t cp : out) append_utf8(s, cp);
  return s;
}

}  // namespace mhaviz::tok
