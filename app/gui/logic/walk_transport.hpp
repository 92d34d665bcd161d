// Moving through the walkthrough's steps: step buttons, keys, play and the animation clock.
// Pure (no ImGui, no GLFW): the panel passes the time in, tests call these directly.
#pragma once

#include "walkthrough.hpp"

namespace mhaviz::gui {

inline constexpr float kTransitionSeconds = 1.6f;  // one animation at speed 1
inline constexpr float kHoldSeconds = 1.4f;        // playing: time a step stays still at speed 1

// Go to step `target` (0-based, clamped to [0, n-1]) and stop playing. The next or previous
// step animates; a jump further (a step chip, Home, End) goes straight there, without
// replaying the steps between.
void go_to(Walkthrough& w, float target, int n);
void next_step(Walkthrough& w, int n);
void previous_step(Walkthrough& w, int n);
void toggle_play(Walkthrough& w, int n);  // pausing mid-move settles on the step it was moving to
// Moves pos towards target (or plays on) for the time since the last call; `now` in seconds.
// Returns true while something moves (the app keeps frames coming).
bool advance(Walkthrough& w, double now, int n);

}  // namespace mhaviz::gui
