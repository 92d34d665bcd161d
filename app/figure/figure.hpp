// Teaching figures as display lists: the one layout of every picture mhaviz shows. The app
// draws a figure on screen (app/gui/canvas.cpp: ImGui draw lists, GL textures for heatmap
// cells), `mhaviz render` and the app's captures draw the same list on the CPU (rasterize)
// or as SVG (to_svg), so a slide and the screen cannot disagree: they are one object.
//
// A view is built once, here, by code free of ImGui types: plain floats in logical pixels,
// text measured with the embedded DejaVu fonts' metrics (text.hpp), which are the fonts the
// app draws with. Cell positions are whole logical pixels where cells are at least a pixel,
// so every cell of a heatmap covers the same number of output pixels at every scale.
//
// Adding a view: a builder here returning a Figure for an Options (its canvas and
// typography included), with `hits` naming what the screen makes interactive; the app's
// panel draws it with draw_figure and adds only its widgets around it; a capture builds the
// same figure with the capture's theme and a caption.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "figure/colormap.hpp"
#include "figure/walk_values.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz::figure {

enum class View { Grid, Head, Step };

// From this many tokens a linear colour scale of the weights is one flat colour (each row's
// weights average 1/T): render and the app start on a logarithmic scale there.
inline constexpr int kLogScaleFromTokens = 64;

// Text sizes of a figure in logical pixels. `mhaviz render` uses the defaults; the app
// derives them from its UI font (for_font), so a figure reads like the window around it.
struct Typography {
  float title = 17.0f;  // figure title
  float tile = 14.0f;   // "Head 0", pane titles
  float label = 13.0f;  // token labels
  float small = 12.0f;  // ticks, legend, caption, values in cells
  static Typography for_font(float px);
  bool operator==(const Typography&) const = default;
};

// The space a figure fills, in logical pixels: the app's canvas on screen, render's --size.
struct Canvas {
  float width = 1280.0f;
  float height = 720.0f;
  bool operator==(const Canvas&) const = default;
};

struct Options {
  View view = View::Grid;
  int head = 0;           // View::Head: the head shown; View::Grid: the selected head (framed)
  int step = 0;           // View::Step: index into layout::steps_for(dims, mistaken)
  bool mistaken = false;  // View::Step: the seeds' merge without the transpose back (gqa: .repeat)
  int pane = 3;           // View::Step: which of Q | K | V the projection steps show (0, 1, 2; 3 all)
  // View::Step with the mistake: the model whose out_proj turns the scrambled merge into the
  // wrong output shown (without it the output step shows the trace's correct output).
  const Model* model = nullptr;
  Stage stage = Stage::Weights;
  int batch = 0;
  Colormap colormap = Colormap::Viridis;  // sequential stages (weights, dropped)
  bool diverging_for_signed = true;       // signed score stages use the diverging map
  bool shared_scale = true;               // one value range for all heads
  // One range for stages 1-3 (raw, masked, scaled scores): the 1/√hd of stage 3 then shows
  // as paler colours instead of being undone by a new range.
  bool scores_one_scale = false;
  bool log_scale = false;     // weights on a logarithmic scale (long sequences)
  bool values = true;         // numbers in cells when they fit
  bool dropout_marks = true;  // a cross on each cell dropout zeroed, when cells are large enough
  bool dark = false;
  bool transparent = false;
  bool caption = true;
  bool frame_selected = false;  // View::Grid: frame the selected head (the app does)
  Canvas canvas;
  Typography type;
  // A trained GPT's layer shown through the chapter-3 module (gpt_layer.hpp): heads are
  // titled "Head L.H" and the caption's model line is model_caption instead of the
  // module's variant and seed.
  int layer = -1;
  std::string model_caption;
  bool operator==(const Options&) const = default;
};

struct Color {
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
  bool operator==(const Color&) const = default;
};

// One drawing primitive, in logical pixels.
struct Prim {
  enum class Kind { Rect, Hatch, Text, Line, Gradient, Cells, Frame };
  Kind kind = Kind::Rect;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // rect corners; line ends; text anchor (x0, baseline y0)
  Color color, color2;                   // hatch: stripes color2 over color
  float size = 0;                        // text: font pixel height; line, frame: width
  int align = 0;                         // text: 0 left, 1 centre, 2 right (of the reading direction)
  bool vertical = false;                 // text reads bottom to top, anchor = start of the baseline
  bool mono = false;                     // text in DejaVu Sans Mono
  Colormap cmap = Colormap::Viridis;     // gradient: t = 1 at y0, 0 at y1
  int heatmap = -1;                      // cells: index into Figure::heatmaps (one class "cell" rect per cell)
  std::string text;
  std::string cls;  // SVG class: "cell", "cell masked", "label", "caption", ...
  bool operator==(const Prim&) const = default;
};

// Why a heatmap hides a cell; each kind is drawn and named differently.
enum class CellMask : std::uint8_t {
  Visible = 0,
  Causal = 1,  // the key comes after the query: hatched in greys
  Window = 2,  // the key is a sliding window's W or more tokens back: hatched in blue-greys
};

// A heatmap as drawn: where its cells are and what they hold (drawing, sidecars, hit tests).
struct HeatmapInfo {
  int head = 0;                    // what the heatmap shows: a head, or layer * n_head + head
  float x0 = 0, y0 = 0, cell = 1;  // logical pixels; cell (i, j) at (x0 + j*cell, y0 + i*cell)
  int rows = 0, cols = 0;
  ColorScale scale;
  std::vector<float> values;                      // row-major; hidden cells -inf
  std::vector<CellMask> mask;                     // row-major why a cell is hidden; empty: by values alone
  float gap = 0;                                  // background left between cells (right and bottom of each cell)
  std::vector<std::string> row_names, col_names;  // queries, keys (SVG cell titles, tooltips)
  bool hidden(std::size_t k) const { return std::isinf(values[k]) && values[k] < 0; }
  bool windowed(std::size_t k) const { return !mask.empty() && mask[k] == CellMask::Window; }
};
// The colour of a visible cell, as the rasteriser, the SVG and the screen's shader map it.
Color cell_color(const ColorScale& s, float v);

// A named region the screen makes interactive and tests find ("head_1", "thumb_2_1").
struct Hit {
  std::string id;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool operator==(const Hit&) const = default;
};

struct Figure {
  int width = 0, height = 0;  // logical pixels
  Color background;           // a = 0 when transparent
  std::vector<Prim> prims;    // in drawing order
  std::vector<HeatmapInfo> heatmaps;
  std::vector<Hit> hits;
  int cells = 0;                         // prims with class "cell ..." (one per matrix element drawn)
  Color masked_a, masked_b;              // the hatch of masked cells
  Color window_a, window_b;              // the hatch of cells outside a sliding window
  float caption_y0 = 0, caption_y1 = 0;  // the caption band (0, 0 without a caption)
  const Hit* hit(const std::string& id) const;
};

// Throws std::invalid_argument("FIELD: problem VALUE") for a head, batch or step out of range.
Figure build_figure(const Trace& trace, const std::vector<std::string>& tokens, const Options& o);

// Head o.head's attention weights in two traces side by side (the wrapper's and the weight
// split's in the comparison tab), on one colour scale, within o.canvas.
Figure compare_figure(const Trace& a, const Trace& b, const std::string& title_a, const std::string& title_b,
                      const std::vector<std::string>& tokens, const Options& o);

// The model view of a trained GPT (model_figure.cpp): every layer x head as a thumbnail of
// its attention weights (rows: layers from 0 at the top; columns: heads), on one shared
// colour scale, and with a head selected that head large beside the grid with its tokens,
// its weights in the cells when they fit and the colour bar. A thumbnail smaller than the
// sequence shows each of its pixels as the largest weight of the block of cells it covers,
// so a sharp diagonal stays visible at GPT-2 size.
struct ModelThumbnails;
struct ModelView {
  int n_layer = 0, n_head = 0, tokens = 0;
  // n_layer * n_head pointers, layer-major, each to a (tokens, tokens) row-major matrix.
  std::vector<const float*> weights;
  std::vector<std::string> token_names;  // tokens display strings (the large head's labels); empty: none
  std::string title;                     // what is shown, e.g. the model's name and the text
  std::string caption;                   // the model line (layers, heads, width, tokens)
  // Optional head-detector overlay: pattern name and scores[layer * n_head + head] (NaN: no
  // score). Every score is printed under its thumbnail and the top five are framed.
  std::string pattern;
  std::vector<float> scores;
  int selected_layer = -1, selected_head = -1;  // framed, and drawn large beside the grid
  // Heads ablated in the run shown (layer * n_head + head): each thumbnail crossed out.
  std::vector<int> ablated;
  std::string bar_title;  // what the colour bar measures; empty: "weight" (the softmax weights)
  // Grouped-query attention: kv_heads K/V heads, each shared by n_head / kv_heads query
  // heads side by side (query head h reads K/V head h / (n_head / kv_heads)); each group is
  // drawn apart under a bracket "K/V g". 0 or n_head: one K/V head per query head, no groups.
  int kv_heads = 0;
  // Each layer's sliding window W (0: full attention; empty: none anywhere): its row is
  // labelled "sliding W = 512" on a band, and keys W or more tokens back are hatched as the
  // window's cells.
  std::vector<int> windows;
  // What the subtitle says of the model first (e.g. "qwen3", "28 layers", "16 query heads
  // sharing 8 K/V heads"); empty: "N layers × H heads".
  std::vector<std::string> model_parts;
  int window(int layer) const { return windows.empty() ? 0 : windows[static_cast<std::size_t>(layer)]; }
  int group() const { return kv_heads > 0 && kv_heads < n_head ? n_head / kv_heads : 1; }
  // Thumbnails pooled already (the app pools them off its drawing thread); used when they
  // are the pooling, colormap and scale this figure chooses, else pooled again.
  const ModelThumbnails* thumbs = nullptr;
  bool selected() const {
    return selected_layer >= 0 && selected_layer < n_layer && selected_head >= 0 && selected_head < n_head;
  }
};
// The block size of a model-view thumbnail of `side` pixels for T tokens (1: one pixel or more
// per cell).
inline int thumbnail_factor(int T, float side) {
  return static_cast<float>(T) <= side ? 1 : static_cast<int>(std::ceil(static_cast<float>(T) / side));
}
// w: (T, T) weights, row-major, causal (and within a sliding window of `window` keys when
// not 0) -> (n, n) with n = ceil(T / f): each pixel the largest weight of its f x f block of
// visible cells (-inf where a block holds only masked cells: above the diagonal the causal
// mask's, below it the window's).
std::vector<float> pool_max(const float* w, int T, int f, int n, int window = 0);
// Every thumbnail pooled by f (n = ceil(tokens / f) pixels a side) and the one colour scale
// they share (from 0 to the largest pooled weight; log_scale: at most four decades).
struct ModelThumbnails {
  int f = 1, n = 0;
  Colormap cmap = Colormap::Viridis;       // as asked
  bool log_scale = false;                  // as asked (scale.log may be off: one value everywhere)
  std::vector<std::vector<float>> pooled;  // n_layer * n_head of (n, n), layer-major
  ColorScale scale;
};
ModelThumbnails model_thumbnails(const ModelView& m, int f, Colormap cmap, bool log_scale);
// The pooling build_model_figure chooses for m on o's canvas and typography (the app pools
// with it before building).
int model_pool_factor(const ModelView& m, const Options& o);
// A detector's five highest scores as layer * n_head + head, highest first (ties: lower
// layer, then head, as top_heads orders them); empty without scores.
std::vector<int> model_top_heads(const ModelView& m);
// The figure filling o.canvas: header, grid, the selected head large, colour bar, legend;
// caption when o.caption. Hits "thumb_L_H" for every thumbnail, "model_big" for the large
// head; heatmaps: the thumbnails layer-major, then the large head. Uses o.canvas, o.type,
// o.dark, o.transparent, o.caption, o.colormap, o.log_scale and o.values. Throws
// std::invalid_argument when the pointers, scores or token names do not match the sizes.
Figure build_model_figure(const ModelView& m, const Options& o);

// RGBA8, (scale*width) x (scale*height), row-major top-down.
std::vector<std::uint8_t> rasterize(const Figure& f, int scale);
std::string encode_png(const std::vector<std::uint8_t>& rgba, int width, int height);
std::string to_svg(const Figure& f);
// Where each heatmap's cells are in the output image at `scale`, their values, the colormap
// tables and the masked colours, as JSON (the GUI's --screenshot sidecar, for an image file).
std::string sidecar_json(const Figure& f, int scale, const std::string& image);
// Every primitive, heatmap and hit of a figure as JSON, for tests that compare two lists
// (the screen's and a capture's): geometry, text, classes and colours; the heatmaps' values
// when asked (a 12-head lesson of 256 tokens has 786,432).
std::string prims_json(const Figure& f, bool values);

// A colorbar tick with enough decimals to tell ticks `step` apart (two significant digits on
// a log scale). Values in cells: format_value (walk_values.hpp), which the app prints through too.
std::string format_tick(float v, float step, bool log);

// Whether the walkthrough draws a config: the chapter-3 variants, gqa (its K/V heads and their
// expansion) and mla (its latent and the keys and values up-projected from it), with their
// options (a sliding window, QK-norm, RoPE): every variant a session holds today. The one rule
// the app's W, its menu and `render --view step` ask, for a variant added later.
bool has_steps(const ModelConfig& c);
// The walkthrough steps of a trace's variant, and a step given as an index or a name.
int step_count(const Trace& trace, bool mistaken);
bool parse_step_arg(const Trace& trace, bool mistaken, const std::string& arg, int& out);

// Files that never replace an earlier one: writes `contents` to DIR/STEM.EXT, or
// STEM-2.EXT, STEM-3.EXT ... when taken (the name is claimed atomically with link(2), so
// two captures never share a name and a reader never sees a partial file). Creates DIR.
// Returns the path written; throws std::runtime_error with the reason.
std::string write_new_file(const std::string& dir, const std::string& stem, const std::string& ext,
                           const std::string& contents);

}  // namespace mhaviz::figure
