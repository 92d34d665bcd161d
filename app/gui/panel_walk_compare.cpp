// The "Wrapper vs weight split" tab.
#include "walk_frame.hpp"
#include <chrono>

namespace mhaviz::gui::walk {

// [SECTION] Wrapper vs weight split
void rebuild_comparison(AppState& s) {
  Comparison& c = s.walkthrough.cmp;
  const Trace& tr = s.compute.trace;
  c = Comparison();
  c.generation = s.compute.generation;
  using clock = std::chrono::steady_clock;
  // Once per change (not per frame); a cheap forward is repeated and the fastest kept, so
  // that a cold cache does not decide the comparison.
  const auto time_forward = [](const Model& m, const Tensor& x, Trace& out) {
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = clock::now();
      forward(m, x, out);
      best = std::min(best, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
      if (best > 5.0) break;
    }
    return best;
  };
  try {
    const ModelConfig& cur = s.compute.model.config;
    Model wrapper;
    if (cur.variant == Variant::Wrapper) {
      wrapper = s.compute.model;
      c.note = "Weight-split model built from this wrapper's weights: the heads' W stacked row-wise, out_proj = identity.";
    } else {
      ModelConfig wc = cur;
      wc.variant = Variant::Wrapper;
      wc.d_out = tr.head_dim;
      wrapper = build_model(wc, tr.d_in);
      c.note = "This session is " + std::string(variant_name(cur.variant)) + ": a wrapper of " + std::to_string(tr.heads) +
               " heads of d_out = " + std::to_string(tr.head_dim) + " is initialised from seed " + std::to_string(cur.seed) +
               ", and the weight-split model is built from its weights (stacked W, out_proj = identity).";
    }
    wrapper.config.training = false;  // eval mode: no dropout, so both compute the same function
    Model split = weight_split_from_wrapper(wrapper);
    split.config.training = false;
    c.d_in = tr.d_in;
    c.tokens = tr.tokens;
    c.batch = tr.batch;
    c.heads = tr.heads;
    c.head_dim = tr.head_dim;
    Comparison::Row row0;
    row0.heads = tr.heads;
    row0.wrapper_ms = time_forward(wrapper, tr.input, c.wrapper);
    row0.split_ms = time_forward(split, tr.input, c.split);
    double dw = 0.0, dout = 0.0;
    for (std::size_t i = 0; i < c.wrapper.weights.data.size() && i < c.split.weights.data.size(); ++i)
      dw = std::max(dw, static_cast<double>(std::fabs(c.wrapper.weights.data[i] - c.split.weights.data[i])));
    for (std::size_t i = 0; i < c.wrapper.output.data.size() && i < c.split.output.data.size(); ++i)
      dout = std::max(dout, static_cast<double>(std::fabs(c.wrapper.output.data[i] - c.split.output.data[i])));
    c.max_diff_weights = dw;
    c.max_diff_output = dout;
    // Cost rows: this size, then growing num_heads at the same head_dim.
    auto cost_row = [&](int h, bool timed) {
      Comparison::Row r;
      r.heads = h;
      ModelConfig wc = wrapper.config;
      wc.num_heads = h;
      wc.d_out = tr.head_dim;
      ModelConfig sc = wc;
      sc.variant = Variant::WeightSplit;
      sc.d_out = h * tr.head_dim;
      ModelConfig fc = sc;
      fc.variant = Variant::FusedQkv;
      r.wrapper = forward_cost(wc, tr.d_in, tr.tokens, tr.batch);
      r.split = forward_cost(sc, tr.d_in, tr.tokens, tr.batch);
      r.fused = forward_cost(fc, tr.d_in, tr.tokens, tr.batch);
      if (timed) {
        Trace scratch;
        r.wrapper_ms = time_forward(build_model(wc, tr.d_in), tr.input, scratch);
        r.split_ms = time_forward(build_model(sc, tr.d_in), tr.input, scratch);
        r.fused_ms = time_forward(build_model(fc, tr.d_in), tr.input, scratch);
      } else {
        r.wrapper_ms = r.split_ms = r.fused_ms = -1.0;
      }
      return r;
    };
    Comparison::Row first = cost_row(tr.heads, false);
    first.wrapper_ms = row0.wrapper_ms;
    first.split_ms = row0.split_ms;
    {
      ModelConfig fc = wrapper.config;
      fc.variant = Variant::FusedQkv;
      fc.d_out = tr.heads * tr.head_dim;
      Trace scratch;
      first.fused_ms = time_forward(build_model(fc, tr.d_in), tr.input, scratch);
    }
    c.rows.push_back(first);
    // Growth: time only while a forward stays cheap (frames must stay fast).
    const double budget_flops = 4e8;
    for (int h : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64}) {
      if (h > s.walkthrough.cmp_max_heads) break;
      ModelConfig probe = wrapper.config;
      probe.num_heads = h;
      const bool timed = static_cast<double>(forward_cost(probe, tr.d_in, tr.tokens, tr.batch).flops) < budget_flops;
      c.rows.push_back(cost_row(h, timed));
    }
    c.valid = true;
  } catch (const std::exception& e) {
    c.valid = false;
    c.note = std::string("Cannot build the comparison: ") + e.what();
  }
}

std::string big(std::int64_t v) {
  char buf[32];
  if (v >= 1000000000) std::snprintf(buf, sizeof buf, "%.2f G", static_cast<double>(v) / 1e9);
  else if (v >= 1000000) std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(v) / 1e6);
  else if (v >= 10000) std::snprintf(buf, sizeof buf, "%.1f k", static_cast<double>(v) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

static std::string ms_text(double ms) { return ms < 0 ? "not timed" : fmt(ms < 1.0 ? "%.3f ms" : "%.2f ms", ms); }

// A head's (T, T) weights as a small grid of cells.
void weights_tile(AppState& s, const Trace& t, int head, const char* title, float side) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int T = t.tokens;
  const int shown = std::min(T, 24);
  const float cs = std::floor(side / static_cast<float>(shown));
  ImGui::BeginGroup();
  ImGui::TextUnformatted(title);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec4 bg = rgba(ImGui::GetColorU32(ImGuiCol_WindowBg));
  const ImVec4 hc = head_rgba(head);
  ImFont* font = ImGui::GetFont();
  const float sfh = std::round(ImGui::GetFontSize() * 0.8f);
  const bool txt = cs >= font->CalcTextSizeA(sfh, FLT_MAX, 0.0f, "0.00").x + 4.0f;
  const int b = std::clamp(s.view.batch, 0, std::max(0, t.batch - 1));
  for (int i = 0; i < shown; ++i)
    for (int j = 0; j < shown; ++j) {
      const float wv = t.weights.at({b, head, i, j});
      const ImVec4 col = t.masked(i, j) ? ImVec4(0.2f, 0.2f, 0.2f, 1.0f) : mix(bg, hc, 0.15f + 0.85f * std::clamp(wv, 0.0f, 1.0f));
      const ImVec2 a(o.x + static_cast<float>(j) * cs, o.y + static_cast<float>(i) * cs);
      dl->AddRectFilled(ImVec2(a.x + 1, a.y + 1), ImVec2(a.x + cs - 1, a.y + cs - 1), u32(col));
      if (txt && !t.masked(i, j)) {
        const std::string v = fmt("%.2f", static_cast<double>(wv));
        dl->AddText(font, sfh, ImVec2(a.x + 3, a.y + (cs - sfh) * 0.5f),
                    figure::luminance(to_rgb(col)) < 0.5f ? IM_COL32(255, 255, 255, 255) : IM_COL32(0, 0, 0, 255), v.c_str());
      }
    }
  ImGui::Dummy(ImVec2(cs * static_cast<float>(shown), cs * static_cast<float>(shown)));
  if (T > shown) ImGui::TextDisabled("first %d of %d tokens", shown, T);
  ImGui::EndGroup();
}

void draw_compare_tab(AppState& s) {
  Walkthrough& w = s.walkthrough;
  Comparison& c = w.cmp;
  if (c.generation != s.compute.generation) rebuild_comparison(s);
  ImGui::TextWrapped("%s", c.note.c_str());
  if (!c.valid) return;
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
  ImGui::TextColored(c.max_diff_weights <= 1e-6 ? ImVec4(0.45f, 0.85f, 0.45f, 1.0f) : ImVec4(1.0f, 0.45f, 0.35f, 1.0f),
                     "max |wrapper − weight split| over all heads' weights = %.3g%s,  outputs = %.3g", c.max_diff_weights,
                     exact ? " (identical)" : "", c.max_diff_output);
  const float side = std::min(fh * 7.5f, (ImGui::GetContentRegionAvail().x - fh * 4.0f) * 0.5f);
  weights_tile(s, c.wrapper, head, "Wrapper: head's own module", side);
  ImGui::SameLine(0.0f, fh * 2.0f);
  weights_tile(s, c.split, head, "Weight split: q.view + transpose", side);

  ImGui::Separator();
  ImGui::Text("Cost of one forward: b = %d, num_tokens = %d, d_in = %d, num_heads = %d, head_dim = %d", c.batch, c.tokens, c.d_in,
              c.heads, c.head_dim);
  const Comparison::Row& r = c.rows.front();
  if (ImGui::BeginTable("cost", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("variant");
    ImGui::TableSetupColumn("matmul calls");
    ImGui::TableSetupColumn("FLOPs");
    ImGui::TableSetupColumn("parameters");
    ImGui::TableSetupColumn("forward time (measured)");
    ImGui::TableHeadersRow();
    const struct {
      const char* name;
      const Cost& cost;
      double ms;
    } lines[3] = {{"wrapper (h modules)", r.wrapper, r.wrapper_ms}, {"weight split", r.split, r.split_ms}, {"fused qkv", r.fused, r.fused_ms}};
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
  ImGui::TextDisabled("Weight split adds out_proj (d_out² + d_out parameters); its identity here keeps the outputs equal.");

  ImGui::Spacing();
  ImGui::TextWrapped("As num_heads grows (head_dim = %d fixed): the wrapper makes 5 matmul calls per head, weight split 6 in all.", c.head_dim);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(fh * 6.0f);
  if (ImGui::SliderInt("up to heads", &w.cmp_max_heads, 4, 64)) c.generation = ~std::uint64_t{0};
  std::int64_t max_calls = 1;
  for (std::size_t i = 1; i < c.rows.size(); ++i) max_calls = std::max(max_calls, c.rows[i].wrapper.matmul_calls);
  if (ImGui::BeginTable("growth", 6, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
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
        dl->AddRectFilled(ImVec2(p.x, p.y + 1), ImVec2(p.x + a, p.y + lh * 0.5f - 1), u32(head_rgba(1)));
        dl->AddRectFilled(ImVec2(p.x, p.y + lh * 0.5f + 1), ImVec2(p.x + b, p.y + lh - 1), u32(head_rgba(0)));
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
  ImGui::TextDisabled("FLOPs of the projections are the same; the wrapper pays for h times more, smaller calls. Times: forward() "
                      "measured by the core when the input changes, not every frame (\"not timed\": too large to time while you edit).");
  ImGui::PopTextWrapPos();
}

}  // namespace mhaviz::gui::walk
