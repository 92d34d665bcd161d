#include "input_queue.hpp"

namespace mhaviz::gui {
namespace {

bool modifier_key(int code) { return code >= kKeyLeftShift && code <= kKeyRightSuper; }

// What this frame has applied so far, for the rules in input_queue.hpp.
struct Changed {
  std::array<bool, kKeyCount> keys{};
  int buttons = 0;  // bit b: button b
  bool editing_key = false, moved = false, wheeled = false;
};

// Whether e can be applied in the frame f, given what already changed in it.
bool fits(const InputEvent& e, const InputFrame& f, const Changed& c) {
  switch (e.kind) {
    case InputEvent::Kind::Key: {
      const auto k = static_cast<std::size_t>(e.code);
      if (f.keys[k] == e.down) return true;  // no change (a press while held)
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

void InputQueue::key(int code, bool down) {
  if (code >= 0 && code < kKeyCount) push({InputEvent::Kind::Key, code, down, 0, 0});
}

void InputQueue::character(unsigned c) {
  if (c != 0) push({InputEvent::Kind::Char, static_cast<int>(c), false, 0, 0});
}

void InputQueue::button(int b, bool down) {
  if (b >= 0 && b < kButtonCount) push({InputEvent::Kind::Button, b, down, 0, 0});
}

void InputQueue::move(float x, float y) { push({InputEvent::Kind::Move, 0, false, x, y}); }

void InputQueue::scroll(float dx, float dy) { push({InputEvent::Kind::Scroll, 0, false, dx, dy}); }

const InputFrame& InputQueue::next_frame() {
  frame_.chars.clear();
  frame_.wheel_x = frame_.wheel_y = 0;
  frame_.applied = 0;
  Changed changed;
  while (!events_.empty() && fits(events_.front(), frame_, changed)) {
    apply(events_.front(), frame_, changed);
    events_.pop_front();
    ++frame_.applied;
  }
  applied_ += static_cast<std::int64_t>(frame_.applied);
  return frame_;
}

}  // namespace mhaviz::gui
