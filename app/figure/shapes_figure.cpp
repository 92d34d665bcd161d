// The shapes strip (shapes_figure.hpp).
#include "figure/shapes_figure.hpp"

#include <cstdio>

#include "figure/builder.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {

using namespace detail;

std::string thousands(std::int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return v < 0 ? "-" + out : out;
}

ShapesStrip lesson_shapes(const Trace& t, std::int64_t parameters, double forward_ms, bool stale) {
  ShapesStrip s;
  const bool wrapper = t.config.variant == Variant::Wrapper;
  s.items.push_back({"x", shape_string(t.input.shape), "input (b, T, d_in)"});
  if (t.config.variant == Variant::FusedQkv) s.items.push_back({"qkv", shape_string(t.qkv.shape), "qkv_layer(x) (b, T, 3*d_out)"});
  const Variant v = t.config.variant;
  if (v == Variant::Gqa || v == Variant::Mla) {
    // Queries at every head; keys and values at G K/V heads (gqa) or up from one latent (mla).
    s.items.push_back({"Q", shape_string(t.queries.shape), "W_query(x) (b, T, d_out)"});
    if (v == Variant::Mla) s.items.push_back({"latent", shape_string(t.latent.shape), "W_DKV(x) (b, T, latent_dim)"});
    s.items.push_back({"K,V", shape_string(t.keys.shape),
                       v == Variant::Mla ? "W_UK(latent), W_UV(latent) (b, T, d_out)"
                                         : "W_key(x), W_value(x) at the K/V heads (b, T, G*hd)"});
    s.items.push_back({"q", shape_string(t.q.shape), "queries split into heads: view + transpose (b, h, T, hd)"});
    s.items.push_back({"k,v", shape_string(t.k.shape),
                       v == Variant::Mla ? "keys, values split into heads (b, h, T, hd)"
                                         : "keys, values split into the K/V heads (b, G, T, hd)"});
  } else {
    s.items.push_back({"Q,K,V", shape_string(t.queries.shape),
                       wrapper ? "each head's W(x), side by side (b, T, h*d_out)" : "W_query(x) etc. (b, T, d_out)"});
    s.items.push_back({"q,k,v", shape_string(t.q.shape), "split into heads: view + transpose (b, h, T, hd)"});
  }
  // gqa's k has fewer heads than q: both shapes.
  const auto q_and_k = [](const Tensor& q, const Tensor& k) {
    return q.shape == k.shape ? shape_string(q.shape) : shape_string(q.shape) + ", " + shape_string(k.shape);
  };
  if (t.config.qk_norm)
    s.items.push_back({"q,k normed", q_and_k(t.q_normed, t.k_normed), "RMSNorm over head_dim of each head's q and k"});
  if (t.config.rope_base != 0.0)
    s.items.push_back(
        {"q,k rotated", q_and_k(t.q_rotated, t.k_rotated), "RoPE: each pair (i, i + hd/2) turned by its position"});
  if (v == Variant::Gqa)
    s.items.push_back({"k,v expanded", shape_string(t.k_expanded.shape),
                       "repeat_interleave(h / G, dim=1): each K/V head for its group of query heads (b, h, T, hd)"});
  s.items.push_back({"scores", shape_string(t.scores.shape), "q @ k.transpose(2, 3) (b, h, T, T)"});
  s.items.push_back({"weights", shape_string(t.weights.shape), "softmax(masked scores / sqrt(hd)) (b, h, T, T)"});
  s.items.push_back({"context", shape_string(t.context.shape), "weights @ v (b, h, T, hd)"});
  s.items.push_back({"merged", shape_string(t.context_merged.shape), "transpose back + merge heads (b, T, h*hd)"});
  s.items.push_back({"output", shape_string(t.output.shape),
                     wrapper ? "torch.cat of the heads (b, T, h*d_out)" : "out_proj(merged) (b, T, d_out)"});
  s.first = "Parameters: " + thousands(parameters);
  char buf[64];
  s.notes.push_back("head_dim " + std::to_string(t.head_dim));
  s.notes.push_back("matmul calls " + thousands(t.cost.matmul_calls));
  s.notes.push_back("FLOPs " + thousands(t.cost.flops));
  std::snprintf(buf, sizeof buf, "forward %.2f ms", forward_ms);
  s.notes.push_back(buf);
  if (stale) s.notes.push_back("(shapes of the last valid input)");
  return s;
}

Figure shapes_figure(const ShapesStrip& s, const Options& o) {
  Builder B(o);
  const float size = o.type.title, line = std::ceil(size * 1.3f), x0 = 4.0f, right = o.canvas.width - 4.0f;
  const Color accent = o.dark ? Color{230, 120, 40, 255} : Color{200, 90, 0, 255};
  const std::string arrow = " \xE2\x86\x92 ";
  float x = x0, y = 4.0f + text_ascent(size);
  for (std::size_t i = 0; i < s.items.size(); ++i) {
    const auto& it = s.items[i];
    const float w = text_width(it.name + " ", size, true) + text_width(it.shape, size, true);
    if (i > 0) {
      const float aw = text_width(arrow, size, true);
      if (x + aw + w > right) {
        x = x0;
        y += line;
      } else {
        x += B.text(x, y, arrow, size, B.th.dim, 0, "arrow", false, true);
      }
    }
    const float start = x;
    x += B.text(x, y, it.name + " ", size, accent, 0, "shape-name", false, true);
    x += B.text(x, y, it.shape, size, B.th.text, 0, "shape", false, true);
    B.hit("shape_" + it.name, start, y - text_ascent(size), x, y + size * 0.3f);
  }
  y += line;
  x = x0;
  const float small = o.type.label, gap = small * 1.5f;
  x += B.text(x, y, s.first, size, B.th.text, 0, "note");
  B.hit("parameters", x0, y - text_ascent(size), x, y + size * 0.3f);
  for (const std::string& n : s.notes) {
    const float w = text_width(n, size);
    if (x + gap + w > right) {
      x = x0;
      y += line;
      x += B.text(x, y, n, size, B.th.dim, 0, "note");
    } else {
      x += gap + B.text(x + gap, y, n, size, B.th.dim, 0, "note");
    }
  }
  B.grow(0, y + size * 0.4f);
  Figure f = std::move(B.f);
  f.width = static_cast<int>(std::ceil(o.canvas.width));
  f.height = static_cast<int>(std::ceil(B.bottom + 4.0f));
  f.background = B.th.bg;
  return f;
}

}  // namespace mhaviz::figure
