// The input queue (app/gui/logic/input_queue.hpp) without a window: sequences of events as GLFW
// delivers them, and what each frame shows Dear ImGui.
#include <gtest/gtest.h>

#include <string>

#include "input_queue.hpp"

namespace mhaviz::gui {
namespace {

// GLFW's codes for the keys used below (glfw3.h; app.cpp holds the queue's constants to it).
constexpr int kA = 65, kZ = 90, kE = 69, kTwo = 50, kEnter = 257, kBackspace = 259, kRight = 262, kF12 = 301;

// The queue fed as GLFW would, every event `step` seconds after the one before.
class Feed {
 public:
  double step = 0.002;
  double now = 0;
  void key(int code, bool down) { q_.key(code, down, tick()); }
  void character(unsigned c) { q_.character(c, tick()); }
  void button(int b, bool down) { q_.button(b, down, tick()); }
  void move(float x, float y) { q_.move(x, y, tick()); }
  void scroll(float dx, float dy) { q_.scroll(dx, dy, tick()); }
  void pause(double seconds) { now += seconds; }
  const InputFrame& next_frame() { return q_.next_frame(); }
  std::size_t pending() const { return q_.pending(); }
  std::int64_t received() const { return q_.received(); }
  std::int64_t applied() const { return q_.applied(); }

 private:
  double tick() { return now += step; }
  InputQueue q_;
};

// A printable key as GLFW reports a typist's stroke: press, its character, release.
void stroke(Feed& q, int code, unsigned c) {
  q.key(code, true);
  q.character(c);
  q.key(code, false);
}

std::string text(const InputFrame& f) {
  std::string s;
  for (unsigned c : f.chars) s += static_cast<char>(c);
  return s;
}

TEST(InputQueue, APressAndReleaseBetweenTwoFramesAreSeenInAFrameEach) {
  Feed q;
  q.key(kRight, true);
  q.key(kRight, false);
  EXPECT_TRUE(q.next_frame().keys[kRight]);
  EXPECT_FALSE(q.next_frame().keys[kRight]);
  EXPECT_EQ(q.pending(), 0u);
  // Three presses in one burst: three frames with the key down, three with it up.
  for (int i = 0; i < 3; ++i) {
    q.key(kF12, true);
    q.key(kF12, false);
  }
  int presses = 0;
  bool was_down = false;
  for (int frame = 0; frame < 6; ++frame) {
    const bool down = q.next_frame().keys[kF12];
    presses += down && !was_down;
    was_down = down;
  }
  EXPECT_EQ(presses, 3);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(InputQueue, AShortcutsKeyIsDownWhileItsModifiersAre) {
  Feed q;
  q.key(kKeyLeftControl, true);
  q.key(kKeyLeftShift, true);
  q.key(kZ, true);
  q.key(kZ, false);
  q.key(kKeyLeftShift, false);
  q.key(kKeyLeftControl, false);
  const InputFrame& f = q.next_frame();
  EXPECT_TRUE(f.ctrl() && f.shift() && f.keys[kZ]) << "Ctrl+Shift+Z is one frame";
  EXPECT_EQ(f.applied, 3u);
  const InputFrame& g = q.next_frame();
  EXPECT_TRUE(g.ctrl() && g.shift() && !g.keys[kZ]) << "Z released first, the modifiers a frame later";
  const InputFrame& g2 = q.next_frame();
  EXPECT_FALSE(g2.ctrl() || g2.shift() || g2.keys[kZ]);
  // xdotool's order: Ctrl released before Z. Z is still seen with Ctrl held.
  q.key(kKeyLeftControl, true);
  q.key(kZ, true);
  q.key(kKeyLeftControl, false);
  q.key(kZ, false);
  const InputFrame& x = q.next_frame();
  EXPECT_TRUE(x.ctrl() && x.keys[kZ]);
  EXPECT_EQ(x.applied, 2u);
  const InputFrame& y = q.next_frame();
  EXPECT_FALSE(y.ctrl() || y.keys[kZ]);
  EXPECT_EQ(q.pending(), 0u);
  // A typed capital: Shift stays down in the character's frame.
  q.key(kKeyLeftShift, true);
  stroke(q, kA, 'A');
  q.key(kKeyLeftShift, false);
  const InputFrame& cap = q.next_frame();
  EXPECT_TRUE(cap.shift());
  EXPECT_EQ(text(cap), "A");
  // Ctrl+A twice with Ctrl held: each A is a press of its own (printable, but not typing).
  q.key(kKeyRightControl, true);
  for (int i = 0; i < 2; ++i) {
    q.key(kA, true);
    q.key(kA, false);
  }
  q.key(kKeyRightControl, false);
  int presses = 0;
  bool was_down = false;
  while (q.pending() > 0) {
    const InputFrame& h = q.next_frame();
    presses += h.keys[kA] && !was_down;
    was_down = h.keys[kA];
    if (h.keys[kA]) {
      EXPECT_TRUE(h.ctrl());
    }
  }
  EXPECT_EQ(presses, 2);
}

TEST(InputQueue, TypedCharactersComeInOrderAndARunOfTypingStaysInOneFrame) {
  Feed q;
  for (char c : std::string("we cut")) stroke(q, c == ' ' ? kKeySpace : c - 'a' + kA, static_cast<unsigned>(c));
  const InputFrame& f = q.next_frame();
  EXPECT_EQ(text(f), "we cut");  // the app tells typing from shortcuts by the characters' rhythm
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(text(q.next_frame()), "") << "characters are seen once";
}

TEST(InputQueue, AFrameHoldsATenthOfASecondOfInputAndSaysWhenItCame) {
  // Two lone keys half a second apart, both waiting for a slow frame: two frames, whose
  // times are the keys' (ImGui's clock follows them), so they stay two shortcuts.
  Feed q;
  stroke(q, kE, 'e');
  q.pause(0.5);
  stroke(q, kTwo, '2');
  const InputFrame& f1 = q.next_frame();
  EXPECT_EQ(text(f1), "e");
  EXPECT_DOUBLE_EQ(f1.time, 0.006);
  const InputFrame& f2 = q.next_frame();
  EXPECT_EQ(text(f2), "2");
  EXPECT_DOUBLE_EQ(f2.time, 0.512);
  EXPECT_DOUBLE_EQ(q.next_frame().time, 0.512) << "a frame with no event keeps the last time";
  // Typing at 30 ms a key: a frame per tenth of a second of it, every character once, in order.
  q.step = 0.01;
  std::string typed;
  for (char c : std::string("abcdefghij")) stroke(q, c - 'a' + kA, static_cast<unsigned>(c));
  int frames = 0;
  while (q.pending() > 0) {
    typed += text(q.next_frame());
    ++frames;
  }
  EXPECT_EQ(typed, "abcdefghij");
  EXPECT_EQ(frames, 3);  // 0.3 s of typing
}

TEST(InputQueue, EditingKeysAndCharactersKeepTheirOrder) {
  // "ab", Backspace, "c", Enter: a text field applies a frame's characters before its keys,
  // so a character after an editing key waits for the next frame.
  Feed q;
  stroke(q, kA, 'a');
  stroke(q, kA + 1, 'b');
  q.key(kBackspace, true);
  q.key(kBackspace, false);
  stroke(q, kA + 2, 'c');
  q.key(kEnter, true);
  q.key(kEnter, false);
  const InputFrame& f1 = q.next_frame();
  EXPECT_EQ(text(f1), "ab");
  EXPECT_TRUE(f1.keys[kBackspace]);
  const InputFrame& f2 = q.next_frame();
  EXPECT_FALSE(f2.keys[kBackspace]);
  EXPECT_EQ(text(f2), "");
  const InputFrame& f3 = q.next_frame();
  EXPECT_EQ(text(f3), "c");
  EXPECT_TRUE(f3.keys[kEnter]) << "Enter after the characters: the same frame, applied after them";
  EXPECT_FALSE(q.next_frame().keys[kEnter]);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(InputQueue, AClickLandsWhereThePointerRested) {
  Feed q;
  q.move(100, 40);
  q.button(0, true);
  q.button(0, false);
  const InputFrame& f1 = q.next_frame();
  EXPECT_TRUE(f1.has_pointer);
  EXPECT_EQ(f1.x, 100);
  EXPECT_FALSE(f1.buttons[0]) << "the pointer arrives before the press";
  const InputFrame& f2 = q.next_frame();
  EXPECT_TRUE(f2.buttons[0]);
  EXPECT_EQ(f2.x, 100);
  EXPECT_FALSE(q.next_frame().buttons[0]);
  // A double click: four frames, each press and release seen.
  for (int i = 0; i < 2; ++i) {
    q.button(0, true);
    q.button(0, false);
  }
  std::string seen;
  while (q.pending() > 0) seen += q.next_frame().buttons[0] ? 'D' : 'u';
  EXPECT_EQ(seen, "DuDu");
}

TEST(InputQueue, ADragMovesWhileHeldAndEndsWhereItWasReleased) {
  Feed q;
  q.move(10, 5);
  q.button(0, true);
  for (int x = 20; x <= 80; x += 10) q.move(static_cast<float>(x), 5);
  q.button(0, false);
  q.move(300, 300);
  const InputFrame& f1 = q.next_frame();
  EXPECT_FALSE(f1.buttons[0]);
  const InputFrame& f2 = q.next_frame();
  EXPECT_TRUE(f2.buttons[0]);
  EXPECT_EQ(f2.x, 10) << "pressed where the drag starts";
  const InputFrame& f3 = q.next_frame();
  EXPECT_TRUE(f3.buttons[0]) << "moves while held, in as few frames as they allow";
  EXPECT_EQ(f3.x, 80);
  const InputFrame& f4 = q.next_frame();
  EXPECT_FALSE(f4.buttons[0]);
  EXPECT_EQ(f4.x, 80) << "released where the last move left it";
  EXPECT_EQ(q.next_frame().x, 300);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(InputQueue, TheWheelTurnsWhereThePointerIs) {
  Feed q;
  q.move(50, 50);
  q.scroll(0, 1);
  q.scroll(0, 1);
  q.move(60, 60);
  const InputFrame& f1 = q.next_frame();
  EXPECT_EQ(f1.wheel_y, 0.0f);
  const InputFrame& f2 = q.next_frame();
  EXPECT_EQ(f2.wheel_y, 2.0f);
  EXPECT_EQ(f2.x, 50);
  const InputFrame& f3 = q.next_frame();
  EXPECT_EQ(f3.wheel_y, 0.0f) << "a frame's wheel is that frame's";
  EXPECT_EQ(f3.x, 60);
}

TEST(InputQueue, ACharacterAfterAClickWaitsForTheFieldToBeActive) {
  Feed q;
  q.button(0, true);
  q.button(0, false);
  stroke(q, kTwo, '2');
  EXPECT_TRUE(q.next_frame().buttons[0]);
  const InputFrame& f2 = q.next_frame();
  EXPECT_FALSE(f2.buttons[0]);
  EXPECT_EQ(text(f2), "");
  EXPECT_EQ(text(q.next_frame()), "2");
}

TEST(InputQueue, AnEmptyQueueKeepsTheStateAndCountsEveryEvent) {
  Feed q;
  q.key(kE, true);
  q.key(-1, true);         // GLFW_KEY_UNKNOWN
  q.button(7, true);       // a button ImGui has no slot for
  q.key(kKeyCount, true);  // past ImGui's table
  q.character(0);
  EXPECT_EQ(q.received(), 1);
  EXPECT_TRUE(q.next_frame().keys[kE]);
  for (int i = 0; i < 3; ++i) {
    const InputFrame& f = q.next_frame();
    EXPECT_TRUE(f.keys[kE]) << "held until released";
    EXPECT_EQ(f.applied, 0u);
  }
  q.key(kE, true);  // a second press while held (no change): no frame of its own
  q.key(kE, false);
  EXPECT_FALSE(q.next_frame().keys[kE]);
  EXPECT_EQ(q.received(), 3);
  EXPECT_EQ(q.applied(), 3);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(InputQueue, EveryFrameTakesAtLeastOneEvent) {
  Feed q;
  int events = 0;
  for (int i = 0; i < 50; ++i) {
    q.key(kRight, i % 2 == 0);
    q.button(0, i % 2 == 0);
    q.move(static_cast<float>(i), 0);
    q.scroll(1, 0);
    q.character('x');
    events += 5;
  }
  int frames = 0;
  while (q.pending() > 0 && frames < events) {
    EXPECT_GE(q.next_frame().applied, 1u);
    ++frames;
  }
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(q.applied(), events);
}

TEST(InputQueue, KeyCodesArePrintableAsTheAppReadsThem) {
  EXPECT_TRUE(printable_key(kKeySpace));
  EXPECT_TRUE(printable_key(kA));
  EXPECT_TRUE(printable_key(kKeyPad0));
  EXPECT_FALSE(printable_key(kKeyPadEnter));
  EXPECT_FALSE(printable_key(kEnter));
  EXPECT_FALSE(printable_key(kF12));
  EXPECT_FALSE(printable_key(kKeyLeftControl));
}

}  // namespace
}  // namespace mhaviz::gui
