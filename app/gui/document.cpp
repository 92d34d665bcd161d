// Edits of the document and the one-direction recompute: Session -> Model -> Trace.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "app_state.hpp"
#include "figure/figure.hpp"

namespace mhaviz::gui {

// [SECTION] Edits: validate, record, mark dirty
DocState doc_state(const AppState& s) { return DocState{s.doc.session, s.doc.path, s.doc.origin}; }

namespace {
// Every edit of the session ends here. The session format's own validation decides: the
// app never holds a state a save, the autosave or a restore would refuse. A refused edit
// is taken back whole (the history holds the last accepted state) and the reason is shown
// where the user made it. Returns whether the edit stays.
bool commit_edit(AppState& s, const std::string& label, const char* where, bool model) {
  try {
    validate_session(s.doc.session);
  } catch (const std::exception& e) {
    // A value typed into a cell is applied as it is typed ("1", "1e", "1e9"): refusing
    // "1e9" takes back the whole entry, not only its last character.
    const bool whole_entry = std::string_view(where) == "table" && s.doc.history.drop_open_step(label);
    if (whole_entry) {
      s.compute.input_dirty = true;
      ++s.doc.revision;
      s.doc.modified = s.doc.history.current_id() != s.doc.saved_id;
    }
    s.doc.session = s.doc.history.current().session;
    s.ui.edit.refusal_where = where;
    s.ui.edit.refusal = std::string(e.what()) + " (not applied)";
    s.ui.edit.refusal_until = glfwGetTime() + 10.0;
    s.ui.edit.token_text_stale = true;  // the field shows the session again once it is left
    s.hooks.refusal = s.ui.edit.refusal;
    return false;
  }
  if (s.ui.edit.refusal_where == where) s.ui.edit.refusal_until = 0.0;  // fixed where it was refused
  s.doc.history.record(doc_state(s), label);
  if (model) s.compute.model_dirty = true;
  s.compute.input_dirty = true;
  s.doc.modified = s.doc.history.current_id() != s.doc.saved_id;
  ++s.doc.revision;
  s.last_edit_time = glfwGetTime();
  return true;
}

// Undo and redo put a whole state back: the trace, the tokens field and the head the
// user chose follow it; the autosave writes it a second later as after any edit.
void put_back(AppState& s, DocState d, const std::string& what) {
  s.doc.session = std::move(d.session);
  s.doc.path = std::move(d.path);
  s.doc.origin = std::move(d.origin);
  s.doc.modified = s.doc.history.current_id() != s.doc.saved_id;
  ++s.doc.revision;
  s.last_edit_time = glfwGetTime();
  s.compute.model_dirty = true;
  s.compute.input_dirty = true;
  s.ui.edit.token_text_stale = true;
  s.ui.edit.d_in_stash.clear();
  s.ui.edit.preferred_heads = s.doc.session.model.num_heads;
  s.ui.edit.refusal_until = 0.0;
  notify(s, what);
}
}  // namespace

bool mark_model_dirty(AppState& s, const std::string& label, const char* where) {
  return commit_edit(s, label, where, true);
}

bool mark_input_dirty(AppState& s, const std::string& label, const char* where) {
  return commit_edit(s, label, where, false);
}

void undo(AppState& s) {
  if (!s.doc.history.can_undo()) return;
  const std::string label = s.doc.history.undo_label();
  put_back(s, s.doc.history.undo(), "Undid: " + label);
}

void redo(AppState& s) {
  if (!s.doc.history.can_redo()) return;
  const std::string label = s.doc.history.redo_label();
  put_back(s, s.doc.history.redo(), "Redid: " + label);
}

void notify(AppState& s, std::string message, bool error) {
  s.ui.status.text = std::move(message);
  s.ui.status.is_error = error;
  s.ui.status.until = glfwGetTime() + (error ? 8.0 : 4.0);
}

// [SECTION] Recompute
namespace {
void recompute(AppState& s) {
  Compute& c = s.compute;
  const Session& ses = s.doc.session;
  try {
    validate_model(ses.model, ses.d_in(), ses.num_tokens(), ses.batch);
    using clock = std::chrono::steady_clock;
    if (c.model_dirty) {
      const auto t0 = clock::now();
      c.model = build_model(ses.model, ses.d_in());
      c.build_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    }
    const auto t0 = clock::now();
    forward(c.model, ses.input_tensor(), c.trace);
    c.forward_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    c.have_trace = true;
    c.tokens = ses.tokens;
    c.error.clear();
    ++c.generation;
  } catch (const std::exception& e) {
    // Keep showing the last valid trace; the controls panel shows the error.
    c.error = e.what();
  }
  c.model_dirty = false;
  c.input_dirty = false;
}
}  // namespace

// The one place the view's batch item and head are brought within the trace (--head 99, a
// num_heads lowered under the last head, a file's view): every frame starts with a refresh,
// and whatever draws or captures the trace refreshes first.
void refresh(AppState& s) {
  Compute& c = s.compute;
  if (c.model_dirty || c.input_dirty) recompute(s);
  if (c.have_trace) {
    s.view.batch = std::clamp(s.view.batch, 0, std::max(0, c.trace.batch - 1));
    s.view.head = std::clamp(s.view.head, 0, std::max(0, c.trace.heads - 1));
  }
}

// [SECTION] View state saved with the session (version 2 "view")
SessionView current_view(const AppState& s) {
  SessionView v;
  v.stage = s.view.stage;
  v.head = s.view.head;
  v.batch = s.view.batch;
  v.enlarged = s.view.enlarged;
  v.log_scale = s.settings.log_weights;
  v.shared_scale = s.settings.shared_scale;
  v.colormap = std::string(colormap_name(s.settings.colormap));
  v.walkthrough = s.centre == Centre::Walkthrough;
  v.walk_step = std::clamp(static_cast<int>(std::lround(s.walkthrough.target)), 0, kMaxWalkSteps - 1);
  v.walk_mistake = s.walkthrough.mistaken;
  v.walk_compare = s.walkthrough.tab == 1;
  v.walk_pane = std::clamp(s.walkthrough.pane, 0, 3);
  v.walk_numbers = s.walkthrough.values;
  v.walk_weights = s.walkthrough.show_weights;
  return v;
}

// A session's view. One without (version 1, lessons) shows head 0 of batch item 0 on the
// scale its size calls for (log from 64 tokens, as `render` draws it): a lesson never
// inherits the scale of the one before it; stage, colormap and walkthrough stay as they were.
void apply_view(AppState& s, const std::optional<SessionView>& saved) {
  const SessionView v = saved.value_or(SessionView{});
  s.view.head = v.head;
  s.view.batch = v.batch;
  s.view.enlarged = v.enlarged;
  s.settings.log_weights = saved ? v.log_scale : s.doc.session.num_tokens() >= figure::kLogScaleFromTokens;
  if (!saved) return;
  s.view.stage = v.stage;
  s.settings.shared_scale = v.shared_scale;
  Colormap c;
  if (parse_colormap(v.colormap, c)) s.settings.colormap = c;
  Walkthrough& w = s.walkthrough;
  if (v.walkthrough) s.centre = Centre::Walkthrough;
  else if (s.centre == Centre::Walkthrough) s.centre = Centre::Lesson;
  w.pos = w.target = static_cast<float>(v.walk_step);  // the panel clamps it to the variant's steps
  w.playing = false;
  w.mistaken = v.walk_mistake;
  w.request_tab = v.walk_compare ? 1 : 0;
  w.pane = v.walk_pane;
  w.values = v.walk_numbers;
  w.show_weights = v.walk_weights;
  w.pin_step = -1;
  w.pin_flat = -1;
}

void set_document(AppState& s, Session session, std::string path, std::string origin) {
  const std::optional<SessionView> saved_view = std::move(session.view);
  session.view.reset();  // the view is state of the app while editing, not of the document
  s.doc.session = std::move(session);
  s.doc.path = std::move(path);
  s.doc.origin = std::move(origin);
  // Another document is one undo step (a lesson switch can be taken back).
  s.doc.history.record(doc_state(s), "open " + s.doc.origin, true);
  s.doc.saved_id = s.doc.history.current_id();
  s.doc.modified = false;
  ++s.doc.revision;
  s.compute.model_dirty = true;
  s.compute.input_dirty = true;
  s.compute.have_trace = false;
  s.ui.edit.token_text_stale = true;
  s.ui.edit.preferred_heads = s.doc.session.model.num_heads;
  s.ui.edit.refusal_until = 0.0;
  apply_view(s, saved_view);
}

// [SECTION] Tokens and embeddings
std::string short_token(const std::string& t) {
  constexpr std::size_t kMax = 24;
  if (t.size() <= kMax) return t;
  std::size_t n = kMax;
  while (n > 0 && (static_cast<unsigned char>(t[n]) & 0xC0) == 0x80) --n;  // whole UTF-8 characters
  return t.substr(0, n) + "\u2026";
}

void sync_token_text(AppState& s) {
  std::string text;
  for (const auto& t : s.doc.session.tokens) {
    if (!text.empty()) text += ' ';
    text += t;
  }
  s.ui.edit.token_text = text;
  s.ui.edit.token_text_stale = false;
}

void apply_token_text(AppState& s, const std::string& text) {
  Session& ses = s.doc.session;
  const int d_in = ses.d_in();
  std::vector<std::string> tokens = split_tokens(text);
  if (tokens.empty() || d_in <= 0) return;  // keep the last non-empty sequence
  if (tokens == ses.tokens) return;
  // A token keeps its vector: match each new token to an unused old row with the same text.
  std::vector<bool> used(ses.tokens.size(), false);
  std::vector<std::vector<float>> rows;
  rows.reserve(tokens.size());
  for (const auto& t : tokens) {
    bool found = false;
    for (std::size_t i = 0; i < ses.tokens.size(); ++i) {
      if (!used[i] && ses.tokens[i] == t) {
        used[i] = true;
        rows.push_back(ses.embeddings[i]);
        found = true;
        break;
      }
    }
    if (!found) {
      // Same word, same vector (an embedding lookup); otherwise one derived from the text.
      const auto same = std::find(ses.tokens.begin(), ses.tokens.end(), t);
      if (same != ses.tokens.end()) rows.push_back(ses.embeddings[static_cast<std::size_t>(same - ses.tokens.begin())]);
      else rows.push_back(token_embedding(t, d_in));
    }
  }
  ses.tokens = std::move(tokens);
  ses.embeddings = std::move(rows);
  if (ses.num_tokens() > ses.model.context_length && ses.num_tokens() <= Limits::kMaxContext) {
    // The causal mask buffer must cover every token (as the seeds' register_buffer does).
    ses.model.context_length = ses.num_tokens();
    if (mark_model_dirty(s, "edit tokens", "tokens"))
      notify(s, "context_length raised to " + std::to_string(ses.num_tokens()) + " to fit the tokens");
  } else {
    mark_input_dirty(s, "edit tokens", "tokens");
  }
}

void set_d_in(AppState& s, int d_in) {
  Session& ses = s.doc.session;
  const int old = ses.d_in();
  if (d_in == old || d_in < 1) return;
  // Columns past the old width come from the token's deterministic vector. During one
  // drag of the slider, columns dropped on the way come back as they were (d_in_stash).
  auto& stash = s.ui.edit.d_in_stash;
  if (stash.size() != ses.embeddings.size()) stash = ses.embeddings;
  for (std::size_t i = 0; i < ses.tokens.size(); ++i) {
    auto& row = ses.embeddings[i];
    if (d_in < old) {
      row.resize(static_cast<std::size_t>(d_in));
    } else {
      const std::vector<float> fresh = token_embedding(ses.tokens[i], d_in);
      for (int j = old; j < d_in; ++j) {
        const auto ju = static_cast<std::size_t>(j);
        row.push_back(ju < stash[i].size() ? stash[i][ju] : fresh[ju]);
      }
    }
  }
  mark_model_dirty(s, "change d_in", "d_in");
}

void move_token(AppState& s, int from, int to) {
  Session& ses = s.doc.session;
  const int n = ses.num_tokens();
  if (from < 0 || from >= n || to < 0 || to >= n || from == to) return;
  std::swap(ses.tokens[static_cast<std::size_t>(from)], ses.tokens[static_cast<std::size_t>(to)]);
  std::swap(ses.embeddings[static_cast<std::size_t>(from)], ses.embeddings[static_cast<std::size_t>(to)]);
  s.ui.edit.token_text_stale = true;
  mark_input_dirty(s, "move '" + short_token(ses.tokens[static_cast<std::size_t>(to)]) + (to < from ? "' up" : "' down"), "table");
}

void remove_token(AppState& s, int index) {
  Session& ses = s.doc.session;
  if (ses.num_tokens() <= 1 || index < 0 || index >= ses.num_tokens()) return;
  const std::string label = "delete '" + short_token(ses.tokens[static_cast<std::size_t>(index)]) + "'";
  ses.tokens.erase(ses.tokens.begin() + index);
  ses.embeddings.erase(ses.embeddings.begin() + index);
  s.ui.edit.token_text_stale = true;
  mark_input_dirty(s, label, "table");
}

// [SECTION] Valid head counts
std::vector<int> valid_head_counts(const ModelConfig& c) {
  std::vector<int> out;
  if (c.variant == Variant::Wrapper) {
    // Each head projects to d_out: any count whose concatenation fits.
    for (int h = 1; h <= Limits::kMaxHeads && static_cast<long>(h) * c.d_out <= Limits::kMaxDim; ++h) {
      out.push_back(h);
      if (h >= 64) break;
    }
  } else {
    for (int h = 1; h <= std::min(c.d_out, Limits::kMaxHeads); ++h) {
      if (c.d_out % h == 0) out.push_back(h);
    }
    // RoPE rotates pairs: only even head_dims while it is on (unless d_out has none).
    std::vector<int> even;
    for (int h : out)
      if ((c.d_out / h) % 2 == 0) even.push_back(h);
    if (c.rope_base != 0.0 && !even.empty()) out = std::move(even);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

int nearest_valid_heads(const ModelConfig& c, int wanted) {
  const std::vector<int> v = valid_head_counts(c);
  int best = v.front();
  for (int h : v) {
    if (std::abs(h - wanted) < std::abs(best - wanted) ||
        (std::abs(h - wanted) == std::abs(best - wanted) && h > best)) {
      best = h;
    }
  }
  return best;
}

}  // namespace mhaviz::gui
