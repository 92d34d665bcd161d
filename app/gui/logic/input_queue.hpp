// Input events in the order the window system sent them, handed to Dear ImGui a frame at a
// time. ImGui 1.86 reads the keys and buttons as they are when a frame starts, so a press
// and its release between two frames were never seen (a fast typist's Ctrl+Z, xdotool's
// `key`). Each frame takes the longest run of events it can show without hiding one:
// what comes after waits for the next frame. Events carry the time they came, so that while
// some wait ImGui's clock can follow them (app.cpp). No window here (tests/app runs it
// in-process); app.cpp feeds it from GLFW's callbacks and copies each frame into ImGuiIO.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace mhaviz::gui {

// GLFW's key codes the queue needs to tell apart (app.cpp checks them against glfw3.h).
inline constexpr int kKeyCount = 512;                   // ImGuiIO::KeysDown; GLFW_KEY_LAST is 348
inline constexpr int kKeySpace = 32, kKeyWorld2 = 162;  // printable keys: space to GLFW_KEY_WORLD_2
inline constexpr int kKeyPad0 = 320, kKeyPadEnter = 335, kKeyPadEqual = 336;  // keypad: printable but Enter
inline constexpr int kKeyLeftShift = 340, kKeyLeftControl = 341, kKeyLeftAlt = 342, kKeyLeftSuper = 343;
inline constexpr int kKeyRightShift = 344, kKeyRightControl = 345, kKeyRightAlt = 346, kKeyRightSuper = 347;
inline constexpr int kButtonCount = 5;  // ImGuiIO::MouseDown
// A frame holds at most this much of the input's time: under ImGui's double-click time
// (0.3 s), key repeat delay (0.275 s) and the app's typing gap (0.3 s), so events that far
// apart are told apart when frames are slower than the user.
inline constexpr double kFrameSpan = 0.1;  // seconds

struct InputEvent {
  enum class Kind : std::uint8_t { Key, Char, Button, Move, Scroll };
  Kind kind = Kind::Key;
  int code = 0;        // Key: GLFW key code; Button: 0..kButtonCount-1; Char: Unicode code point
  bool down = false;   // Key, Button: pressed (true) or released
  float x = 0, y = 0;  // Move: the pointer in window pixels; Scroll: the wheel's offsets
  double t = 0;        // when it came (seconds, the caller's clock)
};

// What one frame sees: the state once its events are applied, and what happened in it.
struct InputFrame {
  std::array<bool, kKeyCount> keys{};  // held, by GLFW key code
  std::array<bool, kButtonCount> buttons{};
  bool has_pointer = false;  // a move was applied once (before: the window system's own position)
  float x = 0, y = 0;
  float wheel_x = 0, wheel_y = 0;  // turned in this frame
  std::vector<unsigned> chars;     // typed in this frame, in order
  std::size_t applied = 0;         // events applied in this frame
  double time = 0;                 // when the last event applied came (kept from frame to frame)
  bool ctrl() const { return keys[kKeyLeftControl] || keys[kKeyRightControl]; }
  bool shift() const { return keys[kKeyLeftShift] || keys[kKeyRightShift]; }
  bool alt() const { return keys[kKeyLeftAlt] || keys[kKeyRightAlt]; }
  bool super() const { return keys[kKeyLeftSuper] || keys[kKeyRightSuper]; }
};

// The frame rules (after Dear ImGui 1.87's "trickle" of its input queue). An event waits for
// the next frame when it came more than kFrameSpan after the frame's first event, or when, in
// this frame already:
//   key K        K changed (a press and its release: a frame each), or a mouse button changed;
//                except a printable key with no Ctrl, Alt or Super held: the app reads the
//                character it typed, so a run of typing is seen in the frames it came in
//   modifier     (Shift, Ctrl, Alt, Super) it changed, a button changed or another key changed:
//                a key is seen with the modifiers held when it was pressed (xdotool releases
//                Ctrl before the Z of Ctrl+Z)
//   character    a mouse button changed, or an editing key (Enter, Backspace, arrows...)
//                changed (ImGui's text field applies a frame's characters before its keys)
//   button B     B changed, the pointer moved or the wheel turned (a press or release is seen
//                where the pointer rested the frame before: a click lands where it was made,
//                a drag ends where it was released)
//   move         a button changed or the wheel turned
//   wheel        a button changed or the pointer moved
class InputQueue {
 public:
  // Events outside the ranges above (GLFW_KEY_UNKNOWN, buttons 5-7) are not recorded.
  // t: when the event came (seconds, non-decreasing).
  void key(int code, bool down, double t);
  void character(unsigned c, double t);
  void button(int b, bool down, double t);
  void move(float x, float y, double t);
  void scroll(float dx, float dy, double t);

  // Applies the next run of events (none when empty) and returns what the frame sees.
  const InputFrame& next_frame();

  std::size_t pending() const { return events_.size(); }
  std::int64_t received() const { return received_; }
  std::int64_t applied() const { return applied_; }

 private:
  void push(const InputEvent& e);

  std::deque<InputEvent> events_;
  InputFrame frame_;
  std::int64_t received_ = 0, applied_ = 0;
};

// A key whose character the app reads (space, digits, letters, punctuation, keypad digits).
bool printable_key(int code);

}  // namespace mhaviz::gui
