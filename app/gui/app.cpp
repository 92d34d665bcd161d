// The window, the main loop (the canonical Dear ImGui GLFW + OpenGL3 loop), fonts,
// themes, frame statistics and the exit hooks used by tests.
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "app_state.hpp"
#include "figure/gpt_figures.hpp"
#include "input_queue.hpp"
#include "mhaviz/kernel_tuning.hpp"

namespace mhaviz::gui {
namespace {

// Set by SIGTERM/SIGINT: leave the loop as if the frame limit was reached (state is
// written, nothing is asked). A signal handler can only reach namespace-scope state.
volatile std::sig_atomic_t g_terminate = 0;
extern "C" void on_terminate_signal(int) { g_terminate = 1; }

constexpr int kWarmupFrames = 10;

// [SECTION] Compute threads
// The core's GEMMs run on OpenBLAS threads. In the app a recompute overlaps with the
// software rasteriser (llvmpipe) presenting the previous frame, so BLAS gets one core
// less than the machine has (measured on 2 cores: perturbed frames 35-50 ms instead of
// 55-60 ms under load). The user's OPENBLAS_NUM_THREADS wins. Weak: absent BLAS, no-op.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

void limit_compute_threads() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || openblas_set_num_threads == nullptr) return;
  const unsigned hw = std::thread::hardware_concurrency();
  openblas_set_num_threads(static_cast<int>(hw > 2 ? hw - 1 : 1));
}

// [SECTION] The main loop's state
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// What the main loop carries from one frame to the next (the window's user pointer).
struct Loop {
  AppState* s = nullptr;
  bool measuring = false;
  int status = 0;
  InputQueue input;         // events not yet seen by a frame (input_queue.hpp)
  double imgui_time = 0.0;  // glfwGetTime() where ImGui's clock stands (apply_input)
  Introspection written;    // test hooks as last written to --layout-out
  double state_at = -1.0;   // glfwGetTime() of the last --state-out write
  Clock::time_point prev_start = Clock::now();
  // The previous frame is presented at the start of the next iteration, so that a
  // recompute (CPU) overlaps with the rasterisation and presentation of the last frame
  // (llvmpipe finishes drawing inside SwapBuffers). The recomputed trace is still drawn
  // in the frame whose input changed.
  bool swap_pending = false;
};

// [SECTION] Input: GLFW's events into the queue, a run of them into each frame
// The queue's key codes are GLFW's.
static_assert(kKeySpace == GLFW_KEY_SPACE && kKeyWorld2 == GLFW_KEY_WORLD_2 && kKeyPad0 == GLFW_KEY_KP_0 &&
              kKeyPadEnter == GLFW_KEY_KP_ENTER && kKeyPadEqual == GLFW_KEY_KP_EQUAL);
static_assert(kKeyLeftShift == GLFW_KEY_LEFT_SHIFT && kKeyLeftControl == GLFW_KEY_LEFT_CONTROL &&
              kKeyLeftAlt == GLFW_KEY_LEFT_ALT && kKeyLeftSuper == GLFW_KEY_LEFT_SUPER &&
              kKeyRightShift == GLFW_KEY_RIGHT_SHIFT && kKeyRightControl == GLFW_KEY_RIGHT_CONTROL &&
              kKeyRightAlt == GLFW_KEY_RIGHT_ALT && kKeyRightSuper == GLFW_KEY_RIGHT_SUPER);
static_assert(GLFW_KEY_LAST < kKeyCount && sizeof(ImGuiIO::KeysDown) == kKeyCount * sizeof(bool) &&
              sizeof(ImGuiIO::MouseDown) == kButtonCount * sizeof(bool));

// Every event also keeps frames coming for a second (handle_events).
InputQueue& noted(GLFWwindow* w) {
  Loop& L = *static_cast<Loop*>(glfwGetWindowUserPointer(w));
  L.s->last_event_time = glfwGetTime();
  return L.input;
}
void on_cursor(GLFWwindow* w, double x, double y) {
  noted(w).move(static_cast<float>(x), static_cast<float>(y), glfwGetTime());
}
void on_button(GLFWwindow* w, int b, int action, int) { noted(w).button(b, action == GLFW_PRESS, glfwGetTime()); }
void on_key(GLFWwindow* w, int key, int, int action, int) {
  // Repeats change nothing: ImGui repeats a held key itself.
  if (action != GLFW_REPEAT) noted(w).key(key, action == GLFW_PRESS, glfwGetTime());
}
// A character beyond U+FFFF as its alias, which ImGui's 16-bit fields keep (wide_chars.hpp).
void on_char(GLFWwindow* w, unsigned int c) {
  InputQueue& q = noted(w);
  q.character(static_cast<Loop*>(glfwGetWindowUserPointer(w))->s->ui.window.wide.alias(c), glfwGetTime());
}
void on_scroll(GLFWwindow* w, double dx, double dy) {
  noted(w).scroll(static_cast<float>(dx), static_cast<float>(dy), glfwGetTime());
}
void on_size(GLFWwindow* w, int, int) { noted(w); }
// The backend's: whether the pointer's position counts while the window is not focused.
void on_enter(GLFWwindow* w, int entered) {
  noted(w);
  ImGui_ImplGlfw_CursorEnterCallback(w, entered);
}
// (No focus callback: when the window loses focus GLFW releases every key and button it
// holds through the callbacks above, in order, which is what ImGui's own reset would do.)

// After ImGui_ImplGlfw_NewFrame(), which polled the pointer and buttons, and before
// ImGui::NewFrame(): this frame's run of events is what ImGui sees.
void apply_input(AppState& s, Loop& L) {
  ImGuiIO& io = ImGui::GetIO();
  const InputFrame& f = L.input.next_frame();
  std::copy(f.keys.begin(), f.keys.end(), io.KeysDown);
  io.KeyCtrl = f.ctrl();
  io.KeyShift = f.shift();
  io.KeyAlt = f.alt();
  io.KeySuper = f.super();
  std::copy(f.buttons.begin(), f.buttons.end(), io.MouseDown);
  // The backend leaves the position invalid when the pointer is not the window's.
  if (f.has_pointer && ImGui::IsMousePosValid(&io.MousePos)) io.MousePos = ImVec2(f.x, f.y);
  if (s.opts.ignore_mouse) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  io.MouseWheel += f.wheel_y;
  io.MouseWheelH += f.wheel_x;
  for (const unsigned c : f.chars) io.AddInputCharacter(c);
  // ImGui's clock follows the input while events wait (it stands when the last event this
  // frame applied came), else the present: double-clicks, held keys and typing's rhythm are
  // judged at the pace the user made them, not at the pace of slow frames.
  const double at = L.input.pending() > 0 ? f.time : glfwGetTime();
  const double t = std::max(at, L.imgui_time + 1e-5);  // ImGui's time must move on
  io.DeltaTime = static_cast<float>(t - L.imgui_time);
  L.imgui_time = t;
  Introspection::Live& live = s.hooks.live;
  live.input_received = L.input.received();
  live.input_applied = L.input.applied();
  live.input_pending = static_cast<std::int64_t>(L.input.pending());
  live.keys_held.clear();
  for (int k = 0; k < kKeyCount; ++k) {
    if (f.keys[static_cast<std::size_t>(k)]) live.keys_held.push_back(k);
  }
  live.buttons_held.clear();
  for (int b = 0; b < kButtonCount; ++b) {
    if (f.buttons[static_cast<std::size_t>(b)]) live.buttons_held.push_back(b);
  }
}

// [SECTION] Frame
// The status bar's one line: a message wider than the window is cut after its last whole word
// that fits, with an ellipsis, and shown whole in a tooltip (its copy was cut at the window's
// edge, mid-word).
void status_line(const std::string& text, bool error) {
  const float avail = ImGui::GetContentRegionAvail().x;
  std::string shown = text;
  const bool cut = ImGui::CalcTextSize(text.c_str()).x > avail;
  if (cut) {
    const float dots = ImGui::CalcTextSize("\u2026").x;
    std::size_t fit = 0;  // bytes of the longest prefix, whole code points, that fits beside the ellipsis
    for (std::size_t i = 1; i <= text.size(); ++i) {
      if (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
      if (ImGui::CalcTextSize(text.data(), text.data() + i).x + dots > avail) break;
      fit = i;
    }
    const std::size_t space = text.rfind(' ', fit);
    if (space != std::string::npos && space > 0 && fit < text.size() && text[fit] != ' ') fit = space;
    while (fit > 0 && text[fit - 1] == ' ') --fit;
    shown = text.substr(0, fit) + "\u2026";
  }
  if (error) ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
  ImGui::TextUnformatted(shown.c_str());
  if (error) ImGui::PopStyleColor();
  if (cut && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 35.0f);
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void draw_frame(AppState& s) {
  s.renderer.draws.clear();
  s.ui.drawn.cell_layout.clear();
  s.ui.drawn.model_cells.clear();
  s.ui.drawn.model_big = CellLayout{};
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_MenuBar |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("mhaviz", nullptr, flags);
  // The workers' news first: the menu bar names the run's step (it read the snapshot before the
  // panels took the new one, and kept "step999" beside "step 1000 of 1000" once the run stopped).
  poll_model(s);
  poll_train(s);
  // The menu's and F12's "what is shown" is the centre figure the user saw last frame; this
  // frame's centre panel sets it again.
  draw_menu_bar(s);
  handle_shortcuts(s);
  s.renderer.centre = nullptr;

  const float fh = ImGui::GetFontSize();
  const float status_h = ImGui::GetFrameHeightWithSpacing();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The panel from the font size, unless the user dragged its edge, leaving the centre 26 font
  // sizes at least: on a 1024 × 768 window with a 24-pixel font (a projector's, the text made
  // larger for the back row) 22.5 of them left every figure a canvas 444 px wide, too narrow
  // for its labels at that size (the KV cache's tensor labels over each other, the lesson's
  // subtitle past the edge); 384 px of panel leave it about 600.
  const float wanted =
      s.settings.left_width > 0.0f ? s.settings.left_width : std::min(fh * 22.5f, avail.x - fh * 26.0f);
  const float left_w = std::clamp(wanted, std::min(240.0f, avail.x * 0.3f), std::max(240.0f, avail.x * 0.75f));
  const Centre centre = centre_view(s);
  const CentreInfo& shown = centre_info(centre);
  const bool model_view = centre == Centre::Model;
  if (s.view.show_controls) {
    ImGui::BeginChild("left", ImVec2(left_w, avail.y - status_h), true);
    // The model view's panel replaces the lesson's controls, which do not act on it.
    if (shown.lesson_panel) {
      if (ImGui::CollapsingHeader("Model", ImGuiTreeNodeFlags_DefaultOpen)) draw_controls(s);
      if (ImGui::CollapsingHeader("Tokens and embeddings", ImGuiTreeNodeFlags_DefaultOpen)) draw_tokens(s);
    }
    if (centre == Centre::Train && ImGui::CollapsingHeader("Train a small GPT", ImGuiTreeNodeFlags_DefaultOpen))
      draw_train_panel(s);
    // Once a model is opened (File → Open model…, --model) its panel follows the lesson's.
    if (s.gpt.worker) {
      if (model_view) ImGui::SetNextItemOpen(true, ImGuiCond_Always);
      if (ImGui::CollapsingHeader("Trained model")) draw_model_panel(s);
      record_widget(s, "model_header");
    }
    ImGui::EndChild();
    // The panel's right edge: drag it to make the panel wider or narrower (saved in the settings).
    ImGui::SameLine(0.0f, 0.0f);
    ImGui::InvisibleButton("##left_edge", ImVec2(ImGui::GetStyle().ItemSpacing.x, std::max(1.0f, avail.y - status_h)));
    record_widget(s, "left_edge");
    if (ImGui::IsItemHovered() || ImGui::IsItemActive()) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeEW);
    if (ImGui::IsItemActive()) s.settings.left_width = left_w + ImGui::GetIO().MouseDelta.x;
    ImGui::SameLine(0.0f, 0.0f);
  }
  ImGui::BeginGroup();
  // Shapes strip: as tall as its content was last frame (at least three lines), up to 22% of
  // the window's height, scrolling past that: a GQA session with QK-norm and RoPE has nine
  // lines of shapes, which left the walkthrough's figure no height on a 1280 × 800 window.
  // Beside the walkthrough, whose header gives each step's shapes, and the Train view, whose
  // title names the run, up to 12%: with a 24-pixel font on 1280 × 800 the strip's five lines
  // left the walkthrough's figure 200 px of 800, the Train view's heads a quarter of its height.
  const float pad = ImGui::GetStyle().WindowPadding.y * 2.0f;
  const float shapes_need = std::max(ImGui::GetTextLineHeightWithSpacing() * 3.0f, s.ui.drawn.shapes_content_h) + pad;
  const float shapes_cap =
      std::floor(avail.y * (centre == Centre::Walkthrough || centre == Centre::Train ? 0.12f : 0.22f));
  const float shapes_h =
      std::min(shapes_need, std::max(ImGui::GetTextLineHeightWithSpacing() * 3.0f + pad, shapes_cap));
  ImGui::BeginChild("right", ImVec2(0.0f, avail.y - status_h - shapes_h - ImGui::GetStyle().ItemSpacing.y), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  switch (centre) {
    case Centre::Walkthrough: draw_walkthrough(s); break;
    case Centre::Model: draw_model_view(s); break;
    case Centre::Train: draw_train_view(s); break;
    case Centre::KvCache: draw_kv_view(s); break;
    case Centre::Lesson:
      if (s.opts.no_heatmaps) {
        refresh(s);
        ImGui::TextDisabled("Heatmaps hidden (--no-heatmaps).");
      } else {
        draw_heatmaps(s);
      }
      break;
  }
  ImGui::EndChild();
  record_widget(s, "centre");
  ImGui::BeginChild("shapes", ImVec2(0.0f, shapes_h), true,
                    shapes_need > shapes_h ? ImGuiWindowFlags_None : ImGuiWindowFlags_NoScrollbar);
  switch (shown.strip) {
    case Strip::Lesson: draw_shapes(s); break;
    case Strip::Model: draw_model_shapes(s); break;
    case Strip::Train: draw_train_strip(s); break;
  }
  s.ui.drawn.shapes_content_h =
      ImGui::GetCursorPosY() - ImGui::GetStyle().WindowPadding.y - ImGui::GetStyle().ItemSpacing.y;
  ImGui::EndChild();
  ImGui::EndGroup();

  // Status bar.
  const double now = glfwGetTime();
  if (!s.ui.status.text.empty() && now < s.ui.status.until) {
    status_line(s.ui.status.text, s.ui.status.is_error);
    record_widget(s, "status");
  } else {
    ImGui::TextDisabled("%s", shown.hint);
  }
  ImGui::End();
  draw_capture_settings(s);
  draw_dialogs(s);
  draw_model_open_dialog(s);
  // A drag or a field's typing is one undo step: the step closes when nothing is held.
  if (!ImGui::IsAnyItemActive()) s.doc.history.seal();
  // A text field has the keyboard in this frame (io.WantTextInput says so from the next one).
  s.hooks.text_input = ImGui::GetCurrentContext()->WantTextInputNextFrame == 1;
}

// The frame, noting which named widgets it drew (a closed menu's items keep their last
// rectangles in the hooks, and are not shown).
void draw_widgets_recorded(AppState& s) {
  std::map<std::string, std::vector<float>> before = std::move(s.hooks.widgets);
  s.hooks.widgets.clear();
  draw_frame(s);
  s.hooks.shown.clear();
  for (const auto& w : s.hooks.widgets) s.hooks.shown.push_back(w.first);
  s.hooks.widgets.merge(before);  // keeps this frame's rectangle where both have one
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

void apply_initial_overrides(AppState& s) {
  const Options& o = s.opts;
  if (o.width > 0) s.settings.window_width = o.width;
  if (o.height > 0) s.settings.window_height = o.height;
  if (o.font_size > 0) s.settings.font_size = o.font_size;
  if (!o.theme.empty()) s.settings.dark = o.theme != "light";
  if (o.log_scale) s.settings.log_weights = true;
  Colormap c;
  if (!o.colormap.empty() && parse_colormap(o.colormap, c)) s.settings.colormap = c;
  Stage st;
  if (!o.stage.empty() && parse_stage(o.stage, st)) s.view.stage = st;
}

// After the first recompute (refresh clamps them to the trace).
void apply_initial_view(AppState& s) {
  if (s.opts.batch > 0) s.view.batch = s.opts.batch;  // else the session's view
  if (s.opts.head >= 0) {
    s.view.head = s.opts.head;
    s.view.enlarged = true;
  }
}

// One line with GLFW's reason and the remedies, exit status 2: without a window the app
// cannot run, and render and dump make the same figures and numbers without one.
int no_window(const char* what, const char* remedy) {
  const char* why = nullptr;
  glfwGetError(&why);
  std::fprintf(stderr,
               "mhaviz: cannot open a window: %s%s (%s, or use `mhaviz render` or `mhaviz dump`, which need no "
               "window)\n",
               what, why ? why : "unknown error", remedy);
  return 2;
}

// [SECTION] Start: the model, the document, then the window
// --model PATH [--text TEXT] [--prepend-eot] [--model-head L.H] [--detector D]: loaded on the
// worker like File → Open model… (a broken file shows its error in the app); a path that
// does not exist is bad input.
int init_model(AppState& s) {
  const Options& o = s.opts;
  if (o.model.empty()) {
    const bool train = o.train || o.train_until >= 0;
    if (!o.text.empty() || o.prepend_eot || (!o.model_head.empty() && !train) || !o.detector.empty() ||
        !o.model_ablate.empty() || o.norm_weighted) {
      std::fprintf(stderr,
                   "mhaviz: --text: --text, --prepend-eot, --detector, --model-ablate and --norm-weighted need "
                   "--model; --model-head, --model or --train\n");
      return 2;
    }
    // The Train view's head shown large.
    if (!o.model_head.empty() && !figure::parse_layer_head(o.model_head, s.train.layer, s.train.head)) {
      std::fprintf(stderr, "mhaviz: --model-head: '%s' is not LAYER.HEAD (e.g. 1.2)\n", o.model_head.c_str());
      return 2;
    }
    return 0;
  }
  std::error_code ec;
  if (!std::filesystem::exists(o.model, ec)) {
    std::fprintf(stderr, "mhaviz: --model: no such file or folder '%s'\n", o.model.c_str());
    return 2;
  }
  ModelUi& m = s.gpt;
  m.text = o.text;
  m.prepend_eot = o.prepend_eot;
  if (!o.detector.empty()) {
    HeadPattern p{};
    if (!parse_head_pattern(o.detector, p)) {
      std::fprintf(stderr,
                   "mhaviz: --detector: '%s' is not one of previous-token, first-token, duplicate-token, induction\n",
                   o.detector.c_str());
      return 2;
    }
    m.pattern = static_cast<int>(p);
  }
  if (!o.model_head.empty() && !figure::parse_layer_head(o.model_head, m.layer, m.head)) {
    std::fprintf(stderr, "mhaviz: --model-head: '%s' is not LAYER.HEAD (e.g. 5.1)\n", o.model_head.c_str());
    return 2;
  }
  if (!o.model_ablate.empty()) {
    try {
      const Intervention iv = parse_ablation(o.model_ablate);
      m.ablate = iv.ablate;
      m.ablation_mode = iv.mode;
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "mhaviz: --model-%s\n", e.what());  // "ablate: ..." names the option
      return 2;
    }
  }
  m.norm_weighted = o.norm_weighted;
  open_model(s, o.model);
  // The app opens on the model view, while it loads too (a walkthrough the autosave had open
  // stays closed unless --walkthrough asks for it).
  s.centre = Centre::Model;
  return 0;
}

// The document: the argument, else the autosave, else the default lesson. Returns an exit
// status (2: bad input, as in dump and export), or 0.
int init_document(AppState& s) {
  const Options& opts = s.opts;
  limit_compute_threads();
  resolve_paths(s);
  load_settings(s);
  // The kernels' sizes calibrated for this CPU live beside the settings (loaded, or calibrated
  // once, at the first product large enough to matter).
  set_kernel_cache((std::filesystem::path(s.paths.config_dir) / "kernels.json").string());
  if (!opts.session.empty()) {
    try {
      Session ses = load_session(opts.session);
      const bool lesson_name = is_lesson(opts.session);
      set_document(s, std::move(ses), lesson_name || opts.session == "-" ? "" : opts.session,
                   lesson_name ? "lesson " + opts.session : opts.session);
      if (!lesson_name && opts.session != "-") add_recent(s, opts.session);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mhaviz: %s\n", e.what());
      return 2;
    }
  } else if (opts.no_restore || !restore_autosave(s)) {
    set_document(s, lesson(kDefaultLesson), "", "lesson " + std::string(kDefaultLesson));
  }
  apply_initial_overrides(s);  // the options win over the session's view
  // Undo starts from the document the app opened with.
  const bool modified = s.doc.modified;
  s.doc.history.reset(doc_state(s));
  s.doc.saved_id = modified ? 0 : s.doc.history.current_id();
  s.autosaved_revision = s.doc.revision;
  s.autosaved_view = current_view(s);
  if (const int status = init_model(s)) return status;
  refresh(s);
  apply_initial_view(s);
  refresh(s);
  return 0;
}

// GLFW window, ImGui and the heatmap renderer. Returns an exit status, or 0.
int init_window(AppState& s, Loop& L) {
  if (!glfwInit()) return no_window("no display: ", "set DISPLAY or run under xvfb-run");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  s.window = glfwCreateWindow(s.settings.window_width, s.settings.window_height, "mhaviz", nullptr, nullptr);
  if (!s.window) {
    const int status = no_window("", "needs OpenGL 3.3: try xvfb-run");
    glfwTerminate();
    return status;
  }
  glfwMakeContextCurrent(s.window);
  glfwSwapInterval(L.measuring ? 0 : 1);
  glfwSetWindowUserPointer(s.window, &L);
  // Ours, not the backend's (it is initialised without callbacks): input goes to the queue.
  glfwSetCursorPosCallback(s.window, on_cursor);
  glfwSetMouseButtonCallback(s.window, on_button);
  glfwSetKeyCallback(s.window, on_key);
  glfwSetCharCallback(s.window, on_char);
  glfwSetScrollCallback(s.window, on_scroll);
  glfwSetCursorEnterCallback(s.window, on_enter);
  glfwSetFramebufferSizeCallback(s.window, on_size);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini in the working directory; settings.json holds ours
  io.LogFilename = nullptr;
  ImGui_ImplGlfw_InitForOpenGL(s.window, false);
  // Pasted text with its characters beyond U+FFFF as aliases, copied text with them again.
  io.ClipboardUserData = &s;
  io.GetClipboardTextFn = [](void* user) -> const char* {
    auto& st = *static_cast<AppState*>(user);
    const char* text = glfwGetClipboardString(st.window);
    st.ui.window.clipboard = st.ui.window.wide.to_field(text != nullptr ? text : "");
    return st.ui.window.clipboard.c_str();
  };
  io.SetClipboardTextFn = [](void* user, const char* text) {
    auto& st = *static_cast<AppState*>(user);
    glfwSetClipboardString(st.window, st.ui.window.wide.from_field(text).c_str());
  };
  ImGui_ImplOpenGL3_Init("#version 330 core");
  build_fonts(s, false);
  apply_style(s);

  std::string gl_error_text;
  if (!renderer_init(s.renderer, gl_error_text)) {
    std::fprintf(stderr, "mhaviz: %s\n", gl_error_text.c_str());
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(s.window);
    glfwTerminate();
    return 3;
  }
  std::signal(SIGTERM, on_terminate_signal);
  std::signal(SIGINT, on_terminate_signal);
  return 0;
}

// [SECTION] One frame
// --state-out while the app runs: what changed, at most every kStateEvery seconds while
// frames come, and before the loop sleeps (so the last frame's state is on disk).
constexpr double kStateEvery = 0.15;

void write_state_live(AppState& s, Loop& L) {
  if (s.opts.state_out.empty()) return;
  write_state_dump(s, s.opts.state_out);
  L.state_at = glfwGetTime();
}

double wall_clock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Events: poll while busy or measuring, otherwise sleep until input. False: leave the loop.
bool handle_events(AppState& s, Loop& L) {
  const double now = glfwGetTime();
  note_frame_glyphs(s);  // what the last frame received (a model's view) is drawn with its glyphs
  // fonts_dirty: a character the frame drew without a glyph is drawn again once it has one.
  const bool busy = L.measuring || s.opts.exit_after_frames > 0 || now - s.last_event_time < 1.0 ||
                    s.ui.window.fonts_dirty || s.compute.model_dirty || s.compute.input_dirty || s.frame < 5 ||
                    model_busy(s) || train_busy(s) || L.input.pending() > 0;
  if (busy) {
    s.hooks.live.polled_at = wall_clock();
    glfwPollEvents();
  } else {
    if (L.swap_pending) glfwSwapBuffers(s.window);
    L.swap_pending = false;
    write_state_live(s, L);
    s.hooks.live.polled_at = wall_clock();
    glfwWaitEventsTimeout(0.5);
  }
  if (g_terminate) return false;
  if (glfwWindowShouldClose(s.window)) {
    glfwSetWindowShouldClose(s.window, GLFW_FALSE);
    s.quit_requested = true;
  }
  if (s.quit_requested && s.ui.dialog.kind == Dialog::None) {
    if (!s.doc.modified) return false;
    s.ui.dialog.kind = Dialog::ConfirmQuit;
    s.ui.dialog.just_opened = true;
  }
  if (s.opts.perturb && s.doc.session.num_tokens() > 0) {
    // One input value changes every frame: forces a forward and a texture upload.
    // Not an edit: no undo step, no validation (it stays within ±0.01 of a valid value).
    s.doc.session.embeddings[0][0] += static_cast<float>(0.01 * s.perturb_sign);
    s.perturb_sign = -s.perturb_sign;
    s.compute.input_dirty = true;
  }
  return true;
}

// Present the previous frame (recomputing meanwhile), then fonts, style and title.
void present_and_refresh(AppState& s, Loop& L) {
  if (L.swap_pending && (s.compute.model_dirty || s.compute.input_dirty)) {
    // Recompute on a worker while this thread presents the previous frame.
    std::thread worker([&s] { refresh(s); });
    glfwSwapBuffers(s.window);
    worker.join();
  } else if (L.swap_pending) {
    glfwSwapBuffers(s.window);
  }
  L.swap_pending = false;
  refresh(s);
  if (s.ui.window.fonts_dirty) build_fonts(s, true);
  if (s.ui.window.style_dirty) apply_style(s);
  // The model view names its model; the lesson and the walkthrough, the document.
  const bool document = !model_view_active(s) && centre_view(s) != Centre::Train;
  const std::string title = "mhaviz - " + shown_title(s) + (document && s.doc.modified ? " *" : "");
  if (title != s.ui.window.title) {
    glfwSetWindowTitle(s.window, title.c_str());
    s.ui.window.title = title;
  }
}

// The UI, then its GL submission. Returns the time the UI was built (the GL phase starts).
Clock::time_point build_and_submit(AppState& s, Loop& L) {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  apply_input(s, L);
  ImGui::NewFrame();
  draw_widgets_recorded(s);
  ImGui::Render();
  int fb_w = 0, fb_h = 0;
  glfwGetFramebufferSize(s.window, &fb_w, &fb_h);
  glViewport(0, 0, fb_w, fb_h);
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  glClearColor(bg.x, bg.y, bg.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  const auto t_render = Clock::now();
  renderer_begin_frame(s.renderer);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  glFlush();  // start rasterising now
  ++s.frame;
  return t_render;
}

// GL errors, screenshot, window capture, test hooks. False: leave the loop.
bool after_frame(AppState& s, Loop& L) {
  const Options& opts = s.opts;
  for (GLenum err = glGetError(); err != GL_NO_ERROR; err = glGetError()) {
    ++s.gl_errors;
    std::fprintf(stderr, "mhaviz: OpenGL error 0x%04x in frame %lld\n", err, static_cast<long long>(s.frame));
    if (opts.check_gl) L.status = 3;
  }
  if (L.status != 0) return false;
  // A model given on the command line is waited for: loaded, computed and drawn.
  // So is a run asked to train to a step (--train-until).
  // (its last snapshot drawn).
  const bool training = opts.train_until >= 0 && s.train.worker &&
                        (!s.train.snap || s.train.snap->step < s.train.until || train_busy(s) ||
                         s.train.seen != s.train.worker->generation());
  // So is the walkthrough's comparison while its tab is open: computed off the UI thread, it
  // could come after the last frame on a busy machine (the tab then showed no figure).
  const Walkthrough& w = s.walkthrough;
  const bool comparing =
      walkthrough_active(s) && w.tab == 1 && (w.cmp_job.valid() || w.cmp.generation != s.compute.generation);
  const bool last_frame =
      opts.exit_after_frames > 0 && s.frame >= opts.exit_after_frames && !model_busy(s) && !training && !comparing;
  if (last_frame && opts.capture_on_exit) capture(s, CaptureKind::Shown);
  if (!opts.screenshot.empty() && (last_frame || (opts.exit_after_frames == 0 && s.frame == 10))) {
    std::string err;
    if (!write_screenshot(s, opts.screenshot, err)) {
      std::fprintf(stderr, "mhaviz: screenshot: %s\n", err.c_str());
      L.status = 1;
    }
  }
  if (s.ui.capture.window_pending) capture_window_now(s);  // the frame just drawn, before the swap
  if (!opts.layout_out.empty() && s.frame >= 3 && !(L.written == s.hooks)) {
    write_layout(s, opts.layout_out);
    L.written = s.hooks;
  }
  if (glfwGetTime() - L.state_at >= kStateEvery) write_state_live(s, L);
  L.swap_pending = true;
  if (!L.measuring && glfwGetTime() - s.last_edit_time > 1.0) autosave(s);
  return !last_frame && L.status == 0;
}

// One iteration of the main loop, its phases timed. False: leave the loop.
bool frame(AppState& s, Loop& L) {
  const auto start = Clock::now();
  if (s.frame > kWarmupFrames) s.frame_ms.push_back(ms_between(L.prev_start, start));
  L.prev_start = start;
  if (!handle_events(s, L)) return false;
  const auto t_events = Clock::now();
  present_and_refresh(s, L);
  const auto t_ui = Clock::now();
  const auto t_render = build_and_submit(s, L);
  const auto t_end = Clock::now();
  const bool go_on = after_frame(s, L);
  if (s.frame > kWarmupFrames) {
    s.phase_ms[0].push_back(ms_between(start, t_events));  // events
    s.phase_ms[1].push_back(ms_between(t_events, t_ui));   // previous frame's swap, overlapped with the recompute
    s.phase_ms[2].push_back(ms_between(t_ui, t_render));   // UI build + texture upload
    s.phase_ms[3].push_back(ms_between(t_render, t_end));  // GL submit
  }
  return go_on;
}

// [SECTION] Shutdown: state, autosave, settings, frame figures
int shutdown(AppState& s, Loop& L) {
  const Options& opts = s.opts;
  if (L.swap_pending) glfwSwapBuffers(s.window);
  finish_training(s);  // the run's checkpoint written before the state says where it is
  if (!opts.state_out.empty()) {
    // Always written, the session made afresh (--perturb changes it without an edit).
    s.hooks.live.state_written.clear();
    s.hooks.live.session_revision = ~std::uint64_t{0};
    write_state_dump(s, opts.state_out);
  }
  if (!L.measuring) autosave(s);
  if (opts.width == 0 && opts.height == 0)
    glfwGetWindowSize(s.window, &s.settings.window_width, &s.settings.window_height);
  if (!L.measuring) save_settings(s);
  if (opts.frame_stats) {
    std::printf("frames=%lld measured=%zu forward_ms=%.2f texture_uploads=%lld heatmaps=%s perturb=%s\n",
                static_cast<long long>(s.frame), s.frame_ms.size(), s.compute.forward_ms,
                static_cast<long long>(s.renderer.uploads_total), opts.no_heatmaps ? "off" : "on",
                opts.perturb ? "on" : "off");
    std::printf("median_ms: events=%.2f swap+recompute=%.2f ui+upload=%.2f gl_submit=%.2f\n",
                percentile(s.phase_ms[0], 0.5), percentile(s.phase_ms[1], 0.5), percentile(s.phase_ms[2], 0.5),
                percentile(s.phase_ms[3], 0.5));
    std::printf("frame_median_ms=%.2f frame_p95_ms=%.2f\n", percentile(s.frame_ms, 0.5), percentile(s.frame_ms, 0.95));
    std::fflush(stdout);
  }
  renderer_shutdown(s.renderer);
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(s.window);
  glfwTerminate();
  if (L.status == 0 && opts.check_gl && s.gl_errors > 0) L.status = 3;
  return L.status;
}

}  // namespace

// [SECTION] Entry point
int run(const Options& opts) {
  AppState s;
  s.opts = opts;
  Loop loop;
  loop.s = &s;
  loop.measuring = opts.frame_stats || opts.perturb;
  if (const int status = init_document(s)) return status;
  if (const int status = init_window(s, loop)) return status;
  // --train opens on the Train view; --train-until N also starts a run that pauses at step N.
  if (opts.train || opts.train_until >= 0) s.centre = Centre::Train;
  s.train.until = std::max(0LL, opts.train_until);
  // --kv-step P[,S] opens on the KV cache view, the prefill P, step S.
  if (!opts.kv_step.empty()) {
    s.centre = Centre::KvCache;
    std::sscanf(opts.kv_step.c_str(), "%d,%d", &s.kv.prefill, &s.kv.step);  // checked by add_options
  }
  if (opts.train_until >= 0 && make_train_run(s) && opts.train_until > 0) s.train.worker->run();
  s.last_event_time = loop.imgui_time = glfwGetTime();
  while (!s.quit && frame(s, loop)) {
  }
  return shutdown(s, loop);
}

std::string shown_title(AppState& s) {
  if (model_view_active(s)) {
    const std::string name = model_name(s.gpt);
    return name.empty() ? "model view" : "model " + name;  // none open yet
  }
  if (centre_view(s) == Centre::Train) return train_run_name(s);
  return s.doc.origin;
}

}  // namespace mhaviz::gui
