#include "input_queue.hpp"

namespace mhaviz::gui {
namespace {

bool modifier_key(int code) { return code >= kKeyLeftShift && code <= kKeyRightSuper; }

// What this frame has applied so far, for the rules in input_queue.hpp.
struct Changed {
  std::array<bool, kKeyCount> keys{};
  int buttons = 0;                                                        // bit b: button b
  bool key = false, editing_key = false, moved = false, wheeled = false;  // key: other than a modifier
};

// Whether e can be applied in the frame f, given what already changed in it since `first`.
bool fits(const InputEvent& e, const InputFrame& f, const Changed& c, double first) {
  if (f.applied > 0 && e.t - first > kFrameSpan) return false;
  switch (e.kind) {
    case InputEvent::Kind::Key: {
      const auto k = static_cast<std::size_t>(e.code);
      if (f.keys[k] == e.down) return true;  // no change (a press while held)
      if (modifier_key(e.code)) return !c.keys[k] && !c.key && c.buttons == 0;
      const bool typed = printable_key(e.code) && !f.ctrl() && !f.alt() && !f.super();
      return (typed || !c.keys[k]) && c.buttons == 0;
    }
    case InputEvent::Kind::Char: return c.buttons == 0 && !c.editing_key;
    case InputEvent::Kind::Button: {
      const auto b = static_cast<std::size_t>(e.code);
      if (f.buttons[b] == e.down) return true;
      return (c.buttons & (1 << e.code)) == 0 && !c.moved && !c.wheeled;
    }
    case InputEvent::Kind::Move: return c.buttons == 0 && !c.wheeled;
    case InputEvent::Kind::Scroll: return c.buttons == 0 && !c.moved;
  }
  return false;
}

void apply(const InputEvent& e, InputFrame& f, Changed& c) {
  switch (e.kind) {
    case InputEvent::Kind::Key: {
      const auto k = static_cast<std::size_t>(e.code);
      if (f.keys[k] != e.down) {
        c.keys[k] = true;
        c.key |= !modifier_key(e.code);
        c.editing_key |= !printable_key(e.code) && !modifier_key(e.code);
      }
      f.keys[k] = e.down;
      break;
    }
    case InputEvent::Kind::Char: f.chars.push_back(static_cast<unsigned>(e.code)); break;
    case InputEvent::Kind::Button: {
      const auto b = static_cast<std::size_t>(e.code);
      if (f.buttons[b] != e.down) c.buttons |= 1 << e.code;
      f.buttons[b] = e.down;
      break;
    }
    case InputEvent::Kind::Move:
      f.has_pointer = true;
      f.x = e.x;
      f.y = e.y;
      c.moved = true;
      break;
    case InputEvent::Kind::Scroll:
      f.wheel_x += e.x;
      f.wheel_y += e.y;
      c.wheeled = true;
      break;
  }
}

}  // namespace

bool printable_key(int code) {
  return (code >= kKeySpace && code <= kKeyWorld2) ||
         (code >= kKeyPad0 && code <= kKeyPadEqual && code != kKeyPadEnter);
}

void InputQueue::push(const InputEvent& e) {
  events_.push_back(e);
  ++received_;
}

void InputQueue::key(int code, bool down, double t) {
  if (code >= 0 && code < kKeyCount) push({InputEvent::Kind::Key, code, down, 0, 0, t});
}

void InputQueue::character(unsigned c, double t) {
  if (c != 0) push({InputEvent::Kind::Char, static_cast<int>(c), false, 0, 0, t});
}

void InputQueue::button(int b, bool down, double t) {
  if (b >= 0 && b < kButtonCount) push({InputEvent::Kind::Button, b, down, 0, 0, t});
}

void InputQueue::move(float x, float y, double t) { push({InputEvent::Kind::Move, 0, false, x, y, t}); }

void InputQueue::scroll(float dx, float dy, double t) { push({InputEvent::Kind::Scroll, 0, false, dx, dy, t}); }

const InputFrame& InputQueue::next_frame() {
  frame_.chars.clear();
  frame_.wheel_x = frame_.wheel_y = 0;
  frame_.applied = 0;
  Changed changed;
  const double first = events_.empty() ? 0.0 : events_.front().t;
  while (!events_.empty() && fits(events_.front(), frame_, changed, first)) {
    apply(events_.front(), frame_, changed);
    frame_.time = events_.front().t;
    events_.pop_front();
    ++frame_.applied;
  }
  applied_ += static_cast<std::int64_t>(frame_.applied);
  return frame_;
}

}  // namespace mhaviz::gui
