// The animated walkthrough of the multi-head pipeline (X -> Q/K/V -> view -> transpose ->
// scores -> mask -> softmax -> dropout -> context -> transpose back -> merge -> out_proj),
// and the wrapper vs weight-split comparison. Positions of every element come from
// core/layout (mhaviz/layout.hpp); values come from the Trace. Cells are draw-list
// rectangles, only for a window of rows and columns at large sizes (Introspection::Walk::cells).
#include <GLFW/glfw3.h>

#include "walk_frame.hpp"

namespace mhaviz::gui {
namespace walk {

void update_mistaken(AppState& s) {
  Walkthrough& w = s.walkthrough;
  if (w.mistaken_generation == s.compute.generation) return;
  try {
    w.mistake = figure::make_mistake(s.compute.model, s.compute.trace);
  } catch (const std::exception&) {
    w.mistake = figure::Mistake{mistaken_merge(s.compute.trace), {}};  // the model is ahead of the trace
  }
  w.mistaken_generation = s.compute.generation;
}

void draw_walkthrough_tab(AppState& s) {
  const float fh = ImGui::GetFontSize();
  Walkthrough& w = s.walkthrough;
  const Trace& tr = s.compute.trace;
  update_mistaken(s);
  Frame f(s, w, tr);
  f.b = std::clamp(s.view.batch, 0, std::max(0, tr.batch - 1));
  f.src = {&tr, f.b, w.mistaken, &w.mistake};
  f.dims = f.src.dims();
  f.steps = lay::steps_for(tr.config.variant, w.mistaken && tr.config.variant != Variant::Wrapper);
  const int n = step_count(f);
  f.sfh = std::round(ImGui::GetFontSize() * 0.8f);
  f.gap_px = std::ceil(f.sfh + 6.0f);
  f.pane_px = std::ceil(f.sfh * 1.5f);
  w.pos = std::clamp(w.pos, 0.0f, static_cast<float>(n - 1));
  w.target = std::clamp(w.target, 0.0f, static_cast<float>(n - 1));
  handle_keys(s, w, n);
  if (advance(w, glfwGetTime(), n)) s.last_event_time = w.last_time;  // keep frames coming while animating

  draw_controls_row(s, f);
  draw_step_chips(s, f);
  draw_options_row(s, f);

  const int k = std::clamp(static_cast<int>(std::floor(w.pos)), 0, n - 1);
  const float u = w.pos - static_cast<float>(k);
  const bool moving = u > 1e-4f && k + 1 < n;
  const int shown = moving && u >= 0.5f ? k + 1 : k;
  const lay::Step st = f.steps[static_cast<std::size_t>(shown)];
  const Variant v = tr.config.variant;

  // Title, code and shape of the step (the one being entered while animating).
  ImGui::Separator();
  ImGui::Text("Step %d of %d:  %s", shown + 1, n, std::string(lay::step_title(st, v)).c_str());
  {
    Shape sh = lay::step_layout(st, f.dims).shape();
    sh[0] = tr.batch;
    const std::string shape_line = std::string(lay::step_shape(st, v)) + " = " +
                                   (v == Variant::Wrapper && (st == lay::Step::Project || st == lay::Step::Context)
                                        ? std::to_string(tr.heads) + " x (" + std::to_string(tr.batch) + ", " +
                                              std::to_string(tr.tokens) + ", " + std::to_string(tr.head_dim) + ")"
                                        : shape_text(sh));
    ImGui::SameLine(0.0f, fh * 1.5f);
    ImGui::TextDisabled("%s", shape_line.c_str());
    std::string extra = "num_heads = " + std::to_string(tr.heads) + ", head_dim = " + std::to_string(tr.head_dim);
    if (v == Variant::Wrapper && st == lay::Step::Project)
      extra = std::to_string(tr.heads) + " modules, each its own W_query, W_key, W_value (" +
              std::to_string(tr.head_dim) + " x " + std::to_string(tr.d_in) + ")";
    if (v == Variant::FusedQkv && st == lay::Step::Project)
      extra = "per head a [q | k | v] chunk of 3 * head_dim columns";
    if (st == lay::Step::Softmax) extra = "1/√head_dim = 1/√" + std::to_string(tr.head_dim) + " = " + num(tr.scale());
    ImGui::PushFont(s.ui.font_mono ? s.ui.font_mono : ImGui::GetFont());
    const ImVec4 code_col = s.settings.dark ? ImVec4(0.55f, 0.8f, 1.0f, 1.0f) : ImVec4(0.05f, 0.3f, 0.6f, 1.0f);
    ImGui::TextColored(code_col, "%s", lay::step_code(st, v, tr.batch).c_str());
    ImGui::PopFont();
    ImGui::SameLine(0.0f, fh * 1.5f);
    ImGui::TextDisabled("%s", extra.c_str());
  }

  // Canvas, chain strip and inspector.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool has_chain = chain_of(f, shown).size() >= 2;
  const float strip_w = has_chain ? std::floor(std::clamp(avail.x * 0.3f, fh * 10.0f, fh * 17.0f)) : 0.0f;
  const bool matmul =
      st == lay::Step::Project || st == lay::Step::Scores || st == lay::Step::Context || st == lay::Step::OutProj;
  const float insp_h = st == lay::Step::Softmax ? fh * 9.5f : matmul ? fh * 5.8f : fh * 4.6f;
  const ImVec2 canvas_sz(avail.x - strip_w, std::max(fh * 6.0f, avail.y - insp_h));
  f.value_w = ImGui::GetFont()->CalcTextSizeA(f.sfh, FLT_MAX, 0.0f, "-0.00").x;
  for (const auto& t : s.compute.tokens) f.token_w = std::max(f.token_w, ImGui::CalcTextSize(t.c_str()).x);
  f.token_w = std::min(f.token_w, ImGui::CalcTextSize("abcdefgh").x);
  for (const auto& t : s.compute.tokens) f.key_w = std::max(f.key_w, small_w(f, t));
  choose_scale(f, ImVec2(canvas_sz.x - 8.0f, canvas_sz.y - 8.0f));
  use_step(f, k);
  const ImVec2 canvas = ImGui::GetCursorScreenPos();
  f.dl = ImGui::GetWindowDrawList();
  f.dl->PushClipRect(canvas, ImVec2(canvas.x + canvas_sz.x, canvas.y + canvas_sz.y), true);

  Scene cur = build_scene(f, k);
  place_scene(f, cur, ImVec2(canvas.x + 4.0f, canvas.y + 4.0f));
  w.hover_step = -1;
  w.hover_flat = -1;
  Introspection::Walk rec;
  if (!moving) {
    for (std::size_t i = 0; i < cur.grids.size(); ++i) {
      draw_grid(f, cur.grids[i], 1.0f, &rec, static_cast<int>(i) == cur.result);
      draw_operator(f, cur.grids[i], 1.0f);
    }
    // Mistake: outline cells that differ from the correct merge, in the merge step's result and
    // where out_proj reads it.
    const bool merge_shown = st == lay::Step::Merge || st == lay::Step::OutProj;
    if (merge_shown && w.mistaken && v != Variant::Wrapper) {
      const Grid& g = cur.grids[st == lay::Step::Merge ? static_cast<std::size_t>(cur.result) : 0];
      for_visible(f, g, [&](const lay::Cell&, std::int64_t flat, ImVec2 p) {
        const std::int64_t off = static_cast<std::int64_t>(f.b) * g.l.pane_numel() + flat;
        if (at(w.mistake.merged, off) != at(tr.context_merged, off))
          f.dl->AddRect(ImVec2(p.x + 1, p.y + 1), ImVec2(p.x + f.cs - 1, p.y + f.cs - 1), IM_COL32(255, 60, 50, 255),
                        0.0f, 0, 2.0f);
      });
    }
    // Hover: the result grid (and the correct merge next to the mistake).
    const ImVec2 m = ImGui::GetIO().MousePos;
    const bool inside = ImGui::IsWindowHovered() && m.x >= canvas.x && m.y >= canvas.y &&
                        m.x < canvas.x + canvas_sz.x && m.y < canvas.y + canvas_sz.y && !s.opts.ignore_mouse;
    if (inside) {
      const Grid& g = cur.grids[static_cast<std::size_t>(cur.result)];
      const lay::Point p{(m.x - g.origin.x) / f.cs + pane_shift(g), (m.y - g.origin.y) / f.cs};
      lay::Cell c;
      if (lay::cell_at(g.l, p, c) && pane_drawn(g, c.pane)) {
        w.hover_step = k;
        w.hover_flat = lay::index_of(g.l, c);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
          const bool same = w.pin_step == k && w.pin_flat == w.hover_flat;
          w.pin_step = same ? -1 : k;
          w.pin_flat = same ? -1 : w.hover_flat;
        }
      }
    }
    highlight_operands(f, cur, st, selected_in(f, k));
  } else {
    Frame fb = f;
    fb.cells = 0;
    use_step(fb, k + 1);
    Scene next = build_scene(fb, k + 1);
    place_scene(fb, next, ImVec2(canvas.x + 4.0f, canvas.y + 4.0f));
    const lay::Move mv =
        lay::step_move(f.steps[static_cast<std::size_t>(k)], f.steps[static_cast<std::size_t>(k + 1)], w.mistaken);
    const float e = lay::ease(u);
    // A new tensor (no element correspondence): cross-fade the scenes. Elements that move:
    // operands leave first, then the new ones come.
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
    if (mv != lay::Move::None) {
      draw_moving(f, fb, cur.grids[static_cast<std::size_t>(cur.result)],
                  next.grids[static_cast<std::size_t>(next.result)], mv, u);
    }
    f.cells += fb.cells;
  }
  f.dl->PopClipRect();
  ImGui::Dummy(canvas_sz);

  if (has_chain) {
    const ImVec2 sp(canvas.x + canvas_sz.x, canvas.y);
    f.dl->PushClipRect(sp, ImVec2(sp.x + strip_w, sp.y + canvas_sz.y), true);
    f.dl->AddLine(ImVec2(sp.x - 6.0f, sp.y), ImVec2(sp.x - 6.0f, sp.y + canvas_sz.y),
                  ImGui::GetColorU32(ImGuiCol_Separator));
    draw_chain_strip(f, shown, ImVec2(sp.x + 4.0f, sp.y), strip_w - 8.0f, canvas_sz.y - 4.0f);
    f.dl->PopClipRect();
  }
  ImGui::Separator();
  if (!moving && figure::step_tint(st) == Tint::Diverging)
    draw_diverging_legend(f, cur.grids[static_cast<std::size_t>(cur.result)].vmax);
  if (!moving) {
    const Inspection in = inspect(f, k, selected_in(f, k));
    draw_inspection(in);
    for (const auto& it : in.items)
      if (it.table.header.empty()) rec.inspector.push_back(it.line.text);
  } else
    ImGui::TextDisabled("%s", "Every element travels from its place in the old layout to its place in the new one.");
  // For tests (--layout-out / --state-out): position, target, playing, what was drawn this frame.
  rec.pos = w.pos;
  rec.target = w.target;
  rec.playing = w.playing;
  rec.cells = f.cells;
  rec.legend_swatches = f.legend_swatches;
  rec.plan_builds = w.plan.builds;
  s.probe.walk = std::move(rec);
}

// [SECTION] Options (--walkthrough SPEC)
void apply_options(AppState& s) {
  Walkthrough& w = s.walkthrough;
  w.options_applied = true;
  if (s.opts.walkthrough.empty()) return;
  const WalkSpec spec = parse_walk_spec(s.opts.walkthrough);  // checked when the options were parsed
  w.open = true;
  w.mistaken = spec.mistake;
  if (spec.compare) w.request_tab = 1;
  w.playing = spec.play;
  w.values = spec.numbers;
  w.show_weights = spec.weights;
  w.pane = spec.pane;
  w.pin_flat = spec.pin;
  if (spec.heads > 0) w.cmp_max_heads = spec.heads;
  const Variant v = s.compute.have_trace ? s.compute.trace.config.variant : s.doc.session.model.variant;
  const auto steps = lay::steps_for(v, w.mistaken && v != Variant::Wrapper);
  int idx = 0;
  lay::Step st;
  if (lay::parse_step(spec.step, st)) {
    for (int i = 0; i < static_cast<int>(steps.size()); ++i)
      if (steps[static_cast<std::size_t>(i)] == st) idx = i;
  } else if (!spec.step.empty()) {
    idx = std::clamp(std::stoi(spec.step) - 1, 0, static_cast<int>(steps.size()) - 1);
  }
  w.pos = w.target = static_cast<float>(idx) + spec.fraction;
  if (w.pin_flat >= 0) w.pin_step = idx;
}

}  // namespace walk

// [SECTION] Entry points
bool walkthrough_active(AppState& s) {
  Walkthrough& w = s.walkthrough;
  if (!w.options_applied) walk::apply_options(s);
  return w.open;
}

void draw_walkthrough(AppState& s) {
  refresh(s);
  Walkthrough& w = s.walkthrough;
  if (!s.compute.have_trace) {
    ImGui::TextWrapped("Nothing to walk through: %s", s.compute.error.c_str());
    return;
  }
  w.last_time = w.last_time == 0.0 ? glfwGetTime() : w.last_time;
  if (ImGui::BeginTabBar("walkthrough_tabs")) {
    const ImGuiTabItemFlags f0 = w.request_tab == 0 ? ImGuiTabItemFlags_SetSelected : 0;
    const ImGuiTabItemFlags f1 = w.request_tab == 1 ? ImGuiTabItemFlags_SetSelected : 0;
    w.request_tab = -1;
    if (ImGui::BeginTabItem("Walkthrough", nullptr, f0)) {
      w.tab = 0;
      walk::draw_walkthrough_tab(s);
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Wrapper vs weight split", nullptr, f1)) {
      w.tab = 1;
      ImGui::BeginChild("compare_scroll");  // the tables may be taller than the panel
      walk::draw_compare_tab(s);
      ImGui::EndChild();
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
}

}  // namespace mhaviz::gui
