// A whole walkthrough picture: the step's header (title, PyTorch line, shapes), its scene at
// the plan's cell size (or the move between two scenes), the chain strip, the legend and,
// for captures, the caption. The plan of every step's size is built here too.
#include <cstdio>

#include "figure/text.hpp"
#include "figure/walk_frame.hpp"

namespace mhaviz::figure {

namespace lay = mhaviz::layout;
using namespace walk;

std::vector<lay::Step> walk_steps(const WalkInput& in) {
  const Trace& tr = *in.trace;
  return lay::steps_for(lay::dims_for(tr.config, 1, tr.tokens, tr.d_in), in.mistaken);
}

std::int64_t walk_selected_in(const WalkInput& in, int k) {
  const std::vector<lay::Step> steps = walk_steps(in);
  const int st = in.selected_step;
  if (st < 0 || st >= static_cast<int>(steps.size()) || in.selected_flat < 0 || k < 0 ||
      k >= static_cast<int>(steps.size()))
    return -1;
  const lay::Dims dims = StepSource{in.trace, 0, in.mistaken, in.mistake}.dims();
  const lay::Layout l = lay::step_layout(steps[static_cast<std::size_t>(st)], dims);
  if (in.selected_flat >= l.numel()) return -1;
  return lay::follow(steps, dims, in.mistaken && in.trace->config.variant != Variant::Wrapper, st,
                     in.selected_flat)[static_cast<std::size_t>(k)];
}

namespace {

// [SECTION] Regions of the picture: header (with the legend), scene, chain strip
// The header starts nearer the top than other figures: on screen the panel's padding is above it
// (and every pixel of height is a bigger cell at 1280 x 800).
constexpr float kTop = 4.0f;

std::string shape_text(const Frame& f, lay::Step st) {
  const Trace& tr = f.tr;
  const Variant v = tr.config.variant;
  Shape sh = lay::step_layout(st, f.dims).shape();
  sh[0] = tr.batch;
  const std::string shape = v == Variant::Wrapper && (st == lay::Step::Project || st == lay::Step::Context)
                                ? std::to_string(tr.heads) + " x (" + std::to_string(tr.batch) + ", " +
                                      std::to_string(tr.tokens) + ", " + std::to_string(tr.head_dim) + ")"
                                : shape_string(sh);
  return std::string(lay::step_shape(st, f.dims)) + " = " + shape;
}

// What most steps say beside the PyTorch line: the heads and their size.
std::string generic_extra(const Frame& f) {
  return "num_heads = " + std::to_string(f.tr.heads) + ", head_dim = " + std::to_string(f.tr.head_dim);
}

std::string extra_text(const Frame& f, lay::Step st) {
  const Trace& tr = f.tr;
  const Variant v = tr.config.variant;
  if (v == Variant::Wrapper && st == lay::Step::Project)
    return std::to_string(tr.heads) + " modules, each its own W_query, W_key, W_value (" + std::to_string(tr.head_dim) +
           " x " + std::to_string(tr.d_in) + ")";
  if (v == Variant::FusedQkv && st == lay::Step::Project) return "per head a [q | k | v] chunk of 3 * head_dim columns";
  if (st == lay::Step::Softmax && tr.config.query_pre_attn_scalar > 0)
    return "query_pre_attn_scalar^−0.5 = " + format_number(static_cast<float>(tr.config.query_pre_attn_scalar), 4) +
           "^−0.5 = " + format_number(tr.scale(), 4) + " (head_dim " + std::to_string(tr.head_dim) + ")";
  if (st == lay::Step::Softmax)
    return "1/√head_dim = 1/√" + std::to_string(tr.head_dim) + " = " + format_number(tr.scale(), 4);
  if (st == lay::Step::QkNorm) {
    char eps[32];
    std::snprintf(eps, sizeof eps, "%g", tr.config.qk_norm_eps);
    return "RMSNorm(head_dim = " + std::to_string(tr.head_dim) + ", eps = " + eps + ")" +
           (f.in.model && f.in.model->config.weights ? ", its trained scale" : ", scale from 1s");
  }
  if (st == lay::Step::Rope) {
    char base[32];
    std::snprintf(base, sizeof base, "%g", tr.config.rope_base);
    if (!tr.config.rope_inv_freq.empty())
      return "θ = " + std::string(base) +
             ", the model's scaled frequencies: pair (i, i + head_dim/2) turns by pos · inv_freq[i]";
    return "θ = " + std::string(base) + ": pair (i, i + head_dim/2) turns by pos · θ^(−2i/head_dim)";
  }
  if (st == lay::Step::Mask && f.dims.window > 0)
    return "sliding window W = " + std::to_string(f.dims.window) + ": key j visible to query i iff 0 ≤ i − j < " +
           std::to_string(f.dims.window);
  if (v == Variant::Gqa)
    return "num_kv_groups = " + std::to_string(tr.kv_heads) +
           " K/V heads, group_size = " + std::to_string(f.dims.group()) + " query heads per K/V head";
  return generic_extra(f);
}

// The legend's items: signed scores' diverging swatches, else one hue per head; the mask's hatch.
struct LegendItem {
  enum class Kind { Text, Swatch, Hatch, WindowHatch } kind = Kind::Text;
  Color color;
  std::string text;
  const char* cls = "legend-text";
};

// gqa: one swatch per K/V head, naming the query heads that read it ("kv 0: heads 0, 1, 2").
void kv_legend(const Frame& f, lay::Step st, std::vector<LegendItem>& out) {
  const int G = f.dims.kv();
  for (int g = 0; g < std::min(G, 10); ++g) {
    std::string heads;
    for (int h = 0; h < f.tr.heads; ++h)
      if (kv_read(f.src, st, h) == g) heads += (heads.empty() ? "" : ", ") + std::to_string(h);
    out.push_back({LegendItem::Kind::Swatch, detail::head_color(g), "kv " + std::to_string(g) + ": heads " + heads,
                   "legend-head"});
  }
  if (G > 10) out.push_back({LegendItem::Kind::Text, {}, "(colours repeat every 10 K/V heads)"});
}

std::vector<LegendItem> legend_items(const Frame& f, lay::Step st, float vmax) {
  std::vector<LegendItem> out;
  if (step_tint(st) == Tint::Diverging) {
    out.push_back({LegendItem::Kind::Text, {}, "score colour:"});
    for (const Swatch& sw : diverging_legend(vmax))
      out.push_back({LegendItem::Kind::Swatch, detail::to_color(sw.color), sw.text, "legend-diverging"});
  } else if (f.dims.variant == Variant::Gqa) {
    kv_legend(f, st, out);
  } else {
    for (int h = 0; h < std::min(f.tr.heads, 10); ++h)
      out.push_back({LegendItem::Kind::Swatch, detail::head_color(h), "head " + std::to_string(h), "legend-head"});
    if (f.tr.heads > 10) out.push_back({LegendItem::Kind::Text, {}, "(colours repeat every 10 heads)"});
  }
  if (st == lay::Step::Mask) {
    out.push_back({LegendItem::Kind::Hatch, {}, "masked: -inf (key after the query)", "legend-masked"});
    if (f.dims.window > 0)
      out.push_back({LegendItem::Kind::WindowHatch,
                     {},
                     "outside the window: -inf (i − j ≥ W = " + std::to_string(f.dims.window) + ")",
                     "legend-window"});
  }
  return out;
}

// The header's text size: the typography's, whatever size a step's scene is drawn at (a scene
// too wide for its canvas at the cells' least size takes smaller text: plan_steps).
float hs(const Frame& f) { return f.o.type.label; }
float head_w(const Frame& f, const std::string& s) { return text_width(s, hs(f)); }

// Items [a, b) of a legend (all of it by default).
float legend_width(const Frame& f, const std::vector<LegendItem>& items, std::size_t a = 0,
                   std::size_t b = std::size_t(-1)) {
  float w = 0;
  for (std::size_t i = a; i < std::min(b, items.size()); ++i)
    w += (items[i].kind == LegendItem::Kind::Text ? 0.0f : hs(f) + 6.0f) + head_w(f, items[i].text) + 12.0f;
  return w;
}

// Where the header's pieces go: line 1 the title (and the shapes when they fit), line 2 the
// PyTorch line (and what the step computes, and the legend, when they fit), then a third
// line for what did not fit, and more where that does not fit the canvas either (a large font).
// A legend that does not fit line 2 goes on as pieces of its own, breaking between items (a
// text item stays with the one after it): on a 595-px canvas the mask step's "masked: -inf
// (key after the query)" ran 40 px past the canvas after the score colours.
struct Header {
  struct Piece {
    std::string text;
    std::size_t a = 0, b = 0;  // legend items [a, b) when b > a
    bool brk = false;          // starts a line of its own
  };
  std::string title, shape, code, extra;
  std::vector<std::string> titles;  // the title's lines: more than one where it is wider than the canvas
  std::vector<LegendItem> legend;
  bool shape_1 = true, extra_2 = true, legend_2 = true;
  std::vector<Piece> later;  // after line 2
  int lines = 2;             // of the small text's height, the title's first line counted as one
};

// From one line of the title to the next.
float title_step(const Frame& f) { return std::ceil(f.o.type.title * 1.3f); }

// compact: without the shape line (the result's pane title gives its shape) and the heads'
// generic line, for a canvas the full header would leave too little of (compact_header).
Header header_of(const Frame& f, lay::Step st, float vmax, bool compact) {
  Header h;
  h.title = "Step " +
            std::to_string(static_cast<int>(std::find(f.steps.begin(), f.steps.end(), st) - f.steps.begin()) + 1) +
            " of " + std::to_string(step_count(f)) + ":  " + lay::step_title(st, f.dims);
  h.shape = shape_text(f, st);
  h.code = lay::step_code(st, f.dims, f.tr.batch);
  if (st == lay::Step::Expand && f.src.repeat_wrong())
    h.code =
        "keys = keys.repeat(1, self.group_size, 1, 1)   # the mistake: query head i gets K/V head i mod num_kv_groups";
  h.extra = extra_text(f, st);
  if (compact) {
    h.shape.clear();
    if (h.extra == generic_extra(f)) h.extra.clear();
  }
  h.legend = legend_items(f, st, vmax);
  const float W = f.o.canvas.width - 2.0f * detail::kMargin, gap = hs(f) * 2.0f;
  // A title wider than the canvas breaks between words (the bonus variants' long titles at 24 px
  // on 700 px: "Step 7 of 15:  Expand K, V to the query heads: each K/V head serves 3 query
  // heads" ran 200 px past the edge).
  h.titles = word_lines(h.title, W, [&f](const std::string& t) { return text_width(t, f.o.type.title); });
  if (h.titles.empty()) h.titles.push_back(h.title);
  h.shape_1 = h.titles.size() == 1 && text_width(h.title, f.o.type.title) + gap + head_w(f, h.shape) <= W;
  float x2 = text_width(h.code, hs(f), true);
  h.extra_2 = x2 + gap + head_w(f, h.extra) <= W;
  if (h.extra_2) x2 += gap + head_w(f, h.extra);
  h.legend_2 = x2 + gap + legend_width(f, h.legend) <= W;
  // The PyTorch line cut with an ellipsis only where the canvas is narrower than it.
  if (text_width(h.code, hs(f), true) > W) h.code = fit_text(h.code, hs(f), W, true);
  if (!h.shape_1 && !h.shape.empty()) h.later.push_back({h.shape});
  if (!h.extra_2 && !h.extra.empty()) h.later.push_back({h.extra});
  // The legend's runs: its text and swatches (the score scale, the heads' colours) and each
  // hatch; a run wider than the canvas breaks between its items.
  for (std::size_t a = 0; !h.legend_2 && a < h.legend.size();) {
    const auto hatch = [&h](std::size_t i) {
      return h.legend[i].kind == LegendItem::Kind::Hatch || h.legend[i].kind == LegendItem::Kind::WindowHatch;
    };
    std::size_t b = a + 1;
    if (!hatch(a))
      while (b < h.legend.size() && !hatch(b)) ++b;
    if (legend_width(f, h.legend, a, b) <= W) {
      h.later.push_back({{}, a, b});
    } else {
      for (std::size_t i = a; i < b; ++i) {
        const std::size_t e = h.legend[i].kind == LegendItem::Kind::Text && i + 1 < b ? i + 2 : i + 1;
        h.later.push_back({{}, i, e});
        i = e - 1;
      }
    }
    a = b;
  }
  float x = 0;
  for (Header::Piece& p : h.later) {
    const float w = p.b > p.a ? legend_width(f, h.legend, p.a, p.b) : head_w(f, p.text);
    // Legend items follow each other at their own spacing, other pieces a gap apart.
    const bool item = p.b > p.a && &p != &h.later.front() && (&p - 1)->b > (&p - 1)->a;
    if (item) x -= gap;
    p.brk = x == 0 || x + w > W;
    if (p.brk) ++h.lines, x = 0;
    x += w + gap;
  }
  return h;
}

float line_height(const Frame& f) { return std::ceil(hs(f) * 1.5f); }

// The height a header takes: its lines of small text and its title's extra lines.
float header_px(const Frame& f, const Header& h) {
  return std::ceil(kTop + text_ascent(f.o.type.title) + static_cast<float>(h.lines - 1) * line_height(f) + 8.0f) +
         static_cast<float>(h.titles.size() - 1) * title_step(f);
}

// The header without its shape and generic lines where the full one would take more than 45%
// of the canvas's height: with a 24-pixel font on 1280 × 800 the mask step's six lines took 150
// of the walkthrough's 288 px and left its grids 9-px cells. The legend's widest texts stand in
// for the values, as in header_height, so that planning and drawing decide alike.
bool compact_header(const Frame& f, lay::Step st) {
  return header_px(f, header_of(f, st, -88.88f, false)) > 0.45f * f.o.canvas.height;
}

// The legend's widest texts stand in for the values (the scale of a step is known only once
// its cells are drawn): planning never gives the header less room than drawing takes.
float header_height(const Frame& f, lay::Step st) {
  return header_px(f, header_of(f, st, -88.88f, compact_header(f, st)));
}

float strip_width(const Options& o) {
  return std::floor(std::clamp(o.canvas.width * 0.22f, o.type.label * 11.0f, o.type.label * 19.0f));
}

// The canvas a step's scene gets: the picture's, less the header and (when the step
// rearranges elements) the chain strip.
Canvas scene_canvas(const Frame& f, int k) {
  const float strip = f.strip_fit && chain_of(f, k).size() >= 2 ? strip_width(f.o) + 12.0f : 0.0f;
  const lay::Step st = f.steps[static_cast<std::size_t>(k)];
  return {std::max(80.0f, f.o.canvas.width - 2.0f * detail::kMargin - strip),
          std::max(80.0f, f.o.canvas.height - header_height(f, st) - 4.0f)};
}

// Items [a, b) of a legend from x on; returns the x after them.
float draw_legend(Frame& f, const std::vector<LegendItem>& items, float x, float baseline, std::size_t a = 0,
                  std::size_t b = std::size_t(-1)) {
  Builder& B = *f.B;
  const float sz = hs(f), top = baseline - text_ascent(sz);
  for (std::size_t i = a; i < std::min(b, items.size()); ++i) {
    const LegendItem& it = items[i];
    if (it.kind == LegendItem::Kind::Swatch) {
      B.rect(x, top, x + sz, top + sz, it.color, it.cls);
      x += sz + 6.0f;
      if (std::string(it.cls) == "legend-diverging") ++f.legend_swatches;
    } else if (it.kind == LegendItem::Kind::Hatch || it.kind == LegendItem::Kind::WindowHatch) {
      B.hatch(x, top, x + sz, top + sz, it.cls, {}, it.kind == LegendItem::Kind::WindowHatch);
      x += sz + 6.0f;
    }
    x += B.text(x, baseline, it.text, sz, it.kind == LegendItem::Kind::Text ? B.th.dim : B.th.text, 0, "legend-text") +
         12.0f;
  }
  return x;
}

void header(Frame& f, int shown, float vmax) {
  Builder& B = *f.B;
  const lay::Step st = f.steps[static_cast<std::size_t>(shown)];
  const Header h = header_of(f, st, vmax, compact_header(f, st));
  const float gap = hs(f) * 2.0f, x0 = detail::kMargin;
  float y = kTop + text_ascent(f.o.type.title), x = x0;
  for (std::size_t k = 0; k < h.titles.size(); ++k) {
    if (k > 0) y += title_step(f);
    x = x0 + B.text(x0, y, h.titles[k], f.o.type.title, B.th.text, 0, "title");
  }
  if (h.shape_1 && !h.shape.empty()) B.text(x + gap, y, h.shape, hs(f), B.th.dim, 0, "shape");
  y += line_height(f);
  const Color code = f.o.dark ? Color{140, 204, 255, 255} : Color{13, 77, 153, 255};
  x = x0 + B.text(x0, y, h.code, hs(f), code, 0, "code", false, true);
  if (h.extra_2 && !h.extra.empty()) x += gap + B.text(x + gap, y, h.extra, hs(f), B.th.dim, 0, "shape");
  if (h.legend_2) draw_legend(f, h.legend, x + gap, y);
  bool after_item = false;  // x is just past legend items (which end with their own spacing)
  for (const Header::Piece& p : h.later) {
    const bool item = p.b > p.a;
    if (p.brk)
      y += line_height(f), x = x0;
    else if (!(item && after_item))
      x += gap;
    x = item ? draw_legend(f, h.legend, x, y, p.a, p.b) : x + B.text(x, y, p.text, hs(f), B.th.dim, 0, "shape");
    after_item = item;
  }
}

// The step shown still: every grid with its numbers, the operators, the mistake's outlines
// and the followed element with its operands.
void draw_still(Frame& f, Scene& sc, lay::Step st, int k) {
  for (std::size_t i = 0; i < sc.grids.size(); ++i) {
    draw_grid(f, sc.grids[i], 1.0f, static_cast<int>(i) == sc.result, true);
    draw_operator(f, sc.grids[i], 1.0f);
  }
  highlight_operands(f, sc, st, walk_selected_in(f.in, k));
}

// The move from step k to k + 1 at fraction u: a new tensor cross-fades; elements that move
// travel, with the operands leaving first and the new ones coming after.
void draw_move(Frame& f, const WalkPlan& plan, Scene& cur, int k, float u, float top) {
  Frame fb(f.in, f.o);
  fb.B = f.B;
  use_step(fb, plan, k + 1);
  Scene next = build_scene(fb, k + 1);
  place_scene(fb, next, {detail::kMargin, top});
  const lay::Move mv =
      lay::step_move(f.steps[static_cast<std::size_t>(k)], f.steps[static_cast<std::size_t>(k + 1)], f.in.mistaken);
  const float e = lay::ease(u);
  const bool fade = mv == lay::Move::None;
  const float out_a = fade ? 1.0f - e : std::max(0.0f, 1.0f - 2.0f * e);
  const float in_a = fade ? e : std::max(0.0f, 2.0f * e - 1.0f);
  for (std::size_t i = 0; i < cur.grids.size(); ++i) {
    if (static_cast<int>(i) == cur.result && !fade) continue;
    draw_grid(f, cur.grids[i], out_a);
    draw_operator(f, cur.grids[i], out_a);
  }
  for (std::size_t i = 0; i < next.grids.size(); ++i) {
    if (static_cast<int>(i) == next.result && !fade) continue;
    draw_grid(fb, next.grids[i], in_a);
    draw_operator(fb, next.grids[i], in_a);
  }
  if (!fade)
    draw_moving(f, fb, cur.grids[static_cast<std::size_t>(cur.result)],
                next.grids[static_cast<std::size_t>(next.result)], mv, u);
  f.cells += fb.cells;
}

}  // namespace

// [SECTION] The plan
WalkPlan::Key walk_plan_key(const WalkInput& in, const Options& o) {
  const Trace& tr = *in.trace;
  return {
      o.canvas,    o.type,  static_cast<int>(tr.config.variant),     tr.tokens,  tr.d_in,     tr.heads,  tr.head_dim,
      tr.kv_heads, in.pane, static_cast<int>(walk_steps(in).size()), in.weights, in.mistaken, in.numbers};
}

bool update_walk_plan(WalkPlan& plan, const WalkInput& in, const Options& o) {
  const WalkPlan::Key key = walk_plan_key(in, o);
  if (plan.builds > 0 && plan.key == key) return false;  // nothing it depends on changed
  plan.key = key;
  Frame f(in, o);
  // Each step's scene gets the canvas left by the header, the legend and its chain strip.
  plan_steps(f, plan, [&f](int k) { return scene_canvas(f, k); });
  ++plan.builds;
  return true;
}

// [SECTION] Pictures
bool WalkPicture::cell_at(float x, float y, lay::Cell& out) const {
  if (moving || cs <= 0.0f) return false;
  const lay::Point p{(x - ox) / cs + shift, (y - oy) / cs};
  lay::Cell c;
  if (!lay::cell_at(result, p, c) || c.pane < pane_first || c.pane > pane_last) return false;
  out = c;
  return true;
}

WalkPicture walk_picture(const WalkInput& in, const WalkPlan& plan, const Options& o) {
  Builder B(o);
  WalkPicture pic;
  Frame f(in, o);
  f.B = &B;
  f.rec = &pic.record;
  const int n = step_count(f);
  const float pos = std::clamp(in.pos, 0.0f, static_cast<float>(n - 1));
  const int k = std::clamp(static_cast<int>(std::floor(pos)), 0, n - 1);
  const float u = pos - static_cast<float>(k);
  pic.moving = u > 1e-4f && k + 1 < n;
  pic.step = pic.moving && u >= 0.5f ? k + 1 : k;
  const lay::Step st = f.steps[static_cast<std::size_t>(pic.step)];
  // While moving, the two steps' headers may differ by a line: the taller one.
  float top = header_height(f, f.steps[static_cast<std::size_t>(k)]);
  if (pic.moving) top = std::max(top, header_height(f, f.steps[static_cast<std::size_t>(k + 1)]));
  use_step(f, plan, k);
  f.right_limit = detail::kMargin + scene_canvas(f, k).width;
  Scene cur = build_scene(f, k);
  place_scene(f, cur, {detail::kMargin, top});
  if (pic.moving)
    draw_move(f, plan, cur, k, u, top);
  else
    draw_still(f, cur, st, k);
  const Grid& res = cur.grids[static_cast<std::size_t>(cur.result)];
  const float scene_bottom = B.bottom;
  // The chain strip: right of the scene (of the wider of the two while moving), as tall as the
  // scene's canvas; its separator never over the scene. A scene drawn wider than planned (the
  // note of numbered key columns, on a 1024 × 768 window) had its result's title under the
  // strip's text.
  const float sw = strip_width(o), sx = std::min(o.canvas.width - detail::kMargin - sw, B.right + 18.0f);
  if (plan.strip[static_cast<std::size_t>(pic.step)] && chain_of(f, pic.step).size() >= 2 &&
      sx - 6.0f >= B.right + 2.0f) {
    const float h = o.canvas.height - top - 8.0f;
    B.line(sx - 6.0f, top, sx - 6.0f, top + std::max(scene_bottom - top, std::min(h, f.sfh * 20.0f)), B.th.frame, 1.0f,
           "separator");
    use_step(f, plan, pic.step);
    draw_chain_strip(f, pic.step, {sx, top}, sw, h);
  }
  header(f, pic.step, res.vmax);
  pic.record.cells = f.cells;
  pic.record.legend_swatches = f.legend_swatches;
  pic.result = res.l;
  pic.ox = res.ox, pic.oy = res.oy, pic.cs = f.cs, pic.shift = pane_shift(res);
  pic.pane_first = res.pane_first, pic.pane_last = res.pane_last;
  detail::caption(B, o,
                  {detail::model_line(f.tr), "walkthrough step " + std::to_string(pic.step + 1) + " of " +
                                                 std::to_string(n) + ": " + std::string(lay::step_name(st)) +
                                                 " \xC2\xB7 " + std::to_string(f.tr.tokens) + " tokens"});
  pic.fig = detail::finish(B);
  return pic;
}

Figure walk_step_figure(const WalkInput& in, const Options& o) {
  WalkPlan plan;
  update_walk_plan(plan, in, o);
  return walk_picture(in, plan, o).fig;
}

}  // namespace mhaviz::figure
