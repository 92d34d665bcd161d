// The figure library's drawing kit, shared by its builders (lesson_figure.cpp, walk_*.cpp,
// figure.cpp's model view, heatmap.cpp): theme and sizes, the display-list Builder, the
// caption. Internal to app/figure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include "figure/figure.hpp"
#include "figure/text.hpp"
#include "mhaviz/layout.hpp"

namespace mhaviz::figure::detail {

namespace lay = mhaviz::layout;

// [SECTION] Theme and sizes (logical pixels; text sizes are the Options' Typography)
constexpr float kMargin = 16.0f;

// bg: the dark one is the app's window background, so the screen and a dark capture match.
// accent: the selected head; top: a detector's top five; warn: notes that a stage changes nothing.
struct Theme {
  Color bg, text, dim, masked_a, masked_b, frame, accent, top, warn;
  Color window_a, window_b;  // cells outside a sliding window: the hatch in blue-greys
};

inline Theme theme(const Options& o) {
  Theme t;
  if (o.dark) {
    t = {{23, 23, 26, 255},   {235, 235, 235, 255}, {160, 160, 165, 255}, {41, 41, 41, 255}, {77, 77, 77, 255},
         {110, 110, 115, 255}, {86, 180, 233, 255},  {230, 85, 13, 255},   {255, 191, 77, 255},
         {30, 44, 74, 255},    {68, 92, 142, 255}};
  } else {
    t = {{255, 255, 255, 255}, {20, 20, 20, 255},  {100, 100, 105, 255}, {199, 199, 199, 255}, {235, 235, 235, 255},
         {120, 120, 120, 255}, {0, 114, 178, 255}, {230, 85, 13, 255},   {166, 90, 0, 255},
         {158, 180, 226, 255}, {208, 220, 246, 255}};
  }
  if (o.transparent) t.bg.a = 0;
  return t;
}

inline float luminance(Color c) {
  return (0.2126f * static_cast<float>(c.r) + 0.7152f * static_cast<float>(c.g) + 0.0722f * static_cast<float>(c.b)) /
         255.0f;
}
inline Color on(Color fill) { return luminance(fill) > 0.5f ? Color{0, 0, 0, 255} : Color{255, 255, 255, 255}; }

// One hue per head, as the walkthrough colours them (walk_values.hpp).
inline Color to_color(Rgb c) {
  const auto b = [](float x) { return static_cast<std::uint8_t>(std::lround(std::clamp(x, 0.0f, 1.0f) * 255.0f)); };
  return {b(c.r), b(c.g), b(c.b), 255};
}
inline Rgb to_rgb(Color c) { return {c.r / 255.0f, c.g / 255.0f, c.b / 255.0f}; }
inline Color head_color(int h) { return to_color(head_rgb(h)); }

// [SECTION] Display list helpers
struct Builder {
  Figure f;
  Theme th;
  Typography ty;
  float right = 0, bottom = 0;  // extent of what was placed

  explicit Builder(const Options& o) : th(theme(o)), ty(o.type) {}

  void grow(float x, float y) {
    right = std::max(right, x);
    bottom = std::max(bottom, y);
  }
  void rect(float x0, float y0, float x1, float y1, Color c, std::string cls = {}, std::string title = {}) {
    Prim p;
    p.kind = Prim::Kind::Rect;
    p.x0 = x0, p.y0 = y0, p.x1 = x1, p.y1 = y1, p.color = c, p.cls = std::move(cls), p.text = std::move(title);
    f.prims.push_back(std::move(p));
    grow(x1, y1);
  }
  // window: the hatch of cells outside a sliding window, else of masked cells.
  void hatch(float x0, float y0, float x1, float y1, std::string cls, std::string title = {}, bool window = false) {
    Prim p;
    p.kind = Prim::Kind::Hatch;
    p.x0 = x0, p.y0 = y0, p.x1 = x1, p.y1 = y1;
    p.color = window ? th.window_a : th.masked_a, p.color2 = window ? th.window_b : th.masked_b;
    p.cls = std::move(cls), p.text = std::move(title);
    f.prims.push_back(std::move(p));
    grow(x1, y1);
  }
  void line(float x0, float y0, float x1, float y1, Color c, float w, std::string cls = {}) {
    Prim p;
    p.kind = Prim::Kind::Line;
    p.x0 = x0, p.y0 = y0, p.x1 = x1, p.y1 = y1, p.color = c, p.size = w, p.cls = std::move(cls);
    f.prims.push_back(std::move(p));
  }
  // The outline of a rectangle, `w` wide, centred on its edges.
  void frame(float x0, float y0, float x1, float y1, Color c, float w, std::string cls = "frame") {
    Prim p;
    p.kind = Prim::Kind::Frame;
    p.x0 = x0, p.y0 = y0, p.x1 = x1, p.y1 = y1, p.color = c, p.size = w, p.cls = std::move(cls);
    f.prims.push_back(std::move(p));
    grow(x1 + w * 0.5f, y1 + w * 0.5f);
  }
  void hit(std::string id, float x0, float y0, float x1, float y1) { f.hits.push_back({std::move(id), x0, y0, x1, y1}); }
  // Text with its baseline start at (x, y); align 0 left, 1 centre, 2 right.
  float text(float x, float y, const std::string& s, float size, Color c, int align = 0, std::string cls = "label",
             bool vertical = false, bool mono = false) {
    if (s.empty()) return 0;
    Prim p;
    p.kind = Prim::Kind::Text;
    p.x0 = x, p.y0 = y, p.size = size, p.color = c, p.align = align, p.vertical = vertical, p.mono = mono;
    p.text = s, p.cls = std::move(cls);
    const float w = text_width(s, size, mono);
    if (!vertical) grow(align == 0 ? x + w : align == 1 ? x + w * 0.5f : x, y + size * 0.3f);
    f.prims.push_back(std::move(p));
    return w;
  }
};

inline float line_h(float size) { return std::ceil(size * 1.35f); }

inline std::string variant_title(Variant v) {
  switch (v) {
    case Variant::Wrapper: return "MultiHeadAttentionWrapper";
    case Variant::WeightSplit: return "MultiHeadAttention (weight split)";
    case Variant::FusedQkv: return "MultiHeadAttention (fused qkv_layer)";
    case Variant::Gqa: return "GroupedQueryAttention";
    case Variant::Mla: return "MultiHeadLatentAttention";
  }
  return "";
}

inline std::string stage_tensor(Stage s) {
  switch (s) {
    case Stage::Scores: return "attn_scores";
    case Stage::Masked: return "attn_scores_masked";
    case Stage::Scaled: return "attn_scores_scaled";
    case Stage::Weights: return "attn_weights";
    case Stage::Dropped: return "attn_weights_dropped";
  }
  return "";
}

inline std::string model_line(const Trace& tr) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s \xC2\xB7 d_in %d, d_out %d, %d heads of head_dim %d \xC2\xB7 seed %llu",
                variant_title(tr.config.variant).c_str(), tr.d_in, tr.config.d_out, tr.heads, tr.head_dim,
                static_cast<unsigned long long>(tr.config.seed));
  std::string s = buf;
  if (tr.config.dropout > 0.0) {
    std::snprintf(buf, sizeof buf, " \xC2\xB7 dropout %.2f (%s)", tr.config.dropout,
                  tr.config.training ? "training" : "eval");
    s += buf;
  }
  if (!tr.config.causal) s += " \xC2\xB7 no causal mask";
  // The bonus variants' fields, so a slide says which module drew it.
  const ModelConfig& c = tr.config;
  if (c.variant == Variant::Gqa) s += " \xC2\xB7 " + std::to_string(c.num_kv_groups) + " K/V heads";
  if (c.variant == Variant::Mla) s += " \xC2\xB7 latent_dim " + std::to_string(c.latent_dim);
  if (c.sliding_window > 0) s += " \xC2\xB7 sliding window " + std::to_string(c.sliding_window);
  if (c.qk_norm) s += " \xC2\xB7 QK-norm";
  if (c.rope_base != 0.0) {
    std::snprintf(buf, sizeof buf, " \xC2\xB7 RoPE base %g%s", c.rope_base,
                  c.rope_inv_freq.empty() ? "" : " (the model's scaled frequencies)");
    s += buf;
  }
  // A trained model's layer (hf_layer.hpp): its score scale and out_proj's width.
  if (c.query_pre_attn_scalar > 0.0) {
    std::snprintf(buf, sizeof buf, " \xC2\xB7 scores \xC2\xB7 %g^-0.5", c.query_pre_attn_scalar);
    s += buf;
  }
  if (c.out_dim > 0) s += " \xC2\xB7 out_proj to " + std::to_string(c.out_dim);
  return s;
}

// Wrapped text from (x, y) (the first baseline); returns the last baseline.
inline float paragraph(Builder& B, float x, float y, float max_w, const std::string& s, float size, Color c,
                       const char* cls) {
  const std::vector<std::string> lines = wrap(s, size, max_w);
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (k > 0) y += line_h(size);
    B.text(x, y, lines[k], size, c, 0, cls);
  }
  return y;
}

// Caption lines at the bottom; returns the new bottom.
inline void caption(Builder& B, const Options& o, const std::vector<std::string>& lines) {
  if (!o.caption) return;
  float y = B.bottom + 14.0f;
  B.f.caption_y0 = y;
  for (const auto& l : lines) {
    y += line_h(B.ty.small);
    B.text(kMargin, y - 4.0f, l, B.ty.small, B.th.dim, 0, "caption");
  }
  B.f.caption_y1 = y + 2.0f;
  B.grow(0, y);
}

// The figure's size: what was placed plus the margin (never more than needed: a capture
// holds the picture, not the empty part of the canvas).
inline Figure finish(Builder& B) {
  B.f.width = static_cast<int>(std::ceil(B.right + kMargin));
  B.f.height = static_cast<int>(std::ceil(B.bottom + kMargin));
  B.f.background = B.th.bg;
  B.f.masked_a = B.th.masked_a;
  B.f.masked_b = B.th.masked_b;
  B.f.window_a = B.th.window_a;
  B.f.window_b = B.th.window_b;
  return std::move(B.f);
}

// The lesson's grid of heads or one head (lesson_figure.cpp).
Figure lesson_figure(const Trace& tr, const std::vector<std::string>& tokens, const Options& o);

}  // namespace mhaviz::figure::detail
