#include "history.hpp"

#include <map>

namespace mhaviz::gui {

History::History(std::size_t max_steps, std::size_t max_bytes) : max_steps_(max_steps), max_bytes_(max_bytes) {
  reset(DocState{});
}

History::State History::make_state(const DocState& d, const State* before) const {
  State st;
  st.tokens = d.session.tokens;
  st.batch = d.session.batch;
  st.model = d.session.model;
  st.path = d.path;
  st.origin = d.origin;
  st.id = next_id_;
  // Share a row with the state before when equal: first at the same index (cell edits),
  // then anywhere (moves, deletes, tokens typed around it).
  std::multimap<std::vector<float>, Row> spare;
  bool spare_built = false;
  st.rows.reserve(d.session.embeddings.size());
  for (std::size_t i = 0; i < d.session.embeddings.size(); ++i) {
    const std::vector<float>& row = d.session.embeddings[i];
    if (before && i < before->rows.size() && *before->rows[i] == row) {
      st.rows.push_back(before->rows[i]);
      continue;
    }
    if (before && !spare_built) {
      for (const Row& r : before->rows) spare.emplace(*r, r);
      spare_built = true;
    }
    if (auto it = spare.find(row); it != spare.end()) {
      st.rows.push_back(it->second);
      continue;
    }
    st.rows.push_back(std::make_shared<const std::vector<float>>(row));
    st.bytes += row.size() * sizeof(float);
  }
  for (const auto& t : st.tokens) st.bytes += t.size();
  return st;
}

DocState History::expand(const State& st) const {
  DocState d;
  d.session.tokens = st.tokens;
  d.session.batch = st.batch;
  d.session.model = st.model;
  d.session.embeddings.reserve(st.rows.size());
  for (const Row& r : st.rows) d.session.embeddings.push_back(*r);
  d.path = st.path;
  d.origin = st.origin;
  return d;
}

void History::reset(const DocState& now) {
  states_.clear();
  states_.push_back(make_state(now, nullptr));
  ++next_id_;
  cur_ = 0;
  bytes_ = states_[0].bytes;
  open_ = false;
}

void History::record(const DocState& now, const std::string& label, bool opened) {
  if (open_ && !opened && cur_ > 0 && states_[cur_].label == label && !states_[cur_].opened) {
    // Same edit continuing (a drag): the step now ends here; its rows are compared with
    // the state before the step, so a drag that comes back shares them again.
    State st = make_state(now, &states_[cur_ - 1]);
    st.label = label;
    bytes_ -= states_[cur_].bytes;
    bytes_ += st.bytes;
    states_[cur_] = std::move(st);
  } else {
    for (std::size_t i = cur_ + 1; i < states_.size(); ++i) bytes_ -= states_[i].bytes;
    states_.resize(cur_ + 1);
    State st = make_state(now, &states_[cur_]);
    st.label = label;
    st.opened = opened;
    bytes_ += st.bytes;
    states_.push_back(std::move(st));
    ++cur_;
  }
  ++next_id_;
  open_ = !opened;
  trim();
}

// The oldest steps go first; the current state always stays.
void History::trim() {
  std::size_t drop = 0;
  std::size_t bytes = bytes_;
  while (drop < cur_ && (cur_ - drop > max_steps_ || bytes > max_bytes_)) {
    bytes -= states_[drop].bytes;
    ++drop;
  }
  if (drop == 0) return;
  states_.erase(states_.begin(), states_.begin() + static_cast<std::ptrdiff_t>(drop));
  cur_ -= drop;
  // The new oldest state now owns every row it holds.
  State& first = states_[0];
  bytes -= first.bytes;
  first.bytes = 0;
  for (const Row& r : first.rows) first.bytes += r->size() * sizeof(float);
  for (const auto& t : first.tokens) first.bytes += t.size();
  bytes_ = bytes + first.bytes;
}

bool History::drop_open_step(const std::string& label) {
  if (!open_ || cur_ == 0 || states_[cur_].label != label || states_[cur_].opened || cur_ + 1 != states_.size()) return false;
  bytes_ -= states_[cur_].bytes;
  states_.pop_back();
  --cur_;
  open_ = false;
  return true;
}

const std::string& History::undo_label() const { return can_undo() ? states_[cur_].label : none_; }

const std::string& History::redo_label() const { return can_redo() ? states_[cur_ + 1].label : none_; }

DocState History::undo() {
  open_ = false;
  if (cur_ > 0) --cur_;
  return expand(states_[cur_]);
}

DocState History::redo() {
  open_ = false;
  if (cur_ + 1 < states_.size()) ++cur_;
  return expand(states_[cur_]);
}

DocState History::current() const { return expand(states_[cur_]); }

void History::rename(const std::string& path, const std::string& origin) {
  std::size_t first = cur_;
  while (first > 0 && !states_[first].opened) --first;
  for (std::size_t i = first; i < states_.size() && (i == first || !states_[i].opened); ++i) {
    states_[i].path = path;
    states_[i].origin = origin;
  }
}

}  // namespace mhaviz::gui
