// The walkthrough panel's pieces (panel_walkthrough.cpp, walk_controls.cpp,
// panel_walk_compare.cpp): what they share. The pictures themselves are the figure
// library's (figure/walk_figure.hpp); this panel adds the buttons, the keys, the hover and
// the inspector around them. Internal to app/gui.
#pragma once

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "figure/walk_figure.hpp"
#include "mhaviz/layout.hpp"
#include "variant_edit.hpp"
#include "walk_spec.hpp"
#include "walk_transport.hpp"

namespace mhaviz::gui::walk {

namespace lay = mhaviz::layout;

// The steps of what is walked through, for the controls.
struct Steps {
  const Trace& tr;
  std::vector<lay::Step> list;
  int count() const { return static_cast<int>(list.size()); }
};

inline ImU32 u32(figure::Rgb c) { return ImGui::ColorConvertFloat4ToU32(ImVec4(c.r, c.g, c.b, 1.0f)); }

// walk_controls.cpp
void handle_keys(AppState& s, Walkthrough& w, int n);
void draw_controls_row(AppState& s, const Steps& st);
void draw_step_chips(AppState& s, const Steps& st);
void draw_options_row(AppState& s, const Steps& st);
void draw_inspection(const figure::Inspection& in);
// panel_walk_compare.cpp
bool comparison_ready(AppState& s);
std::string big(std::int64_t v);
void draw_compare_tab(AppState& s);
// panel_walkthrough.cpp
void update_mistaken(AppState& s);
void draw_walkthrough_tab(AppState& s);
void apply_options(AppState& s);
// What the walkthrough shows: the trace, the model, the step position, the followed element.
figure::WalkInput walk_input(const AppState& s);

}  // namespace mhaviz::gui::walk
