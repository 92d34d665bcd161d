// `mhaviz render`: the app's figures (a head, the grid of heads, a walkthrough step) as
// PNG or SVG, drawn on the CPU, so scripts make slides with no display and no GL.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli.hpp"
#include "figure/figure.hpp"
#include "figure/kv_figure.hpp"
#include "figure/train_figure.hpp"
#include "figure/variant_figure.hpp"
#include "mhaviz/hf_model.hpp"
#include "mhaviz/kv_cache.hpp"
#include "mhaviz/load_error.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/variant_compare.hpp"

namespace mhaviz::cli {

// cli_render_model.cpp: the figure of --model's --view model | layer L | head L.H. Throws
// LoadError or std::invalid_argument (one line).
figure::Figure build_model_render(const RenderOptions& o, figure::Options fo);
// cli_render_interv.cpp: --view sweep | patch | lens, the same way.
figure::Figure build_interv_render(const RenderOptions& o, figure::Options fo);

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  std::string tail = s.substr(s.size() - suffix.size());
  for (char& c : tail) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return tail == suffix;
}

// "1280x720" -> 1280, 720 (each 160 to 16384).
bool parse_size(const std::string& s, figure::Canvas& out) {
  const auto x = s.find('x');
  if (x == std::string::npos) return false;
  const std::string w = s.substr(0, x), h = s.substr(x + 1);
  const auto ok = [](const std::string& t) {
    return !t.empty() && t.size() <= 5 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!ok(w) || !ok(h)) return false;
  out = {static_cast<float>(std::stoi(w)), static_cast<float>(std::stoi(h))};
  return out.width >= 160 && out.height >= 160 && out.width <= 16384 && out.height <= 16384;
}

bool parse_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoi(s);
  return true;
}

// PNG at --scale or SVG, and the --cells-json sidecar, each written atomically.
void write_figure(const RenderOptions& o, const figure::Figure& f, bool svg) {
  const std::string bytes =
      svg ? figure::to_svg(f)
          : figure::encode_png(figure::rasterize(f, o.scale), f.width * o.scale, f.height * o.scale);
  write_file_atomic(o.output, bytes);
  if (!o.cells_json.empty()) write_file_atomic(o.cells_json, figure::sidecar_json(f, svg ? 1 : o.scale, o.output));
}

// --train-log: the run's loss curves and detector plots (train_figure.hpp). The model's
// vocabulary (the chance line) and settings (the caption) come from config.json beside the log
// when there is one, as `mhaviz train -o DIR/model.safetensors --log DIR/log.jsonl` and the
// Train view's runs leave them.
figure::Figure build_train_render(const RenderOptions& o, const figure::Options& fo) {
  std::ifstream in(o.train_log);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(o.train_log, ec))
    throw std::invalid_argument("--train-log: cannot read '" + o.train_log + "'" +
                                (in ? std::string(": it is a folder") : ": " + std::string(std::strerror(errno))));
  figure::TrainCurves c;
  try {
    c = figure::read_train_log(in);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--train-log: " + o.train_log + ": " + e.what());
  }
  const std::filesystem::path config = std::filesystem::path(o.train_log).parent_path() / "config.json";
  std::ifstream cf(config);
  const nlohmann::json j = cf ? nlohmann::json::parse(cf, nullptr, false) : nlohmann::json();
  std::string model;
  if (j.is_object() && j.contains("vocab_size") && j["vocab_size"].is_number_integer()) {
    c.vocab = j["vocab_size"].get<int>();
    char buf[160];
    std::snprintf(buf, sizeof buf, "%d layers \xC3\x97 %d heads, %s, d_model %d, vocab %d, context %d",
                  j.value("n_layers", 0), j.value("n_heads", 0),
                  j.value("attn_only", false) ? "attention-only" : "full blocks", j.value("emb_dim", 0), c.vocab,
                  j.value("context_length", 0));
    model = buf;
  }
  c.title = "Training: " + std::to_string(c.steps.back()) + " steps" + (model.empty() ? "" : " \xC2\xB7 " + model);
  c.caption = o.train_log;
  return figure::build_train_figure(c, nullptr, fo);
}

// --view kv-step: step K (default: the last) of the session's decode through a KV cache from
// --decode-from P, as the app's KV cache view draws it.
figure::Figure build_kv_step_render(const RenderOptions& o, figure::Options fo) {
  const std::string arg = o.view.size() > 1 ? o.view[1] : o.step;
  Session s = load_session(o.session);
  if (o.eval) s.model.training = false;
  const Model model = build_model(s.model, s.d_in());
  const DecodeTrace d = decode_with_cache(model, s.input_tensor(), o.decode_from);
  int step = static_cast<int>(d.steps.size()) - 1;
  if (!arg.empty() && !parse_int(arg, step))
    throw std::invalid_argument("--step: '" + arg + "' is not a step number (0 to " +
                                std::to_string(d.steps.size() - 1) + ")");
  fo.batch = o.batch;
  return figure::build_kv_step_figure(d, s.tokens, step, fo);
}

// --view variants: the session's sizes through every attention variant, as the walkthrough's
// "Compare variants" tab draws them.
figure::Figure build_variants_render(const RenderOptions& o, const figure::Options& fo) {
  if (o.view.size() > 1) throw std::invalid_argument("--view: variants takes no number, got '" + o.view[1] + "'");
  const Session s = load_session(o.session);
  return figure::build_variant_figure(compare_attention_variants(build_model(s.model, s.d_in()), s.input_tensor()), fo);
}

}  // namespace

void add_render(CLI::App& app, RenderOptions& o) {
  auto* sub = app.add_subcommand(
      "render",
      "Draw a figure of a session as PNG or SVG: the grid of heads, one head, or a walkthrough step. "
      "Drawn on the CPU: needs no X server, no display and no OpenGL (works over ssh and in CI).");
  sub->add_option("session", o.session, "Session file, - for standard input, or a built-in lesson name (or --model)");
  add_model_options(*sub, o.model, true);
  sub->add_option("--detector", o.detector,
                  "With --model --view model: score every head for previous-token, first-token, duplicate-token or "
                  "induction (measured on a random sequence repeated twice) and frame the top five");
  sub->add_option("-o,--output", o.output, "OUT.png or OUT.svg (format by extension; written atomically)")->required();
  sub->add_flag("--norm-weighted", o.norm_weighted,
                "With --model --view model: each weight times the norm of its value vector after the output projection "
                "(Kobayashi et al. 2020), which hides most attention-sink weight");
  sub->add_option("--target", o.target,
                  "With --view sweep or patch: the next token judged (one token, e.g. ' Mary'); with --view lens: its "
                  "rank and probability after each layer, beside the table");
  sub->add_option("--position", o.position, "With --view lens --target: the position ranked (default: the last)");
  sub->add_option("--vs", o.vs, "With --view sweep or patch: judge logit(target) − logit(vs) instead of log p(target)");
  sub->add_option("--corrupt", o.corrupt, "With --view patch: the corrupted text (--text is the clean one)");
  sub->add_option("--per", o.per, "With --view patch: head or layer-position")->capture_default_str();
  sub->add_option("--ablation", o.ablation, "With --view sweep: zero or mean")->capture_default_str();
  sub->add_option(
         "--view", o.view,
         "grid (every head), head [N] (one head, also --head N), step [K] (walkthrough step K: "
         "number from 0 or name, also --step K), kv-step [K] (step K of the decode through a KV cache from "
         "--decode-from P: 0 is the prefill; default the last), variants (equivalences and costs of GQA, MQA, MLA "
         "and SWA at the session's size); put SESSION before --view. With --model: model [L.H] "
         "(every layer "
         "x head, head L.H large beside them), layer L (every head of layer L), head L.H, sweep (each head ablated), "
         "patch (activation patching), lens (the logit lens)")
      ->expected(1, 2)
      ->capture_default_str();
  sub->add_option("--decode-from", o.decode_from,
                  "With --view kv-step: the prefill's rows P; the other rows are decoded one at a time through a KV "
                  "cache (needs --eval when the session has dropout)")
      ->capture_default_str();
  sub->add_option("--head", o.head, "Head of --view head (default 0); with --view grid, the head framed as selected");
  sub->add_option("--train-log", o.train_log,
                  "A training run's log (mhaviz train --log FILE.jsonl, or a Train view run's log.jsonl): its loss "
                  "curves and detector scores, instead of a session");
  sub->add_option("--step", o.step,
                  "Walkthrough step of --view step: number from 0 or name (input, project, view, "
                  "transpose, chunk, scores, mask, softmax, dropout, context, transpose_back, merge, "
                  "concat, out_proj)");
  sub->add_option("--pane", o.pane, "With --view step: q, k, v or all (which projections the steps show)")
      ->capture_default_str();
  sub->add_option("--stage", o.stage, "scores, masked, scaled, weights or dropped")->capture_default_str();
  sub->add_option("--size", o.size,
                  "WxH: the canvas the figure fills, in logical pixels (the app's captures are its canvas on "
                  "screen); the image is the figure's size, at most this, times --scale")
      ->capture_default_str();
  sub->add_option("--font", o.font, "Text size in logical pixels (the title's; labels and numbers follow)")
      ->capture_default_str();
  sub->add_option("--scale", o.scale, "Pixels per logical pixel, 1 to 4 (PNG size = scale x logical size)")
      ->capture_default_str();
  sub->add_option("--colormap", o.colormap, "viridis, cividis, magma or diverging (signed scores always use diverging)")
      ->capture_default_str();
  sub->add_option("--theme", o.theme, "light (print) or dark")->capture_default_str();
  sub->add_option("--batch", o.batch, "Batch item shown")->capture_default_str();
  sub->add_flag("--caption,!--no-caption", o.caption, "Caption: variant, shapes, stage, seed (default on)");
  sub->add_flag("--transparent", o.transparent, "Transparent background (PNG alpha; no background rect in SVG)");
  sub->add_flag("--log-scale", o.log_scale, "Logarithmic colour scale for weights (default from 64 tokens on)");
  sub->add_flag("--linear-scale", o.linear_scale, "Linear colour scale for weights even with many tokens");
  sub->add_flag("--per-head-scale", o.per_head_scale, "Each head its own colour range (default: one range for all)");
  sub->add_flag("--no-values", o.no_values, "Never print values inside cells");
  sub->add_flag("--mistake", o.mistake, "Walkthrough with the seeds' common mistake: merge without the transpose back");
  sub->add_flag("--eval", o.eval, "Evaluation mode: no dropout");
  sub->add_option("--cells-json", o.cells_json,
                  "Also write JSON: every heatmap's cell rectangles in image pixels, values, colormap tables");
}

int run_render(const RenderOptions& o) {
  try {
    figure::Options fo;
    const bool svg = ends_with(o.output, ".svg");
    if (!svg && !ends_with(o.output, ".png"))
      return usage_error("--output: '" + o.output + "' does not end in .png or .svg");
    if (o.scale < 1 || o.scale > 4)
      return usage_error("--scale: " + std::to_string(o.scale) + " is out of range [1, 4]");
    if (!parse_stage(o.stage, fo.stage))
      return usage_error("--stage: '" + o.stage + "' is not one of scores, masked, scaled, weights, dropped");
    if (!figure::parse_colormap(o.colormap, fo.colormap))
      return usage_error("--colormap: '" + o.colormap + "' is not one of viridis, cividis, magma, diverging");
    if (o.theme != "light" && o.theme != "dark")
      return usage_error("--theme: '" + o.theme + "' is not one of light, dark");
    if (!parse_size(o.size, fo.canvas))
      return usage_error("--size: '" + o.size + "' is not WIDTHxHEIGHT with each from 160 to 16384 (e.g. 1920x1080)");
    if (!(o.font >= 8.0f && o.font <= 64.0f)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(o.font));
      return usage_error(std::string("--font: ") + buf + " is out of range [8, 64]");
    }
    fo.type = figure::Typography::for_font(o.font);
    fo.dark = o.theme == "dark";
    fo.transparent = o.transparent;
    fo.caption = o.caption;
    fo.values = !o.no_values;
    fo.shared_scale = !o.per_head_scale;
    if (!o.train_log.empty()) {
      if (!o.session.empty() || !o.model.path.empty())
        return usage_error("--train-log: draws a training run's log; give no SESSION or --model with it");
      write_figure(o, build_train_render(o, fo), svg);
      return 0;
    }
    const bool use_model = !o.model.path.empty();
    if (use_model && !o.session.empty()) return usage_error("session: give a SESSION or --model, not both");
    if (!use_model && o.session.empty())
      return usage_error("session: give a SESSION (a file, - or a lesson name) or --model PATH");
    if (!use_model && (o.model.text || !o.model.ids.empty() || !o.detector.empty()))
      return usage_error("--model: --text, --ids and --detector need --model");
    if (use_model) {
      const std::string& v = o.view.front();
      if (v != "model" && v != "layer" && v != "head" && v != "sweep" && v != "patch" && v != "lens")
        return usage_error("--view: '" + v +
                           "' is not one of model, layer L, head L.H, sweep, patch, lens (with --model)");
      const bool interv = v == "sweep" || v == "patch" || v == "lens";
      const figure::Figure f = interv ? build_interv_render(o, fo) : build_model_render(o, fo);
      write_figure(o, f, svg);
      return 0;
    }
    const std::string& kind = o.view.front();
    if (kind == "kv-step" || kind == "variants") {
      write_figure(o, kind == "kv-step" ? build_kv_step_render(o, fo) : build_variants_render(o, fo), svg);
      return 0;
    }
    if (kind != "grid" && kind != "head" && kind != "step")
      return usage_error("--view: '" + kind + "' is not one of grid, head, step, kv-step, variants");
    if (kind == "grid" && o.view.size() > 1)
      return usage_error("--view: grid takes no number, got '" + o.view[1] + "'");
    fo.view = kind == "grid" ? figure::View::Grid : kind == "head" ? figure::View::Head : figure::View::Step;
    fo.mistaken = o.mistake;
    fo.batch = o.batch;
    static constexpr const char* kPanes[4] = {"q", "k", "v", "all"};
    fo.pane = -1;
    for (int p = 0; p < 4; ++p)
      if (o.pane == kPanes[p]) fo.pane = p;
    if (fo.pane < 0) return usage_error("--pane: '" + o.pane + "' is not one of q, k, v, all");
    fo.head = o.head < 0 ? 0 : o.head;
    fo.frame_selected = o.head >= 0;  // --view grid --head N: head N framed, as the app frames its selected head
    if (fo.view == figure::View::Head && o.view.size() > 1 && !parse_int(o.view[1], fo.head))
      return usage_error("--view: head '" + o.view[1] + "' is not a head number");

    Session s = load_session(o.session);
    if (o.eval) s.model.training = false;
    const Model model = build_model(s.model, s.d_in());
    const Trace trace = forward(model, s.input_tensor());
    // With many tokens most weights are near 1/T and a linear scale shows one flat colour.
    fo.log_scale = o.log_scale || (!o.linear_scale && trace.tokens >= figure::kLogScaleFromTokens);
    if (fo.view == figure::View::Step && !figure::has_steps(s.model))
      return usage_error("--view: step is not drawn for model.variant \"" + std::string(variant_name(s.model.variant)) +
                         "\" yet (grid and head are)");
    if (fo.view == figure::View::Step) {
      const std::string arg = o.view.size() > 1 ? o.view[1] : o.step.empty() ? "0" : o.step;
      if (!figure::parse_step_arg(trace, o.mistake, arg, fo.step))
        return usage_error("--step: '" + arg + "' is not a step of this variant (0 to " +
                           std::to_string(figure::step_count(trace, o.mistake) - 1) + ", or a step name)");
    }
    fo.model = &model;
    write_figure(o, figure::build_figure(trace, s.tokens, fo), svg);
  } catch (const LoadError& e) {
    return usage_error(e.what());
  } catch (const SessionError& e) {
    return usage_error(e.what());
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  } catch (const std::runtime_error& e) {
    return usage_error(std::string("output: ") + e.what());
  }
  return 0;
}

}  // namespace mhaviz::cli
