// The model view of a trained GPT (figure.hpp: ModelView) laid out to fill its canvas: a
// header saying what is shown, every layer x head as a thumbnail (every column and row
// labelled, a detector's score under every thumbnail, its top five framed) and, with a head
// selected, that head large beside the grid with token labels, its weights in the cells when
// they fit, masked cells hatched; one colour bar, a legend. The app draws this figure on
// screen; its captures and `mhaviz render --view model` are this figure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>

#include "figure/builder.hpp"
#include "figure/heatmap.hpp"
#include "figure/text.hpp"
#include "mhaviz/attention_mask.hpp"
#include "mhaviz/heads.hpp"

namespace mhaviz::figure {
namespace detail {
namespace {

// [SECTION] Layout
constexpr float kGap = 8.0f;        // between thumbnails (between rows too without scores)
constexpr float kScoreGap = 3.0f;   // between rows under a score line
constexpr float kBigGap = 32.0f;    // between the grid and the large head
constexpr float kBarGap = 28.0f;    // before the colour bar
constexpr float kGroupGap = 14.0f;  // more between two groups of query heads sharing a K/V head

// The grid of thumbnails: its side, pooling and margins.
struct Grid {
  float side = 8, cell = 1;
  int f = 1, n = 1;
  float label_w = 0;               // the row labels' column (L0 ... L11)
  float head_h = 0;                // the column labels' line (H0 ... H11)
  float below = 0;                 // the score line under each thumbnail
  float score = 12;                // its text size
  float gap_y = kGap;              // between rows
  float gap_x = kGap;              // between columns
  float group_w = kGroupGap;       // the wider gap after each group
  int col_step = 1, row_step = 1;  // a label on every column / row, or every 2nd, 4th...
  bool scores = false;             // a detector's score under each thumbnail
  float pitch = 16;                // from a column to the next: the side and a gap, or what its score and label need
  int group = 1;                   // query heads per K/V head: a wider gap after each group
  float slide_w = 0;               // the sliding layers' labels, left of the row labels (0: none)
  // Column h's left edge from the grid's.
  float col_x(int h) const { return static_cast<float>(h) * pitch + static_cast<float>(h / group) * group_gap(); }
  float group_gap() const { return group > 1 ? group_w : 0.0f; }
  float width(int H) const { return label_w + col_x(H - 1) + pitch - gap_x; }
  float inset() const { return std::floor((pitch - gap_x - side) * 0.5f); }  // a thumbnail in its column
  float height(int L) const {
    return head_h + static_cast<float>(L) * (side + below) + static_cast<float>(L - 1) * gap_y;
  }
};

// The selected head drawn large: its cells, token labels and title.
struct Big {
  float cell = 1;
  LabelPlan lp;
  float title_h = 0;
  bool score = false;  // its detector score by its name (the grid's are left out)
  float width(int T) const { return (lp.show ? lp.left : 0.0f) + cell * static_cast<float>(T); }
};

bool scored(const ModelView& m) { return !m.scores.empty() || !m.pattern.empty(); }
std::string sliding_label(int W) { return "sliding W = " + std::to_string(W); }
int widest_window(const ModelView& m) {
  return m.windows.empty() ? 0 : *std::max_element(m.windows.begin(), m.windows.end());
}

std::string title_text(const ModelView& m) {
  return m.title.empty() ? std::string("Attention weights of every layer and head") : m.title;
}

// What is shown, in parts joined by " · " on as few lines as the width allows.
std::vector<std::string> subtitle_lines(const ModelView& m, const Typography& ty, float width) {
  std::vector<std::string> parts = m.model_parts;
  if (parts.empty())
    parts.push_back(std::to_string(m.n_layer) + " layers \xC3\x97 " + std::to_string(m.n_head) + " heads");
  parts.insert(parts.end(), {std::to_string(m.tokens) + " tokens", "each thumbnail: queries down, keys across"});
  if (!m.pattern.empty()) parts.push_back("detector: " + m.pattern);
  std::vector<std::string> lines;
  for (const std::string& p : parts) {
    const std::string joined = lines.empty() ? p : lines.back() + " \xC2\xB7 " + p;
    if (!lines.empty() && text_width(joined, ty.small) <= width)
      lines.back() = joined;
    else
      lines.push_back(p);
  }
  return lines;
}

// The title on at most two lines (a Train view's probe with a large font cut "Every head on a
// probe sequ…"), the second cut where the words need a third.
std::vector<std::string> title_lines(const ModelView& m, const Typography& ty, float width) {
  return wrap(title_text(m), ty.title, width, 2);
}

float header_bottom(const Typography& ty, std::size_t title_lines, std::size_t lines) {
  return kMargin + text_ascent(ty.title) + static_cast<float>(title_lines - 1) * line_h(ty.title) +
         static_cast<float>(lines) * (line_h(ty.small) + 2.0f) + 14.0f;
}
// The legend: what the hatch, the pooling and the frames mean, in items on lines as wide as
// the canvas (y from the top of the legend).
enum class Swatch { Mask, Window, None, Top, Selected };
struct LegendItem {
  Swatch swatch = Swatch::None;
  std::string text;
  float x = 0, y = 0;
};
std::vector<LegendItem> legend_items(const ModelView& m, int f, bool big, bool scores_under, const Typography& ty,
                                     float right) {
  std::vector<LegendItem> items = {{Swatch::Mask, "masked (key after the query)"}};
  if (widest_window(m) > 0) items.push_back({Swatch::Window, "outside the sliding window (key W or more tokens back)"});
  if (f > 1)
    items.push_back({Swatch::None, "each thumbnail pixel: the largest weight of a " + std::to_string(f) + "\xC3\x97" +
                                       std::to_string(f) + " block of cells"});
  if (!m.scores.empty())
    items.push_back(
        {Swatch::Top, "top five " + m.pattern + " heads (" +
                          (scores_under ? "score under each thumbnail" : "the large head's score by its name") + ")"});
  if (big) items.push_back({Swatch::Selected, "the head shown large"});
  // An item wider than a whole line (a Train view's probe with a large font) wraps its words,
  // its later lines under its text.
  std::vector<LegendItem> out;
  float x = kMargin, y = 0;
  for (const LegendItem& it : items) {
    const float swatch = it.swatch == Swatch::None ? 0.0f : 22.0f;
    const float w = swatch + text_width(it.text, ty.small);
    if (x > kMargin && x + w > right) x = kMargin, y += line_h(ty.small) + 4.0f;
    if (x + w <= right) {
      out.push_back({it.swatch, it.text, x, y});
      x += w + 18.0f;
      continue;
    }
    const std::vector<std::string> lines = wrap(it.text, ty.small, std::max(40.0f, right - kMargin - swatch));
    for (std::size_t k = 0; k < lines.size(); ++k) {
      if (k > 0) y += line_h(ty.small) + 4.0f;
      out.push_back({k == 0 ? it.swatch : Swatch::None, lines[k], k == 0 ? kMargin : kMargin + swatch, y});
    }
    x = right;  // the next item on a line of its own
  }
  return out;
}
float legend_height(const std::vector<LegendItem>& items, const Typography& ty) {
  return 12.0f + items.back().y + line_h(ty.small) + 4.0f;
}
// Room kept for the colour bar and its ticks (their widest text: "0.00025" on a log scale).
float bar_room(const Typography& ty) { return kBarGap + 24.0f + text_width("0.00025", ty.small); }

// The largest thumbnails that fit w x h: whole pixels per cell, pooled when T exceeds the side.
// Without `scores` the detector's scores are left out (the large head's title gives its own).
Grid fit_grid(const ModelView& m, const Typography& ty, float w, float h, bool scores = true) {
  Grid g;
  const int L = m.n_layer, H = m.n_head;
  g.group = m.group();
  const int W = widest_window(m);
  g.slide_w = W > 0 ? std::ceil(text_width(sliding_label(W), ty.small) + 8.0f) : 0.0f;
  g.label_w = std::ceil(text_width("L" + std::to_string(L - 1), ty.label) + 10.0f) + g.slide_w;
  // Grouped heads: a line above the column labels for the brackets "K/V 0", "K/V 1"...
  g.head_h = line_h(ty.label) + 4.0f + (g.group > 1 ? line_h(ty.small) + 6.0f : 0.0f);
  // A score line under each row of thumbnails is what separates the rows: 4 pixels clear of
  // the selection's frame, then the text and its descent. At the figure's small size, smaller
  // only where the rows would leave thumbnails under 12 pixels (24 layers and more).
  const bool sc = scores && scored(m);
  g.scores = sc;
  g.gap_y = sc ? kScoreGap : kGap;
  float by_h = 0;
  for (g.score = ty.small;; g.score -= 1.0f) {
    g.below = sc ? std::ceil(4.0f + text_ascent(g.score) + 0.3f * g.score) + 1.0f : 0.0f;
    by_h =
        (h - g.head_h - static_cast<float>(L) * g.below - static_cast<float>(L - 1) * g.gap_y) / static_cast<float>(L);
    if (!sc || by_h >= 12.0f || g.score <= 8.0f) break;
  }
  // Without scores, many layers (28 in a 1024 × 768 window's canvas) close the rows to 3 pixels
  // where 8 would leave thumbnails under 12; their labels then on every 2nd or 4th row.
  if (!sc && by_h < 12.0f) {
    g.gap_y = 3.0f;
    by_h = (h - g.head_h - static_cast<float>(L - 1) * g.gap_y) / static_cast<float>(L);
  }
  // Columns never narrower than their score (".83") and label ("11"): with small
  // thumbnails the numbers stay readable, the columns wider than the thumbnails (and the grid
  // wider than w if it must).
  const float min_pitch = std::ceil(
      std::max(sc ? text_width(".00", g.score) + 6.0f : 0.0f, text_width(std::to_string(H - 1), ty.label) + 4.0f));
  const auto across = [&] {
    return (w - g.label_w - static_cast<float>(H - 1) * g.gap_x - static_cast<float>(H / g.group - 1) * g.group_gap()) /
           static_cast<float>(H);
  };
  float by_w = across();
  float label_pitch = min_pitch;  // what a labelled column needs
  if (!sc && by_w + g.gap_x < min_pitch) {
    // Narrow (the grid beside a large head, many heads): columns 3 pixels apart and a label on
    // every 2nd, 4th... column rather than a grid wider than w. Scores keep their columns.
    g.gap_x = 3.0f, g.group_w = 8.0f;
    by_w = across();
    while (g.col_step < 8 && std::max(4.0f, by_w) + g.gap_x < min_pitch / static_cast<float>(g.col_step))
      g.col_step *= 2;
    label_pitch = std::ceil(min_pitch / static_cast<float>(g.col_step));
  }
  if (by_w + g.gap_x < label_pitch) by_w = label_pitch - g.gap_x;
  const float side = std::max(4.0f, std::floor(std::min(by_w, by_h)));
  g.f = thumbnail_factor(m.tokens, side);
  g.n = (m.tokens + g.f - 1) / g.f;
  // Whole pixels per cell from 4 on; below, cells of unequal whole pixels would not show
  // while rounding down (44 tokens in 40 pixels: 22 blocks of 1) would waste the side.
  const float cell = side / static_cast<float>(g.n);
  g.cell = cell >= 4.0f ? std::floor(cell) : std::max(1.0f, cell);
  g.side = g.cell * static_cast<float>(g.n);
  g.pitch = std::max(g.side + g.gap_x, label_pitch);
  const float row_pitch = g.side + g.below + g.gap_y, label_h = text_ascent(ty.label) + 2.0f;
  while (g.row_step < 8 && row_pitch * static_cast<float>(g.row_step) < label_h) g.row_step *= 2;
  return g;
}

// The largest cells for the selected head in w x h with room for its title and token labels
// (labels thinned or turned as the cells they leave call for).
Big fit_big(const ModelView& m, const Typography& ty, float w, float h) {
  Big b;
  const int T = m.tokens;
  b.title_h = line_h(ty.tile) + 4.0f;
  const auto cell_for = [&](const LabelPlan& lp) {
    return fit_cell(w - (lp.show ? lp.left : 0.0f), h - b.title_h - (lp.show ? lp.top : 0.0f), T, T);
  };
  LabelPlan lp = plan_labels(m.token_names, cell_for(LabelPlan{}), ty.label);
  for (int k = 0; k < 4 && lp.show; ++k) {
    const LabelPlan next = plan_labels(m.token_names, cell_for(lp), ty.label);
    if (!next.show || (next.left <= lp.left && next.top <= lp.top)) break;
    lp.left = std::max(lp.left, next.left);
    lp.top = std::max(lp.top, next.top);
    lp.vertical = lp.vertical || next.vertical;
    lp.step = std::max(lp.step, next.step);
  }
  if (lp.show && !plan_labels(m.token_names, cell_for(lp), ty.label).show) lp = LabelPlan{};
  b.lp = lp;
  b.cell = cell_for(lp);
  return b;
}

struct Layout {
  std::vector<std::string> title;     // one line, or two
  std::vector<std::string> subtitle;  // its parts on lines as wide as the canvas
  float top = 0;                      // below the header
  Grid grid;
  bool big = false;
  Big head;
  std::vector<LegendItem> legend;
};

// The grid and the large head side by side in the canvas: each as large as the height allows
// when both fit; otherwise the large head (what the class reads) gets up to 60% of the width,
// more when the grid leaves it, and the grid the rest.
Layout plan(const ModelView& m, const Options& o) {
  Layout lo;
  const Typography& ty = o.type;
  const float text_w = std::max(100.0f, o.canvas.width - 2.0f * kMargin);
  lo.title = title_lines(m, ty, text_w);
  lo.subtitle = subtitle_lines(m, ty, text_w);
  lo.top = header_bottom(ty, lo.title.size(), lo.subtitle.size());
  lo.big = m.selected();
  const float W = std::max(80.0f, o.canvas.width - 2.0f * kMargin - bar_room(ty));
  // The legend's lines depend on the pooling, which depends on the room the legend leaves:
  // laid out without the pooling note, then again if the thumbnails are pooled.
  for (int f = 1;;) {
    // (With a large head, the longer line of the two about scores: the grid may go without them.)
    lo.legend = legend_items(m, f, lo.big, !lo.big, ty, kMargin + text_w);
    const float Hh = std::max(80.0f, o.canvas.height - lo.top - legend_height(lo.legend, ty) - kMargin);
    if (!lo.big) {
      lo.grid = fit_grid(m, ty, W, Hh);
    } else {
      constexpr float kAny = 1e9f;
      const float grid_need = fit_grid(m, ty, kAny, Hh).width(m.n_head);
      const float big_need = fit_big(m, ty, kAny, Hh).width(m.tokens);
      float big_w = big_need;
      if (grid_need + kBigGap + big_need > W) big_w = std::max(std::min(big_need, W * 0.6f), W - kBigGap - grid_need);
      lo.grid = fit_grid(m, ty, W - kBigGap - big_w, Hh);
      // Scores keep their columns wide; where those would leave the large head under 40% of
      // the width (on a 1024 × 768 window 28 × 16 heads left it 50 pixels, 12 × 12 about 70),
      // the grid goes without them and the large head's title gives its own score.
      if (lo.grid.scores && W - kBigGap - lo.grid.width(m.n_head) < std::min(big_need, W * 0.4f))
        lo.grid = fit_grid(m, ty, W - kBigGap - big_w, Hh, false);
      lo.head = fit_big(m, ty, W - kBigGap - lo.grid.width(m.n_head), Hh);
    }
    if (lo.grid.f == f || f > 1) break;
    f = lo.grid.f;
  }
  lo.legend = legend_items(m, lo.grid.f, lo.big, lo.grid.scores, ty, kMargin + text_w);
  lo.head.score = lo.big && !lo.grid.scores && !m.scores.empty();
  return lo;
}

// [SECTION] Drawing
void header(Builder& B, const Layout& lo) {
  float y = kMargin + text_ascent(B.ty.title);
  for (std::size_t k = 0; k < lo.title.size(); ++k) {
    if (k > 0) y += line_h(B.ty.title);
    B.text(kMargin, y, lo.title[k], B.ty.title, B.th.text, 0, "title");
  }
  for (const std::string& line : lo.subtitle) {
    y += line_h(B.ty.small) + 2.0f;
    B.text(kMargin, y, line, B.ty.small, B.th.dim, 0, "subtitle");
  }
}

// Text centred at x that fits `room`: the full form, else the short one, else smaller.
void fitted(Builder& B, float x, float y, const std::string& full, const std::string& brief, float size, float room,
            Color c, const char* cls) {
  const std::string& s = text_width(full, size) <= room ? full : brief;
  const float w = text_width(s, size);
  B.text(x, y, s, w <= room ? size : std::max(7.0f, std::floor(size * room / w)), c, 1, cls);
}

std::string score_text(float s) {
  if (!std::isfinite(s)) return "\xE2\x80\x93";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(s));
  return buf;
}

// Over each group of query heads sharing a K/V head: a bracket and "K/V g" (the number alone
// where the group is too narrow for the words).
void kv_brackets(Builder& B, const ModelView& m, const Grid& g, float gx, float gy) {
  if (g.group <= 1) return;
  const float y = gy - line_h(B.ty.label) - 4.0f;  // the bracket, above the column labels
  for (int k = 0; k < m.n_head / g.group; ++k) {
    const float x0 = gx + g.inset() + g.col_x(k * g.group),
                x1 = gx + g.inset() + g.col_x((k + 1) * g.group - 1) + g.side;
    B.line(x0, y, x1, y, B.th.dim, 1.5f, "kv-bracket");
    B.line(x0, y, x0, y + 4.0f, B.th.dim, 1.5f, "kv-bracket");
    B.line(x1, y, x1, y + 4.0f, B.th.dim, 1.5f, "kv-bracket");
    const std::string name = "K/V " + std::to_string(k);
    fitted(B, (x0 + x1) * 0.5f, y - 3.0f, name, std::to_string(k), B.ty.small, x1 - x0 + g.group_gap(), B.th.text,
           "kv-label");
  }
}

void grid(Builder& B, const ModelView& m, const Grid& g, const ModelThumbnails& th, float gx, float gy) {
  const int L = m.n_layer, H = m.n_head;
  const float pitch_x = g.pitch, pitch_y = g.side + g.below + g.gap_y;
  // Columns H0 ... H11; narrow ones by number, the H once in the corner.
  const bool brief =
      text_width("H" + std::to_string(H - 1), B.ty.label) > pitch_x * static_cast<float>(g.col_step) - 2.0f;
  if (brief) B.text(gx - 8.0f, gy - 6.0f, "H", B.ty.label, B.th.text, 2, "label");
  for (int h = 0; h < H; ++h) {
    if (h % g.col_step != 0) continue;
    const std::string name = (brief ? "" : "H") + std::to_string(h);
    fitted(B, gx + g.inset() + g.col_x(h) + g.side * 0.5f, gy - 6.0f, name, name, B.ty.label,
           pitch_x * static_cast<float>(g.col_step) - 2.0f, B.th.text, "label");
  }
  kv_brackets(B, m, g, gx, gy);
  const std::vector<int> top = model_top_heads(m);
  for (int l = 0; l < L; ++l) {
    const float ty = gy + static_cast<float>(l) * pitch_y;
    const float label_y = ty + g.side * 0.5f + text_ascent(B.ty.label) * 0.5f - 1.0f;
    if (const int W = m.window(l); W > 0) {
      // A band behind the row and its label: the sliding layers stand out at a glance.
      B.rect(gx - g.label_w + 2.0f, ty - 2.0f, gx + g.col_x(H - 1) + pitch_x - g.gap_x + 2.0f, ty + g.side + 2.0f,
             B.th.window_b, "sliding-band");
      if (l % g.row_step == 0)
        B.text(gx - g.label_w + g.slide_w - 8.0f, label_y, sliding_label(W), B.ty.small, B.th.text, 2, "sliding");
    }
    if (l % g.row_step == 0) B.text(gx - 8.0f, label_y, "L" + std::to_string(l), B.ty.label, B.th.text, 2, "label");
    for (int h = 0; h < H; ++h) {
      const int k = l * H + h;
      const float tx = gx + g.inset() + g.col_x(h);
      const std::vector<float>& px = th.pooled[static_cast<std::size_t>(k)];
      const int n = th.n;
      HeatmapSpec spec;
      spec.id = k;
      spec.rows = spec.cols = n;
      spec.value = [&px, n](int i, int j) { return px[static_cast<std::size_t>(i * n + j)]; };
      // A block of hidden cells only: above the diagonal the causal mask's, below the window's.
      spec.mask = [&px, n](int i, int j) {
        const float v = px[static_cast<std::size_t>(i * n + j)];
        if (!(std::isinf(v) && v < 0)) return CellMask::Visible;
        return j > i ? CellMask::Causal : CellMask::Window;
      };
      spec.scale = th.scale;
      draw_heatmap(B, spec, tx, ty, g.cell, LabelPlan{}, false, false);
      B.hit("thumb_" + std::to_string(l) + "_" + std::to_string(h), tx, ty, tx + g.side, ty + g.side);
      if (std::find(m.ablated.begin(), m.ablated.end(), k) != m.ablated.end()) {
        // Ablated: its output never reaches the output projection; its weights are still these.
        B.line(tx, ty, tx + g.side, ty + g.side, B.th.top, 3.0f, "ablated");
        B.line(tx, ty + g.side, tx + g.side, ty, B.th.top, 3.0f, "ablated");
      }
      const bool is_top = std::find(top.begin(), top.end(), k) != top.end();
      if (l == m.selected_layer && h == m.selected_head)
        B.frame(tx - 2.5f, ty - 2.5f, tx + g.side + 2.5f, ty + g.side + 2.5f, B.th.accent, 3.0f, "selected");
      else if (is_top)
        B.frame(tx - 2.0f, ty - 2.0f, tx + g.side + 2.0f, ty + g.side + 2.0f, B.th.top, 2.0f, "top");
      if (g.scores && !m.scores.empty()) {
        const std::string s = score_text(m.scores[static_cast<std::size_t>(k)]);
        fitted(B, tx + g.side * 0.5f, ty + g.side + 4.0f + text_ascent(g.score), s, s[0] == '0' ? s.substr(1) : s,
               g.score, pitch_x - 2.0f, is_top ? B.th.top : B.th.dim, "score");
      }
    }
  }
}

// The selected head from the trace's own (T, T) weights: masked cells hatched, token labels,
// numbers when they fit; on the thumbnails' colour scale, so it reads like its thumbnail.
// Its title line may be wider than a head short of height: it takes up to `room` pixels
// (cut to fit), and the right end of what was drawn is returned, where the colour bar may begin.
float big_head(Builder& B, const ModelView& m, const Big& b, const ColorScale& scale, const Options& o, float x,
               float y, float room) {
  const int T = m.tokens, k = m.selected_layer * m.n_head + m.selected_head;
  const float* w = m.weights[static_cast<std::size_t>(k)];
  const float title_y = y + text_ascent(B.ty.tile);
  std::string name = "Head " + std::to_string(m.selected_layer) + "." + std::to_string(m.selected_head);
  if (b.score) name += "  score " + score_text(m.scores[static_cast<std::size_t>(k)]);
  const float tw = B.text(x, title_y, name, B.ty.tile, B.th.accent, 0, "head-title");
  const float side = b.width(T);
  const std::string sub = fit_text("rows: queries, columns: keys", B.ty.small, std::max(side, room) - tw - 10.0f);
  const float sw = sub.empty() ? 0.0f : B.text(x + tw + 10.0f, title_y, sub, B.ty.small, B.th.dim, 0, "subtitle");
  const float hx = x + (b.lp.show ? b.lp.left : 0.0f), hy = y + b.title_h + (b.lp.show ? b.lp.top : 0.0f);
  HeatmapSpec spec;
  spec.id = k;
  spec.rows = spec.cols = T;
  spec.value = [w, T](int i, int j) {
    return w[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)];
  };
  AttentionMask mask;
  mask.causal = true;
  mask.window = m.window(m.selected_layer);
  spec.mask = [mask](int i, int j) { return cell_mask(mask.hidden_by(i, j)); };
  spec.scale = scale;
  if (!m.token_names.empty()) spec.row_names = spec.col_names = &m.token_names;
  spec.numbers = o.values;
  draw_heatmap(B, spec, hx, hy, b.cell, b.lp, true, true);
  const float cells = b.cell * static_cast<float>(T);
  B.hit("model_big", hx, hy, hx + cells, hy + cells);
  return x + std::max(side, tw + (sub.empty() ? 0.0f : 10.0f + sw));
}

void legend(Builder& B, const std::vector<LegendItem>& items, float y0) {
  for (const LegendItem& it : items) {
    const float y = y0 + it.y;
    switch (it.swatch) {
      case Swatch::Mask: mask_legend(B, it.x, y, it.text); continue;
      case Swatch::Window: mask_legend(B, it.x, y, it.text, true); continue;
      case Swatch::Top: B.line(it.x, y + 6.5f, it.x + 16.0f, y + 6.5f, B.th.top, 2.0f, "legend-frame"); break;
      case Swatch::Selected: B.line(it.x, y + 6.5f, it.x + 16.0f, y + 6.5f, B.th.accent, 2.0f, "legend-frame"); break;
      case Swatch::None: break;
    }
    B.text(it.x + (it.swatch == Swatch::None ? 0.0f : 22.0f), y + B.ty.small - 1.0f, it.text, B.ty.small, B.th.text);
  }
  if (!items.empty()) B.grow(0, y0 + items.back().y + B.ty.small + 2.0f);
}

// The thumbnails pooled beforehand when they are the ones this figure needs.
bool usable(const ModelThumbnails* t, const ModelView& m, const Grid& g, const Options& o) {
  return t && t->f == g.f && t->n == g.n && t->cmap == o.colormap && t->log_scale == o.log_scale &&
         t->pooled.size() == m.weights.size();
}

Figure model_figure(const ModelView& m, const Options& o) {
  Builder B(o);
  const Layout lo = plan(m, o);
  const Grid& g = lo.grid;
  header(B, lo);
  ModelThumbnails pooled;
  const ModelThumbnails& th =
      usable(m.thumbs, m, g, o) ? *m.thumbs : (pooled = model_thumbnails(m, g.f, o.colormap, o.log_scale));
  const float gx = kMargin + g.label_w, gy = lo.top + g.head_h;
  grid(B, m, g, th, gx, gy);
  float right = kMargin + g.width(m.n_head), bottom = lo.top + g.height(m.n_layer);
  if (lo.big) {
    const float bx = right + kBigGap;
    // The colour bar keeps clear of the head's title line where the canvas has room for both.
    right = big_head(B, m, lo.head, th.scale, o, bx, lo.top, o.canvas.width - kMargin - bar_room(B.ty) - bx);
    bottom = std::max(bottom, lo.top + lo.head.title_h + (lo.head.lp.show ? lo.head.lp.top : 0.0f) +
                                  lo.head.cell * static_cast<float>(m.tokens));
  }
  // The bar ends where the content does, its lowest tick's text included; beside a short grid it
  // is 120 px long where the canvas has that room above the legend (a Train view's probe with
  // a large font does not: the bar ran past the canvas, its lower ticks cut).
  const float tick_below = text_ascent(B.ty.small) * 0.5f - 1.0f + 0.3f * B.ty.small;
  const float content = bottom - gy - tick_below,
              room = o.canvas.height - kMargin - legend_height(lo.legend, B.ty) - 12.0f - gy - tick_below;
  colorbar(B, th.scale, right + kBarGap, gy, std::clamp(content, std::min(120.0f, std::max(room, content)), 480.0f),
           (m.bar_title.empty() ? std::string("weight") : m.bar_title) + (th.scale.log ? " (log)" : ""));
  legend(B, lo.legend, std::max(bottom, B.bottom) + 12.0f);
  std::vector<std::string> lines;
  if (!m.caption.empty()) lines.push_back(m.caption);
  std::string what = "attn_weights (1, " + std::to_string(m.n_head) + ", " + std::to_string(m.tokens) + ", " +
                     std::to_string(m.tokens) + ") of each layer";
  if (lo.big) what += ", head " + std::to_string(m.selected_layer) + "." + std::to_string(m.selected_head) + " large";
  if (th.scale.log) what += " \xC2\xB7 log colour scale";
  lines.push_back(what);
  caption(B, o, lines);
  return finish(B);
}

}  // namespace
}  // namespace detail

// [SECTION] Thumbnails
// One thumbnail's pixels: (n, n) where n = ceil(T / f), pooled by the largest weight over
// each f x f block of visible cells (masked cells are -inf; a block of only masked cells
// stays -inf and is hatched).
std::vector<float> pool_max(const float* w, int T, int f, int n, int window) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), neg_inf);
  for (int i = 0; i < T; ++i)
    for (int j = window > 0 ? std::max(0, i - window + 1) : 0; j <= i; ++j) {
      float& o = out[static_cast<std::size_t>(i / f) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j / f)];
      o = std::max(o, w[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)]);
    }
  return out;
}

ModelThumbnails model_thumbnails(const ModelView& m, int f, Colormap cmap, bool log_scale) {
  ModelThumbnails t;
  t.f = f;
  t.n = (m.tokens + f - 1) / f;
  t.cmap = cmap;
  t.log_scale = log_scale;
  t.pooled.resize(m.weights.size());
  detail::ValueRange r;
  for (std::size_t k = 0; k < m.weights.size(); ++k) {
    t.pooled[k] = pool_max(m.weights[k], m.tokens, f, t.n, m.window(static_cast<int>(k) / m.n_head));
    r.merge(detail::value_range(t.pooled[k]));
  }
  t.scale = color_scale(0.0f, r.hi, r.min_pos, false, cmap, true, log_scale);
  return t;
}

int model_pool_factor(const ModelView& m, const Options& o) { return detail::plan(m, o).grid.f; }

std::vector<int> model_top_heads(const ModelView& m) {
  if (m.scores.empty()) return {};
  std::vector<std::vector<std::optional<float>>> by_layer(static_cast<std::size_t>(m.n_layer));
  for (std::size_t k = 0; k < m.scores.size(); ++k) {
    const float s = m.scores[k];
    by_layer[k / static_cast<std::size_t>(m.n_head)].push_back(std::isfinite(s) ? std::optional(s) : std::nullopt);
  }
  std::vector<int> out;
  for (const ScoredHead& h : top_heads(by_layer, 5)) out.push_back(h.layer * m.n_head + h.head);
  return out;
}

Figure build_model_figure(const ModelView& m, const Options& o) {
  if (m.n_layer < 1 || m.n_head < 1 || m.tokens < 1 ||
      m.weights.size() != static_cast<std::size_t>(m.n_layer) * static_cast<std::size_t>(m.n_head))
    throw std::invalid_argument("model view: " + std::to_string(m.weights.size()) + " heads given for " +
                                std::to_string(m.n_layer) + " layers x " + std::to_string(m.n_head) + " heads");
  if (!m.scores.empty() && m.scores.size() != m.weights.size())
    throw std::invalid_argument("model view: " + std::to_string(m.scores.size()) + " detector scores for " +
                                std::to_string(m.weights.size()) + " heads");
  if (!m.windows.empty() && m.windows.size() != static_cast<std::size_t>(m.n_layer))
    throw std::invalid_argument("model view: " + std::to_string(m.windows.size()) + " windows for " +
                                std::to_string(m.n_layer) + " layers");
  if (m.kv_heads < 0 || (m.kv_heads > 0 && m.n_head % m.kv_heads != 0))
    throw std::invalid_argument("model view: " + std::to_string(m.n_head) + " heads do not share " +
                                std::to_string(m.kv_heads) + " K/V heads evenly");
  if (!m.token_names.empty() && m.token_names.size() != static_cast<std::size_t>(m.tokens))
    throw std::invalid_argument("model view: " + std::to_string(m.token_names.size()) + " token names for " +
                                std::to_string(m.tokens) + " tokens");
  return detail::model_figure(m, o);
}

}  // namespace mhaviz::figure
