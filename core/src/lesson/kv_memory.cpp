// The KV cache's size (kv_memory.hpp), as the book's memory_estimator_*.py count it.
#include "mhaviz/kv_memory.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace mhaviz {

std::int64_t kv_bytes_per_layer(std::int64_t batch, std::int64_t context, int head_dim, int kv_heads, int dtype_bytes) {
  return batch * context * head_dim * kv_heads * 2 * dtype_bytes;
}

LayerSplit split_layers(int layers, int sliding_every) {
  if (sliding_every <= 0) return {layers, 0};
  const int a = sliding_every - 1, block = sliding_every, blocks = layers / block, rem = layers % block;
  return {blocks * a + std::min(a, rem), blocks + std::max(0, rem - a)};
}

namespace {

std::string heads_text(int kv_heads, int head_dim) {
  return std::to_string(kv_heads) + (kv_heads == 1 ? " K/V head of " : " K/V heads of ") + std::to_string(head_dim);
}

}  // namespace

std::vector<KvRow> kv_memory_table(const KvModel& m) {
  const auto full = [&](int kv) { return kv_bytes_per_layer(m.batch, m.context, m.head_dim, kv, m.dtype_bytes); };
  std::vector<KvRow> rows;
  rows.push_back({"MHA", heads_text(m.heads, m.head_dim), full(m.heads) * m.layers});
  const bool gqa = m.kv_heads != m.heads;
  if (gqa) rows.push_back({"GQA", heads_text(m.kv_heads, m.head_dim), full(m.kv_heads) * m.layers});
  if (m.latent_dim > 0)
    rows.push_back({"MLA", "latent " + std::to_string(m.latent_dim),
                    m.batch * m.context * m.layers * static_cast<std::int64_t>(m.latent_dim) * m.dtype_bytes});
  if (m.window > 0) {
    // A sliding layer keeps at most W tokens: the window's rolling buffer.
    const std::int64_t w = std::min<std::int64_t>(m.context, m.window);
    const LayerSplit split = split_layers(m.layers, m.sliding_every);
    const std::string detail = "window " + std::to_string(m.window) + " on " + std::to_string(split.sliding) + " of " +
                               std::to_string(m.layers) + " layers";
    auto windowed = [&](int kv) {
      return split.sliding * kv_bytes_per_layer(m.batch, w, m.head_dim, kv, m.dtype_bytes) + split.full * full(kv);
    };
    rows.push_back({"MHA + SWA", detail, windowed(m.heads)});
    if (gqa) rows.push_back({"GQA + SWA", detail, windowed(m.kv_heads)});
  }
  return rows;
}

const std::vector<KvModel>& kv_presets() {
  // name, emb_dim, heads, kv_heads, head_dim, layers, latent_dim, window, sliding_every, context
  static const std::vector<KvModel> presets = {
      {"gpt2-small", 768, 12, 12, 64, 12, 0, 0, 0, 1024},
      {"gpt2-xl", 1600, 25, 25, 64, 48, 0, 0, 0, 1024},
      {"llama3.2-1b", 2048, 32, 8, 64, 16, 0, 0, 0, 131072},
      {"qwen3-0.6b", 1024, 16, 8, 128, 28, 0, 0, 0, 40960},
      // One K/V head; a 512-token window on five of every six layers.
      {"gemma3-270m", 640, 4, 1, 256, 18, 0, 512, 6, 32768},
      // MLA: a 512-value latent and 64 values of the decoupled RoPE key per token and layer.
      {"deepseek-v3", 7168, 128, 128, 128, 61, 512 + 64, 0, 0, 163840},
  };
  return presets;
}

int kv_dtype_bytes(std::string_view dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  return dtype == "fp32" ? 4 : 0;
}

KvModel kv_model_of(const Session& s) {
  const ModelConfig& c = s.model;
  KvModel m;
  m.name = "session";
  m.emb_dim = s.d_in();
  m.heads = c.num_heads;
  m.kv_heads = kv_heads(c);
  m.head_dim = head_dim(c);
  m.layers = 1;
  m.latent_dim = c.variant == Variant::Mla ? c.latent_dim : 0;
  m.window = c.sliding_window;
  m.context = c.context_length;
  m.batch = s.batch;
  return m;
}

void validate_kv_model(const KvModel& m) {
  auto range = [](const char* option, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      throw SessionError(std::string(option) + ": " + std::to_string(v) + " is out of range [" + std::to_string(lo) +
                         ", " + std::to_string(hi) + "]");
  };
  range("--emb-dim", m.emb_dim, 1, 1 << 20);
  range("--heads", m.heads, 1, 1 << 16);
  range("--kv-heads", m.kv_heads, 1, m.heads);
  if (m.heads % m.kv_heads != 0)
    throw SessionError("--kv-heads: " + std::to_string(m.kv_heads) + " does not divide --heads = " +
                       std::to_string(m.heads) + " (each K/V head serves an equal group of query heads)");
  range("--head-dim", m.head_dim, 1, 1 << 16);
  range("--layers", m.layers, 1, 1 << 16);
  range("--latent-dim", m.latent_dim, 0, 1 << 20);
  range("--window", m.window, 0, std::int64_t{1} << 40);
  range("--sliding-every", m.sliding_every, 0, 1 << 16);
  if (m.sliding_every > 0 && m.window == 0)
    throw SessionError("--sliding-every: " + std::to_string(m.sliding_every) + " needs --window");
  range("--context", m.context, 1, std::int64_t{1} << 40);
  range("--batch", m.batch, 1, 1 << 20);
  // Every row's bytes must fit in 64 bits; MHA's is the largest but for a latent wider than 2·H·hd.
  const double mha = static_cast<double>(m.batch) * static_cast<double>(m.context) * m.head_dim * m.heads * 2 *
                     m.dtype_bytes * m.layers;
  const double mla =
      static_cast<double>(m.batch) * static_cast<double>(m.context) * m.layers * m.latent_dim * m.dtype_bytes;
  if (std::max(mha, mla) > 9e18)
    throw SessionError("--context: " + std::to_string(m.context) +
                       " tokens make a cache of over 9e18 bytes (reduce --context, --batch or --layers)");
}

std::string kv_memory_text(const KvModel& m) {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line,
                "KV cache of %s: emb_dim %d, %d heads of %d, %d K/V head%s, %d layers, context %lld, batch %d, %s (%d "
                "bytes per value)\n",
                m.name.c_str(), m.emb_dim, m.heads, m.head_dim, m.kv_heads, m.kv_heads == 1 ? "" : "s", m.layers,
                static_cast<long long>(m.context), m.batch, m.dtype.c_str(), m.dtype_bytes);
  out += line;
  const std::vector<KvRow> rows = kv_memory_table(m);
  std::snprintf(line, sizeof line, "%-10s  %-36s  %20s  %12s  %9s\n", "variant", "cache", "bytes", "GB", "MHA / it");
  out += line;
  const double mha = static_cast<double>(rows.front().bytes);
  std::string keys;
  for (const KvRow& r : rows) {
    const double gb = static_cast<double>(r.bytes) / 1e9;
    std::snprintf(line, sizeof line, "%-10s  %-36s  %20lld  %9.2f GB  %8.2fx\n", r.variant.c_str(), r.detail.c_str(),
                  static_cast<long long>(r.bytes), gb, mha / static_cast<double>(r.bytes));
    out += line;
    std::string key = r.variant;
    key.erase(std::remove(key.begin(), key.end(), ' '), key.end());
    std::replace(key.begin(), key.end(), '+', '_');
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    keys += (keys.empty() ? "" : " ") + key + "_bytes=" + std::to_string(r.bytes);
  }
  return out + keys + "\n";
}

}  // namespace mhaviz
