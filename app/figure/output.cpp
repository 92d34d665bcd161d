// Drawing a Figure: the CPU rasteriser (PNG by stb_image_write), SVG, the JSON sidecar,
// and files that never replace an earlier one.
#include <errno.h>
#include <fcntl.h>
#include <stb_image_write.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "figure/figure.hpp"
#include "figure/sidecar.hpp"
#include "figure/text.hpp"

namespace mhaviz::figure {
namespace {

// [SECTION] Raster canvas (straight RGBA8, "over" compositing so transparent stays exact)
struct Raster {
  int w = 0, h = 0;
  std::vector<std::uint8_t> px;

  void blend(int x, int y, Color c, float cover) {
    if (x < 0 || y < 0 || x >= w || y >= h || cover <= 0.0f) return;
    std::uint8_t* d =
        &px[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 4];
    const float sa = static_cast<float>(c.a) / 255.0f * std::min(cover, 1.0f);
    if (sa >= 0.999f) {
      d[0] = c.r, d[1] = c.g, d[2] = c.b, d[3] = 255;
      return;
    }
    const float da = static_cast<float>(d[3]) / 255.0f;
    const float oa = sa + da * (1.0f - sa);
    if (oa <= 0.0f) return;
    const auto mix = [&](std::uint8_t s, std::uint8_t t) {
      return static_cast<std::uint8_t>(
          std::lround((static_cast<float>(s) * sa + static_cast<float>(t) * da * (1.0f - sa)) / oa));
    };
    d[0] = mix(c.r, d[0]);
    d[1] = mix(c.g, d[1]);
    d[2] = mix(c.b, d[2]);
    d[3] = static_cast<std::uint8_t>(std::lround(oa * 255.0f));
  }
};

// Edges in output pixels: logical coordinates are scaled and rounded, so rectangles that
// share an edge in logical pixels share it exactly in the image.
int edge(float v, int scale) { return static_cast<int>(std::lround(v * static_cast<float>(scale))); }

void fill_rect(Raster& c, const Prim& p, int scale) {
  const int x0 = std::max(0, edge(p.x0, scale)), x1 = std::min(c.w, edge(p.x1, scale));
  const int y0 = std::max(0, edge(p.y0, scale)), y1 = std::min(c.h, edge(p.y1, scale));
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) c.blend(x, y, p.color, 1.0f);
}

void fill_hatch(Raster& c, const Prim& p, int scale) {
  const int x0 = std::max(0, edge(p.x0, scale)), x1 = std::min(c.w, edge(p.x1, scale));
  const int y0 = std::max(0, edge(p.y0, scale)), y1 = std::min(c.h, edge(p.y1, scale));
  const int period = 6 * scale;  // stripes as in the app: 45 degrees, the same in every cell
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) c.blend(x, y, ((x + y) % period) < period / 2 ? p.color2 : p.color, 1.0f);
}

// Hidden cells: the masked hatch (the prim's colours), or the window's (the figure's) outside a sliding window.
void fill_cells(Raster& c, const Prim& p, const HeatmapInfo& h, const Figure& f, int scale) {
  const int period = 6 * scale;
  for (int i = 0; i < h.rows; ++i) {
    const int y0 = std::max(0, edge(h.y0 + static_cast<float>(i) * h.cell, scale));
    const int y1 = std::min(c.h, edge(h.y0 + static_cast<float>(i + 1) * h.cell - h.gap, scale));
    for (int j = 0; j < h.cols; ++j) {
      const std::size_t k =
          static_cast<std::size_t>(i) * static_cast<std::size_t>(h.cols) + static_cast<std::size_t>(j);
      const int x0 = std::max(0, edge(h.x0 + static_cast<float>(j) * h.cell, scale));
      const int x1 = std::min(c.w, edge(h.x0 + static_cast<float>(j + 1) * h.cell - h.gap, scale));
      const bool masked = h.hidden(k), window = masked && h.windowed(k);
      const Color a = window ? f.window_a : p.color, b = window ? f.window_b : p.color2;
      const Color fill = masked ? a : cell_color(h.scale, h.values[k]);
      for (int y = y0; y < y1; ++y) {
        std::uint8_t* d =
            &c.px[(static_cast<std::size_t>(y) * static_cast<std::size_t>(c.w) + static_cast<std::size_t>(x0)) * 4];
        for (int x = x0; x < x1; ++x, d += 4) {
          const Color col = masked ? (((x + y) % period) < period / 2 ? b : a) : fill;
          d[0] = col.r, d[1] = col.g, d[2] = col.b, d[3] = 255;
        }
      }
    }
  }
}

void fill_gradient(Raster& c, const Prim& p, int scale) {
  const int x0 = std::max(0, edge(p.x0, scale)), x1 = std::min(c.w, edge(p.x1, scale));
  const int y0 = std::max(0, edge(p.y0, scale)), y1 = std::min(c.h, edge(p.y1, scale));
  for (int y = y0; y < y1; ++y) {
    const float t = y1 - y0 > 1 ? 1.0f - static_cast<float>(y - y0) / static_cast<float>(y1 - y0 - 1) : 0.0f;
    const auto rgb = colormap_lut(p.cmap, static_cast<int>(std::lround(t * 255.0f)));
    const Color col{rgb[0], rgb[1], rgb[2], 255};
    for (int x = x0; x < x1; ++x) c.blend(x, y, col, 1.0f);
  }
}

void draw_line(Raster& c, const Prim& p, int scale) {
  const float s = static_cast<float>(scale);
  const float ax = p.x0 * s, ay = p.y0 * s, bx = p.x1 * s, by = p.y1 * s;
  const float r = std::max(0.5f, p.size * s * 0.5f);
  const int x0 = static_cast<int>(std::floor(std::min(ax, bx) - r - 1)),
            x1 = static_cast<int>(std::ceil(std::max(ax, bx) + r + 1));
  const int y0 = static_cast<int>(std::floor(std::min(ay, by) - r - 1)),
            y1 = static_cast<int>(std::ceil(std::max(ay, by) + r + 1));
  const float dx = bx - ax, dy = by - ay, len2 = std::max(1e-6f, dx * dx + dy * dy);
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) {
      const float px = static_cast<float>(x) + 0.5f, py = static_cast<float>(y) + 0.5f;
      const float t = std::clamp(((px - ax) * dx + (py - ay) * dy) / len2, 0.0f, 1.0f);
      const float ex = ax + t * dx - px, ey = ay + t * dy - py;
      const float d = std::sqrt(ex * ex + ey * ey);
      c.blend(x, y, p.color, std::clamp(r + 0.5f - d, 0.0f, 1.0f));
    }
}

void draw_frame(Raster& c, const Prim& p, int scale) {
  Prim l = p;
  const float xs[5] = {p.x0, p.x1, p.x1, p.x0, p.x0}, ys[5] = {p.y0, p.y0, p.y1, p.y1, p.y0};
  for (int k = 0; k < 4; ++k) {
    l.x0 = xs[k], l.y0 = ys[k], l.x1 = xs[k + 1], l.y1 = ys[k + 1];
    draw_line(c, l, scale);
  }
}

void draw_text(Raster& c, const Prim& p, int scale) {
  if (p.text.empty()) return;
  const float s = static_cast<float>(scale);
  const float size = p.size * s;
  const float tw = text_width(p.text, size, p.mono);
  const int pad = 2;
  const int bw = static_cast<int>(std::ceil(tw)) + 2 * pad, bh = static_cast<int>(std::ceil(size * 1.35f)) + 2 * pad;
  const float asc = text_ascent(size, p.mono);
  std::vector<std::uint8_t> cov(static_cast<std::size_t>(bw) * static_cast<std::size_t>(bh), 0);
  draw_text_coverage(cov, bw, bh, static_cast<float>(pad), static_cast<float>(pad) + asc, p.text, size, p.mono);
  const float shift = p.align == 1 ? tw * 0.5f : p.align == 2 ? tw : 0.0f;
  // Box origin in the canvas such that the baseline start lands on the anchor.
  const float ax = p.x0 * s, ay = p.y0 * s;
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      const std::uint8_t v =
          cov[static_cast<std::size_t>(by) * static_cast<std::size_t>(bw) + static_cast<std::size_t>(bx)];
      if (!v) continue;
      const float lx = static_cast<float>(bx - pad) - shift,
                  ly = static_cast<float>(by - pad) - asc;  // relative to anchor
      // Rotated -90 degrees for vertical text: (lx, ly) -> (ly, -lx).
      const float X = p.vertical ? ax + ly : ax + lx, Y = p.vertical ? ay - lx : ay + ly;
      c.blend(static_cast<int>(std::lround(X)), static_cast<int>(std::lround(Y)), p.color,
              static_cast<float>(v) / 255.0f);
    }
}

// [SECTION] SVG
std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const std::uint32_t cp = next_codepoint(s, i);
    // XML 1.0 allows neither most control characters nor broken UTF-8: replace them.
    if (cp == 0xFFFD || (cp < 0x20 && cp != 0x09 && cp != 0x0A && cp != 0x0D) || cp == 0xFFFE || cp == 0xFFFF) {
      o += "\xEF\xBF\xBD";
      continue;
    }
    switch (cp) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o.append(s, start, i - start);
    }
  }
  return o;
}

std::string svg_number(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", static_cast<double>(v));
  return b;
}

std::string rgb(Color c) {
  char b[16];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", c.r, c.g, c.b);
  return b;
}

std::string fill_attr(Color c) {
  std::string s = "fill=\"" + rgb(c) + "\"";
  if (c.a != 255) s += " fill-opacity=\"" + svg_number(static_cast<float>(c.a) / 255.0f) + "\"";
  return s;
}

}  // namespace

std::vector<std::uint8_t> rasterize(const Figure& f, int scale) {
  Raster c;
  c.w = f.width * scale;
  c.h = f.height * scale;
  c.px.assign(static_cast<std::size_t>(c.w) * static_cast<std::size_t>(c.h) * 4, 0);
  for (std::size_t i = 0; i < c.px.size(); i += 4) {
    c.px[i] = f.background.r, c.px[i + 1] = f.background.g, c.px[i + 2] = f.background.b, c.px[i + 3] = f.background.a;
  }
  for (const Prim& p : f.prims) {
    switch (p.kind) {
      case Prim::Kind::Rect: fill_rect(c, p, scale); break;
      case Prim::Kind::Hatch: fill_hatch(c, p, scale); break;
      case Prim::Kind::Gradient: fill_gradient(c, p, scale); break;
      case Prim::Kind::Line: draw_line(c, p, scale); break;
      case Prim::Kind::Frame: draw_frame(c, p, scale); break;
      case Prim::Kind::Text: draw_text(c, p, scale); break;
      case Prim::Kind::Cells: fill_cells(c, p, f.heatmaps[static_cast<std::size_t>(p.heatmap)], f, scale); break;
    }
  }
  return std::move(c.px);
}

std::string encode_png(const std::vector<std::uint8_t>& rgba, int width, int height) {
  std::string out;
  // stb's default (8) spends most of a large figure's time in zlib for a few per cent of size.
  stbi_write_png_compression_level = 4;
  const auto sink = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  if (!stbi_write_png_to_func(sink, &out, width, height, 4, rgba.data(), width * 4))
    throw std::runtime_error("cannot encode the PNG");
  return out;
}

std::string to_svg(const Figure& f) {
  std::string o;
  o.reserve(static_cast<std::size_t>(f.cells) * 80 + 4096);
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(f.width) + "\" height=\"" +
       std::to_string(f.height) + "\" viewBox=\"0 0 " + std::to_string(f.width) + " " + std::to_string(f.height) +
       "\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n";
  // Hatch patterns of masked cells and of cells outside a sliding window, and one vertical
  // gradient per colormap used by a colorbar.
  o += "<defs>\n";
  for (const auto& [id, a, b] :
       {std::tuple{"hatch", f.masked_a, f.masked_b}, std::tuple{"hatch-window", f.window_a, f.window_b}})
    o += std::string("<pattern id=\"") + id +
         "\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
         "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" " +
         fill_attr(a) + "/><rect width=\"3\" height=\"6\" " + fill_attr(b) + "/></pattern>\n";
  for (int k = 0; k < kColormapCount; ++k) {
    o += "<linearGradient id=\"cmap-" + std::string(colormap_name(static_cast<Colormap>(k))) +
         "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    for (int i = 0; i <= 16; ++i) {
      const auto c = colormap_lut(static_cast<Colormap>(k), i * 255 / 16);
      o += "<stop offset=\"" + svg_number(static_cast<float>(i) / 16.0f) + "\" stop-color=\"" +
           rgb({c[0], c[1], c[2], 255}) + "\"/>";
    }
    o += "</linearGradient>\n";
  }
  o += "</defs>\n";
  if (f.background.a > 0)
    o += "<rect class=\"background\" width=\"100%\" height=\"100%\" " + fill_attr(f.background) + "/>\n";
  for (const Prim& p : f.prims) {
    const std::string cls = p.cls.empty() ? "" : " class=\"" + esc(p.cls) + "\"";
    const std::string geom = "x=\"" + svg_number(p.x0) + "\" y=\"" + svg_number(p.y0) + "\" width=\"" +
                             svg_number(p.x1 - p.x0) + "\" height=\"" + svg_number(p.y1 - p.y0) + "\"";
    switch (p.kind) {
      case Prim::Kind::Rect:
        o += "<rect" + cls + " " + geom + " " + fill_attr(p.color);
        o += p.text.empty() ? "/>\n" : "><title>" + esc(p.text) + "</title></rect>\n";
        break;
      case Prim::Kind::Hatch:
        o += "<rect" + cls + " " + geom +
             (p.color == f.window_a && p.color2 == f.window_b ? " fill=\"url(#hatch-window)\""
                                                              : " fill=\"url(#hatch)\"");
        o += p.text.empty() ? "/>\n" : "><title>" + esc(p.text) + "</title></rect>\n";
        break;
      case Prim::Kind::Gradient:
        o += "<rect" + cls + " " + geom + " fill=\"url(#cmap-" + std::string(colormap_name(p.cmap)) + ")\"/>\n";
        break;
      case Prim::Kind::Frame:
        o += "<rect" + cls + " " + geom + " fill=\"none\" stroke=\"" + rgb(p.color) + "\" stroke-width=\"" +
             svg_number(p.size) + "\"/>\n";
        break;
      case Prim::Kind::Line:
        o += "<line" + cls + " x1=\"" + svg_number(p.x0) + "\" y1=\"" + svg_number(p.y0) + "\" x2=\"" +
             svg_number(p.x1) + "\" y2=\"" + svg_number(p.y1) + "\" stroke=\"" + rgb(p.color) + "\" stroke-width=\"" +
             svg_number(p.size) + "\"/>\n";
        break;
      case Prim::Kind::Cells: {
        const HeatmapInfo& h = f.heatmaps[static_cast<std::size_t>(p.heatmap)];
        const float w = h.cell - h.gap;
        for (int i = 0; i < h.rows; ++i)
          for (int j = 0; j < h.cols; ++j) {
            const std::size_t k =
                static_cast<std::size_t>(i) * static_cast<std::size_t>(h.cols) + static_cast<std::size_t>(j);
            const float v = h.values[k];
            const bool masked = h.hidden(k), window = masked && h.windowed(k);
            o += window   ? "<rect class=\"cell masked window\" x=\""
                 : masked ? "<rect class=\"cell masked\" x=\""
                          : "<rect class=\"cell\" x=\"";
            o += svg_number(h.x0 + static_cast<float>(j) * h.cell) + "\" y=\"" +
                 svg_number(h.y0 + static_cast<float>(i) * h.cell) + "\" width=\"" + svg_number(w) + "\" height=\"" +
                 svg_number(w) + "\" ";
            o += window   ? std::string("fill=\"url(#hatch-window)\"")
                 : masked ? std::string("fill=\"url(#hatch)\"")
                          : "fill=\"" + rgb(cell_color(h.scale, v)) + "\"";
            if (!h.row_names.empty()) {
              o += "><title>" + esc(h.row_names[static_cast<std::size_t>(i)]) + " \xE2\x86\x92 " +
                   esc(h.col_names[static_cast<std::size_t>(j)]) + ": " +
                   (window   ? std::string("outside the window")
                    : masked ? std::string("masked")
                             : svg_number(v)) +
                   "</title></rect>\n";
            } else {
              o += "/>\n";
            }
          }
        break;
      }
      case Prim::Kind::Text: {
        const char* anchor = p.align == 1 ? "middle" : p.align == 2 ? "end" : "start";
        o += "<text" + cls + " x=\"" + svg_number(p.x0) + "\" y=\"" + svg_number(p.y0) + "\" font-size=\"" +
             svg_number(p.size) + "\" text-anchor=\"" + anchor + "\" " + fill_attr(p.color);
        if (p.mono) o += " font-family=\"DejaVu Sans Mono, monospace\"";
        if (p.vertical) o += " transform=\"rotate(-90 " + svg_number(p.x0) + " " + svg_number(p.y0) + ")\"";
        o += ">" + esc(p.text) + "</text>\n";
        break;
      }
    }
  }
  o += "</svg>\n";
  return o;
}

nlohmann::json placement_json(const HeatmapPlacement& p) {
  return {{"head", p.head}, {"x0", p.x0},
          {"y0", p.y0},     {"x1", p.x1},
          {"y1", p.y1},     {"rows", p.rows},
          {"cols", p.cols}, {"vmin", p.vmin},
          {"vmax", p.vmax}, {"colormap", std::string(colormap_name(p.cmap))},
          {"log", p.log}};
}

std::string sidecar_json(const Figure& f, int scale, const std::string& image) {
  using nlohmann::json;
  const float s = static_cast<float>(scale);
  json heads = json::array();
  for (const auto& h : f.heatmaps) {
    json values = json::array();
    for (float v : h.values) values.push_back(std::isfinite(v) ? json(v) : json(nullptr));
    json hj = placement_json({h.head, h.x0 * s, h.y0 * s, (h.x0 + h.cell * static_cast<float>(h.cols)) * s,
                              (h.y0 + h.cell * static_cast<float>(h.rows)) * s, h.rows, h.cols, h.scale.vmin,
                              h.scale.vmax, h.scale.cmap, h.scale.log});
    hj["cell"] = h.cell * s;
    hj["values"] = values;
    // The cells hatched as outside a sliding window (row-major indices), when there are any.
    json windowed = json::array();
    for (std::size_t k = 0; k < h.values.size(); ++k)
      if (h.windowed(k)) windowed.push_back(k);
    if (!windowed.empty()) hj["windowed"] = windowed;
    heads.push_back(std::move(hj));
  }
  json maps;
  for (int k = 0; k < kColormapCount; ++k) {
    json lut = json::array();
    for (int i = 0; i < 256; ++i) {
      const auto c = colormap_lut(static_cast<Colormap>(k), i);
      lut.push_back({c[0], c[1], c[2]});
    }
    maps[std::string(colormap_name(static_cast<Colormap>(k)))] = lut;
  }
  const json j = {
      {"image", image},
      {"width", f.width * scale},
      {"height", f.height * scale},
      {"logical_width", f.width},
      {"logical_height", f.height},
      {"scale", scale},
      {"cells", f.cells},
      {"heads", heads},
      {"masked_colors", {{f.masked_a.r, f.masked_a.g, f.masked_a.b}, {f.masked_b.r, f.masked_b.g, f.masked_b.b}}},
      {"window_colors", {{f.window_a.r, f.window_a.g, f.window_a.b}, {f.window_b.r, f.window_b.g, f.window_b.b}}},
      {"caption", {{"y0", f.caption_y0 * s}, {"y1", f.caption_y1 * s}}},
      {"colormaps", maps}};
  return j.dump(1) + "\n";
}

std::string prims_json(const Figure& f, bool with_values) {
  using nlohmann::json;
  static constexpr const char* kKinds[] = {"rect", "hatch", "text", "line", "gradient", "cells", "frame"};
  const auto color = [](Color c) { return json{c.r, c.g, c.b, c.a}; };
  json prims = json::array();
  for (const Prim& p : f.prims) {
    json j = {{"kind", kKinds[static_cast<int>(p.kind)]},
              {"x0", p.x0},
              {"y0", p.y0},
              {"x1", p.x1},
              {"y1", p.y1},
              {"color", color(p.color)},
              {"class", p.cls}};
    // A text's width as the rasteriser measures it: tests find text drawn over text with it.
    if (p.kind == Prim::Kind::Text)
      j.update({{"text", p.text},
                {"size", p.size},
                {"align", p.align},
                {"vertical", p.vertical},
                {"mono", p.mono},
                {"text_width", text_width(p.text, p.size, p.mono)}});
    if (p.kind == Prim::Kind::Line || p.kind == Prim::Kind::Frame) j["width"] = p.size;
    if (p.kind == Prim::Kind::Cells) j["heatmap"] = p.heatmap;
    if (p.kind == Prim::Kind::Gradient) j["colormap"] = std::string(colormap_name(p.cmap));
    prims.push_back(std::move(j));
  }
  json heatmaps = json::array();
  for (const HeatmapInfo& h : f.heatmaps) {
    json values = json::array();
    if (with_values)
      for (float v : h.values) values.push_back(std::isfinite(v) ? json(v) : json(nullptr));
    heatmaps.push_back(placement_json({h.head, h.x0, h.y0, h.x0 + h.cell * static_cast<float>(h.cols),
                                       h.y0 + h.cell * static_cast<float>(h.rows), h.rows, h.cols, h.scale.vmin,
                                       h.scale.vmax, h.scale.cmap, h.scale.log}));
    heatmaps.back()["values"] = std::move(values);
  }
  json hits = json::array();
  for (const Hit& h : f.hits) hits.push_back({{"id", h.id}, {"x0", h.x0}, {"y0", h.y0}, {"x1", h.x1}, {"y1", h.y1}});
  return json{{"width", f.width}, {"height", f.height}, {"prims", prims}, {"heatmaps", heatmaps}, {"hits", hits}}
             .dump() +
         "\n";
}

// [SECTION] Files that never replace an earlier one
std::string write_new_file(const std::string& dir, const std::string& stem, const std::string& ext,
                           const std::string& contents) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const auto fail = [&](const std::string& what, int err) {
    throw std::runtime_error("cannot write in '" + dir + "': " + what +
                             (err ? std::string(": ") + std::strerror(err) : ""));
  };
  std::string tmpl = (fs::path(dir) / (".mhaviz-capture-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail("cannot create a file", errno);
  const std::string tmp(name.data());
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("write failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("write failed", err);
  }
  // link(2) fails with EEXIST instead of replacing: the first free name wins, atomically.
  for (int k = 1; k < 100000; ++k) {
    const std::string path = (fs::path(dir) / (stem + (k == 1 ? "" : "-" + std::to_string(k)) + ext)).string();
    if (::link(tmp.c_str(), path.c_str()) == 0) {
      ::unlink(tmp.c_str());
      return path;
    }
    if (errno != EEXIST) {
      const int err = errno;
      ::unlink(tmp.c_str());
      fail("cannot create '" + path + "'", err);
    }
  }
  ::unlink(tmp.c_str());
  fail("no free file name for " + stem + ext, 0);
  return {};
}

}  // namespace mhaviz::figure
