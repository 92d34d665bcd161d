// Test and teaching hooks: a PNG of the window with a JSON sidecar describing every
// heatmap (cell rectangles in image pixels, value range, colormap table), a state dump
// written on exit, and the rectangles of named widgets for xdotool tests.
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "figure/figure.hpp"
#include "figure/sidecar.hpp"
#include "figure/text.hpp"

namespace mhaviz::gui {
namespace {

nlohmann::json layout_json(const CellLayout& c, float sx, float sy) {
  return figure::placement_json(
      {c.head, c.x0 * sx, c.y0 * sy, c.x1 * sx, c.y1 * sy, c.rows, c.cols, c.vmin, c.vmax, c.cmap, c.log});
}

nlohmann::json colormap_table(Colormap c) {
  nlohmann::json lut = nlohmann::json::array();
  for (int i = 0; i < 256; ++i) {
    const auto rgb = colormap_lut(c, i);
    lut.push_back({rgb[0], rgb[1], rgb[2]});
  }
  return lut;
}

// The model view as drawn: every thumbnail's placement and pooled values (masked: null), the
// selected head's placement and values, all from the figure on screen. Null when the model
// view was not drawn.
nlohmann::json model_sidecar(const AppState& s, float sx, float sy) {
  const ModelUi& m = s.gpt;
  if (s.ui.drawn.model_cells.empty() || !m.view) return nullptr;
  const auto& maps = s.renderer.model.fig.heatmaps;  // model_cells and model_big list them in this order
  const auto values = [&](std::size_t k) {
    nlohmann::json out = nlohmann::json::array();
    for (float x : maps[k].values) out.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
    return out;
  };
  const int H = m.view->n_head;
  nlohmann::json thumbs = nlohmann::json::array();
  for (std::size_t k = 0; k < s.ui.drawn.model_cells.size() && k < maps.size(); ++k) {
    const CellLayout& c = s.ui.drawn.model_cells[k];
    nlohmann::json t = layout_json(c, sx, sy);
    t["layer"] = c.head / H;
    t["head"] = c.head % H;
    t["values"] = values(k);
    thumbs.push_back(std::move(t));
  }
  nlohmann::json big = nullptr;
  if (s.ui.drawn.model_big.rows > 0 && maps.size() > s.ui.drawn.model_cells.size()) {
    big = layout_json(s.ui.drawn.model_big, sx, sy);
    big["layer"] = s.ui.drawn.model_big.head / H;
    big["head"] = s.ui.drawn.model_big.head % H;
    big["values"] = values(s.ui.drawn.model_cells.size());
  }
  return {{"tokens", m.view->token_strings},
          {"ids", m.view->ids},
          {"pool", m.view->thumbs.f},
          {"thumbnails", thumbs},
          {"big", big}};
}

}  // namespace

std::vector<std::uint8_t> read_framebuffer(AppState& s, int& w, int& h) {
  glfwGetFramebufferSize(s.window, &w, &h);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  // GL rows go bottom-up; PNG rows top-down. The window is opaque whatever GL's alpha holds.
  std::vector<std::uint8_t> flipped(px.size());
  const std::size_t stride = static_cast<std::size_t>(w) * 4;
  for (int y = 0; y < h; ++y) {
    std::copy_n(px.data() + static_cast<std::size_t>(h - 1 - y) * stride, stride,
                flipped.data() + static_cast<std::size_t>(y) * stride);
  }
  for (std::size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;
  return flipped;
}

bool write_screenshot(AppState& s, const std::string& path, std::string& error) {
  int w = 0, h = 0;
  const std::vector<std::uint8_t> rgba = read_framebuffer(s, w, h);
  std::vector<unsigned char> flipped(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
  for (std::size_t i = 0, n = flipped.size() / 3; i < n; ++i)
    std::copy_n(rgba.data() + i * 4, 3, flipped.data() + i * 3);
  const std::size_t stride = static_cast<std::size_t>(w) * 3;
  const std::string tmp = path + ".tmp";
  if (!stbi_write_png(tmp.c_str(), w, h, 3, flipped.data(), static_cast<int>(stride))) {
    error = "cannot write '" + path + "'";
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = "cannot write '" + path + "'";
    return false;
  }
  // Sidecar: where the cells are and how colours map to values.
  const float sx = s.renderer.fb_scale_x, sy = s.renderer.fb_scale_y;
  nlohmann::json heads = nlohmann::json::array();
  nlohmann::json values = nlohmann::json::array();
  const auto& lesson = s.renderer.lesson.fig.heatmaps;  // cell_layout lists them in this order
  for (std::size_t k = 0; k < s.ui.drawn.cell_layout.size() && k < lesson.size(); ++k) {
    const auto& c = s.ui.drawn.cell_layout[k];
    heads.push_back(layout_json(c, sx, sy));
    const auto& hv = lesson[k].values;
    nlohmann::json v = nlohmann::json::array();
    if (c.rows <= 64) {
      for (float x : hv) v.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
    }
    values.push_back(std::move(v));
  }
  const nlohmann::json model = model_sidecar(s, sx, sy);
  const bool dark = s.settings.dark;
  nlohmann::json hatch =
      dark ? nlohmann::json{{41, 41, 41}, {77, 77, 77}} : nlohmann::json{{199, 199, 199}, {235, 235, 235}};
  nlohmann::json maps;
  for (int i = 0; i < kColormapCount; ++i) {
    maps[std::string(colormap_name(static_cast<Colormap>(i)))] = colormap_table(static_cast<Colormap>(i));
  }
  const nlohmann::json side = {
      {"image", path},
      {"width", w},
      {"height", h},
      {"stage", std::string(stage_name(s.view.stage))},
      {"batch", s.view.batch},
      {"tokens", s.compute.tokens},
      {"causal", s.compute.trace.config.causal},
      {"heads", heads},
      {"values", values},  // masked = null; row-major, per entry of heads
      {"colorbar", layout_json(s.ui.drawn.colorbar_layout, sx, sy)},
      {"masked_colors", hatch},
      {"colormaps", maps},
      {"model", model},  // the model view's thumbnails and big head, when shown
  };
  try {
    write_file_atomic(path + ".json", side.dump(1) + "\n");
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
  return true;
}

namespace {
// The test hooks as JSON: every writer goes through here.
nlohmann::json probe_json(const Introspection& p) {
  nlohmann::json widgets = nlohmann::json::object();
  for (const auto& [k, v] : p.widgets) widgets[k] = v;
  const auto& w = p.walk;
  return {{"widgets", widgets},
          {"shown", p.shown},
          {"refusal", p.refusal},
          {"token_cells", p.token_cells},
          {"browse_rows", p.browse_rows},
          {"text_input", p.text_input},
          {"edit_menu", p.edit_menu},
          {"walk",
           {{"pos", w.pos},
            {"target", w.target},
            {"playing", w.playing},
            {"cells", w.cells},
            {"legend_swatches", w.legend_swatches},
            {"plan_builds", w.plan_builds},
            {"titles", w.titles},
            {"block_labels", w.block_labels},
            {"key_labels", w.key_labels},
            {"values", w.values},
            {"operand_titles", w.operand_titles},
            {"operand_values", w.operand_values},
            {"inspector", w.inspector}}}};
}
}  // namespace

namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The Train view's run as the window last took it: its step, its last losses, where its
// checkpoint is, the probe's snapshots and the scrubber, the last ablation, the head selected.
// The walkthrough's "Compare variants" tab: the part shown and the variants' figures as the
// panel draws them (generation: the trace they were computed for; ~0 before the first).
nlohmann::json compare_state_json(const Walkthrough& w) {
  const Comparison& c = w.cmp;
  nlohmann::json eq = nlohmann::json::array(), costs = nlohmann::json::array();
  for (const Equivalence& e : c.variants.equivalences) {
    nlohmann::json diffs = nlohmann::json::object();
    for (const auto& [name, d] : e.diffs) diffs[name] = number_or_null(d);
    eq.push_back({{"claim", e.claim},
                  {"expected_equal", e.expected_equal},
                  {"equal", e.equal},
                  {"verdict", e.verdict},
                  {"diffs", diffs}});
  }
  for (const VariantCost& r : c.variants.costs)
    costs.push_back({{"variant", r.variant},
                     {"detail", r.detail},
                     {"parameters", r.cost.parameters},
                     {"flops", r.cost.flops},
                     {"kv_bytes_token", r.kv_bytes_token},
                     {"kv_bytes_context", r.kv_bytes_context}});
  return {{"tab", w.tab == 1},          {"part", w.compare_part == 1 ? "variants" : "wrapper"},
          {"generation", c.generation}, {"valid", c.valid},
          {"equivalences", eq},         {"costs", costs},
          {"notes", c.variants.notes}};
}

// The KV cache view: the prefill and step shown, and the cache after that step.
nlohmann::json kv_state_json(const KvUi& kv) {
  nlohmann::json j = {{"prefill", kv.prefill}, {"step", kv.step},     {"error", kv.error},
                      {"note", kv.note},       {"memory", kv.memory}, {"preset", kv.preset}};
  if (!kv.decode) return j;
  const CacheStep& st = kv.decode->steps[static_cast<std::size_t>(kv.step)];
  j.update({{"steps", kv.decode->steps.size()},
            {"decoded_prefill", kv.decode->prefill},
            {"held", {st.held.begin, st.held.end}},
            {"evicted", {st.evicted.begin, st.evicted.end}},
            {"elements", st.elements},
            {"bytes", st.bytes}});
  return j;
}

nlohmann::json train_state_json(const TrainUi& t) {
  nlohmann::json j = {{"run", t.worker != nullptr}, {"error", t.error}, {"scrub", t.scrub},
                      {"layer", t.layer},           {"head", t.head},   {"until", t.until}};
  // The text task: the file chosen and its check (the one-line reason, or its size in tokens).
  j["task"] = t.task == 0 ? "induction" : t.task == 1 ? "copy" : "text";
  j["start_enabled"] = train_can_start(t);
  j["text"] = {{"path", t.text_path},   {"gpt2_tokens", t.gpt2_tokens}, {"checked", !t.text_checked.empty()},
               {"error", t.text.error}, {"tokens", t.text.tokens},      {"vocab", t.text.vocab}};
  if (!t.snap) return j;
  j["probe_names"] = t.snap->probe_names;
  const TrainSnapshot& n = *t.snap;
  const figure::TrainCurves& c = n.curves;
  j.update({{"step", n.step},
            {"target", n.target},
            {"running", n.running},
            {"checkpoint", n.checkpoint},
            {"saved_step", n.saved_step},
            {"save_error", n.error},
            {"tokens_per_s", n.tokens_per_s},
            {"probes", n.probes.size()},
            {"steps_recorded", c.steps.size()}});
  if (!c.steps.empty()) {
    j["loss"] = number_or_null(c.loss.back());
    j["loss_first"] = number_or_null(c.loss_first.back());
    j["loss_repeat"] = number_or_null(c.loss_repeat.back());
    j["first_loss"] = number_or_null(c.loss.front());
  }
  if (n.ablation)
    j["ablation"] = {{"layer", n.ablation->layer},
                     {"head", n.ablation->head},
                     {"step", n.ablation->step},
                     {"loss", n.ablation->loss},
                     {"loss_ablated", n.ablation->loss_ablated},
                     {"loss_repeat", number_or_null(n.ablation->loss_repeat)},
                     {"loss_repeat_ablated", number_or_null(n.ablation->loss_repeat_ablated)}};
  return j;
}

// What the model view showed last: the model, the tokens, the selection, the detector's
// scores and top five, the next tokens as printed, the canvas and font its figure was laid
// out for (`mhaviz render --view model --size W x H --font PX` draws the same figure), and
// how long edits of the text took to show.
// The ablation sweep: under way (its progress), and the last grid with what it judged.
nlohmann::json sweep_state_json(const ModelUi& m) {
  nlohmann::json j = {{"running", m.sweep_job != nullptr},
                      {"done", m.sweep_job ? m.sweep_job->done() : 0},
                      {"total", m.sweep_job ? m.sweep_job->total() : 0},
                      {"shown", m.show == ModelUi::Show::Sweep && m.sweep != nullptr},
                      {"target_text", m.sweep_target},
                      {"vs_text", m.sweep_vs},
                      {"corrupt_text", m.corrupt_text},
                      {"patch_per", m.patch_per == PatchPer::LayerPosition ? "layer-position" : "head"}};
  if (!m.sweep) return j;
  const SweepData& d = *m.sweep;
  j["rows"] = d.grid.rows;
  j["cols"] = d.grid.cols;
  j["values"] = d.grid.values;
  j["clean"] = d.grid.clean;
  j["ids"] = d.target.ids;
  j["target"] = d.target.metric.target;
  j["vs"] = d.target.metric.vs;
  j["mode"] = d.mode == AblationMode::Mean ? "mean" : "zero";
  j["corrupt"] = d.target.corrupt;  // patching: the corrupted text's tokens; empty: ablation
  j["per"] = d.per_position() ? "layer-position" : "head";
  j["metric_corrupt"] = d.grid.corrupt;
  return j;
}

nlohmann::json model_state_json(const AppState& s) {
  const ModelUi& m = s.gpt;
  const std::optional<ModelFacts> facts = shown_facts(m);
  const figure::Options& fo = s.renderer.model.opts;
  nlohmann::json j = {{"path", m.path},
                      {"text", m.text},
                      {"probe", m.induction_probe},
                      {"shown", m.drawn_frame >= 0 && m.drawn_frame + 1 >= s.frame},
                      {"error", m.error},
                      {"facts_line", facts ? facts_line(*facts) : ""},
                      {"layer", m.layer},
                      {"head", m.head},
                      {"text_tokens", m.tokens.tokens},
                      {"text_error", m.tokens.error},
                      {"waiting", waiting_line(s).text},  // the view's line in place of a figure
                      {"recent", s.settings.recent_models},
                      {"hover", m.hover_k >= 0 && m.view ? head_label(m.hover_k, m.view->n_head) : ""},
                      {"hover_big", m.hover_big},
                      {"busy_frames", m.busy_frames},
                      {"busy_max_gap_ms", m.busy_max_gap_ms},
                      {"busy", model_busy(s)},  // a load, forward or derived view under way
                      {"open_dialog", m.open_dialog},
                      {"open_edit", m.open_edit}};  // File → Open model…'s field
  nlohmann::json updates = nlohmann::json::array();
  for (const ModelUi::Update& u : m.updates)
    updates.push_back({{"ms", u.ms}, {"forward_ms", u.forward_ms}, {"from", u.from}, {"tokens", u.tokens}});
  j["updates"] = updates;
  if (m.result) {
    // The model's facts as the view names them.
    const ModelFacts& f = m.result->loaded.facts;
    j["facts"] = {{"model_type", f.model_type}, {"architecture", f.architecture}, {"layers", f.layers},
                  {"heads", f.heads},           {"kv_heads", f.kv_heads},         {"windows", f.window}};
    j["layer_walk_refused"] = layer_walk_reason(m);
    j["generation"] = m.result->generation;
    j["forward_ms"] = m.result->forward_ms;
    j["recomputed_from"] = m.result->recomputed_from;
  }
  j["sweep"] = sweep_state_json(m);
  j["lens_shown"] = m.show == ModelUi::Show::Lens && m.view && m.view->lens;
  // The lens's ranked token: as typed, the position clicked, and (shown) its rank from 0 and
  // probability after each layer there.
  j["lens"] = {{"token_text", m.lens_token},
               {"position_clicked", m.lens_position},
               {"target", m.view ? m.view->key.lens_target : -1},
               {"position", m.view ? m.view->lens_position : -1},
               {"rank", m.view ? m.view->lens_rank : std::vector<int>{}},
               {"p", m.view ? m.view->lens_p : std::vector<float>{}}};
  if (!m.view) return j;
  const ModelViewData& v = *m.view;
  nlohmann::json scores = nlohmann::json::array();
  for (float x : v.view.scores) scores.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  nlohmann::json top = nlohmann::json::array();
  for (int k : v.top) top.push_back(head_label(k, v.n_head));
  nlohmann::json next = nlohmann::json::array();
  for (std::size_t i = 0; i < v.next.size(); ++i) {
    const NextRow& r = v.next[i];
    next.push_back({{"id", r.id},
                    {"token", r.token},
                    {"p", r.p},
                    {"logp", r.logp},
                    {"clean_p", r.clean_p},
                    {"shown", v.next_shown[i]}});
  }
  nlohmann::json ablated = nlohmann::json::array();
  for (const HeadIndex& h : v.key.ablate) ablated.push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
  j["ablated"] = ablated;
  j["ablation"] = v.key.ablation_mode == AblationMode::Mean ? "mean" : "zero";
  j["norm_weighted"] = v.key.norm_weighted;
  j["loss"] = std::isfinite(v.loss) ? nlohmann::json(v.loss) : nlohmann::json(nullptr);
  j["clean_loss"] = std::isfinite(v.clean_loss) ? nlohmann::json(v.clean_loss) : nlohmann::json(nullptr);
  j["n_layer"] = v.n_layer;
  j["n_head"] = v.n_head;
  j["tokens"] = v.token_strings;
  j["ids"] = v.ids;
  j["pattern"] = v.key.pattern < 0 ? "" : std::string(head_pattern_name(kHeadPatterns[v.key.pattern]));
  j["scores"] = scores;
  j["top"] = top;
  j["position"] = v.position;
  j["next"] = next;
  j["big"] = v.view.selected() ? head_label(v.view.selected_layer * v.n_head + v.view.selected_head, v.n_head) : "";
  j["canvas"] = {fo.canvas.width, fo.canvas.height};
  j["font"] = fo.type.title;
  j["pool"] = v.thumbs.f;
  return j;
}
}  // namespace

namespace {
// The centre view's figure as drawn last frame: its name, where it is on screen, the canvas
// and text size it was laid out for, and its display list (without the heatmaps' values).
nlohmann::json centre_figure_json(const AppState& s) {
  const Renderer& r = s.renderer;
  const ScreenFigure* f = r.centre;
  if (!f) return nullptr;
  const char* name = f == &r.lesson       ? "lesson"
                     : f == &r.walk       ? "walk"
                     : f == &r.compare    ? "compare"
                     : f == &r.variants   ? "variants"
                     : f == &r.train      ? "train"
                     : f == &r.kv         ? "kv"
                     : f == &r.model_grid ? "model_grid"
                                          : "model";
  return {{"name", name},
          {"origin", {f->origin.x, f->origin.y}},
          {"canvas", {f->opts.canvas.width, f->opts.canvas.height}},
          {"font", f->opts.type.title},
          {"display_list", nlohmann::json::parse(figure::prims_json(f->fig, false))}};
}

// The session as a save writes it, made again only when the document or the view changed.
const std::string& session_json(AppState& s) {
  Introspection::Live& live = s.hooks.live;
  const SessionView view = current_view(s);
  if (live.session_revision != s.doc.revision || live.session_view != view) {
    live.session_json = session_to_json(with_view(s));
    live.session_revision = s.doc.revision;
    live.session_view = view;
    ++live.session_builds;
  }
  return live.session_json;
}

// Everything a test waits on or checks, but the session: the test hooks and the app's state.
// Code points of the session's tokens, the model's text and its next tokens that the atlas's
// faces have no glyph for (drawn as '?'; beyond U+FFFF: for their alias), and the installed
// fonts merged into them.
nlohmann::json glyphs_json(const AppState& s) {
  std::vector<std::uint32_t> lacking;
  const auto check = [&](const std::string& text) {
    // As the atlas draws it: beyond U+FFFF the alias, where the character has one.
    const std::string shown = s.ui.window.wide.shown(text);
    for (std::size_t i = 0; i < shown.size();) {
      const std::uint32_t cp = figure::next_codepoint(shown, i);
      for (const ImFont* f : {s.ui.window.font_ui, s.ui.window.font_mono})
        if (f != nullptr && cp >= 0x20 &&
            (cp > 0xFFFF || f->FindGlyphNoFallback(static_cast<ImWchar>(cp)) == nullptr) &&
            std::find(lacking.begin(), lacking.end(), cp) == lacking.end())
          lacking.push_back(cp);
    }
  };
  for (const std::string& t : s.doc.session.tokens) check(t);
  check(s.gpt.text);
  if (s.gpt.view)
    for (const NextRow& r : s.gpt.view->next) check(r.token);
  nlohmann::json fonts = nlohmann::json::array();
  for (const GlyphPlan::Merged& m : s.ui.window.glyph_plan.sans_fallbacks) fonts.push_back(m.file.path);
  return {{"lacking", lacking}, {"merged_fonts", fonts}, {"noted", s.ui.window.glyphs.noted().size()}};
}

nlohmann::json state_json(AppState& s) {
  const Trace& t = s.compute.trace;
  const Introspection::Live& live = s.hooks.live;
  nlohmann::json shapes;
  if (s.compute.have_trace) {
    shapes = {{"input", t.input.shape},
              {"queries", t.queries.shape},
              {"q", t.q.shape},
              {"scores", t.scores.shape},
              {"weights", t.weights.shape},
              {"context", t.context.shape},
              {"context_merged", t.context_merged.shape},
              {"output", t.output.shape}};
  }
  nlohmann::json j = probe_json(s.hooks);
  j.update({
      {"path", s.doc.path},
      {"origin", s.doc.origin},
      {"modified", s.doc.modified},
      {"revision", s.doc.revision},
      {"error", s.compute.error},
      {"have_trace", s.compute.have_trace},
      {"trace_heads", t.heads},
      {"trace_tokens", t.tokens},
      {"trace_head_dim", t.head_dim},
      {"parameters", s.compute.have_trace ? s.compute.model.parameter_count() : 0},
      {"shapes", shapes},
      {"stage", std::string(stage_name(s.view.stage))},
      {"batch", s.view.batch},
      {"head", s.view.head},
      {"enlarged", s.view.enlarged},
      {"show_controls", s.view.show_controls},
      {"walkthrough", centre_view(s) == Centre::Walkthrough},
      {"centre", centre_info(centre_view(s)).name},
      {"frames", s.frame},
      {"gl_errors", s.gl_errors},
      {"forwards", s.compute.generation},
      {"texture_uploads", s.renderer.uploads_total},
      {"status", s.ui.status.text},
      {"glyphs", glyphs_json(s)},
      {"dialog", static_cast<int>(s.ui.dialog.kind)},
      {"title", shown_title(s)},              // the menu bar's right side and the window's title
      {"menu_title", s.ui.drawn.menu_title},  // as the last frame drew it
      {"refusal", s.ui.edit.refusal},
      {"undo", s.doc.history.can_undo() ? s.doc.history.undo_label() : ""},
      {"redo", s.doc.history.can_redo() ? s.doc.history.redo_label() : ""},
      {"undo_steps", s.doc.history.undo_steps()},
      {"autosaved_revision", s.autosaved_revision},
      {"last_capture", s.ui.capture.last},
      {"restore",
       {{"error", s.ui.restore.error}, {"kept_at", s.ui.restore.kept_at}, {"repairs", s.ui.restore.repairs}}},
      {"settings",
       {{"font_size", s.settings.font_size},
        {"theme", s.settings.dark ? "dark" : "light"},
        {"colormap", std::string(colormap_name(s.settings.colormap))},
        {"log_scale", s.settings.log_weights},
        {"recent", s.settings.recent}}},
      {"input",
       {{"received", live.input_received},
        {"applied", live.input_applied},
        {"pending", live.input_pending},
        {"keys_held", live.keys_held},
        {"buttons_held", live.buttons_held},
        {"polled_at", live.polled_at}}},
      {"session_builds", live.session_builds},  // the session's JSON made again (once per revision and view)
      {"model", model_state_json(s)},
      {"train", train_state_json(s.train)},
      {"kv", kv_state_json(s.kv)},
      {"compare", compare_state_json(s.walkthrough)},
      {"figure", centre_figure_json(s)},
  });
  return j;
}
}  // namespace

// The state, when it changed since it was last written: its session is spliced in as text
// (made once per revision and view), the rest dumped anew, which is cheap.
void write_state_dump(AppState& s, const std::string& path) {
  Introspection::Live& live = s.hooks.live;
  const std::string& session = session_json(s);
  std::string rest = state_json(s).dump(1);
  if (rest == live.state_written && live.state_session == live.session_builds) return;
  try {
    // rest is "{\n ...}": the session goes first, as one more member.
    write_file_atomic(path, "{\n \"session\": " + session + ",\n" + rest.substr(2) + "\n");
    live.state_written = std::move(rest);
    live.state_session = live.session_builds;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mhaviz: %s\n", e.what());
  }
}

void write_layout(AppState& s, const std::string& path) {
  int wx = 0, wy = 0;
  glfwGetWindowPos(s.window, &wx, &wy);
  nlohmann::json j = probe_json(s.hooks);
  j.update({{"window_x", wx}, {"window_y", wy}, {"frame", s.frame}});
  try {
    write_file_atomic(path, j.dump(1) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mhaviz: %s\n", e.what());
  }
}

}  // namespace mhaviz::gui
