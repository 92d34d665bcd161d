// The tasks' data (train_data.hpp): generators for induction and copy, the user's text, and the
// probe. Random numbers come from std::mt19937_64 and plain modulo, whose results the C++
// standard fixes, so a seed gives the same batches with every compiler.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "mhaviz/load_error.hpp"
#include "mhaviz/tokenizer.hpp"
#include "mhaviz/train.hpp"
#include "mhaviz/train_data.hpp"

namespace mhaviz::train {
namespace {

constexpr int kMinSegment = 4, kMaxSegment = 16;
constexpr int kHeldOut[] = {5, 9, 13};
constexpr std::uint64_t kProbeSeed = 0x70726f6265;  // "probe": one probe for every run

// splitmix64: spreads (seed, step) over the generator's seed space.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, n) (the modulo's bias is below 2^-40 for the n used here).
int below(std::mt19937_64& gen, int n) { return static_cast<int>(gen() % static_cast<std::uint64_t>(n)); }

// One sequence of T + 1 tokens into `tokens`, its roles (T) into `roles`. The segment of length
// n sits at a, its copy at c; roles mark the targets after each occurrence's first token.
void set_roles(std::uint8_t* roles, int T, int a, int c, int n) {
  std::fill_n(roles, T, kOther);
  for (int k = 1; k < n; ++k) {
    roles[a + k - 1] = kFirst;  // position a + k − 1 predicts token a + k
    roles[c + k - 1] = kRepeat;
  }
}

void induction_sequence(std::mt19937_64& gen, int V, int T, int n, std::int32_t* tokens, std::uint8_t* roles) {
  // T + 1 − n distinct ids: the first n are the segment, the rest fill in order (a partial
  // Fisher–Yates shuffle of [0, V)).
  const int distinct = T + 1 - n, filler = T + 1 - 2 * n;
  std::vector<std::int32_t> ids(static_cast<std::size_t>(V));
  for (int i = 0; i < V; ++i) ids[static_cast<std::size_t>(i)] = i;
  for (int i = 0; i < distinct; ++i)
    std::swap(ids[static_cast<std::size_t>(i)], ids[static_cast<std::size_t>(i + below(gen, V - i))]);
  // Two cuts u <= v of the filler: u before the segment, v − u between, the rest after.
  int u = below(gen, filler + 1), v = below(gen, filler + 1);
  if (u > v) std::swap(u, v);
  const int a = u, c = v + n;
  int next = n;
  for (int t = 0; t <= T; ++t) {
    if (t >= a && t < a + n)
      tokens[t] = ids[static_cast<std::size_t>(t - a)];
    else if (t >= c && t < c + n)
      tokens[t] = ids[static_cast<std::size_t>(t - c)];
    else
      tokens[t] = ids[static_cast<std::size_t>(next++)];
  }
  set_roles(roles, T, a, c, n);
}

// A random half (with replacement) and its copy, after one extra token when T + 1 is odd.
void copy_sequence(std::mt19937_64& gen, int V, int T, std::int32_t* tokens, std::uint8_t* roles) {
  const int n = (T + 1) / 2, a = T + 1 - 2 * n;
  for (int t = 0; t < a + n; ++t) tokens[t] = below(gen, V);
  for (int t = 0; t < n; ++t) tokens[a + n + t] = tokens[a + t];
  set_roles(roles, T, a, a + n, n);
}

void shape(Batch& out, int B, int T) {
  out.B = B;
  out.T = T;
  out.tokens.resize(static_cast<std::size_t>(B) * static_cast<std::size_t>(T + 1));
  out.roles.resize(static_cast<std::size_t>(B) * static_cast<std::size_t>(T));
}

// [SECTION] the user's text

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw TrainError("text: '" + path + "' is a folder, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TrainError("text: cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw TrainError("text: cannot read '" + path + "': " + std::strerror(errno));
  std::string s = ss.str();
  if (s.empty()) throw TrainError("text: '" + path + "' is empty");
  return s;
}

// Length of the UTF-8 character starting at s[i], or 0 when the bytes there are not one.
int utf8_length(const std::string& s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const int n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + static_cast<std::size_t>(n) > s.size()) return 0;
  for (int k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0xC0) != 0x80) return 0;
  if (n == 2 && b < 0xC2) return 0;  // overlong
  return n;
}

// A binary file is refused: a NUL byte, or bytes that are not UTF-8.
void check_text(const std::string& s, const std::string& path) {
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '\0')
      throw TrainError("text: '" + path + "' is not text (a NUL byte at offset " + std::to_string(i) + ")");
    const int n = utf8_length(s, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(s[i]));
      throw TrainError("text: '" + path + "' is not UTF-8 text (byte " + hex + " at offset " + std::to_string(i) + ")");
    }
    i += static_cast<std::size_t>(n);
  }
}

std::uint64_t fnv1a(const std::vector<std::int32_t>& ids) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::int32_t id : ids)
    for (int k = 0; k < 4; ++k) h = (h ^ ((static_cast<std::uint32_t>(id) >> (8 * k)) & 0xFF)) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::string_view task_name(TaskKind k) {
  return k == TaskKind::Induction ? "induction" : k == TaskKind::Copy ? "copy" : "text";
}

bool parse_task(std::string_view name, TaskKind& out) {
  for (TaskKind k : {TaskKind::Induction, TaskKind::Copy, TaskKind::Text})
    if (task_name(k) == name) {
      out = k;
      return true;
    }
  return false;
}

SegmentLengths induction_lengths(int context_length) {
  SegmentLengths s;
  const int longest = std::min(kMaxSegment, (context_length + 1) / 2);
  for (int n = kMinSegment; n <= longest; ++n)
    (std::find(std::begin(kHeldOut), std::end(kHeldOut), n) != std::end(kHeldOut) ? s.held_out : s.trained)
        .push_back(n);
  return s;
}

int induction_min_vocab(int context_length) { return context_length + 1 - kMinSegment; }

TaskData synthetic_task(TaskKind kind, int vocab_size, int context_length) {
  if (kind == TaskKind::Induction) {
    if (context_length < kInductionMinContext)
      throw TrainError("--context: " + std::to_string(context_length) +
                       " is too short for the induction task (at least " + std::to_string(kInductionMinContext) +
                       " tokens: segments of 4 to 16 tokens and their copy)");
    if (vocab_size < induction_min_vocab(context_length))
      throw TrainError("--vocab: " + std::to_string(vocab_size) + " is too small for the induction task at --context " +
                       std::to_string(context_length) + " (at least " +
                       std::to_string(induction_min_vocab(context_length)) + ": every token but the copy differs)");
  }
  TaskData d;
  d.kind = kind;
  d.vocab_size = vocab_size;
  return d;
}

TaskData text_task(const std::string& path, const std::string& tokenizer_folder, int context_length, int batch) {
  TaskData d;
  d.kind = TaskKind::Text;
  d.text_path = std::filesystem::absolute(path).string();
  const std::string s = read_text(path);
  check_text(s, path);
  if (tokenizer_folder.empty()) {
    // Ids number the distinct characters in byte order (= code point order in UTF-8).
    std::vector<std::string_view> characters;
    for (std::size_t i = 0; i < s.size(); i += characters.back().size())
      characters.push_back(std::string_view(s).substr(i, static_cast<std::size_t>(utf8_length(s, i))));
    std::map<std::string_view, std::int32_t> index;
    for (std::string_view ch : characters) index[ch] = 0;
    for (auto& [ch, id] : index) {
      id = static_cast<std::int32_t>(d.chars.size());
      d.chars.emplace_back(ch);
    }
    for (std::string_view ch : characters) d.text.push_back(index[ch]);
    if (d.chars.size() < 2)
      throw TrainError("text: '" + path + "' holds a single distinct character: nothing to predict");
    d.vocab_size = static_cast<int>(d.chars.size());
  } else {
    d.tokenizer_path = std::filesystem::absolute(tokenizer_folder).string();
    try {
      const Tokenizer tok = Tokenizer::from_folder(tokenizer_folder);
      const std::vector<int> ids = tok.encode(s);
      d.text.assign(ids.begin(), ids.end());
      d.vocab_size = tok.vocab_size();
    } catch (const LoadError& e) {
      throw TrainError(std::string("--tokenizer: ") + e.what());
    }
  }
  // B different windows of T + 1 tokens need T + B tokens.
  const std::int64_t need = static_cast<std::int64_t>(context_length) + batch;
  if (static_cast<std::int64_t>(d.text.size()) < need)
    throw TrainError("text: '" + path + "' holds " + std::to_string(d.text.size()) + " tokens (" +
                     (d.chars.empty() ? "GPT-2's" : "characters") + "), too few for one batch of " +
                     std::to_string(batch) + " different sequences of " + std::to_string(context_length + 1) +
                     " (needs " + std::to_string(need) + "; a smaller --batch or --context)");
  d.text_hash = fnv1a(d.text);
  return d;
}

void make_batch(const TaskData& data, std::uint64_t seed, std::int64_t step, int B, int T, Batch& out) {
  shape(out, B, T);
  std::mt19937_64 gen(mix(mix(seed) ^ static_cast<std::uint64_t>(step)));
  const SegmentLengths lengths = data.kind == TaskKind::Induction ? induction_lengths(T) : SegmentLengths{};
  for (int b = 0; b < B; ++b) {
    std::int32_t* tokens = out.tokens.data() + static_cast<std::int64_t>(b) * (T + 1);
    std::uint8_t* roles = out.roles.data() + static_cast<std::int64_t>(b) * T;
    switch (data.kind) {
      case TaskKind::Induction: {
        const int n = lengths.trained[static_cast<std::size_t>(below(gen, static_cast<int>(lengths.trained.size())))];
        induction_sequence(gen, data.vocab_size, T, n, tokens, roles);
        break;
      }
      case TaskKind::Copy: copy_sequence(gen, data.vocab_size, T, tokens, roles); break;
      case TaskKind::Text: {
        const int offset = below(gen, static_cast<int>(data.text.size()) - T);
        std::copy_n(data.text.begin() + offset, T + 1, tokens);
        std::fill_n(roles, T, kOther);
        break;
      }
    }
  }
}

Batch make_probe(const TaskData& data, int T) {
  Batch out;
  std::mt19937_64 gen(kProbeSeed);
  if (data.kind == TaskKind::Induction) {
    const std::vector<int> held = induction_lengths(T).held_out;
    shape(out, 8 * static_cast<int>(held.size()), T);
    for (int b = 0; b < out.B; ++b)
      induction_sequence(gen, data.vocab_size, T, held[static_cast<std::size_t>(b / 8)],
                         out.tokens.data() + static_cast<std::int64_t>(b) * (T + 1),
                         out.roles.data() + static_cast<std::int64_t>(b) * T);
    return out;
  }
  shape(out, 16, T);
  for (int b = 0; b < out.B; ++b)
    copy_sequence(gen, data.vocab_size, T, out.tokens.data() + static_cast<std::int64_t>(b) * (T + 1),
                  out.roles.data() + static_cast<std::int64_t>(b) * T);
  return out;
}

}  // namespace mhaviz::train
