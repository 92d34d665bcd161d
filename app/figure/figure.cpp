// The figure library's entry points (figure.hpp): the dispatch of a lesson's views, steps by
// name, ticks, typography. The lesson's heatmaps are lesson_figure.cpp, a walkthrough step
// walk_picture.cpp, the comparison compare_figure.cpp, the shapes strip shapes_figure.cpp, the
// model view of a trained GPT model_figure.cpp, the one heatmap they all draw through
// heatmap.cpp.
#include "figure/figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "figure/builder.hpp"
#include "figure/heatmap.hpp"
#include "figure/text.hpp"
#include "figure/walk_figure.hpp"
#include "mhaviz/layout.hpp"

namespace mhaviz::figure {

using namespace detail;  // the drawing kit (builder.hpp)

bool has_steps(const ModelConfig& c) { return is_split(c.variant) || c.variant == Variant::Wrapper; }

namespace {
std::vector<lay::Step> steps_of(const Trace& trace, bool mistaken) {
  return lay::steps_for(lay::dims_for(trace.config, 1, trace.tokens, trace.d_in), mistaken);
}
}  // namespace

int step_count(const Trace& trace, bool mistaken) { return static_cast<int>(steps_of(trace, mistaken).size()); }

bool parse_step_arg(const Trace& trace, bool mistaken, const std::string& arg, int& out) {
  const auto steps = steps_of(trace, mistaken);
  lay::Step s;
  if (lay::parse_step(arg, s)) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i] == s) {
        out = static_cast<int>(i);
        return true;
      }
    return false;
  }
  if (arg.empty() || arg.size() > 4 || arg.find_first_not_of("0123456789") != std::string::npos) return false;
  const int k = std::stoi(arg);
  if (k < 0 || k >= static_cast<int>(steps.size())) return false;
  out = k;
  return true;
}

Figure build_figure(const Trace& trace, const std::vector<std::string>& tokens, const Options& o) {
  if (o.batch < 0 || o.batch >= trace.batch)
    throw std::invalid_argument("--batch: " + std::to_string(o.batch) + " is out of range [0, " +
                                std::to_string(trace.batch - 1) + "]");
  if (static_cast<int>(tokens.size()) != trace.tokens)
    throw std::invalid_argument("tokens: the trace and the token list differ");
  if (o.view == View::Step) {
    const int n = step_count(trace, o.mistaken);
    if (o.step < 0 || o.step >= n)
      throw std::invalid_argument("--step: " + std::to_string(o.step) + " is out of range [0, " +
                                  std::to_string(n - 1) + "]");
    Mistake mistake;
    // The mistake's tensors, and RoPE's scores without the rotation that are computed beside them.
    if ((o.mistaken && trace.config.variant != Variant::Wrapper) || !trace.q_rotated.empty())
      mistake = o.model ? make_mistake(*o.model, trace) : trace_mistake(trace);
    WalkInput in;
    in.trace = &trace;
    in.model = o.model;
    in.tokens = &tokens;
    in.mistake = &mistake;
    in.batch = o.batch;
    in.mistaken = o.mistaken;
    in.pane = o.pane;
    in.numbers = o.values;
    in.pos = static_cast<float>(o.step);
    return walk_step_figure(in, o);
  }
  if (o.head < 0 || o.head >= trace.heads)
    throw std::invalid_argument("--head: " + std::to_string(o.head) + " is out of range [0, " +
                                std::to_string(trace.heads - 1) + "]");
  return lesson_figure(trace, tokens, o);
}

const Hit* Figure::hit(const std::string& id) const {
  for (const Hit& h : hits)
    if (h.id == id) return &h;
  return nullptr;
}

Typography Typography::for_font(float px) {
  // The render defaults (17, 14, 13, 12) are these ratios of a 17-pixel font.
  return {px, std::round(px * 14.0f / 17.0f), std::round(px * 13.0f / 17.0f), std::round(px * 12.0f / 17.0f)};
}

// [SECTION] Numbers as the app and the figures print them
std::string format_tick(float v, float step, bool log) {
  char buf[32];
  if (log) {
    std::snprintf(buf, sizeof buf, "%.2g", static_cast<double>(v));
    return buf;
  }
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(std::max(1e-9f, std::fabs(step))))) + 1, 2, 6);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
  return buf;
}

}  // namespace mhaviz::figure
