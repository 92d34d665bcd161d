// The animated walkthrough of the multi-head pipeline (X -> Q/K/V -> view -> transpose ->
// scores -> mask -> softmax -> dropout -> context -> transpose back -> merge -> out_proj),
// and the wrapper vs weight-split comparison. Each picture is the figure library's
// (figure/walk_figure.hpp: the same one `mhaviz render --view step` and a capture draw);
// this panel adds the transport, the options, the hover and the inspector.
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
    w.mistake = figure::trace_mistake(s.compute.trace);  // the model is ahead of the trace
  }
  w.mistaken_generation = s.compute.generation;
}

figure::WalkInput walk_input(const AppState& s) {
  const Walkthrough& w = s.walkthrough;
  const Trace& tr = s.compute.trace;
  figure::WalkInput in;
  in.trace = &tr;
  in.model = &s.compute.model;
  in.tokens = &s.compute.tokens;
  in.mistake = &w.mistake;
  in.batch = std::clamp(s.view.batch, 0, std::max(0, tr.batch - 1));
  in.mistaken = w.mistaken && tr.config.variant != Variant::Wrapper;
  in.pane = w.pane;
  in.numbers = w.values && !s.opts.hide_cell_values;
  in.weights = w.show_weights;
  in.pos = w.pos;
  in.selected_step = w.hover_step >= 0 ? w.hover_step : w.pin_step;
  in.selected_flat = w.hover_step >= 0 ? w.hover_flat : w.pin_flat;
  return in;
}

namespace {

// The picture for this frame: rebuilt while it moves, when the input or the canvas changed
// (a new hover, step, option or forward), else the one on screen stays.
const figure::WalkPicture& picture(AppState& s, const figure::WalkInput& in, ImVec2 canvas) {
  Walkthrough& w = s.walkthrough;
  const figure::Options o = figure_options(s, figure::View::Step, canvas);
  figure::update_walk_plan(w.plan, in, o);
  if (w.picture_generation != s.compute.generation || !(w.picture_in == in) || !(w.picture_opts == o) ||
      s.renderer.walk.generation == 0) {
    w.picture = figure::walk_picture(in, w.plan, o);
    w.picture_in = in;
    w.picture_opts = o;
    w.picture_generation = s.compute.generation;
    ScreenFigure& f = s.renderer.walk;
    f.opts = o;
    f.set(w.picture.fig);
    // A capture: this picture (the same input and plan) in the capture's theme.
    const figure::WalkPlan plan = w.plan;
    f.rebuild = [in, plan](const figure::Options& x) { return figure::walk_picture(in, plan, x).fig; };
    const int n = static_cast<int>(figure::walk_steps(in).size());
    f.stem = "step" + std::to_string(std::clamp(static_cast<int>(std::lround(in.pos)), 0, n - 1) + 1);
  }
  return w.picture;
}

// Hover and click on the result grid of the step shown (never while it moves).
void hover(AppState& s, const figure::WalkPicture& pic, ImVec2 origin, ImVec2 size) {
  Walkthrough& w = s.walkthrough;
  const int k = static_cast<int>(std::floor(std::clamp(w.pos, 0.0f, 1e9f)));
  w.hover_step = -1;
  w.hover_flat = -1;
  const ImVec2 m = ImGui::GetIO().MousePos;
  const bool inside = ImGui::IsWindowHovered() && m.x >= origin.x && m.y >= origin.y && m.x < origin.x + size.x &&
                      m.y < origin.y + size.y && !s.opts.ignore_mouse;
  lay::Cell c;
  if (!inside || !pic.cell_at(m.x - origin.x, m.y - origin.y, c)) return;
  w.hover_step = k;
  w.hover_flat = lay::index_of(pic.result, c);
  if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    const bool same = w.pin_step == k && w.pin_flat == w.hover_flat;
    w.pin_step = same ? -1 : k;
    w.pin_flat = same ? -1 : w.hover_flat;
  }
}

}  // namespace

void draw_walkthrough_tab(AppState& s) {
  const float fh = ImGui::GetFontSize();
  Walkthrough& w = s.walkthrough;
  const Trace& tr = s.compute.trace;
  update_mistaken(s);
  const Steps steps{tr, lay::steps_for(lay::dims_for(tr.config, 1, tr.tokens, tr.d_in), w.mistaken)};
  const int n = steps.count();
  w.pos = std::clamp(w.pos, 0.0f, static_cast<float>(n - 1));
  w.target = std::clamp(w.target, 0.0f, static_cast<float>(n - 1));
  handle_keys(s, w, n);
  if (advance(w, glfwGetTime(), n)) s.last_event_time = w.last_time;  // keep frames coming while animating

  draw_controls_row(s, steps);
  draw_step_chips(s, steps);
  draw_options_row(s, steps);
  ImGui::Separator();

  // The picture, then the inspector under it.
  const int k = std::clamp(static_cast<int>(std::floor(w.pos)), 0, n - 1);
  const bool still = w.pos - static_cast<float>(k) <= 1e-4f || k + 1 >= n;
  const lay::Step st = steps.list[static_cast<std::size_t>(k)];
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool matmul =
      st == lay::Step::Project || st == lay::Step::Scores || st == lay::Step::Context || st == lay::Step::OutProj;
  // The inspector's height, up to 40% of what is left: with a large font on 1024 × 768 the
  // softmax step's table left the figure its header only. It also gives way, down to two
  // lines, to keep the figure 12 lines: with a 24-pixel font on 1280 × 800 its 40% left the
  // context step's figure 180 px and 4-pixel cells. Past that it scrolls.
  const float insp_full = st == lay::Step::Softmax ? fh * 9.5f : matmul ? fh * 5.8f : fh * 4.6f;
  const float insp_room = std::min(avail.y * 0.4f, avail.y - fh * 12.0f);
  const float two_lines =
      ImGui::GetTextLineHeightWithSpacing() * 2.0f + ImGui::GetStyle().ItemSpacing.y;  // + separator
  const float insp_h = std::min(insp_full, std::max(two_lines, insp_room));
  const ImVec2 canvas(avail.x, std::max(fh * 6.0f, avail.y - insp_h));
  const figure::WalkInput in = walk_input(s);
  const figure::WalkPicture& pic = picture(s, in, canvas);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(origin, ImVec2(origin.x + canvas.x, origin.y + canvas.y), true);
  s.renderer.centre = &s.renderer.walk;
  draw_figure(s, s.renderer.walk, origin);
  dl->PopClipRect();
  ImGui::Dummy(canvas);
  record_widget(s, "walk_canvas");
  hover(s, pic, origin, canvas);

  ImGui::Separator();
  Introspection::Walk rec;
  static_cast<figure::WalkRecord&>(rec) = pic.record;
  ImGui::BeginChild("inspector", ImVec2(0.0f, 0.0f), false,
                    insp_h < insp_full ? ImGuiWindowFlags_None : ImGuiWindowFlags_NoScrollbar);
  if (still) {
    const figure::Inspection insp = figure::inspect(in, k, figure::walk_selected_in(in, k), s.view.head);
    draw_inspection(insp);
    for (const auto& it : insp.items)
      if (it.table.header.empty()) rec.inspector.push_back(it.line.text);
  } else {
    ImGui::TextDisabled("%s", "Every element travels from its place in the old layout to its place in the new one.");
  }
  ImGui::EndChild();
  // For tests (--layout-out / --state-out): position, target, playing, what was drawn.
  rec.pos = w.pos;
  rec.target = w.target;
  rec.playing = w.playing;
  rec.plan_builds = w.plan.builds;
  s.hooks.walk = std::move(rec);
}

// [SECTION] Options (--walkthrough SPEC)
void apply_options(AppState& s) {
  Walkthrough& w = s.walkthrough;
  w.options_applied = true;
  if (s.opts.walkthrough.empty()) return;
  const WalkSpec spec = parse_walk_spec(s.opts.walkthrough);  // checked when the options were parsed
  s.centre = Centre::Walkthrough;
  w.mistaken = spec.mistake;
  if (spec.compare) w.request_tab = 1;
  w.compare_part = spec.variants ? 1 : 0;
  w.playing = spec.play;
  w.values = spec.numbers;
  w.show_weights = spec.weights;
  w.pane = spec.pane;
  w.pin_flat = spec.pin;
  if (spec.heads > 0) w.cmp_max_heads = spec.heads;
  const ModelConfig& c = s.compute.have_trace ? s.compute.trace.config : s.doc.session.model;
  const auto steps = lay::steps_for(lay::dims_for(c, 1, 1, 1), w.mistaken);
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
    if (ImGui::BeginTabItem("Compare variants", nullptr, f1)) {
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
