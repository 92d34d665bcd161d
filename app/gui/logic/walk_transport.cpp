#include "walk_transport.hpp"

#include <algorithm>
#include <cmath>

namespace mhaviz::gui {

void go_to(Walkthrough& w, float target, int n) {
  const float t = std::clamp(target, 0.0f, static_cast<float>(std::max(0, n - 1)));
  // Adjacent to where we were heading: animate. Further: a jump, shown at once.
  if (std::fabs(t - w.target) > 1.0f + 1e-4f) w.pos = t;
  w.target = t;
  w.playing = false;
}

void next_step(Walkthrough& w, int n) { go_to(w, std::floor(w.target + 1e-4f) + 1.0f, n); }
void previous_step(Walkthrough& w, int n) { go_to(w, std::ceil(w.target - 1e-4f) - 1.0f, n); }

void toggle_play(Walkthrough& w, int n) {
  w.playing = !w.playing;
  if (w.playing && w.pos >= static_cast<float>(n - 1)) w.pos = w.target = 0.0f;
  // A pause in the middle of a move finishes it: the picture always rests on a whole step
  // (never rows half-way between two layouts).
  if (!w.playing) w.target = std::min(std::ceil(w.pos - 1e-4f), static_cast<float>(std::max(0, n - 1)));
  w.hold_until = 0.0;
}

bool advance(Walkthrough& w, double now, int n) {
  const float dt = static_cast<float>(std::clamp(now - w.last_time, 0.0, 0.1));
  w.last_time = now;
  const float rate = w.speed / kTransitionSeconds;  // steps per second
  const float last = static_cast<float>(std::max(0, n - 1));
  w.pos = std::clamp(w.pos, 0.0f, last);
  if (w.playing) {
    if (w.pos >= last) {
      w.playing = false;
    } else if (now >= w.hold_until) {
      const float next = std::floor(w.pos) + 1.0f;
      w.pos = std::min(next, w.pos + rate * dt);
      if (w.pos >= next) w.hold_until = now + kHoldSeconds / w.speed;
    }
    w.target = w.pos;
  } else if (w.pos != w.target) {
    if (w.target > w.pos)
      w.pos = std::min(w.target, w.pos + rate * dt);
    else
      w.pos = std::max(w.target, w.pos - rate * dt * 2.0f);
  }
  return w.playing || w.pos != w.target;
}

}  // namespace mhaviz::gui
