// A step of the walkthrough as a figure (`mhaviz render --view step`, the app's step
// capture): values, names, colours and labels from the shared table (walk_values.hpp).
#include "figure/builder.hpp"

namespace mhaviz::figure::detail {

// [SECTION] A step of the walkthrough
Figure step_figure(const Trace& tr, const std::vector<std::string>& tokens, const Options& o) {
  Builder B(o);
  const float kTitle = B.ty.title, kLabel = B.ty.label, kSmall = B.ty.small;
  Mistake mistake;
  if (o.mistaken && tr.config.variant != Variant::Wrapper) {
    if (o.model)
      mistake = make_mistake(*o.model, tr);
    else
      mistake.merged = mistaken_merge(tr);
  }
  const StepSource ctx{&tr, o.batch, o.mistaken, &mistake};
  const std::vector<lay::Step> steps = lay::steps_for(tr.config.variant, o.mistaken);
  const lay::Step st = steps[static_cast<std::size_t>(o.step)];
  const Variant v = tr.config.variant;

  // Header: step, PyTorch line, shape as the seeds write it and as it is here.
  float y = kMargin + text_ascent(kTitle);
  B.text(kMargin, y,
         "Step " + std::to_string(o.step + 1) + " of " + std::to_string(steps.size()) + ": " +
             std::string(lay::step_title(st, v)),
         kTitle, B.th.text, 0, "title");
  y += line_h(kLabel) + 2;
  B.text(kMargin, y, lay::step_code(st, v, tr.batch), kLabel, B.th.text, 0, "code", false, true);
  lay::Layout l = lay::step_layout(st, ctx.dims());
  Shape sh = l.shape();
  sh[0] = tr.batch;
  y += line_h(kSmall) + 2;
  B.text(kMargin, y,
         std::string(lay::step_shape(st, v)) + " = " + shape_string(sh) + " \xC2\xB7 batch item " +
             std::to_string(o.batch) + " shown",
         kSmall, B.th.dim, 0, "shape");
  y += 14;

  // Window large tensors (first rows/columns, an ellipsis, the last), as the app does.
  l.max_rows = 12;
  l.max_cols = 12;
  l.max_blocks = 6;
  // Blocks side by side as far as that makes the cells larger (ties: fewer columns).
  const std::int64_t nblocks = l.block_axis().slots();
  const auto fit = [&l](int bcols) {
    l.block_cols = bcols;
    float cs = 40.0f;
    for (int it = 0; it < 3; ++it) {
      l.block_gap = std::max(0.5f, 24.0f / cs);
      l.pane_gap = std::max(1.0f, 30.0f / cs);
      l.block_gap_x = std::max(1.0f, 40.0f / cs);
      const lay::Point e = lay::extent(l);
      cs = std::clamp(std::floor(std::min(1000.0f / e.x, 600.0f / e.y)), 10.0f, 44.0f);
    }
    return cs;
  };
  int best_cols = 1;
  float cs = fit(1);
  if (l.kind != lay::Kind::Matrix)
    for (int bc = 2; bc <= std::min<std::int64_t>(nblocks, 4); ++bc) {
      const float c = fit(bc);
      if (c > cs) cs = c, best_cols = bc;
    }
  cs = fit(best_cols);
  const int row_step = std::max(1, static_cast<int>(std::ceil((kSmall + 2.0f) / cs)));
  const bool labels_rows_tokens = l.kind != lay::Kind::TokenBlocks;
  float tokw = 0;
  for (const auto& t : tokens) tokw = std::max(tokw, std::min(text_width(t, kSmall), text_width("abcdefghij", kSmall)));
  const float left = std::ceil((labels_rows_tokens ? tokw : text_width("head 00", kSmall)) + 10.0f);
  const float ox = kMargin + left, oy = y + line_h(kLabel) + 4.0f + line_h(kSmall) + 2.0f;

  // Scale of attention steps: |v| relative to the largest |v| drawn.
  float vmax = 0;
  const lay::Axis ba = l.block_axis(), ra = l.row_axis(), ca = l.col_axis();
  const auto each = [&](auto fn) {
    for (int pane = 0; pane < l.panes; ++pane)
      for (std::int64_t bs = 0; bs < ba.slots(); ++bs)
        for (std::int64_t rs = 0; rs < ra.slots(); ++rs)
          for (std::int64_t cs_ = 0; cs_ < ca.slots(); ++cs_) fn(pane, bs, rs, cs_);
  };
  each([&](int pane, std::int64_t bs, std::int64_t rs, std::int64_t c_) {
    const lay::Cell c{pane, ba.index_at(bs), ra.index_at(rs), ca.index_at(c_)};
    if (c.block < 0 || c.row < 0 || c.col < 0) return;
    const float val = step_value(ctx, st, lay::index_of(l, c));
    if (std::isfinite(val)) vmax = std::max(vmax, std::fabs(val));
  });
  if (!(vmax > 0)) vmax = 1;
  float widest = 0;
  for (float t : {-0.99f, 0.99f, -9.99f}) widest = std::max(widest, text_width(format_value(t), kSmall));
  const bool values = o.values && cs >= widest + 5.0f;
  const Tint tint = step_tint(st);
  const Color bg_solid{B.th.bg.r, B.th.bg.g, B.th.bg.b, 255};
  const auto px = [&](lay::Point p) {
    return std::pair<float, float>{ox + std::round(p.x * cs), oy + std::round(p.y * cs)};
  };

  each([&](int pane, std::int64_t bs, std::int64_t rs, std::int64_t c_) {
    const auto [x, yy] = px(lay::slot_point(l, pane, bs, rs, c_));
    const lay::Cell c{pane, ba.index_at(bs), ra.index_at(rs), ca.index_at(c_)};
    if (c.block < 0 || c.row < 0 || c.col < 0) {
      // One ellipsis per hidden run, in the first cell of the run's slot.
      const bool first = (c.block < 0 && rs == 0 && c_ == 0) || (c.block >= 0 && c.row < 0 && c_ == 0) ||
                         (c.block >= 0 && c.row >= 0 && c.col < 0);
      if (first)
        B.text(x + cs * 0.5f, yy + cs * 0.5f + text_ascent(kSmall) * 0.5f,
               c.row < 0 && c.block >= 0 ? "\xE2\x8B\xAE" : "\xE2\x8B\xAF", kSmall, B.th.dim, 1, "ellipsis");
      return;
    }
    const std::int64_t flat = lay::index_of(l, c);
    const float val = step_value(ctx, st, flat);
    const int state = step_state(ctx, st, flat);
    const bool masked = state == 1, dropped = state == 2;
    int head = lay::head_of(l, c);
    if (st == lay::Step::Merge) {
      const lay::HeadIndex src = o.mistaken && v != Variant::Wrapper
                                     ? lay::mistaken_source(0, c.row, c.col, tr.tokens, tr.heads, tr.head_dim)
                                     : lay::split_column(0, c.row, c.col, tr.head_dim);
      head = static_cast<int>(src.head);
    }
    const Color fill = to_color(cell_rgb(tint, head, lay::part_of(l, c), val, vmax, o.dark, to_rgb(bg_solid)));
    const float pad = cs >= 14.0f ? 1.0f : 0.0f;
    std::string title = lay::index_string({o.batch, c.block, c.row, c.col}) + " = " + format_value(val);
    if (masked) {
      B.hatch(x + pad, yy + pad, x + cs - pad, yy + cs - pad, "cell masked", title);
    } else if (dropped) {
      B.rect(x + pad, yy + pad, x + cs - pad, yy + cs - pad, bg_solid, "cell dropped", title);
      B.line(x + pad, yy + pad, x + cs - pad, yy + cs - pad, B.th.dim, 1.0f, "dropped");
    } else {
      B.rect(x + pad, yy + pad, x + cs - pad, yy + cs - pad, fill, "cell", title);
    }
    ++B.f.cells;
    if (values) {
      const Color tc = masked ? B.th.text : dropped ? B.th.dim : on(fill);
      B.text(x + cs * 0.5f, yy + cs * 0.5f + text_ascent(kSmall) * 0.5f - 1.0f, dropped ? "0" : format_value(val),
             kSmall, tc, 1, "value");
    }
  });

  // Pane titles, block labels (head i / token), row labels on the left of the first block column.
  const std::vector<std::string> block_names =
      block_labels(l.kind, l.kind == lay::Kind::HeadBlocks ? tr.heads : tr.tokens, tokens,
                   cs * static_cast<float>(ca.slots()), [kSmall](const std::string& t) { return text_width(t, kSmall); });
  for (int pane = 0; pane < l.panes; ++pane) {
    const auto [x, yy] = px(lay::slot_point(l, pane, 0, 0, 0));
    const std::string nm = pane_name(v, st, pane, o.mistaken);
    B.text(x, yy - line_h(kSmall) - 6.0f, nm + "  " + shape_string(sh), kLabel, B.th.text, 0, "pane-title");
    for (std::int64_t bs = 0; bs < ba.slots(); ++bs) {
      const std::int64_t block = ba.index_at(bs);
      if (block < 0) continue;
      const auto [bx, by] = px(lay::slot_point(l, pane, bs, 0, 0));
      const std::int64_t inner = l.kind == lay::Kind::HeadBlocks ? block % tr.heads : block % tr.tokens;
      const std::string& bl = block_names[static_cast<std::size_t>(inner)];
      if (!bl.empty())
        B.text(bx, by - 4.0f, bl, kSmall,
               l.kind == lay::Kind::HeadBlocks ? head_color(static_cast<int>(block % tr.heads)) : B.th.dim, 0,
               "block-label");
      if (pane != 0 || (bx - ox) > 1.0f) continue;  // row labels left of the first column of blocks
      for (std::int64_t rs = 0; rs < ra.slots(); ++rs) {
        const std::int64_t row = ra.index_at(rs);
        if (row < 0 || (rs % row_step != 0 && rs != ra.slots() - 1)) continue;
        const auto [rx, ry] = px(lay::slot_point(l, pane, bs, rs, 0));
        const std::string rl = labels_rows_tokens
                                   ? fit_text(tokens[static_cast<std::size_t>(row % tr.tokens)], kSmall, left - 10.0f)
                                   : "head " + std::to_string(row);
        B.text(rx - 5.0f, ry + cs * 0.5f + text_ascent(kSmall) * 0.5f - 1.0f, rl, kSmall, B.th.text, 2);
      }
    }
  }
  // Legend: signed scores on the diverging map, else one hue per head.
  float lx = kMargin, ly = B.bottom + 14.0f;
  if (tint == Tint::Diverging) {
    lx += B.text(lx, ly + 11, "score:", kSmall, B.th.text) + 8;
    for (const Swatch& sw : diverging_legend(vmax)) {
      B.rect(lx, ly, lx + 13, ly + 13, to_color(sw.color), "legend-diverging");
      lx += 18 + B.text(lx + 18, ly + 11, sw.text, kSmall, B.th.text) + 12;
    }
  }
  for (int h = 0; tint != Tint::Diverging && h < std::min(tr.heads, 10); ++h) {
    B.rect(lx, ly, lx + 13, ly + 13, head_color(h), "legend-head");
    lx += 18 + B.text(lx + 18, ly + 11, "head " + std::to_string(h), kSmall, B.th.text) + 12;
  }
  if (tint != Tint::Diverging && tr.heads > 10)
    B.text(lx, ly + 11, "(colours repeat every 10 heads)", kSmall, B.th.dim);
  if (st == lay::Step::Mask) {
    lx = std::max(lx, kMargin);
    ly += 20;
    B.hatch(kMargin, ly, kMargin + 16, ly + 13, "legend-masked");
    B.text(kMargin + 22, ly + 11, "masked: -inf (key after the query)", kSmall, B.th.text);
  }
  B.grow(0, ly + 14);
  caption(
      B, o,
      {model_line(tr), "walkthrough step " + std::to_string(o.step + 1) + " of " + std::to_string(steps.size()) + ": " +
                           std::string(lay::step_name(st)) + " \xC2\xB7 " + std::to_string(tr.tokens) + " tokens"});
  return finish(B);
}

}  // namespace mhaviz::figure::detail
