// The --walkthrough option (STEP[+FRACTION][,mistake][,compare|variants][,pane=q|k|v|all][,pin=FLAT]
// [,play][,no-numbers][,no-weights][,heads=N]) parsed once, with the other options: an
// unknown word is an error on the command line, never silently ignored by the panel.
#pragma once

#include <cstdint>
#include <string>

namespace mhaviz::gui {

struct WalkSpec {
  std::string step;    // a step name (layout::parse_step) or a 1-based number; empty: the first step
  float fraction = 0;  // STEP+0.5: halfway into the next step
  bool mistake = false, compare = false, play = false, numbers = true, weights = true;
  bool variants = false;  // the compare tab's attention variants (compare: its wrapper vs weight split)
  int pane = 0;           // 0 q, 1 k, 2 v, 3 all
  std::int64_t pin = -1;  // flat index pinned in the step
  int heads = 0;          // comparison table up to this many heads (0: default)
};

// Throws std::invalid_argument("--walkthrough: 'WORD' is not ...") for an unknown word.
WalkSpec parse_walk_spec(const std::string& spec);

}  // namespace mhaviz::gui
