// The "Compare variants" tab: wrapper vs weight split, or the attention variants against MHA.
#include <GLFW/glfw3.h>

#include "walk_frame.hpp"

#include <chrono>

#include "figure/variant_figure.hpp"
#include "walk_compare.hpp"

namespace mhaviz::gui::walk {

// [SECTION] The comparison: computed by compare_variants off the UI thread
// Starts the comparison for the current trace when it changed; takes the result when ready.
// Returns false while it is being computed.
bool comparison_ready(AppState& s) {
  Walkthrough& w = s.walkthrough;
  const std::uint64_t gen = s.compute.generation;
  if (w.cmp_job.valid() && w.cmp_job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    Comparison c = w.cmp_job.get();
    c.generation = w.cmp_job_generation;
    w.cmp = std::move(c);
  }
  const bool stale = w.cmp.generation != gen || w.cmp.rows.size() < 2 || w.cmp_job_heads != w.cmp_max_heads;
  if (stale && !w.cmp_job.valid()) {
    w.cmp_job_generation = gen;
    w.cmp_job_heads = w.cmp_max_heads;
    w.cmp_job = std::async(std::launch::async, [m = s.compute.model, x = s.compute.trace.input, h = w.cmp_max_heads] {
      return compare_variants(m, x, h);
    });
  }
  if (w.cmp_job.valid()) s.last_event_time = glfwGetTime();  // keep frames coming until it is drawn
  return w.cmp.generation == gen && w.cmp_job_heads == w.cmp_max_heads && !w.cmp_job.valid();
}

std::string big(std::int64_t v) {
  char buf[32];
  if (v >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f G", static_cast<double>(v) / 1e9);
  else if (v >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(v) / 1e6);
  else if (v >= 10000)
    std::snprintf(buf, sizeof buf, "%.1f k", static_cast<double>(v) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

// [SECTION] GQA, MQA, MLA and SWA against MHA: one figure (variant_figure.hpp), as F12 and
// `mhaviz render --view variants` draw it
void draw_variants_part(AppState& s) {
  const Comparison& c = s.walkthrough.cmp;
  const figure::Options o = figure_options(s, figure::View::Grid, ImGui::GetContentRegionAvail());
  ScreenFigure& f = s.renderer.variants;
  AppState* sp = &s;
  f.ensure(o, c.generation,
           [sp](const figure::Options& x) { return figure::build_variant_figure(sp->walkthrough.cmp.variants, x); });
  f.stem = "variants";
  s.renderer.centre = &f;
  draw_figure(s, f, ImGui::GetCursorScreenPos());
  ImGui::Dummy(ImVec2(static_cast<float>(f.fig.width), static_cast<float>(f.fig.height)));
}

// [SECTION] Wrapper vs weight split: both patterns, the cost of each, the growth with num_heads
void draw_wrapper_part(AppState& s) {
  Walkthrough& w = s.walkthrough;
  Comparison& c = w.cmp;
  ImGui::TextWrapped("%s", c.note.c_str());
  const float fh = ImGui::GetFontSize();
  const int head = std::clamp(s.view.head, 0, std::max(0, c.heads - 1));
  ImGui::Separator();
  ImGui::AlignTextToFramePadding();
  ImGui::Text("Head %d of %d", head, c.heads);
  ImGui::SameLine();
  if (ImGui::ArrowButton("cmp_prev", ImGuiDir_Left)) s.view.head = std::max(0, head - 1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("cmp_next", ImGuiDir_Right)) s.view.head = std::min(c.heads - 1, head + 1);
  ImGui::SameLine();
  const bool exact = c.max_diff_weights == 0.0;
  // Wrapped: wider than a 1024 × 768 window's tab.
  ImGui::PushStyleColor(
      ImGuiCol_Text, c.max_diff_weights <= 1e-6 ? ImVec4(0.45f, 0.85f, 0.45f, 1.0f) : ImVec4(1.0f, 0.45f, 0.35f, 1.0f));
  ImGui::TextWrapped("max |wrapper − weight split| over all heads' weights = %.3g%s,  outputs = %.3g",
                     c.max_diff_weights, exact ? " (identical)" : "", c.max_diff_output);
  ImGui::PopStyleColor();
  // Both patterns as one figure (the one heatmap, one colour scale), a third of the tab high.
  const ImVec2 canvas(ImGui::GetContentRegionAvail().x, std::max(fh * 12.0f, ImGui::GetContentRegionAvail().y * 0.38f));
  figure::Options o = figure_options(s, figure::View::Grid, canvas);
  o.head = head;
  ScreenFigure& f = s.renderer.compare;
  AppState* sp = &s;
  f.ensure(o, c.generation * 1000003u + static_cast<std::uint64_t>(c.heads), [sp](const figure::Options& x) {
    const Comparison& cc = sp->walkthrough.cmp;
    return figure::compare_figure(cc.wrapper, cc.split, "Wrapper: head's own module",
                                  "Weight split: q.view + transpose", sp->compute.tokens, x);
  });
  f.stem = "compare-head" + std::to_string(head);
  s.renderer.centre = &f;
  draw_figure(s, f, ImGui::GetCursorScreenPos());
  ImGui::Dummy(ImVec2(static_cast<float>(f.fig.width), static_cast<float>(f.fig.height)));

  ImGui::Separator();
  ImGui::TextWrapped("Cost of one forward: b = %d, num_tokens = %d, d_in = %d, num_heads = %d, head_dim = %d", c.batch,
                     c.tokens, c.d_in, c.heads, c.head_dim);
  const Comparison::Row& r = c.rows.front();
  if (ImGui::BeginTable("cost", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("variant");
    ImGui::TableSetupColumn("matmul calls");
    ImGui::TableSetupColumn("FLOPs");
    ImGui::TableSetupColumn("parameters");
    ImGui::TableSetupColumn("forward time (median)");
    ImGui::TableHeadersRow();
    const struct {
      const char* name;
      const Cost& cost;
      double ms;
    } lines[3] = {{"wrapper (h modules)", r.wrapper, r.wrapper_ms},
                  {"weight split", r.split, r.split_ms},
                  {"fused qkv", r.fused, r.fused_ms}};
    for (const auto& ln : lines) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ln.name);
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(ln.cost.matmul_calls));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(big(ln.cost.flops).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(big(ln.cost.parameters).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms_text(ln.ms).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::TextDisabled(
      "Weight split adds out_proj (d_out² + d_out parameters); its identity here keeps the outputs equal.");
  if (r.samples > 0) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled(
        "Times: median of %d samples of %d forward%s each. A teaching-size forward takes microseconds, where "
        "the calls and FLOPs say more than the clock.",
        r.samples, r.per_sample, r.per_sample > 1 ? "s" : "");
    ImGui::PopTextWrapPos();
  }

  ImGui::Spacing();
  ImGui::TextWrapped(
      "As num_heads grows (head_dim = %d fixed): the wrapper makes 5 matmul calls per head, weight split 6 in all.",
      c.head_dim);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(fh * 6.0f);
  ImGui::SliderInt("up to heads", &w.cmp_max_heads, 4, 64);
  std::int64_t max_calls = 1;
  for (std::size_t i = 1; i < c.rows.size(); ++i) max_calls = std::max(max_calls, c.rows[i].wrapper.matmul_calls);
  if (ImGui::BeginTable("growth", 6,
                        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("num_heads");
    ImGui::TableSetupColumn("wrapper calls");
    ImGui::TableSetupColumn("split calls");
    ImGui::TableSetupColumn("calls (bars: wrapper, split)", ImGuiTableColumnFlags_WidthFixed, fh * 12.0f);
    ImGui::TableSetupColumn("wrapper time");
    ImGui::TableSetupColumn("split time");
    ImGui::TableHeadersRow();
    for (std::size_t i = 1; i < c.rows.size(); ++i) {
      const auto& g = c.rows[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", g.heads);
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(g.wrapper.matmul_calls));
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(g.split.matmul_calls));
      ImGui::TableNextColumn();
      {
        ImDrawList* dl = ImGui::GetWindowDrawList();
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float wbar = fh * 12.0f;
        const float lh = ImGui::GetTextLineHeight();
        const float a = wbar * static_cast<float>(g.wrapper.matmul_calls) / static_cast<float>(max_calls);
        const float b = wbar * static_cast<float>(g.split.matmul_calls) / static_cast<float>(max_calls);
        dl->AddRectFilled(ImVec2(p.x, p.y + 1), ImVec2(p.x + a, p.y + lh * 0.5f - 1), u32(figure::head_rgb(1)));
        dl->AddRectFilled(ImVec2(p.x, p.y + lh * 0.5f + 1), ImVec2(p.x + b, p.y + lh - 1), u32(figure::head_rgb(0)));
        ImGui::Dummy(ImVec2(wbar, lh));
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms_text(g.wrapper_ms).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ms_text(g.split_ms).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled(
      "FLOPs of the projections are the same; the wrapper pays for h times more, smaller calls. Times: forward() "
      "medians measured off the UI thread when the input changes (\"not timed\": too large to time while you edit).");
  ImGui::PopTextWrapPos();
}

// [SECTION] The tab: which comparison, then it
void draw_compare_tab(AppState& s) {
  Walkthrough& w = s.walkthrough;
  if (ImGui::RadioButton("Wrapper vs weight split", w.compare_part == 0)) w.compare_part = 0;
  record_widget(s, "cmp_wrapper");
  // On the next line where it would be cut at the window's edge (a 1024 × 768 window).
  const char* variants_label = "GQA, MQA, MLA, SWA against MHA: equivalence and cost";
  same_line_or_wrap(labelled_width(ImGui::GetFrameHeight(), variants_label));
  if (ImGui::RadioButton(variants_label, w.compare_part == 1)) w.compare_part = 1;
  record_widget(s, "cmp_variants");
  const Comparison& c = w.cmp;
  if (!comparison_ready(s)) {
    ImGui::TextDisabled("Building the models and timing their forwards (off the UI thread)…");
    if (!c.valid) return;
  }
  if (!c.valid) {
    ImGui::TextWrapped("%s", c.note.c_str());
    return;
  }
  if (w.compare_part == 1)
    draw_variants_part(s);
  else
    draw_wrapper_part(s);
}

}  // namespace mhaviz::gui::walk
