// Edits of the document and the one-direction recompute: Session -> Model -> Trace.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "app_state.hpp"

namespace mhaviz::gui {

// [SECTION] Dirty marks
void mark_model_dirty(AppState& s) {
  s.compute.model_dirty = true;
  s.compute.input_dirty = true;
  s.doc.modified = true;
  ++s.doc.revision;
  s.last_edit_time = glfwGetTime();
}

void mark_input_dirty(AppState& s) {
  s.compute.input_dirty = true;
  s.doc.modified = true;
  ++s.doc.revision;
  s.last_edit_time = glfwGetTime();
}

void notify(AppState& s, std::string message, bool error) {
  s.ui.status = std::move(message);
  s.ui.status_is_error = error;
  s.ui.status_until = glfwGetTime() + (error ? 8.0 : 4.0);
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

void refresh(AppState& s) {
  Compute& c = s.compute;
  if (c.model_dirty || c.input_dirty) recompute(s);
  if (c.have_trace) {
    s.view.batch = std::clamp(s.view.batch, 0, std::max(0, c.trace.batch - 1));
    s.view.head = std::clamp(s.view.head, 0, std::max(0, c.trace.heads - 1));
  }
}

void set_document(AppState& s, Session session, std::string path, std::string origin) {
  s.doc.session = std::move(session);
  s.doc.path = std::move(path);
  s.doc.origin = std::move(origin);
  s.doc.modified = false;
  ++s.doc.revision;
  s.compute.model_dirty = true;
  s.compute.input_dirty = true;
  s.compute.have_trace = false;
  s.ui.token_text_stale = true;
  s.ui.preferred_heads = s.doc.session.model.num_heads;
  s.view.batch = 0;
  s.view.head = 0;
  s.view.enlarged = false;
}

// [SECTION] Tokens and embeddings
void sync_token_text(AppState& s) {
  std::string text;
  for (const auto& t : s.doc.session.tokens) {
    if (!text.empty()) text += ' ';
    text += t;
  }
  s.ui.token_text = text;
  s.ui.token_text_stale = false;
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
    notify(s, "context_length raised to " + std::to_string(ses.num_tokens()) + " to fit the tokens");
    mark_model_dirty(s);
  } else {
    mark_input_dirty(s);
  }
}

void set_d_in(AppState& s, int d_in) {
  Session& ses = s.doc.session;
  const int old = ses.d_in();
  if (d_in == old || d_in < 1) return;
  // Columns past the old width come from the token's deterministic vector. During one
  // drag of the slider, columns dropped on the way come back as they were (d_in_stash).
  auto& stash = s.ui.d_in_stash;
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
  mark_model_dirty(s);
}

void move_token(AppState& s, int from, int to) {
  Session& ses = s.doc.session;
  const int n = ses.num_tokens();
  if (from < 0 || from >= n || to < 0 || to >= n || from == to) return;
  std::swap(ses.tokens[static_cast<std::size_t>(from)], ses.tokens[static_cast<std::size_t>(to)]);
  std::swap(ses.embeddings[static_cast<std::size_t>(from)], ses.embeddings[static_cast<std::size_t>(to)]);
  s.ui.token_text_stale = true;
  mark_input_dirty(s);
}

void remove_token(AppState& s, int index) {
  Session& ses = s.doc.session;
  if (ses.num_tokens() <= 1 || index < 0 || index >= ses.num_tokens()) return;
  ses.tokens.erase(ses.tokens.begin() + index);
  ses.embeddings.erase(ses.embeddings.begin() + index);
  s.ui.token_text_stale = true;
  mark_input_dirty(s);
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
