// The strip under the lesson: the shapes of the main tensors along the pipeline, the
// parameter count and the cost, following the controls. The figure library lays it out
// (figure/shapes_figure.hpp); hovering an item says what its dimensions are.
#include <imgui.h>

#include "app_state.hpp"
#include "figure/shapes_figure.hpp"

namespace mhaviz::gui {

std::string thousands(std::int64_t v) { return figure::thousands(v); }

void draw_shapes(AppState& s) {
  if (!s.compute.have_trace) {
    ImGui::TextDisabled("no trace");
    return;
  }
  const figure::ShapesStrip strip = figure::lesson_shapes(s.compute.trace, s.compute.model.parameter_count(),
                                                          s.compute.forward_ms, !s.compute.error.empty());
  figure::Options o = figure_options(s, figure::View::Grid, ImGui::GetContentRegionAvail());
  o.type = figure::Typography::for_font(ImGui::GetFontSize());
  o.type.title = ImGui::GetFontSize();  // the strip's text is the UI's size
  ScreenFigure& f = s.renderer.shapes;
  // Rebuilt when what it says changes (the forward's time changes with every forward).
  f.ensure(o, s.compute.generation * 2 + (s.compute.error.empty() ? 0 : 1),
           [strip](const figure::Options& x) { return figure::shapes_figure(strip, x); });
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  draw_figure(s, f, origin);
  ImGui::Dummy(ImVec2(static_cast<float>(f.fig.width), static_cast<float>(f.fig.height)));
  if (!ImGui::IsWindowHovered()) return;
  const figure::Hit* h = hit_under(f, ImGui::GetIO().MousePos);
  if (!h) return;
  for (const auto& it : strip.items)
    if (h->id == "shape_" + it.name) ImGui::SetTooltip("%s", it.tip.c_str());
}

}  // namespace mhaviz::gui
