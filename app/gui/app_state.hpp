// All state of the desktop app, in one struct (no function-local static state).
// Panels read it and call the mark_* functions; refresh() recomputes at most once a frame.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "canvas.hpp"
#include "colormap.hpp"
#include "figure/sidecar.hpp"
#include "figure/walk_figure.hpp"
#include "file_list.hpp"
#include "glyph_set.hpp"
#include "gui.hpp"
#include "history.hpp"
#include "kv_state.hpp"
#include "mhaviz/model.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/trace.hpp"
#include "model_state.hpp"
#include "train_state.hpp"
#include "walkthrough.hpp"
#include "wide_chars.hpp"

struct GLFWwindow;
struct ImFont;

namespace mhaviz::gui {

// [SECTION] Persistent settings ($XDG_CONFIG_HOME/mhaviz/settings.json)
struct Settings {
  float font_size = 18.0f;  // pixels, before ui_scale
  float ui_scale = 1.0f;
  bool dark = true;
  Colormap colormap = Colormap::Viridis;  // for weights (sequential)
  bool diverging_for_signed = true;       // signed score stages use the diverging map
  bool shared_scale = true;               // one value range for all heads
  bool scores_one_scale = false;          // one range for score stages 1-3 (shows the 1/sqrt(hd))
  bool variant_keeps_d_out = false;       // switching the variant keeps d_out (else num_heads and head_dim)
  bool show_values = true;                // print values in cells when they fit
  bool log_weights = false;               // logarithmic colour scale for weights (large T)
  float left_width = 0.0f;                // the controls panel, dragged by its edge (0: from the font size)
  int window_width = 1280;
  int window_height = 800;
  std::vector<std::string> recent;         // most recent first
  std::vector<std::string> recent_models;  // trained GPTs opened, most recent first
  // Captures (Capture menu): figures are drawn at this scale, light by default for print.
  int capture_scale = 2;
  bool capture_caption = true;
  bool capture_transparent = false;
  bool capture_light = true;
  std::string capture_dir;  // empty: $XDG_PICTURES_DIR/mhaviz (else ~/Pictures/mhaviz)
};

// [SECTION] The document: the session being edited
struct Document {
  Session session;
  std::string path;    // file it was opened from / saved to; empty for lessons and new
  std::string origin;  // what the title shows: the path or "lesson NAME"
  bool modified = false;
  std::uint64_t revision = 0;  // bumped on every edit
  History history;             // undo / redo (history.hpp); its current state is the session
  std::uint64_t saved_id = 0;  // history id of the state last opened or saved (0: none)
};

// [SECTION] Model and trace, recomputed from the document when dirty
struct Compute {
  Model model;
  Trace trace;
  bool have_trace = false;          // trace holds a valid forward (maybe of an older input)
  bool model_dirty = true;          // config or d_in changed: rebuild parameters
  bool input_dirty = true;          // tokens/embeddings/batch changed: forward again
  std::uint64_t generation = 0;     // bumped on every forward
  std::vector<std::string> tokens;  // the tokens of the trace (the session may be ahead of it)
  std::string error;                // last validation error (one line); empty when current
  double forward_ms = 0.0;
  double build_ms = 0.0;
};

// [SECTION] GPU side of the heatmaps (textures: canvas.hpp)
// One heatmap quad queued for the draw callback of this frame.
struct HeatmapDraw {
  struct Renderer* renderer = nullptr;
  unsigned int tex = 0;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // ImGui pixels
  float vmin = 0, vmax = 1;
  Colormap colormap = Colormap::Viridis;
  int cols = 1, rows = 1;
  float gap = 0;           // background between cells (pixels, right and bottom of each), as the figure has it
  bool log_scale = false;  // vmin > 0: t = log(v / vmin) / log(vmax / vmin)
  figure::Color hatch_a{41, 41, 41, 255}, hatch_b{77, 77, 77, 255};     // hidden cells' stripes
  figure::Color window_a{30, 44, 74, 255}, window_b{68, 92, 142, 255};  // stripes outside a sliding window (+inf)
  figure::Color gap_color{23, 23, 26, 255};
  float origin_x = 0,
        origin_y = 0;  // the figure's top-left (ImGui pixels): the hatch's stripes start there, as a capture's
};

struct Renderer {
  unsigned int program = 0, vao = 0, vbo = 0;
  unsigned int lut = 0;  // colormap table texture (256 x kColormapCount RGBA8)
  int loc_proj = -1, loc_values = -1, loc_vmin = -1, loc_vmax = -1, loc_lut = -1, loc_lut_row = -1, loc_hatch_a = -1,
      loc_hatch_b = -1, loc_window_a = -1, loc_window_b = -1, loc_origin = -1, loc_cells = -1, loc_size = -1,
      loc_grid_color = -1, loc_grid = -1, loc_log = -1;
  float proj[16] = {};
  float display_x = 0, display_y = 0, display_w = 0, display_h = 0, fb_scale_x = 1, fb_scale_y = 1;
  bool dark = true;
  HeadTexture colorbar;     // a 1 x 256 ramp
  ScreenFigure lesson;      // the lesson's heatmaps (panel_heatmaps.cpp)
  ScreenFigure walk;        // the walkthrough's picture (panel_walkthrough.cpp)
  ScreenFigure compare;     // the wrapper vs weight split patterns (panel_walk_compare.cpp)
  ScreenFigure variants;    // the attention variants' equivalences and costs (panel_walk_compare.cpp)
  ScreenFigure shapes;      // the shapes strip (panel_shapes.cpp)
  ScreenFigure model;       // the model view of a trained GPT (panel_model_view.cpp; set by poll_model)
  ScreenFigure model_grid;  // the model view's ablation sweep grid, when shown (panel_model_view.cpp)
  ScreenFigure train;       // the Train view: curves, detectors, the probe's heads (train_view.cpp)
  ScreenFigure kv;          // the KV cache view: the cache and the newest query's weights (kv/panel_kv.cpp)
  // The figure the centre view drew this frame (one of the above): what F12 captures, and
  // what the tests compare a capture with.
  const ScreenFigure* centre = nullptr;
  int uploads_last_frame = 0;  // textures re-uploaded this frame
  std::int64_t uploads_total = 0;
  std::deque<HeatmapDraw> draws;  // stable addresses for draw callbacks
};

// [SECTION] View state
struct View {
  Stage stage = Stage::Weights;
  int batch = 0;
  int head = 0;               // selected head (next/previous keys)
  bool enlarged = false;      // show only the selected head
  bool show_controls = true;  // the left panel (hide it to give the heatmaps the window)
};

// Rectangles of what was drawn, for captures and tests (framebuffer pixels): the figures'
// placement, so the app's sidecars and `mhaviz render --cells-json` write the same fields.
using CellLayout = figure::HeatmapPlacement;

// [SECTION] Transient UI state
enum class Dialog { None, Open, SaveAs, ConfirmQuit, ConfirmOpen, Recover };

// Printable keys while no text field is active (handle_shortcuts): a lone key is a shortcut
// (1-5 [ ] E C W Space), a run of them is someone typing, which goes to the tokens field
// instead of firing shortcuts.
struct KeyboardUi {
  std::string typed;      // characters not yet decided (UTF-8)
  double typed_at = 0.0;  // when the last one came
  int typed_count = 0;
  unsigned shortcut = 0;      // the printable shortcut to run this frame (0: none)
  bool focus_tokens = false;  // give the tokens field the keyboard
  double focus_asked_at = 0.0;
  std::string tokens_insert;         // then append this at its end (the run typed so far)
  double typed_to_tokens_at = -1e9;  // when typing with nothing focused last went to the tokens (said under the field)
};

// The lesson's editors (left panel): the tokens field, the embedding table, the size
// sliders typed into, and the edit the session format refused.
struct EditorUi {
  int first_column = 0;       // the embedding table's first value column shown (d_in > 60)
  std::string typing_slider;  // the size slider Ctrl+clicked to type a value (its label)
  int typing_value = 0;
  bool typing_focus = false;
  std::string token_text;                      // the tokens field (applied on every edit)
  bool token_text_stale = true;                // rebuild from the session
  int preferred_heads = 0;                     // the head count the user chose; d_out changes stay near it
  std::vector<std::vector<float>> d_in_stash;  // embeddings before a d_in drag (columns come back)
  // An edit the session format refused, shown under the field it was made in ("tokens",
  // "table", "d_in", "context_length", "batch", "model") until refusal_until.
  std::string refusal;
  std::string refusal_where;
  double refusal_until = 0.0;
};

// The modal dialogs (dialogs.cpp): which one, its path field, the folder it browses.
struct DialogUi {
  Dialog kind = Dialog::None;
  bool just_opened = false;
  std::string path;
  std::string error;
  bool refocus = false;              // give the path field the keyboard again next frame
  std::string browse_dir;            // the folder the Open / Save dialog shows
  std::string browse_listed;         // the folder browse_rows were listed from
  std::vector<FileRow> browse_rows;  // its rows (file_list.hpp)
  std::string browse_error;
  int browse_sel = -1;  // row chosen with Up / Down or a click (recent files first)
  bool browse_scroll = false;
  std::string pending_open;  // lesson or file to open after confirming
};

// A restore that failed: the autosave moved aside, and what could be recovered from it.
struct RestoreUi {
  std::string error;    // one line: why the autosave was refused
  std::string kept_at;  // where the refused file now is
  std::vector<std::string> repairs;
  std::optional<DocState> recovered;
};

struct StatusUi {
  std::string text;  // one-line notice in the status bar
  bool is_error = false;
  double until = 0.0;
};

// Where this frame drew its heatmaps (framebuffer pixels), for captures' sidecars and tests.
struct DrawnUi {
  std::vector<CellLayout> cell_layout;  // the lesson's heatmaps
  std::vector<CellLayout> model_cells;  // the model view's thumbnails (head = layer * n_head + head)
  CellLayout model_big;                 // the selected head's big heatmap (rows 0: not drawn)
  CellLayout colorbar_layout;
  float shapes_content_h = 0.0f;  // height of the shapes strip's content last frame
  std::string menu_title;         // the menu bar's right side as last drawn (tests)
};

struct WindowUi {
  std::string title;  // as last set on the OS window
  bool fonts_dirty = true;
  bool style_dirty = true;
  ImFont* font_ui = nullptr;
  ImFont* font_mono = nullptr;
  GlyphSet glyphs;                // what the atlas holds and what it must hold next (want_glyphs)
  GlyphPlan glyph_plan;           // the last build's ranges, which ImGui reads while the fonts live
  WideChars wide;                 // aliases of characters beyond U+FFFF in text fields (text_fields.hpp)
  std::size_t aliases_built = 0;  // how many of them the atlas draws
  std::string clipboard;          // the clipboard's text as a field takes it (aliased)
};

struct CaptureUi {
  bool settings_open = false;
  bool window_pending = false;  // read the framebuffer after this frame is drawn
  std::string dir_edit;
  std::string last;  // path of the last file saved by a capture or export
};

// What the window remembers between frames and no document holds, by the part it serves.
struct Ui {
  KeyboardUi keys;
  EditorUi edit;
  DialogUi dialog;
  RestoreUi restore;
  StatusUi status;
  DrawnUi drawn;
  WindowUi window;
  CaptureUi capture;
};

struct Paths {
  std::string config_dir;     // settings.json
  std::string state_dir;      // autosave.json, autosave-meta.json, autosave-refused-*.json
  bool autosave_off = false;  // a refused autosave could not be moved aside: never write over it
};

// Test hooks: what the last frame showed, for --layout-out and --state-out. Panels write
// here; the UI never reads it back; capture.cpp turns it into JSON in one function.
struct Introspection {
  std::map<std::string, std::vector<float>> widgets;  // name -> x0,y0,x1,y1 where it was last drawn
  std::vector<std::string> shown;                     // the names drawn in the last frame (sorted)
  // What the walkthrough's picture drew (figure::WalkRecord: cells, the diverging legend's
  // swatches, titles, block and key labels, the first cells of the result and its operands as
  // printed) and the panel's own state.
  struct Walk : figure::WalkRecord {
    float pos = 0.0f, target = 0.0f;
    bool playing = false;
    int plan_builds = 0;                 // times the step plan was built (cached on its inputs)
    std::vector<std::string> inspector;  // the inspector's lines (strings built before drawing)
    bool operator==(const Walk&) const = default;
  } walk;
  std::string refusal;  // the last edit refused, as shown
  std::vector<std::string> token_cells;
  std::vector<std::string>
      browse_rows;  // the file dialog's rows as listed  // the embedding table's first token cells as shown (elided)
  bool text_input = false;  // a text field has the keyboard (ImGui's WantTextInput)
  std::string edit_menu;    // the Edit menu's undo and redo items as labelled ("Undo change d_out|Redo ...")
  // The main loop's own hooks (app.cpp, capture.cpp), not the panels': the input taken and
  // still queued, when a frame took its events, and --state-out's cache. They change every
  // frame and are no change of the layout: the comparison leaves them out.
  struct Live {
    std::int64_t input_received = 0;  // events from the window system (input_queue.hpp)
    std::int64_t input_applied = 0;   // of those, handed to ImGui
    std::int64_t input_pending = 0;
    std::vector<int> keys_held;     // GLFW key codes down in the frame, as ImGui saw them
    std::vector<int> buttons_held;  // mouse buttons down in the frame
    double polled_at = 0.0;         // wall clock (seconds since 1970) when this frame began taking events
    // The session's JSON (the costly part of the state at 256 x 768), for one revision and view.
    std::uint64_t session_revision = ~std::uint64_t{0};
    std::optional<SessionView> session_view;
    std::string session_json;
    std::uint64_t session_builds = 0;
    std::string state_written;        // the rest of the state as last written to --state-out
    std::uint64_t state_session = 0;  // session_builds when it was written
    bool operator==(const Live&) const { return true; }
  } live;
  bool operator==(const Introspection&) const = default;
};

// [SECTION] The centre view
// What fills the window's centre: one value (AppState::centre), and what each shows around it
// in one table (centre_info).
enum class Centre { Lesson, Walkthrough, Model, Train, KvCache };

// What the strip under the centre shows.
enum class Strip { Lesson, Model, Train };

struct CentreInfo {
  const char* name;   // as captures and the state dump name it
  bool lesson_panel;  // the lesson's controls and tokens on the left
  Strip strip;        // the strip under the centre: the lesson's shapes, the model's, the run's
  const char* hint;   // the status bar's hint while nothing is notified
};
const CentreInfo& centre_info(Centre c);

struct AppState {
  Options opts;
  Settings settings;
  Paths paths;
  Document doc;
  Compute compute;
  View view;
  Ui ui;
  Renderer renderer;
  Centre centre = Centre::Lesson;  // the view asked for; centre_view() is the one shown
  Walkthrough walkthrough;         // panel_walkthrough.cpp
  ModelUi gpt;                     // the trained GPT of the model view (model_state.hpp)
  TrainUi train;                   // the Train view's run (train_state.hpp)
  KvUi kv;                         // the KV cache view's prefill, step and decode (kv_state.hpp)
  Introspection hooks;             // test hooks (written to --layout-out / --state-out)
  GLFWwindow* window = nullptr;
  bool quit = false;            // leave the main loop
  bool quit_requested = false;  // window close / Ctrl+Q: may ask first
  std::int64_t frame = 0;
  std::uint64_t autosaved_revision = 0;
  SessionView autosaved_view;  // the view last autosaved (a view change alone is autosaved too)
  double last_edit_time = 0.0;
  double last_event_time = 0.0;  // last input event, for idling between events
  double perturb_sign = 1.0;
  int gl_errors = 0;
  std::vector<double> frame_ms;
  std::vector<double> phase_ms[4];  // events, swap + recompute, UI + upload, GL submit
};

// [SECTION] Document edits (document.cpp)
// Every document edit ends with one of these, after changing s.doc.session in place: the
// session format's validation decides whether it stays (false: taken back whole, the reason
// shown under `where`, see draw_refusal); label names the edit for undo ("change d_out";
// consecutive edits with one label while a widget is held are one step).
bool mark_model_dirty(AppState& s, const std::string& label = "edit", const char* where = "model");  // config or d_in
bool mark_input_dirty(AppState& s, const std::string& label = "edit",
                      const char* where = "model");  // tokens, embeddings, batch
void undo(AppState& s);
void redo(AppState& s);
DocState doc_state(const AppState& s);
SessionView current_view(const AppState& s);  // what is shown, as a session's "view" saves it
Session with_view(const AppState& s);         // the document as files hold it (persistence.cpp)
void refresh(AppState& s);                    // recompute model/trace if dirty (once)
void set_document(AppState& s, Session session, std::string path, std::string origin);
void apply_token_text(AppState& s, const std::string& text);  // split, keep vectors by token
void set_d_in(AppState& s, int d_in);
void move_token(AppState& s, int from, int to);
void remove_token(AppState& s, int index);
void sync_token_text(AppState& s);
std::string short_token(const std::string& t);             // at most 24 bytes and an ellipsis, for labels
std::vector<int> valid_head_counts(const ModelConfig& c);  // num_heads choices for the variant
int nearest_valid_heads(const ModelConfig& c, int wanted);
void notify(AppState& s, std::string message, bool error = false);
// Before drawing a text the user or a model made: its characters the font atlas lacks are
// built into it before the next frame (GlyphSet).
inline void want_glyphs(AppState& s, std::string_view text) {
  if (s.ui.window.glyphs.note(text)) s.ui.window.fonts_dirty = true;
}

// [SECTION] Fonts and style (fonts.cpp)
void build_fonts(AppState& s, bool recreate_texture);  // the atlas as the settings and the texts shown need it
void apply_style(AppState& s);
// The texts a frame may draw that the user or a model made, noted for the atlas (want_glyphs).
void note_frame_glyphs(AppState& s);

// [SECTION] Panels (one file each)
void draw_menu_bar(AppState& s);  // panel_menu.cpp
void draw_controls(AppState& s);  // panel_controls.cpp
void draw_shapes(AppState& s);    // panel_shapes.cpp
void draw_tokens(AppState& s);    // panel_tokens.cpp
void draw_heatmaps(AppState& s);  // panel_heatmaps.cpp
// The view shown in the centre: the one asked for, but the lesson while the model view has
// no model opened. Applies --walkthrough on its first call (panel_walkthrough.cpp).
Centre centre_view(AppState& s);
// Shows c, or the lesson when c is shown already (the View menu's items, W, M).
void toggle_centre(AppState& s, Centre c);
bool walkthrough_active(AppState& s);               // centre_view(s) == Centre::Walkthrough
bool walkthrough_draws(const AppState& s);          // the session has walkthrough steps (not gqa, mla, QK-norm, RoPE)
void draw_walkthrough(AppState& s);                 // panel_walkthrough.cpp
void draw_dialogs(AppState& s);                     // dialogs.cpp
void handle_shortcuts(AppState& s);                 // panel_menu.cpp
void record_widget(AppState& s, const char* name);  // last item's rectangle
void record_frame(AppState& s, const char* name);   // last item's frame (without its label)
void text_words_wrapped(const std::string& text);   // wrapped at the window's edge, between words only
void text_dim_wrapped(const std::string& text);     // TextDisabled's colour, wrapped at the window's edge
void text_path_wrapped(const std::string& text);    // a path wrapped after its '/' and spaces, never in a name
void text_error_wrapped(const std::string& text);   // in red, wrapped as text_path_wrapped (an error names a file)
// The red of every error, refusal and failed check the app writes.
inline const ImVec4 kErrorText(1.0f, 0.45f, 0.35f, 1.0f);
// Rows of controls that wrap on a narrow window (1024 × 768) instead of cutting items at its edge:
// SameLine, or a new line where an item `width` wide would not fit before the edge; the width
// of an item `frame` wide with its label (the part after "##" hidden), and of a Button.
void same_line_or_wrap(float width);
float labelled_width(float frame, const char* label);
float button_width(const char* label);
void draw_refusal(AppState& s, const char* where);  // the refused edit's reason, if it was made there
void draw_edit_menu(AppState& s);                   // panel_menu.cpp: Undo NAME, Redo NAME
std::string ms_text(double ms);         // panel_model.cpp: "12.3 µs" below 0.1 ms, else ms; < 0: "not timed"
std::string thousands(std::int64_t v);  // figure/shapes_figure.hpp: 124439808 -> "124,439,808"

// [SECTION] The trained model (model_actions.cpp, panel_model.cpp, panel_model_view.cpp)
void open_model(AppState& s,
                const std::string& path);            // loads on the worker; the current model stays until it succeeds
void set_model_text(AppState& s, std::string text);  // the text box changed
void run_induction_probe(AppState& s);               // random tokens repeated, instead of the text
void toggle_ablation(ModelUi& m, HeadIndex head);    // ablates the head, or restores it when ablated
void poll_model(AppState& s);                        // once a frame: errors, new results, derived view
bool model_busy(const AppState& s);                  // a load, forward or sweep is under way or waiting
// The ablation sweep of the text box (patch: activation patching into the corrupted text),
// on its own thread.
void start_sweep(AppState& s, bool patch = false);
// The grid the model view's centre shows (the sweep's, the lens table), or null: the heads.
const figure::GridView* shown_grid(const ModelUi& m);
bool model_view_active(AppState& s);  // centre_view(s) == Centre::Model
// The open model's name: its folder's, or its file's stem ("gpt2", "run"); window titles and captures.
std::string model_name(const ModelUi& m);
// That layer as the lesson's module (a GPT's: the weight split, gpt_layer.hpp; a Qwen/Llama/Gemma
// model's: gqa, hf_layer.hpp), in the walkthrough.
void open_layer_walkthrough(AppState& s, int layer);
PromptOptions prompt_options(const ModelUi& m);  // the special tokens the text box asks for
// The model shown: the shown forward's, or before one has run (the first text does not
// tokenize), the loaded one's; none while nothing is loaded.
std::optional<ModelFacts> shown_facts(const ModelUi& m);
// Its line in the model panel: "Qwen3: 28 layers × 16 heads sharing 8 K/V heads, 1024 wide, …".
std::string facts_line(const ModelFacts& f);
// Why the model shown's layers cannot open in the walkthrough (hf_layer_refusal), in one line;
// empty: they can (every GPT, and Qwen/Llama/Gemma models within the lesson's reach).
std::string layer_walk_reason(const ModelUi& m);
void draw_model_panel(AppState& s);        // panel_model.cpp: open, text, detector, next token
void draw_model_open_dialog(AppState& s);  // panel_model.cpp: File → Open model…
// What the model view says in place of a figure ("" once it has one); an error in red.
struct Waiting {
  std::string text;
  bool error = false;
};
Waiting waiting_line(const AppState& s);                               // panel_model_view.cpp
void draw_model_view(AppState& s);                                     // panel_model_view.cpp
void draw_model_shapes(AppState& s);                                   // panel_model_view.cpp: the strip below it
void upload_texture(HeadTexture& t, int w, int h, const float* data);  // renderer.cpp

// [SECTION] The Train view (train/panel_train.cpp, train/train_view.cpp)
bool make_train_run(AppState& s);    // a run of the panel's settings, paused at step 0 (false: refused, said)
void poll_train(AppState& s);        // once a frame: the worker's newest snapshot; --train-until
bool train_busy(const AppState& s);  // training, or a command of the run not yet done
// Start (and Step) can be pressed: not training, not done, and a text run's file passes its check.
bool train_can_start(const TrainUi& t);
void finish_training(AppState& s);   // closing: pause, the checkpoint written, the last snapshot taken
void draw_train_panel(AppState& s);  // the settings, Start / Pause / Step / Reset, scrubber, ablation
void draw_train_view(AppState& s);   // the centre: train_view_figure through the canvas
void draw_train_strip(AppState& s);  // the strip below it
// The Train view's run as captures and the window title name it: its folder ("induction-
// 20261126-030424") and the step shown, or "train" before a run (train_view.cpp).
std::string train_run_name(const AppState& s);
// What the centre shows, for the window's title and the menu bar's right side: "model gpt2",
// the Train view's run and step, or the document ("lesson seed003-wrapper").
std::string shown_title(AppState& s);
figure::Figure train_view_figure(const AppState& s, const figure::Options& o);  // the view's figure (needs a run)

// [SECTION] The KV cache view (kv/panel_kv.cpp): the lesson decoded through a KV cache, step by step
void draw_kv_view(AppState& s);  // the toolbar (prefill, steps) and build_kv_step_figure through the canvas

// [SECTION] Files (persistence.cpp)
void resolve_paths(AppState& s);
void load_settings(AppState& s);
void save_settings(AppState& s);
bool restore_autosave(AppState& s);  // false: none, or refused (then kept aside, Dialog::Recover)
void open_recovered(AppState& s);    // what recover_session kept of a refused autosave
void autosave(AppState& s);
bool open_document(AppState& s, const std::string& path_or_lesson);  // false: error shown, nothing changed
bool save_document(AppState& s, const std::string& path);            // false: error shown, nothing changed
void add_recent(AppState& s, const std::string& path);
void add_recent_model(AppState& s, const std::string& path);

// [SECTION] GL (renderer.cpp)
bool renderer_init(Renderer& r, std::string& error);
void renderer_shutdown(Renderer& r);
void renderer_begin_frame(Renderer& r);  // display size from ImGui draw data
void delete_texture(HeadTexture& t);
// Queues a heatmap quad on the current window's draw list.
void draw_heatmap_quad(AppState& s, const HeatmapDraw& d);

// [SECTION] Capture (capture.cpp)
bool write_screenshot(AppState& s, const std::string& path, std::string& error);
void write_state_dump(AppState& s, const std::string& path);
void write_layout(AppState& s, const std::string& path);
std::vector<std::uint8_t> read_framebuffer(AppState& s, int& width, int& height);  // RGBA, top row first

// [SECTION] Capture for teaching (panel_capture.cpp)
// The figure options of what is shown: the view, stage, head, batch, scales and colours of
// the state, for a canvas of `canvas` screen pixels in the app's typography and theme. A
// capture takes the options a panel last built its figure with and changes only the theme
// and the caption, so the picture is the same.
figure::Options figure_options(const AppState& s, figure::View view, ImVec2 canvas);
enum class CaptureKind { Shown, Grid, Head, Step, Window };     // Shown: the walkthrough step, enlarged head or grid
void capture(AppState& s, CaptureKind kind, bool svg = false);  // svg: vector figure instead of PNG
void capture_window_now(AppState& s);                           // after the frame is rendered, before the swap
void export_matrix(AppState& s, const std::string& format, bool clipboard);  // latex | csv | npy
std::string capture_folder(const AppState& s);
void draw_capture_menu(AppState& s);
void draw_capture_settings(AppState& s);
void capture_button(AppState& s);
void handle_capture_shortcuts(AppState& s);  // F12, Shift+F12

}  // namespace mhaviz::gui
