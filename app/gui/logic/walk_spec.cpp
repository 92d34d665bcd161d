#include "walk_spec.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "mhaviz/layout.hpp"

namespace mhaviz::gui {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

[[noreturn]] void bad(const std::string& word, const std::string& why) {
  throw std::invalid_argument("--walkthrough: '" + word + "' " + why);
}

}  // namespace

WalkSpec parse_walk_spec(const std::string& spec) {
  WalkSpec w;
  std::size_t start = 0;
  bool step_seen = false;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string p = spec.substr(start, comma - start);
    start = comma + 1;
    if (p.empty()) continue;
    if (p == "mistake")
      w.mistake = true;
    else if (p == "compare")
      w.compare = true;
    else if (p == "variants")
      w.compare = w.variants = true;
    else if (p == "play")
      w.play = true;
    else if (p == "no-numbers")
      w.numbers = false;
    else if (p == "no-weights")
      w.weights = false;
    else if (p.rfind("pane=", 0) == 0) {
      const std::string v = p.substr(5);
      if (v != "q" && v != "k" && v != "v" && v != "all") bad(p, "is not pane=q, k, v or all");
      w.pane = v == "q" ? 0 : v == "k" ? 1 : v == "v" ? 2 : 3;
    } else if (p.rfind("pin=", 0) == 0) {
      if (!all_digits(p.substr(4))) bad(p, "is not pin= and an element index");
      w.pin = std::stoll(p.substr(4));
    } else if (p.rfind("heads=", 0) == 0) {
      if (!all_digits(p.substr(6)) || p.size() > 10) bad(p, "is not heads= and a number");
      w.heads = std::clamp(std::stoi(p.substr(6)), 4, 64);
    } else {
      const std::size_t plus = p.find('+');
      const std::string step = p.substr(0, plus);
      layout::Step st;
      if (step_seen || (!all_digits(step) && !layout::parse_step(step, st)))
        bad(p,
            "is not a step (a name such as transpose, or a number) nor one of mistake, compare, variants, play, "
            "no-numbers, no-weights, pane=, pin=, heads=");
      if (all_digits(step) && (step.size() > 6 || std::stoi(step) < 1)) bad(p, "is not a step number (1 is the first)");
      if (plus != std::string::npos) {
        const std::string f = p.substr(plus + 1);
        std::size_t used = 0;
        float v = 0.0f;
        try {
          v = std::stof(f, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != f.size() || !(v >= 0.0f && v < 1.0f)) bad(p, "has a fraction that is not in [0, 1)");
        w.fraction = std::min(v, 0.999f);
      }
      w.step = step;
      step_seen = true;
    }
  }
  return w;
}

}  // namespace mhaviz::gui
