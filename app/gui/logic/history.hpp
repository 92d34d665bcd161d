// Undo and redo of the document: a list of whole document states, each reached from the
// one before by a named edit ("change d_out"). No UI: app_tests drives it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mhaviz/session.hpp"

namespace mhaviz::gui {

// What an undo step brings back: the session, and where it came from (an "open" step, a
// lesson switch, changes the file the document belongs to).
struct DocState {
  Session session;
  std::string path;
  std::string origin;
};

class History {
 public:
  // At least max_steps undo steps are kept unless they hold more than max_bytes of
  // embedding rows (rows an edit did not change are shared between steps, so a cell edit
  // of GPT-2's 256 x 768 table costs one row, 3 KiB).
  explicit History(std::size_t max_steps = 1000, std::size_t max_bytes = std::size_t{512} << 20);

  // Forgets every step: `now` is the only state (start, restore).
  void reset(const DocState& now);
  // The document is now `now`, after the edit `label`. While the group is open (no seal()
  // since the last record) an edit with the same label replaces the last step: a drag, or
  // typing in one field, is one step. opened: `now` is another document (open, lesson).
  void record(const DocState& now, const std::string& label, bool opened = false);
  // The mouse was released or the field left: the next edit is a step of its own.
  void seal() { open_ = false; }
  // An entry refused as a whole (a value typed into a cell): the step it had opened under
  // `label` is dropped, so the state before the entry is current again. False: no such step.
  bool drop_open_step(const std::string& label);

  bool can_undo() const { return cur_ > 0; }
  bool can_redo() const { return cur_ + 1 < states_.size(); }
  const std::string& undo_label() const;  // the edit undo would take back ("" when none)
  const std::string& redo_label() const;
  // Move one step back / forward; the state now current. Precondition: can_undo / can_redo.
  DocState undo();
  DocState redo();
  DocState current() const;
  // Distinct for every state recorded (a state undone to keeps its id): equal ids, equal documents.
  std::uint64_t current_id() const { return states_[cur_].id; }
  // Saved under a new name: every state of this document since it was opened takes it.
  void rename(const std::string& path, const std::string& origin);

  std::size_t undo_steps() const { return cur_; }
  std::size_t redo_steps() const { return states_.size() - 1 - cur_; }
  std::size_t bytes() const { return bytes_; }

 private:
  using Row = std::shared_ptr<const std::vector<float>>;
  struct State {
    std::vector<std::string> tokens;
    std::vector<Row> rows;  // shared with neighbouring states where unchanged
    int batch = 1;
    ModelConfig model;
    std::string path, origin;
    std::string label;  // the edit that led here
    bool opened = false;
    std::uint64_t id = 0;
    std::size_t bytes = 0;  // rows this state added (not shared with the state before it)
  };
  State make_state(const DocState& d, const State* before) const;
  DocState expand(const State& st) const;
  void trim();

  std::vector<State> states_;  // states_[0]: the oldest kept
  std::size_t cur_ = 0;
  bool open_ = false;
  std::uint64_t next_id_ = 1;
  std::size_t max_steps_, max_bytes_;
  std::size_t bytes_ = 0;
  std::string none_;  // the label when there is nothing to undo or redo
};

}  // namespace mhaviz::gui
