// The centre view (app_state.hpp [SECTION] The centre view): the one value that says which
// view fills the centre, the view actually shown, and what each shows around it.
#include "app_state.hpp"
#include "figure/figure.hpp"
#include "walk_frame.hpp"

namespace mhaviz::gui {

// The walkthrough draws every variant a session holds today, with its options
// (figure::has_steps, the one rule); one it did not draw would show its heads' heatmaps.
bool walkthrough_draws(const AppState& s) { return figure::has_steps(s.doc.session.model); }

Centre centre_view(AppState& s) {
  if (!s.walkthrough.options_applied) walk::apply_options(s);
  if (s.centre == Centre::Walkthrough && !walkthrough_draws(s)) return Centre::Lesson;
  if (s.centre == Centre::Model && !s.gpt.worker) return Centre::Lesson;  // no model opened
  return s.centre;
}

void toggle_centre(AppState& s, Centre c) {
  if (c == Centre::Walkthrough && !walkthrough_draws(s)) {
    notify(s,
           "The walkthrough does not draw this variant yet; this " +
               std::string(variant_name(s.doc.session.model.variant)) + " session shows its heads' heatmaps",
           true);
    return;
  }
  s.centre = centre_view(s) == c ? Centre::Lesson : c;
}

bool walkthrough_active(AppState& s) { return centre_view(s) == Centre::Walkthrough; }

const CentreInfo& centre_info(Centre c) {
  static const CentreInfo table[] = {
      {"lesson", true, Strip::Lesson,
       "Hover a cell for details.  Keys: 1-5 stage   [ ] head   E enlarge   C controls   Ctrl+Z undo   Ctrl+S save"},
      {"walkthrough", true, Strip::Lesson,
       "Hover a cell for details.  Keys: ← → step   Home End   Space play / pause   W back to the heatmaps   F12 "
       "capture"},
      {"model", false, Strip::Model,
       "Hover a head for its score, click it to show it large.  M: model view / lesson   F12 capture"},
      {"train", false, Strip::Train,
       "Start / Pause / Step on the left; click a head to show it large and ablate it.  T: train view / lesson   F12 "
       "capture"},
      {"kv-cache", true, Strip::Lesson,
       "\xE2\x86\x90 \xE2\x86\x92 step   Home End   the prefill P above the figure   K: KV cache / lesson   F12 "
       "capture"},
  };
  return table[static_cast<int>(c)];
}

bool model_view_active(AppState& s) { return centre_view(s) == Centre::Model; }

}  // namespace mhaviz::gui
