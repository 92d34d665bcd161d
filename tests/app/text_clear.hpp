// Tests' check that a figure's text is readable: no text primitive over another, none past the
// canvas's right edge. Shared by the figure and model-view tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "figure/figure.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure_checks {

// The box a text primitive covers: its advance across, from the ascent above the baseline to
// the descent below it where a glyph goes below (horizontal text only). Digits do not: a y
// axis's "0" beside the x axis's first tick under the corner is not an overlap.
struct TextBox {
  float x0, y0, x1, y1;
  const figure::Prim* p;
};
inline std::vector<TextBox> text_boxes(const figure::Figure& f) {
  std::vector<TextBox> out;
  for (const figure::Prim& p : f.prims) {
    if (p.kind != figure::Prim::Kind::Text || p.vertical) continue;
    const float w = figure::text_width(p.text, p.size, p.mono);
    const float x0 = p.align == 0 ? p.x0 : p.align == 1 ? p.x0 - w * 0.5f : p.x0 - w;
    const bool descends = p.text.find_first_of("gjpqy,;()[]{}|/_") != std::string::npos;
    out.push_back(
        {x0, p.y0 - figure::text_ascent(p.size, p.mono), x0 + w, p.y0 + (descends ? p.size * 0.25f : 0.0f), &p});
  }
  return out;
}

// No text of f over another, none past the canvas's right edge.
inline void expect_text_clear(const figure::Figure& f, float width, const std::string& what) {
  const std::vector<TextBox> boxes = text_boxes(f);
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    EXPECT_LE(boxes[i].x1, width + 0.5f) << what << ": \"" << boxes[i].p->text << "\" leaves the canvas";
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const TextBox &a = boxes[i], &b = boxes[j];
      // Side by side, 2 px apart at least: closer, the advances of two words leave their ink
      // touching ("(2, 3, 6)keys").
      const bool overlap = a.x0 < b.x1 + 2.0f && b.x0 < a.x1 + 2.0f && a.y0 < b.y1 - 0.5f && b.y0 < a.y1 - 0.5f;
      EXPECT_FALSE(overlap) << what << ": \"" << a.p->text << "\" (" << a.p->cls << ") over \"" << b.p->text << "\" ("
                            << b.p->cls << ")";
    }
  }
}

}  // namespace mhaviz::figure_checks
