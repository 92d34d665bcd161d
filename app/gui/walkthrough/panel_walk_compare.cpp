// The "Compare variants" tab: wrapper vs weight split, or the attention variants against MHA.
#include <GLFW/glfw3.h>

#include "walk_frame.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

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

// A fixed-fit table's width: each column as wide as its name's widest line or its widest cell
// (`widest`, in pixels), with the cells' padding and the borders.
float table_width(const std::vector<std::string>& names, const std::vector<float>& widest) {
  float total = 1.0f;
  for (std::size_t k = 0; k < names.size(); ++k)
    total +=
        std::max(ImGui::CalcTextSize(names[k].c_str()).x, widest[k]) + 2.0f * ImGui::GetStyle().CellPadding.x + 1.0f;
  return total;
}

// Column names of a fixed-fit table, with their optional breaks ('\n'): on one line where the
// table fits the width at hand so, else broken. A 1024 × 768 window cut the cost table's last
// column.
std::vector<std::string> column_names(const std::vector<const char*>& names, const std::vector<float>& widest) {
  std::vector<std::string> one_line(names.begin(), names.end());
  for (std::string& n : one_line) std::replace(n.begin(), n.end(), '\n', ' ');
  if (table_width(one_line, widest) <= ImGui::GetContentRegionAvail().x) return one_line;
  return {names.begin(), names.end()};
}

// For the GUI tests: the last column's name as far as its text reaches (the header's cell is
// clipped to the table, its text would run on). Call right after TableHeadersRow.
void record_last_column(AppState& s, const char* key, const std::string& name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  s.hooks.widgets[key] = {a.x, a.y, a.x + ImGui::CalcTextSize(name.c_str()).x, b.y};
}

// Widest text of each column of rows of cells.
std::vector<float> widest_cells(const std::vector<std::vector<std::string>>& rows, std::size_t columns) {
  std::vector<float> w(columns, 0.0f);
  for (const auto& r : rows)
    for (std::size_t k = 0; k < r.size() && k < columns; ++k)
      w[k] = std::max(w[k], ImGui::CalcTextSize(r[k].c_str()).x);
  return w;
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
      ImGuiCol_Text, c.max_diff_weights <= 1e-6 ? ImVec4(0.45f, 0.85f, 0.45f, 1.0f) : kErrorText);
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
  const struct {
    const char* name;
    const Cost& cost;
    double ms;
  } lines[3] = {{"wrapper (h modules)", r.wrapper, r.wrapper_ms},
                {"weight split", r.split, r.split_ms},
                {"fused qkv", r.fused, r.fused_ms}};
  std::vector<std::vector<std::string>> cells;
  for (const auto& ln : lines)
    cells.push_back(
        {ln.name, std::to_string(ln.cost.matmul_calls), big(ln.cost.flops), big(ln.cost.parameters), ms_text(ln.ms)});
  const std::vector<std::string> names = column_names(
      {"variant", "matmul\ncalls", "FLOPs", "parameters", "forward time\n(median)"}, widest_cells(cells, 5));
  if (ImGui::BeginTable("cost", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    for (const std::string& n : names) ImGui::TableSetupColumn(n.c_str());
    ImGui::TableHeadersRow();
    record_last_column(s, "cost_last_column", names.back());
    for (const auto& row : cells) {
      ImGui::TableNextRow();
      for (const std::string& cell : row) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cell.c_str());
      }
    }
    ImGui::EndTable();
    record_widget(s, "cost_table");  // as wide as the panel
  }
  text_dim_wrapped(
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
  // The slider after the sentence where both fit the line, else under it: beside a wrapped
  // sentence SameLine put it past the window's edge (a 1024 × 768 window).
  const std::string growth_text = "As num_heads grows (head_dim = " + std::to_string(c.head_dim) +
                                  " fixed): the wrapper makes 5 matmul calls per head, weight split 6 in all.";
  const float slider_w = labelled_width(fh * 6.0f, "up to heads");
  if (ImGui::CalcTextSize(growth_text.c_str()).x + ImGui::GetStyle().ItemSpacing.x + slider_w <=
      ImGui::GetContentRegionAvail().x) {
    ImGui::TextUnformatted(growth_text.c_str());
    ImGui::SameLine();
  } else {
    ImGui::TextWrapped("%s", growth_text.c_str());
  }
  ImGui::SetNextItemWidth(fh * 6.0f);
  ImGui::SliderInt("up to heads", &w.cmp_max_heads, 4, 64);
  record_widget(s, "cmp_max_heads");
  std::int64_t max_calls = 1;
  for (std::size_t i = 1; i < c.rows.size(); ++i) max_calls = std::max(max_calls, c.rows[i].wrapper.matmul_calls);
  std::vector<std::vector<std::string>> growth;
  for (std::size_t i = 1; i < c.rows.size(); ++i) {
    const auto& g = c.rows[i];
    growth.push_back({std::to_string(g.heads), std::to_string(g.wrapper.matmul_calls),
                      std::to_string(g.split.matmul_calls), "", ms_text(g.wrapper_ms), ms_text(g.split_ms)});
  }
  float wbar = fh * 12.0f;
  std::vector<float> widest = widest_cells(growth, 6);
  widest[3] = wbar;
  const std::vector<std::string> gnames = column_names(
      {"num_heads", "wrapper\ncalls", "split\ncalls", "calls (bars:\nwrapper, split)", "wrapper\ntime", "split\ntime"},
      widest);
  // Narrower still, the bars give way: they show a ratio at any width.
  const float over = table_width(gnames, widest) - ImGui::GetContentRegionAvail().x;
  if (over > 0.0f) wbar = std::max(fh * 4.0f, wbar - over);
  if (ImGui::BeginTable("growth", 6,
                        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    for (std::size_t k = 0; k < gnames.size(); ++k)
      ImGui::TableSetupColumn(gnames[k].c_str(), k == 3 ? ImGuiTableColumnFlags_WidthFixed : 0, k == 3 ? wbar : 0.0f);
    ImGui::TableHeadersRow();
    record_last_column(s, "growth_last_column", gnames.back());
    for (std::size_t i = 1; i < c.rows.size(); ++i) {
      const auto& g = c.rows[i];
      const std::vector<std::string>& row = growth[i - 1];
      ImGui::TableNextRow();
      for (std::size_t k = 0; k < row.size(); ++k) {
        ImGui::TableNextColumn();
        if (k != 3) {
          ImGui::TextUnformatted(row[k].c_str());
          continue;
        }
        // The calls as two bars: the wrapper's over the split's, on one scale.
        ImDrawList* dl = ImGui::GetWindowDrawList();
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float lh = ImGui::GetTextLineHeight();
        const float a = wbar * static_cast<float>(g.wrapper.matmul_calls) / static_cast<float>(max_calls);
        const float b = wbar * static_cast<float>(g.split.matmul_calls) / static_cast<float>(max_calls);
        dl->AddRectFilled(ImVec2(p.x, p.y + 1), ImVec2(p.x + a, p.y + lh * 0.5f - 1), u32(figure::head_rgb(1)));
        dl->AddRectFilled(ImVec2(p.x, p.y + lh * 0.5f + 1), ImVec2(p.x + b, p.y + lh - 1), u32(figure::head_rgb(0)));
        ImGui::Dummy(ImVec2(wbar, lh));
      }
    }
    ImGui::EndTable();
    record_widget(s, "growth_table");
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
