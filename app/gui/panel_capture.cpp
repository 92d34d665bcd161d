// Capture for teaching: figures of a head, the grid of heads or the walkthrough step drawn
// by the CPU figure renderer (app/figure, the same as `mhaviz render`) as PNG at a chosen
// scale or as SVG, the whole window (glReadPixels), and the matrix shown as LaTeX / CSV /
// NPY files or on the clipboard. Files go to a folder under names that never replace an
// earlier file.
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "app_state.hpp"
#include "figure/figure.hpp"
#include "figure/gpt_figures.hpp"
#include "figure/interv_figures.hpp"
#include "figure/walk_figure.hpp"
#include "mhaviz/export.hpp"
#include "text_fields.hpp"
#include "walk_frame.hpp"

namespace mhaviz::gui {
namespace fs = std::filesystem;

namespace {

// [SECTION] Folder and names
// XDG_PICTURES_DIR from the environment, else from user-dirs.dirs ("$HOME/Pictures" style),
// else ~/Pictures.
std::string pictures_dir() {
  if (const char* env = std::getenv("XDG_PICTURES_DIR"); env && *env && fs::path(env).is_absolute()) return env;
  const char* home_env = std::getenv("HOME");
  const std::string home = home_env && *home_env ? home_env : ".";
  const char* cfg = std::getenv("XDG_CONFIG_HOME");
  const fs::path conf = (cfg && *cfg && fs::path(cfg).is_absolute()) ? fs::path(cfg) : fs::path(home) / ".config";
  std::ifstream in(conf / "user-dirs.dirs");
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = "XDG_PICTURES_DIR=";
    if (line.rfind(key, 0) != 0) continue;
    std::string v = line.substr(key.size());
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    if (v.rfind("$HOME", 0) == 0) v = home + v.substr(5);
    if (!v.empty() && fs::path(v).is_absolute()) return v;
  }
  return (fs::path(home) / "Pictures").string();
}

// Lesson or file name, safe in a file name.
std::string doc_stem(const AppState& s) {
  std::string base = s.doc.path.empty() ? s.doc.origin : fs::path(s.doc.path).stem().string();
  if (base.rfind("lesson ", 0) == 0) base = base.substr(7);
  std::string out;
  for (char c : base) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '-';
  return out.empty() ? "mhaviz" : out;
}

int walkthrough_step(const AppState& s) {
  const int n = figure::step_count(s.compute.trace, s.walkthrough.mistaken);
  return std::clamp(static_cast<int>(std::lround(s.walkthrough.pos)), 0, n - 1);
}

// The screen's options made a capture's: the same picture in the capture's theme, with a caption.
figure::Options for_capture(const AppState& s, figure::Options o) {
  o.dark = !s.settings.capture_light;
  o.transparent = s.settings.capture_transparent;
  o.caption = s.settings.capture_caption;
  return o;
}

}  // namespace

figure::Options figure_options(const AppState& s, figure::View view, ImVec2 canvas) {
  figure::Options o;
  o.view = view;
  o.head = s.view.head;  // within the trace: refresh() keeps them there, and a capture refreshes first
  o.stage = s.view.stage;
  o.batch = s.view.batch;
  o.colormap = s.settings.colormap;
  o.diverging_for_signed = s.settings.diverging_for_signed;
  o.shared_scale = s.settings.shared_scale;
  o.scores_one_scale = s.settings.scores_one_scale;
  o.log_scale = s.settings.log_weights;
  o.values = s.settings.show_values && !s.opts.hide_cell_values;
  o.dropout_marks = !s.opts.hide_cell_values;
  o.dark = s.settings.dark;
  o.caption = false;
  o.frame_selected = true;
  o.canvas = {std::floor(canvas.x), std::floor(canvas.y)};
  o.type = screen_type();
  if (view == figure::View::Step) {
    o.mistaken = s.walkthrough.mistaken;
    o.model = &s.compute.model;
    o.step = walkthrough_step(s);
  }
  return o;
}

namespace {

void save(AppState& s, const std::string& stem, const std::string& ext, const std::string& bytes,
          const figure::Figure* fig = nullptr) {
  try {
    const std::string path = figure::write_new_file(capture_folder(s), stem, ext, bytes);
    if (fig && s.opts.capture_sidecars) write_file_atomic(path + ".json", figure::prims_json(*fig, true));
    s.ui.capture.last = path;
    notify(s, "Saved " + path);
  } catch (const std::exception& e) {
    notify(s, std::string("Capture failed: ") + e.what(), true);
  }
}

// The matrix shown: the selected head at the current stage (masked cells -inf, as PyTorch holds them).
Tensor shown_matrix(const AppState& s) {
  const Trace& tr = s.compute.trace;
  Tensor m;
  m.shape = {tr.tokens, tr.tokens};
  m.data = tr.stage_matrix(s.view.stage, s.view.batch, s.view.head);
  return m;
}

std::string matrix_stem(const AppState& s) {
  return doc_stem(s) + "-" + std::string(stage_name(s.view.stage)) + "-b" + std::to_string(s.view.batch) + "-head" +
         std::to_string(s.view.head);
}

// [SECTION] The model view's captures: the figures `mhaviz render --model` draws
int model_layer(const AppState& s) { return std::max(0, s.gpt.layer); }
int model_head(const AppState& s) { return std::max(0, s.gpt.head); }

void capture_model(AppState& s, CaptureKind kind, bool svg) {
  const ModelUi& m = s.gpt;
  if (!m.result || !m.view) return;
  if (const std::string why = layer_walk_reason(m); kind != CaptureKind::Shown && !why.empty()) {
    notify(s, why, true);
    return;
  }
  const Tokenizer& tok = *m.result->loaded.tokenizer;
  std::string stem = model_name(m);
  try {
    figure::Figure f;
    if (const figure::GridView* g = shown_grid(m); kind == CaptureKind::Shown && g) {
      // The sweep's grid, a patching grid or the lens table as shown, in the capture's theme:
      // `mhaviz render --view sweep | patch | lens`'s.
      f = figure::build_grid_figure(*g, for_capture(s, s.renderer.model_grid.opts));
      stem += m.show == ModelUi::Show::Lens ? "-lens"
              : m.sweep->per_position()     ? "-patch-layer-position"
              : m.sweep->patching()         ? "-patch"
                                            : "-sweep";
    } else if (kind == CaptureKind::Shown) {
      // The figure on screen (its canvas, typography and selection) in the capture's theme,
      // with a caption: `mhaviz render --view model --size --font` draws the same.
      f = model_figure_for(*m.view, for_capture(s, m.view->key.fig));
      stem += "-model-view";
    } else {
      // A layer or head through the lesson's module, as `mhaviz render --view layer|head` draws it.
      figure::Options o = for_capture(s, figure_options(s, figure::View::Grid, ImVec2(1280, 720)));
      o.type = {};
      o.frame_selected = false;
      o.colormap = m.view->key.fig.colormap;
      o.log_scale = m.view->key.fig.log_scale;
      const bool grid = kind != CaptureKind::Head;
      f = m.result->loaded.hf ? figure::hf_layer_figure(*m.result->loaded.hf, *m.result->hf_trace, tok, m.path,
                                                        model_layer(s), model_head(s), grid, o)
                              : figure::gpt_layer_figure(*m.result->loaded.model, *m.result->trace, tok, m.path,
                                                         model_layer(s), model_head(s), grid, o);
      stem += grid ? "-layer" + std::to_string(model_layer(s))
                   : "-head" + std::to_string(model_layer(s)) + "." + std::to_string(model_head(s));
    }
    const int scale = std::clamp(s.settings.capture_scale, 1, 4);
    if (svg)
      save(s, stem, ".svg", figure::to_svg(f), &f);
    else
      save(s, stem, ".png", figure::encode_png(figure::rasterize(f, scale), f.width * scale, f.height * scale), &f);
  } catch (const std::exception& e) {
    notify(s, std::string("Capture failed: ") + e.what(), true);
  }
}

void draw_model_capture_items(AppState& s) {
  char layer_item[64], head_item[64];
  std::snprintf(layer_item, sizeof layer_item, "Layer %d, every head (PNG)", model_layer(s));
  std::snprintf(head_item, sizeof head_item, "Head %d.%d (PNG)", model_layer(s), model_head(s));
  if (ImGui::MenuItem("Model view (PNG)", "F12")) capture_model(s, CaptureKind::Shown, false);
  record_widget(s, "capture_model_view");
  // Through the lesson's module: the layers the walkthrough opens (layer_walk_reason).
  const bool lesson = layer_walk_reason(s.gpt).empty();
  if (ImGui::MenuItem(layer_item, nullptr, false, lesson)) capture_model(s, CaptureKind::Grid, false);
  record_widget(s, "capture_model_layer");
  if (ImGui::MenuItem(head_item, nullptr, false, lesson)) capture_model(s, CaptureKind::Head, false);
  record_widget(s, "capture_model_head");
  if (ImGui::MenuItem("Model view (SVG)")) capture_model(s, CaptureKind::Shown, true);
  if (ImGui::MenuItem("Whole window (PNG)", "Shift+F12")) capture(s, CaptureKind::Window);
  ImGui::Separator();
  if (ImGui::MenuItem("Capture settings...")) s.ui.capture.settings_open = true;
}

}  // namespace

// [SECTION] Actions
std::string capture_folder(const AppState& s) {
  if (!s.opts.capture_dir.empty()) return s.opts.capture_dir;
  if (!s.settings.capture_dir.empty()) return s.settings.capture_dir;
  return (fs::path(pictures_dir()) / "mhaviz").string();
}

void capture(AppState& s, CaptureKind kind, bool svg) {
  if (kind == CaptureKind::Window) {
    s.ui.capture.window_pending = true;  // read after this frame is drawn (app.cpp)
    return;
  }
  if (model_view_active(s)) {
    capture_model(s, kind, svg);
    return;
  }
  refresh(s);
  if (!s.compute.have_trace) {
    notify(s, "Nothing to capture: " + s.compute.error, true);
    return;
  }
  // What is shown: the centre's own figure in the capture's theme, laid out as on screen.
  const ScreenFigure* shown = s.renderer.centre;
  if (kind == CaptureKind::Shown && shown && shown->rebuild) {
    try {
      const figure::Figure f = shown->rebuild(for_capture(s, shown->opts));
      const int scale = std::clamp(s.settings.capture_scale, 1, 4);
      const std::string stem = (shown == &s.renderer.train ? train_run_name(s) : doc_stem(s)) + "-" + shown->stem;
      if (svg)
        save(s, stem, ".svg", figure::to_svg(f), &f);
      else
        save(s, stem, ".png", figure::encode_png(figure::rasterize(f, scale), f.width * scale, f.height * scale), &f);
    } catch (const std::exception& e) {
      notify(s, std::string("Capture failed: ") + e.what(), true);
    }
    return;
  }
  if (kind == CaptureKind::Shown) {
    kind = walkthrough_active(s) ? CaptureKind::Step : s.view.enlarged ? CaptureKind::Head : CaptureKind::Grid;
  }
  const figure::View view = kind == CaptureKind::Head   ? figure::View::Head
                            : kind == CaptureKind::Step ? figure::View::Step
                                                        : figure::View::Grid;
  try {
    // What the screen shows, as the screen laid it out (a view not on screen: the canvas it had).
    const ScreenFigure& last = view == figure::View::Step ? s.renderer.walk : s.renderer.lesson;
    const ImVec2 canvas =
        last.generation > 0 ? ImVec2(last.opts.canvas.width, last.opts.canvas.height) : ImVec2(1280, 720);
    const figure::Options o = for_capture(s, figure_options(s, view, canvas));
    figure::Figure f;
    if (view == figure::View::Step) {
      // The walkthrough's step at rest: its input (panes, the followed element) and its plan.
      const Walkthrough& w = s.walkthrough;
      figure::WalkInput in = w.picture_generation == s.compute.generation ? w.picture_in : walk::walk_input(s);
      in.pos = static_cast<float>(o.step);
      figure::WalkPlan plan = w.plan;
      figure::update_walk_plan(plan, in, o);
      f = figure::walk_picture(in, plan, o).fig;
    } else {
      f = figure::build_figure(s.compute.trace, s.compute.tokens, o);
    }
    const int scale = std::clamp(s.settings.capture_scale, 1, 4);
    std::string stem = doc_stem(s) + "-";
    if (view == figure::View::Grid)
      stem += "heads-" + std::string(stage_name(o.stage));
    else if (view == figure::View::Head)
      stem += "head" + std::to_string(o.head) + "-" + std::string(stage_name(o.stage));
    else
      stem += "step" + std::to_string(o.step + 1);
    if (svg)
      save(s, stem, ".svg", figure::to_svg(f), &f);
    else
      save(s, stem, ".png", figure::encode_png(figure::rasterize(f, scale), f.width * scale, f.height * scale), &f);
  } catch (const std::exception& e) {
    notify(s, std::string("Capture failed: ") + e.what(), true);
  }
}

void capture_window_now(AppState& s) {
  s.ui.capture.window_pending = false;
  int w = 0, h = 0;
  std::vector<std::uint8_t> rgba = read_framebuffer(s, w, h);
  try {
    const std::string stem = model_view_active(s)              ? model_name(s.gpt)
                             : centre_view(s) == Centre::Train ? train_run_name(s)
                                                               : doc_stem(s);
    save(s, stem + "-window", ".png", figure::encode_png(rgba, w, h));
  } catch (const std::exception& e) {
    notify(s, std::string("Capture failed: ") + e.what(), true);
  }
}

void export_matrix(AppState& s, const std::string& format, bool clipboard) {
  refresh(s);
  if (!s.compute.have_trace) return;
  const Tensor m = shown_matrix(s);
  const int T = static_cast<int>(m.shape[0]);
  if (format == "latex" || format == "csv") {
    const std::string text = format == "latex" ? to_latex(m.ptr(), T, T, 4) : to_csv(m.ptr(), T, T);
    if (clipboard) {
      ImGui::SetClipboardText(text.c_str());
      notify(s, std::string("Copied head ") + std::to_string(s.view.head) + " (" +
                    std::string(stage_name(s.view.stage)) + ") as " + (format == "latex" ? "LaTeX" : "CSV"));
      return;
    }
    save(s, matrix_stem(s), format == "latex" ? ".tex" : ".csv", text);
  } else {
    save(s, matrix_stem(s), ".npy", to_npy(m));
  }
}

// [SECTION] UI
void draw_capture_menu(AppState& s) {
  const bool open = ImGui::BeginMenu("Capture");
  record_widget(s, "menu_capture");
  if (!open) return;
  if (model_view_active(s)) {
    draw_model_capture_items(s);
    ImGui::EndMenu();
    return;
  }
  const bool walk = walkthrough_active(s);
  if (ImGui::MenuItem("Capture what is shown", "F12")) capture(s, CaptureKind::Shown);
  if (ImGui::MenuItem("Grid of heads (PNG)")) capture(s, CaptureKind::Grid);
  char head_item[64];
  std::snprintf(head_item, sizeof head_item, "Head %d (PNG)", s.view.head);
  if (ImGui::MenuItem(head_item)) capture(s, CaptureKind::Head);
  if (ImGui::MenuItem("Walkthrough step (PNG)", nullptr, false, walk)) capture(s, CaptureKind::Step);
  // Vector figures for papers: one rect per cell, labels as text, any size.
  if (ImGui::MenuItem("Grid of heads (SVG)")) capture(s, CaptureKind::Grid, true);
  record_widget(s, "capture_grid_svg");
  std::snprintf(head_item, sizeof head_item, "Head %d (SVG)", s.view.head);
  if (ImGui::MenuItem(head_item)) capture(s, CaptureKind::Head, true);
  if (ImGui::MenuItem("Walkthrough step (SVG)", nullptr, false, walk)) capture(s, CaptureKind::Step, true);
  if (ImGui::MenuItem("Whole window (PNG)", "Shift+F12")) capture(s, CaptureKind::Window);
  ImGui::Separator();
  ImGui::TextDisabled("Head %d, %s", s.view.head, std::string(stage_name(s.view.stage)).c_str());
  if (ImGui::MenuItem("Save as LaTeX bmatrix (.tex)")) export_matrix(s, "latex", false);
  record_widget(s, "capture_save_latex");
  if (ImGui::MenuItem("Save as CSV")) export_matrix(s, "csv", false);
  record_widget(s, "capture_save_csv");
  if (ImGui::MenuItem("Save as NumPy (.npy)")) export_matrix(s, "npy", false);
  record_widget(s, "capture_save_npy");
  if (ImGui::MenuItem("Copy LaTeX")) export_matrix(s, "latex", true);
  if (ImGui::MenuItem("Copy CSV")) export_matrix(s, "csv", true);
  ImGui::Separator();
  if (ImGui::MenuItem("Capture settings...")) s.ui.capture.settings_open = true;
  ImGui::EndMenu();
}

void capture_button(AppState& s) {
  if (ImGui::Button("Capture")) capture(s, CaptureKind::Shown);
  record_widget(s, "capture_button");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("Save a PNG of what is shown at %dx (F12; Shift+F12: the window)\nto %s",
                      s.settings.capture_scale, capture_folder(s).c_str());
  }
}

void draw_capture_settings(AppState& s) {
  if (!s.ui.capture.settings_open) return;
  ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 26.0f, 0), ImGuiCond_Appearing);
  if (ImGui::Begin("Capture settings", &s.ui.capture.settings_open, ImGuiWindowFlags_NoCollapse)) {
    Settings& st = s.settings;
    ImGui::SliderInt("scale", &st.capture_scale, 1, 4, "%dx");
    ImGui::Checkbox("caption (variant, shapes, stage, seed)", &st.capture_caption);
    ImGui::Checkbox("transparent background", &st.capture_transparent);
    ImGui::Checkbox("light theme (for print)", &st.capture_light);
    ImGui::TextUnformatted("Folder");
    // An empty field means the default (pictures folder / mhaviz). Through text_fields.hpp, as
    // every field: a folder named with an emoji showed '?' in a fixed buffer of chars.
    if (s.ui.capture.dir_edit.empty() && !st.capture_dir.empty()) s.ui.capture.dir_edit = st.capture_dir;
    ImGui::SetNextItemWidth(-1);
    const std::string hint = s.ui.window.wide.to_field(capture_folder(s));
    if (input_text_with_hint(s, "##capdir", hint.c_str(), s.ui.capture.dir_edit))
      st.capture_dir = s.ui.capture.dir_edit;
    ImGui::TextDisabled("Files are never overwritten: name-2.png, name-3.png ...");
    if (!s.ui.capture.last.empty()) ImGui::TextDisabled("Last: %s", s.ui.capture.last.c_str());
  }
  ImGui::End();
}

void handle_capture_shortcuts(AppState& s) {
  if (ImGui::IsKeyPressed(GLFW_KEY_F12, false))
    capture(s, ImGui::GetIO().KeyShift ? CaptureKind::Window : CaptureKind::Shown);
}

}  // namespace mhaviz::gui
