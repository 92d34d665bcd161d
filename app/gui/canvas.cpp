// The screen's backend of the figure library (canvas.hpp): primitives into the ImGui draw
// list, heatmap cells through the GL heatmap shader (renderer.cpp), hits as widgets.
#include "canvas.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "app_state.hpp"
#include "figure/text.hpp"

namespace mhaviz::gui {
namespace {

ImU32 col(figure::Color c) { return IM_COL32(c.r, c.g, c.b, c.a); }

// [SECTION] Primitives
// Text with its baseline start at the anchor, as the CPU figures place it: the top of the
// line is the baseline minus the font's ascent at that size (the same DejaVu metrics).
void draw_text(AppState& s, ImDrawList* dl, const figure::Prim& p, ImVec2 o) {
  want_glyphs(s, p.text);
  // Characters beyond U+FFFF as the atlas's glyphs of their aliases (wide_chars.hpp).
  const std::string shown = s.ui.window.wide.to_field(p.text);
  ImFont* font = p.mono && s.ui.window.font_mono ? s.ui.window.font_mono : ImGui::GetFont();
  const float w = figure::text_width(p.text, p.size, p.mono);
  const float shift = p.align == 1 ? w * 0.5f : p.align == 2 ? w : 0.0f;
  const float asc = figure::text_ascent(p.size, p.mono);
  const ImVec2 anchor(o.x + p.x0, o.y + p.y0);
  if (!p.vertical) {
    dl->AddText(font, p.size, ImVec2(anchor.x - shift, anchor.y - asc), col(p.color), shown.c_str());
    return;
  }
  // Reading bottom to top: laid out horizontally from the anchor, then turned -90 degrees
  // about it, (dx, dy) -> (dy, -dx).
  const int start = dl->VtxBuffer.Size;
  dl->AddText(font, p.size, ImVec2(anchor.x - shift, anchor.y - asc), col(p.color), shown.c_str());
  for (int i = start; i < dl->VtxBuffer.Size; ++i) {
    ImDrawVert& v = dl->VtxBuffer[i];
    const float dx = v.pos.x - anchor.x, dy = v.pos.y - anchor.y;
    v.pos = ImVec2(anchor.x + dy, anchor.y - dx);
  }
}

// Stripes at 45 degrees, a 6-pixel period aligned to the screen, as the rasteriser draws them.
void draw_hatch(ImDrawList* dl, ImVec2 a, ImVec2 b, figure::Color c0, figure::Color c1) {
  dl->AddRectFilled(a, b, col(c0));
  dl->PushClipRect(a, b, true);
  const float h = b.y - a.y;
  const float first = std::floor((a.x + a.y) / 6.0f) * 6.0f - a.y - h - 6.0f;
  for (float k = first; k < b.x + 6.0f; k += 6.0f)
    dl->AddLine(ImVec2(k + 1.5f, b.y + 1.5f), ImVec2(k + h + 4.5f, a.y - 1.5f), col(c1), 2.2f);
  dl->PopClipRect();
}

void draw_cells(AppState& s, ScreenFigure& f, const figure::Prim& p, ImVec2 o) {
  const figure::HeatmapInfo& h = f.fig.heatmaps[static_cast<std::size_t>(p.heatmap)];
  const HeadTexture& t = f.textures[static_cast<std::size_t>(p.heatmap)];
  HeatmapDraw d;
  d.tex = t.tex;
  d.x0 = o.x + p.x0, d.y0 = o.y + p.y0, d.x1 = o.x + p.x1, d.y1 = o.y + p.y1;
  d.vmin = h.scale.vmin, d.vmax = h.scale.vmax, d.colormap = h.scale.cmap, d.log_scale = h.scale.log;
  d.cols = h.cols, d.rows = h.rows;
  d.gap = h.gap;
  d.hatch_a = p.color, d.hatch_b = p.color2;
  d.window_a = f.fig.window_a, d.window_b = f.fig.window_b;
  d.origin_x = o.x, d.origin_y = o.y;
  d.gap_color = f.fig.background;
  draw_heatmap_quad(s, d);
}

// [SECTION] Textures: uploaded when the figure changed, only where the values did
void sync(AppState& s, ScreenFigure& f) {
  if (f.uploaded == f.generation) return;
  const std::size_t n = f.fig.heatmaps.size();
  for (std::size_t k = n; k < f.textures.size(); ++k) delete_texture(f.textures[k]);
  f.textures.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const figure::HeatmapInfo& h = f.fig.heatmaps[k];
    HeadTexture& t = f.textures[k];
    // The shader tells the two hatches apart by the sign of the infinity.
    std::vector<float> up = h.values;
    for (std::size_t c = 0; c < h.mask.size(); ++c)
      if (h.windowed(c) && h.hidden(c)) up[c] = std::numeric_limits<float>::infinity();
    const bool same = t.width == h.cols && t.height == h.rows && t.values.size() == up.size() &&
                      std::memcmp(t.values.data(), up.data(), up.size() * sizeof(float)) == 0;
    if (same) continue;
    upload_texture(t, h.cols, h.rows, up.data());
    t.values = std::move(up);
    ++s.renderer.uploads_last_frame;
    ++s.renderer.uploads_total;
  }
  f.uploaded = f.generation;
}

}  // namespace

figure::Typography screen_type() { return figure::Typography::for_font(std::round(ImGui::GetFontSize())); }

ImVec2 to_screen(const ScreenFigure& f, float x, float y) { return {f.origin.x + x, f.origin.y + y}; }

void draw_figure(AppState& s, ScreenFigure& f, ImVec2 origin) {
  origin = ImVec2(std::floor(origin.x), std::floor(origin.y));
  f.origin = origin;
  f.drawn = true;
  sync(s, f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const figure::Figure& g = f.fig;
  if (g.background.a > 0)
    dl->AddRectFilled(origin, ImVec2(origin.x + static_cast<float>(g.width), origin.y + static_cast<float>(g.height)),
                      col(g.background));
  for (const figure::Prim& p : g.prims) {
    const ImVec2 a(origin.x + p.x0, origin.y + p.y0), b(origin.x + p.x1, origin.y + p.y1);
    switch (p.kind) {
      case figure::Prim::Kind::Rect: dl->AddRectFilled(a, b, col(p.color)); break;
      case figure::Prim::Kind::Hatch: draw_hatch(dl, a, b, p.color, p.color2); break;
      case figure::Prim::Kind::Line: dl->AddLine(a, b, col(p.color), p.size); break;
      case figure::Prim::Kind::Frame: dl->AddRect(a, b, col(p.color), 0.0f, 0, p.size); break;
      case figure::Prim::Kind::Text: draw_text(s, dl, p, origin); break;
      case figure::Prim::Kind::Gradient: {
        // The colour bar: the ramp texture (1 at the top) through the same colormap table.
        HeatmapDraw d;
        d.tex = s.renderer.colorbar.tex;
        d.x0 = a.x, d.y0 = a.y, d.x1 = b.x, d.y1 = b.y;
        d.vmin = 0.0f, d.vmax = 1.0f, d.colormap = p.cmap;
        d.cols = 1, d.rows = 256;
        draw_heatmap_quad(s, d);
        break;
      }
      case figure::Prim::Kind::Cells: draw_cells(s, f, p, origin); break;
    }
  }
  for (const figure::Hit& h : g.hits)
    s.hooks.widgets[h.id] = {origin.x + h.x0, origin.y + h.y0, origin.x + h.x1, origin.y + h.y1};
}

bool begin_figure_scroll(const ScreenFigure& f, const char* id, ImVec2 size) {
  if (static_cast<float>(f.fig.height) <= size.y + 0.5f) return false;
  ImGui::BeginChild(id, size, false);
  return true;
}

void end_figure_scroll(const ScreenFigure& f) {
  ImGui::SetCursorScreenPos(f.origin);
  ImGui::Dummy(ImVec2(static_cast<float>(f.fig.width), static_cast<float>(f.fig.height)));
  ImGui::EndChild();
}

CellUnder cell_under(const ScreenFigure& f, ImVec2 p) {
  CellUnder out;
  const float x = p.x - f.origin.x, y = p.y - f.origin.y;
  for (std::size_t k = 0; k < f.fig.heatmaps.size(); ++k) {
    const figure::HeatmapInfo& h = f.fig.heatmaps[k];
    const float x1 = h.x0 + h.cell * static_cast<float>(h.cols), y1 = h.y0 + h.cell * static_cast<float>(h.rows);
    if (x < h.x0 || y < h.y0 || x >= x1 || y >= y1) continue;
    out.heatmap = static_cast<int>(k);
    out.col = std::clamp(static_cast<int>((x - h.x0) / h.cell), 0, h.cols - 1);
    out.row = std::clamp(static_cast<int>((y - h.y0) / h.cell), 0, h.rows - 1);
    return out;
  }
  return out;
}

const figure::Hit* hit_under(const ScreenFigure& f, ImVec2 p) {
  const float x = p.x - f.origin.x, y = p.y - f.origin.y;
  for (const figure::Hit& h : f.fig.hits)
    if (x >= h.x0 && y >= h.y0 && x < h.x1 && y < h.y1) return &h;
  return nullptr;
}

}  // namespace mhaviz::gui
