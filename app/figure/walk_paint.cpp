// Drawing the walkthrough: cells, labels, the animated move between two steps, the
// highlighted operands and the chain strip, as primitives of the figure being built.
#include "figure/text.hpp"
#include "figure/walk_frame.hpp"

namespace mhaviz::figure::walk {
namespace {

Color faded(Color c, float alpha) {
  c.a = static_cast<std::uint8_t>(std::lround(std::clamp(alpha, 0.0f, 1.0f) * static_cast<float>(c.a)));
  return c;
}

Color mix_color(Color a, Color b, float t) {
  const auto m = [t](std::uint8_t x, std::uint8_t y) {
    return static_cast<std::uint8_t>(
        std::lround(static_cast<float>(x) + (static_cast<float>(y) - static_cast<float>(x)) * t));
  };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b), m(a.a, b.a)};
}

// Text with its top-left at (x, y) (the way rows of labels are laid out); cut with an
// ellipsis to max_w when given.
void label(Frame& f, float x, float y, const std::string& s, Color c, const char* cls, int align = 0,
           float max_w = 0.0f) {
  f.B->text(x, y + text_ascent(f.sfh), max_w > 0.0f ? fit_text(s, f.sfh, max_w) : s, f.sfh, c, align, cls);
}

int cell_head(const Grid& g, const lay::Cell& c) {
  return g.source ? static_cast<int>(g.source(lay::index_of(g.l, c)).head) : lay::head_of(g.l, c);
}

}  // namespace

// [SECTION] Cells
Rgb grid_hue(const Frame& f, const Grid& g, int head) {
  if (g.read_hue && g.reads) return head_rgb(g.reads(head));
  return group_rgb(head, g.l.group, f.o.dark);
}

// The longest form of a block's name that fits `width` (empty where none does): a head, the K/V
// head it is or reads, or one of the wrapper's modules.
std::string head_label(const Frame& f, const Grid& g, std::int64_t head, float width) {
  const std::string n = std::to_string(head);
  std::vector<std::string> forms;
  if (g.blocks == BlockLabels::Modules) {
    forms = {"heads[" + n + "]: own W", "heads[" + n + "]", "h[" + n + "]", n};  // the wrapper's modules
  } else if (g.kv_heads) {
    forms = {"K/V head " + n, "kv " + n, "kv" + n};
  } else if (g.reads) {
    const std::string r = std::to_string(g.reads(static_cast<int>(head)));
    forms = {"head " + n + " ← kv " + r, "h" + n + "←kv" + r, "head " + n, "h" + n};
  } else {
    forms = {"head " + n, "h" + n};
  }
  for (const std::string& s : forms)
    if (text_w(f, s) <= width) return s;
  return {};
}

Look look_of(const Frame& f, const Grid& g, const lay::Cell& c, std::int64_t flat) {
  Look lk;
  const float v = g.value(flat);
  lk.state = g.state ? g.state(flat) : 0;
  const Color bg{f.th.bg.r, f.th.bg.g, f.th.bg.b, 255};
  const int head = cell_head(g, c);
  const Rgb hue = head >= 0 ? grid_hue(f, g, head) : Rgb{};
  Color col = detail::to_color(
      cell_rgb_hue(g.tint, head >= 0 ? &hue : nullptr, lay::part_of(g.l, c), v, g.vmax, f.o.dark, detail::to_rgb(bg)));
  if (lk.state == 1) col = f.o.dark ? Color{41, 41, 43, 255} : Color{204, 204, 204, 255};
  if (lk.state == 2) col = bg;
  if (lk.state == 3) col = f.th.window_a;  // the heatmap's window hatch, in its colours
  lk.fill = col;
  lk.text = luminance(detail::to_rgb(col)) < 0.5f ? Color{255, 255, 255, 255} : Color{0, 0, 0, 255};
  if (lk.state == 1) lk.text = f.o.dark ? Color{255, 140, 128, 255} : Color{179, 26, 26, 255};
  if (lk.state == 2) lk.text = f.th.dim;
  lk.label = lk.state == 2 ? "0" : g.decimals < 0 ? format_value(v) : format_number(v, g.decimals);
  if (g.source) lk.tag = "t" + std::to_string(g.source(flat).t);
  return lk;
}

void draw_cell(Frame& f, Point p, float size, const Look& lk, float alpha, int decimals, const std::string& title,
               bool operand) {
  if (alpha <= 0.01f) return;
  Builder& B = *f.B;
  const float pad = size >= 10.0f ? 1.0f : 0.0f;
  const float x0 = p.x + pad, y0 = p.y + pad, x1 = p.x + size - pad, y1 = p.y + size - pad;
  if (lk.state == 2) {
    B.frame(x0, y0, x1, y1, faded({128, 128, 128, 153}, alpha), 1.0f, "cell dropped");  // an empty slot
  } else if (lk.state == 3 && alpha >= 0.99f) {
    B.hatch(x0, y0, x1, y1, "cell masked window", title, true);  // outside the sliding window
  } else {
    B.rect(x0, y0, x1, y1, faded(lk.fill, alpha),
           std::string(lk.state == 1 ? "cell masked" : "cell") + (operand ? " operand" : ""), title);
  }
  if (lk.state == 1) B.frame(x0, y0, x1, y1, faded({230, 77, 64, 230}, alpha), 1.5f, "masked");
  ++f.cells;
  if (f.in.numbers && numbers_fit(f, size, decimals)) {
    const float ns = number_size(f, size, decimals);
    B.text(p.x + size * 0.5f, p.y + size * 0.5f + text_ascent(ns) * 0.5f - 1.0f, lk.label, ns, faded(lk.text, alpha), 1,
           "value");
  }
  if (!lk.tag.empty() && size >= f.sfh * 2.4f) {
    const float ts = std::round(f.sfh * 0.72f);
    B.text(p.x + 3.0f, p.y + 1.0f + text_ascent(ts), lk.tag, ts, faded(lk.text, alpha * 0.8f), 0, "tag");
  }
}

float grid_vmax(const Frame& f, const Grid& g) {
  float m = 0.0f;
  for_visible(f, g, [&](const lay::Cell&, std::int64_t flat, Point) {
    const float v = g.value(flat);
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  });
  return m > 0.0f ? m : 1.0f;
}

std::string token_name(const Frame& f, std::int64_t t) {
  const auto& toks = tokens(f);
  return t >= 0 && t < static_cast<std::int64_t>(toks.size()) ? toks[static_cast<std::size_t>(t)] : std::string();
}

// [SECTION] Labels
namespace {

// Column groups: "head i" (or q | k | v of a fused chunk) above the columns.
void column_groups(Frame& f, const Grid& g, float title_y, float line, Color dim) {
  const lay::Axis ca = g.l.col_axis();
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane) {
    std::int64_t start = -1;
    int cur = -2;
    auto flush = [&](std::int64_t end_slot) {
      if (start < 0) return;
      const Point a = to_px(f, g, lay::slot_point(g.l, pane, 0, 0, start));
      const float wpx = static_cast<float>(end_slot - start) * f.cs;
      std::string lab;
      if (g.l.part_cols > 0 && g.l.kind != lay::Kind::Matrix)
        lab = cur == 0 ? "q" : cur == 1 ? "k" : "v";
      else
        lab = g.kv_heads ? (wpx >= text_w(f, "kv 00") + 4.0f ? "kv " : "kv") + std::to_string(cur)
                         : (wpx >= text_w(f, "head 00") + 4.0f ? "head " : "h") + std::to_string(cur);
      // 2 px clear of the next group's label, which starts 2 px into its group ("kv0" ran up to
      // "kv1" at 24 px): the number alone where the name does not fit.
      if (text_w(f, lab) + 2.0f > wpx) lab = std::to_string(cur);
      if (text_w(f, lab) + 2.0f <= wpx) label(f, a.x + 2.0f, title_y + line, lab, dim, "group-label");
      f.B->line(a.x + 1, title_y + line * 2 - 2, a.x + wpx - 1, title_y + line * 2 - 2, dim, 1.0f, "group");
    };
    for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
      const std::int64_t col = ca.index_at(cs);
      int key = -1;
      if (col >= 0) {
        const lay::Cell c{pane, 0, 0, col};
        key = (g.l.part_cols > 0 && g.l.kind != lay::Kind::Matrix) ? lay::part_of(g.l, c) : lay::head_of(g.l, c);
      }
      if (key != cur) {
        flush(cs);
        start = key >= 0 ? cs : -1;
        cur = key;
      }
    }
    flush(ca.slots());
  }
}

// Ellipses of windowed rows and columns.
void ellipses(Frame& f, const Grid& g, Color dim) {
  const lay::Axis ba = g.l.block_axis(), ra = g.l.row_axis(), ca = g.l.col_axis();
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane)
    for (std::int64_t bs = 0; bs < ba.slots(); ++bs) {
      if (ba.index_at(bs) < 0) continue;
      for (std::int64_t rs = 0; rs < ra.slots(); ++rs)
        for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
          if (!ra.ellipsis_at(rs) && !ca.ellipsis_at(cs)) continue;
          if (ra.ellipsis_at(rs) && cs % 3 != 0 && !ca.ellipsis_at(cs)) continue;
          if (ca.ellipsis_at(cs) && rs % 3 != 0 && !ra.ellipsis_at(rs)) continue;
          const Point p = to_px(f, g, lay::slot_point(g.l, pane, bs, rs, cs));
          label(f, p.x + f.cs * 0.5f, p.y + (f.cs - f.sfh) * 0.5f, "…", dim, "ellipsis", 1);
        }
    }
}

}  // namespace

// Titles, row labels, block labels, column-group labels and ellipses of a grid. record: the
// test hooks (key labels of every grid; titles and block labels of the result only).
void draw_frame_labels(Frame& f, const Grid& g, float alpha, bool result, bool record) {
  if (alpha <= 0.01f) return;
  WalkRecord* rec = record ? f.rec : nullptr;
  const Color text = faded(f.th.text, alpha), dim = faded(f.th.dim, alpha);
  const lay::Axis ba = g.l.block_axis(), ra = g.l.row_axis(), ca = g.l.col_axis();
  const float line = f.sfh + 3.0f;
  const float title_y = g.oy - g.top;
  const std::int64_t bcols = std::max<std::int64_t>(1, std::min<std::int64_t>(g.l.block_cols, ba.slots()));
  const Measure measure = [&f](const std::string& t) { return text_w(f, t); };
  ColumnLabels keys;
  if (g.col_tokens) keys = column_labels(tokens(f), f.cs, measure);
  const std::string note = title_note(keys);
  for (int pane = g.pane_first; pane <= g.pane_last; ++pane) {
    const Point p = to_px(f, g, lay::slot_point(g.l, pane, 0, 0, 0));
    const std::string t = pane_title(g, pane) + note;
    // A title of fewer lines than the step's sits on the last: over its cells, as on one line.
    const std::vector<std::string> lines = title_lines(f, t, lay::pane_width(g.l) * f.cs);
    float y = title_y + static_cast<float>(f.title_lines - static_cast<int>(lines.size())) * line;
    for (const std::string& part : lines) {
      label(f, p.x, y, part, text, result ? "pane-title" : "operand-title");
      y += line;
    }
    if (rec) (result ? rec->titles : rec->operand_titles).push_back(t);
  }
  // Column groups under the titles' last line (top_margin counts f.title_lines lines).
  if (g.col_heads || g.l.part_cols > 0)
    column_groups(f, g, title_y + static_cast<float>(f.title_lines - 1) * line, line, dim);
  // One form of label for every block, fitting a block's width (the shared table's rule) and
  // leaving a space before the next block's (at 24 px "heads[0]" ran up to "heads[1]").
  std::vector<std::string> block_names;
  const float block_w =
      static_cast<float>(ca.slots()) * f.cs + (bcols > 1 ? g.l.block_gap_x * f.cs - 0.3f * f.sfh : 1.0e6f);
  if (g.blocks == BlockLabels::Heads || g.blocks == BlockLabels::Tokens) {
    block_names = block_labels(g.blocks == BlockLabels::Heads ? lay::Kind::HeadBlocks : lay::Kind::TokenBlocks,
                               g.l.dims[1], tokens(f), block_w, measure);
    if (g.blocks == BlockLabels::Heads && (g.kv_heads || g.reads)) {
      // gqa: which K/V head each block is, or reads.
      for (std::int64_t i = 0; i < g.l.dims[1]; ++i)
        block_names[static_cast<std::size_t>(i)] = head_label(f, g, i, block_w);
    }
  }
  if (g.blocks == BlockLabels::Modules) {
    // The wrapper's modules: the longest form that fits a block (a large font ran them together).
    for (std::int64_t i = 0; i < g.l.dims[1]; ++i) block_names.push_back(head_label(f, g, i, block_w));
  }
  for (std::int64_t bs = 0; bs < ba.slots(); ++bs) {
    const std::int64_t block = ba.index_at(bs);
    const Point p = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs, 0, 0));
    if (block < 0) {
      // Within its slot (up to the next block on its row, else the grid's edge): beside a narrow
      // grid "… 4 more" ran under the operator, between blocks over the next block's cells.
      const std::string more = std::to_string(g.l.blocks() - ba.limit);
      float room = g.ox + grid_size(f, g).x - p.x;
      if (bs + 1 < ba.slots()) {
        const Point next = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs + 1, 0, 0));
        if (next.y == p.y && next.x > p.x) room = next.x - p.x - 4.0f;
      }
      label(f, p.x, p.y, text_w(f, "… " + more + " more") <= room ? "… " + more + " more" : "+" + more, dim,
            "ellipsis");
      continue;
    }
    if (g.blocks != BlockLabels::None) {
      const std::int64_t inner = block % g.l.dims[1];
      const std::string& lab = block_names[static_cast<std::size_t>(inner)];
      const Color c = g.blocks == BlockLabels::Heads || g.blocks == BlockLabels::Modules
                          ? faded(detail::to_color(grid_hue(f, g, static_cast<int>(inner))), alpha)
                          : text;
      label(f, p.x, p.y - line * (g.col_tokens && bs < bcols ? 1.0f + static_cast<float>(keys.lines) : 1.0f), lab, c,
            "block-label");
      if (rec && result) rec->block_labels.push_back(lab);
    }
    if (g.col_tokens && bs < bcols) {
      for (std::int64_t cs = 0; cs < ca.slots(); ++cs) {
        const std::int64_t col = ca.index_at(cs);
        if (col < 0 || col >= static_cast<std::int64_t>(keys.text.size())) continue;
        const std::string& lab = keys.text[static_cast<std::size_t>(col)];
        const float up = static_cast<float>(keys.lines - cs % keys.lines);  // staggered: column 0 on the top line
        const Point cp = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs, 0, cs));
        label(f, cp.x + f.cs * 0.5f, cp.y - line * up, lab, dim, "key-label", 1);
        if (rec && bs == 0) rec->key_labels.push_back(lab);
      }
    }
    if (g.rows == RowLabels::None || bs % bcols != 0) continue;
    // A label on every row where the cells are as tall as a label (its ascent and descent),
    // else on every 2nd, 3rd...: small cells (a large font) ran them into each other. Cells up
    // to 10% shorter than a label keep one on every row, in a size that fits them (before, such
    // labels were drawn at full size, a pixel into the next: at 24 px on a 700-px canvas).
    const float need = text_ascent(f.sfh) + 0.25f * f.sfh;
    const float rsize = f.sfh * std::clamp(f.cs / need, 0.9f, 1.0f);
    const std::int64_t row_step = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(need * rsize / f.sfh / std::max(1.0f, f.cs) - 1e-3f)));
    for (std::int64_t rs = 0; rs < ra.slots(); ++rs) {
      const std::int64_t row = ra.index_at(rs);
      const Point rp = to_px(f, g, lay::slot_point(g.l, g.pane_first, bs, rs, 0));
      if (row >= 0 && rs % row_step != 0) continue;
      std::string lab = row < 0                      ? "…"
                        : g.rows == RowLabels::Heads ? (g.kv_heads ? "kv " : "head ") + std::to_string(row)
                                                     : token_name(f, row);
      lab = fit_text(lab, rsize, g.left - 6.0f);
      const Color c = g.rows == RowLabels::Heads && row >= 0
                          ? faded(detail::to_color(grid_hue(f, g, static_cast<int>(row))), alpha)
                          : text;
      f.B->text(rp.x - 5.0f, rp.y + (f.cs - rsize) * 0.5f + text_ascent(rsize), lab, rsize, c, 2, "row-label");
    }
  }
  ellipses(f, g, dim);
}

void draw_grid(Frame& f, Grid& g, float alpha, bool result, bool record) {
  if (alpha <= 0.01f) return;
  if (g.tint == Tint::Diverging || g.tint == Tint::Weights) g.vmax = grid_vmax(f, g);
  WalkRecord* rec = record ? f.rec : nullptr;
  for_visible(f, g, [&](const lay::Cell& c, std::int64_t flat, Point p) {
    const Look lk = look_of(f, g, c, flat);
    draw_cell(f, p, f.cs, lk, alpha, g.decimals,
              lay::index_string({f.b, c.block, c.row, c.col}) + " = " + format_value(g.value(flat)), !result);
    if (rec && c.pane == g.pane_first) {
      std::vector<std::string>& out = result ? rec->values : rec->operand_values;
      if (out.size() < 16) out.push_back(lk.label);
    }
  });
  // The mistake: the cells that differ from the correct merge, outlined.
  if (g.wrong && alpha >= 0.99f)
    for_visible(f, g, [&](const lay::Cell&, std::int64_t flat, Point p) {
      if (g.wrong(flat)) f.B->frame(p.x + 1, p.y + 1, p.x + f.cs - 1, p.y + f.cs - 1, kWrong, 2.0f, "wrong");
    });
  draw_frame_labels(f, g, alpha, result, record);
}

void draw_operator(Frame& f, const Grid& g, float alpha) {
  if (!g.op_after || alpha <= 0.01f) return;
  const Point gs = grid_size(f, g);
  const float x = g.ox + gs.x + f.sfh * 0.5f;
  const float y = g.oy + std::min(gs.y, f.cs * 3.0f) * 0.5f + text_ascent(f.op_size) * 0.5f;
  f.B->text(x, y, g.op_after, f.op_size, faded(f.th.text, alpha), 0, "operator");
}

// Rectangle around cells [c0, c1] (inclusive, same pane and block) of a grid, visible part only.
bool cells_rect(const Frame& f, const Grid& g, int pane, std::int64_t block, std::int64_t r0, std::int64_t r1,
                std::int64_t c0, std::int64_t c1, Point& a, Point& b) {
  const lay::Axis ba = g.l.block_axis(), ra = g.l.row_axis(), ca = g.l.col_axis();
  const std::int64_t bs = ba.slot(block);
  if (bs < 0 || !pane_drawn(g, pane)) return false;
  auto first_slot = [](const lay::Axis& ax, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i <= hi; ++i)
      if (ax.slot(i) >= 0) return ax.slot(i);
    return std::int64_t{-1};
  };
  auto last_slot = [](const lay::Axis& ax, std::int64_t lo, std::int64_t hi) {
    if (ax.slot(hi) >= 0) return ax.slot(hi);
    for (std::int64_t i = hi; i >= lo; --i)
      if (ax.slot(i) >= 0) return ax.windowed() && hi > i ? ax.slot(i) + 1 : ax.slot(i);
    return std::int64_t{-1};
  };
  const std::int64_t rs0 = first_slot(ra, r0, r1), rs1 = last_slot(ra, r0, r1);
  const std::int64_t cs0 = first_slot(ca, c0, c1), cs1 = last_slot(ca, c0, c1);
  if (rs0 < 0 || cs0 < 0) return false;
  a = to_px(f, g, lay::slot_point(g.l, pane, bs, rs0, cs0));
  b = to_px(f, g, lay::slot_point(g.l, pane, bs, rs1, cs1));
  b.x += f.cs;
  b.y += f.cs;
  return true;
}

void outline(const Frame& f, Point a, Point b, Color c, float th) {
  f.B->frame(a.x - 1, a.y - 1, b.x + 1, b.y + 1, {0, 0, 0, 200}, th + 2.0f, "outline");
  f.B->frame(a.x - 1, a.y - 1, b.x + 1, b.y + 1, c, th, "outline");
}

// [SECTION] The animated transition of the result grid between two steps
// fa / fb: the frames (cell sizes) of the steps before and after; elements travel from their
// static place in `from` to their static place in `to` (lay::progress gives how far).
void draw_moving(Frame& fa, Frame& fb, Grid& from, Grid& to, lay::Move m, float u) {
  const float e = lay::ease(u);
  if (from.tint == Tint::Diverging || from.tint == Tint::Weights) from.vmax = grid_vmax(fa, from);
  if (to.tint == Tint::Diverging || to.tint == Tint::Weights) to.vmax = grid_vmax(fb, to);
  const float stagger = (m == lay::Move::Transpose || m == lay::Move::TransposeMerge) ? 0.35f : 0.2f;
  const float swing = m == lay::Move::Same ? 0.0f : 0.5f * std::max(grid_size(fa, from).x, grid_size(fb, to).x) + fb.cs;
  // Elements visible before: travel (or fade out when their new place is hidden).
  for_visible(fa, from, [&](const lay::Cell& c, std::int64_t flat, Point p0) {
    const std::int64_t g = lay::move_index(m, from.l, to.l, flat);
    const Look a = look_of(fa, from, c, flat);
    if (g < 0) return;
    const lay::Cell tc = lay::cell_of(to.l, g);
    if (!lay::visible(to.l, tc) || !pane_drawn(to, tc.pane)) {
      draw_cell(fa, p0, fa.cs, a, std::max(0.0f, 1.0f - 3.0f * e));  // leaves the window quickly
      return;
    }
    const Point p1 = to_px(fb, to, lay::point_of(to.l, tc));
    const float pr = lay::progress(to.l, tc, u, stagger);
    Point p{p0.x + (p1.x - p0.x) * pr, p0.y + (p1.y - p0.y) * pr};
    // Elements moving down swing out to the right on their way, so that rows do not pass
    // through each other (the transpose pulls a head's rows out and stacks them below).
    if (p1.y > p0.y + 0.5f * fb.cs)
      p.x = std::min(p.x + std::sin(pr * 3.14159265f) * swing, std::max(p.x, fa.right_limit - fb.cs));
    const Look b = look_of(fb, to, tc, g);
    Look mixd = pr < 0.5f ? a : b;
    mixd.fill = mix_color(a.fill, b.fill, pr);
    draw_cell(fa, p, fa.cs + (fb.cs - fa.cs) * pr, mixd, 1.0f);
  });
  // Elements that were hidden before appear in their new place.
  for_visible(fb, to, [&](const lay::Cell& c, std::int64_t flat, Point p1) {
    const std::int64_t src = lay::move_index_inverse(m, from.l, to.l, flat);
    if (src < 0) return;
    const lay::Cell sc = lay::cell_of(from.l, src);
    if (lay::visible(from.l, sc) && pane_drawn(from, sc.pane)) return;
    draw_cell(fa, p1, fb.cs, look_of(fb, to, c, flat), std::max(0.0f, 3.0f * e - 2.0f));
  });
  if (from.l.kind == to.l.kind && from.l.dims == to.l.dims && from.ox == to.ox && from.oy == to.oy) {
    // Same drawing, new values (mask, softmax, dropout): the labels stay; the title switches halfway.
    if (e < 0.5f)
      draw_frame_labels(fa, from, 1.0f, false, false);
    else
      draw_frame_labels(fb, to, 1.0f, false, false);
  } else {
    draw_frame_labels(fa, from, std::max(0.0f, 1.0f - 2.5f * e), false, false);  // labels leave, then the new ones come
    draw_frame_labels(fb, to, std::max(0.0f, 2.5f * e - 1.5f), false, false);
  }
}

// [SECTION] Highlights of operands and the chain strip
void highlight_operands(Frame& f, const Scene& sc, lay::Step st, std::int64_t flat) {
  if (flat < 0) return;
  const Grid& res = sc.grids[static_cast<std::size_t>(sc.result)];
  const lay::Cell c = lay::cell_of(res.l, flat);
  Point a, b;
  auto row_hl = [&](const Grid& g, std::int64_t block, std::int64_t row) {
    if (cells_rect(f, g, 0, block, row, row, 0, g.l.dims[3] - 1, a, b)) outline(f, a, b, kOperand);
  };
  auto col_hl = [&](const Grid& g, std::int64_t block, std::int64_t col) {
    if (cells_rect(f, g, 0, block, 0, g.l.dims[2] - 1, col, col, a, b)) outline(f, a, b, kOperand);
  };
  switch (st) {
    case lay::Step::Project:
    case lay::Step::OutProj:
      row_hl(sc.grids[0], 0, c.row);
      if (sc.result == 2) {  // Wᵀ drawn: the column that makes the output column
        const Grid& wg = sc.grids[1];
        col_hl(wg, wg.l.kind == lay::Kind::HeadBlocks ? c.block % wg.l.dims[1] : 0, c.col);
      }
      break;
    case lay::Step::Scores:
      row_hl(sc.grids[0], c.block, c.row);
      row_hl(sc.grids[1], c.block, c.col);
      break;
    case lay::Step::Context:
      row_hl(sc.grids[0], c.block, c.row);
      col_hl(sc.grids[1], c.block, c.col);
      break;
    case lay::Step::Softmax:
      if (cells_rect(f, res, 0, c.block, c.row, c.row, 0, res.l.dims[3] - 1, a, b)) outline(f, a, b, kOperand, 1.5f);
      break;
    default: break;
  }
  if (cells_rect(f, res, c.pane, c.block, c.row, c.row, c.col, c.col, a, b)) outline(f, a, b, kSelect);
}

// Chain of steps linked by moves (the same elements, rearranged) around step k.
std::vector<int> chain_of(const Frame& f, int k) {
  int lo = k, hi = k;
  auto moves = [&](int i) {  // move into step i
    const lay::Move m =
        lay::step_move(f.steps[static_cast<std::size_t>(i - 1)], f.steps[static_cast<std::size_t>(i)], f.in.mistaken);
    return m != lay::Move::None;
  };
  while (lo > 0 && moves(lo)) --lo;
  while (hi + 1 < static_cast<int>(f.steps.size()) && moves(hi + 1)) ++hi;
  std::vector<int> out;
  bool rearranges = false;
  for (int i = lo; i <= hi; ++i) {
    const lay::Step st = f.steps[static_cast<std::size_t>(i)];
    if (st == lay::Step::Mask || st == lay::Step::Softmax || st == lay::Step::Dropout) continue;
    if (i > lo) rearranges = true;
    out.push_back(i);
  }
  if (!rearranges) out.clear();
  return out;
}

// Small copies of every layout of the chain, stacked in a column, with the selected element
// outlined in each: the same element in every layout, and its index there.
void draw_chain_strip(Frame& f, int k, Point at, float width, float height) {
  const std::vector<int> chain = chain_of(f, k);
  if (chain.size() < 2) return;
  Frame mini = f;
  mini.cells = 0;
  mini.block_cols = 1;
  mini.lim_blocks = mini.lim_rows = mini.lim_cols = 0;
  const float label_h = f.sfh + 4.0f;
  const float per_fixed = label_h * 2.0f + f.sfh * 0.8f;  // title, index line, arrow gap
  std::vector<Grid> gs;
  for (int i : chain) gs.push_back(result_grid(f, f.steps[static_cast<std::size_t>(i)]));
  for (const auto& g : gs) {
    if (g.l.numel() > 4096 && mini.lim_rows == 0) {  // never thousands of tiny cells
      mini.lim_blocks = 3;
      mini.lim_rows = 8;
      mini.lim_cols = 8;
    }
  }
  for (int iter = 0; iter < 3; ++iter) {
    float cells_h = 0.0f, max_cells_w = 0.0f, fixed_h = 0.0f, fixed_w = 0.0f;
    for (auto& g : gs) {
      g.l = windowed(mini, g.l);
      const float np = static_cast<float>(panes_drawn(g));
      max_cells_w = std::max(max_cells_w, np * static_cast<float>(g.l.col_axis().slots()));
      fixed_w = std::max(fixed_w, (np - 1.0f) * mini.pane_px);
      const float bl = static_cast<float>(g.l.block_axis().slots());
      cells_h += bl * static_cast<float>(g.l.row_axis().slots());
      fixed_h += (bl - 1.0f) * mini.gap_px + per_fixed;
    }
    mini.cs = std::floor(std::clamp(
        std::min((width - fixed_w - 8.0f) / std::max(1.0f, max_cells_w), (height - fixed_h) / std::max(1.0f, cells_h)),
        2.0f, 16.0f));
    mini.gap_px = std::max(2.0f, std::floor(mini.cs * 0.5f));
    mini.pane_px = std::max(3.0f, mini.cs);
  }
  WalkInput quiet = f.in;
  quiet.numbers = false;  // no numbers in the small copies
  Frame copy(quiet, f.o);
  copy.B = f.B;
  copy.cs = mini.cs, copy.gap_px = mini.gap_px, copy.pane_px = mini.pane_px;
  copy.lim_blocks = mini.lim_blocks, copy.lim_rows = mini.lim_rows, copy.lim_cols = mini.lim_cols;
  float y = at.y;
  const std::int64_t sel = walk_selected_in(f.in, k);
  label(f, at.x, y, "The same elements in each layout:", f.th.dim, "chain", 0, width);
  y += label_h;
  for (std::size_t n = 0; n < gs.size(); ++n) {
    Grid& g = gs[n];
    const int si = chain[n];
    const lay::Step st = f.steps[static_cast<std::size_t>(si)];
    label(f, at.x, y, (si == k ? "> " : "") + tensor_label(f, st, g.pane_first) + "  " + shape_of(f, g.l),
          si == k ? f.th.text : f.th.dim, "chain", 0, width);
    g.ox = std::floor(at.x + 4.0f);
    g.oy = std::floor(y + label_h);
    for_visible(copy, g, [&](const lay::Cell& c, std::int64_t flat, Point p) {
      Look lk = look_of(copy, g, c, flat);
      if (si != k) lk.fill.a = 179;
      draw_cell(copy, p, copy.cs, lk, 1.0f);
    });
    const float gy = grid_size(copy, g).y;
    if (sel >= 0) {
      const std::int64_t e = lay::follow(f.steps, f.dims, f.in.mistaken, k, sel)[static_cast<std::size_t>(si)];
      if (e >= 0) {
        const lay::Cell c = lay::cell_of(g.l, e);
        Point a, b;
        if (pane_drawn(g, c.pane) && lay::visible(g.l, c) &&
            cells_rect(copy, g, c.pane, c.block, c.row, c.row, c.col, c.col, a, b))
          outline(copy, a, b, kSelect, 2.0f);
        label(f, at.x, g.oy + gy + 2.0f, tensor_label(f, st, c.pane) + index_text(f, g.l, c), f.th.text, "chain", 0,
              width);
      }
    }
    y = g.oy + gy + label_h;
    if (n + 1 < gs.size()) label(f, at.x + f.sfh * 2.0f, y - 2.0f, "↓", f.th.dim, "chain");
    y += f.sfh * 0.8f;
  }
  f.cells += copy.cells;
}

}  // namespace mhaviz::figure::walk
