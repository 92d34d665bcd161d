// The screen's backend of the figure library (app/figure): a figure::Figure drawn into the
// current ImGui window (shapes and text into its draw list, heatmap cells as GL textures
// through the heatmap shader), its hits recorded as widgets for the tests, and what is under
// the pointer. Panels build figures with the figure library and add only their widgets
// around them; a capture draws the very same figure on the CPU.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "figure/figure.hpp"

namespace mhaviz::gui {

struct AppState;

// A GL_R32F texture of values, one texel per cell, and the values it holds.
struct HeadTexture {
  unsigned int tex = 0;
  int width = 0, height = 0;
  std::vector<float> values;  // uploaded values (hidden cells -inf; outside a sliding window +inf)
};

// A figure on screen: the figure, bumped on every rebuild, and the GL textures of its
// heatmaps (deleted by renderer_shutdown with the Renderer that holds the ScreenFigure).
struct ScreenFigure {
  figure::Figure fig;
  figure::Options opts;                        // what it was built with (a capture reuses them)
  std::uint64_t source = ~std::uint64_t{0};    // generation of the data it was built from
  std::uint64_t generation = 0;                // bumped by set()
  std::uint64_t uploaded = ~std::uint64_t{0};  // generation the textures hold
  std::vector<HeadTexture> textures;           // one per heatmap
  ImVec2 origin{0, 0};                         // where it was drawn last (screen pixels)
  bool drawn = false;                          // drawn this frame
  // The same figure for other options (a capture's theme and caption) and the name a capture
  // of it gets ("heads-weights", "step5"); set by the panel that shows it.
  std::function<figure::Figure(const figure::Options&)> rebuild;
  std::string stem;
  void set(figure::Figure f) {
    fig = std::move(f);
    ++generation;
  }
  // Builds with build(o) when the options or the data changed since the last build (never
  // per frame otherwise); true when it did.
  // build must stay valid after the call (it is kept as rebuild): capture the app's state,
  // not the caller's locals.
  bool ensure(const figure::Options& o, std::uint64_t data,
              std::function<figure::Figure(const figure::Options&)> build) {
    rebuild = std::move(build);
    if (data == source && o == opts && generation > 0) return false;
    figure::Figure f = rebuild(o);
    opts = o;
    source = data;
    set(std::move(f));
    return true;
  }
};

// The figure's typography for the app's UI font.
figure::Typography screen_type();

// Draws f.fig with its top-left at `origin`: a background of the figure's colour, every
// primitive, the heatmaps' textures (uploaded when the figure changed, only those whose
// values differ). Records every hit as a widget (tests find "head_1", "thumb_2_1" ...).
void draw_figure(AppState& s, ScreenFigure& f, ImVec2 origin);

// A figure that keeps readable sizes on a short canvas can be taller than it (the KV cache's
// step, the Train view): where f is, this begins a child window of `size` that scrolls it and
// returns true (the caller draws the figure at the cursor, then calls end_figure_scroll).
bool begin_figure_scroll(const ScreenFigure& f, const char* id, ImVec2 size);
// Reserves the figure's size in the child (its scroll range) and ends it.
void end_figure_scroll(const ScreenFigure& f);

// The heatmap cell under a screen point: heatmap index, row and column (-1 when none).
struct CellUnder {
  int heatmap = -1, row = -1, col = -1;
};
CellUnder cell_under(const ScreenFigure& f, ImVec2 p);
// The hit under a screen point (nullptr when none).
const figure::Hit* hit_under(const ScreenFigure& f, ImVec2 p);
// A screen rectangle of a figure rectangle.
ImVec2 to_screen(const ScreenFigure& f, float x, float y);

}  // namespace mhaviz::gui
