// Shapes of the main tensors along the pipeline, the parameter count and the cost,
// always visible under the heatmaps and following the controls.
#include <imgui.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app_state.hpp"

namespace mhaviz::gui {

std::string thousands(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return v < 0 ? "-" + out : out;
}

namespace {

struct Step {
  const char* name;
  std::string shape;
  const char* dims;  // what the dimensions are, as the seeds write them
};

}  // namespace

void draw_shapes(AppState& s) {
  if (!s.compute.have_trace) {
    ImGui::TextDisabled("no trace");
    return;
  }
  const Trace& t = s.compute.trace;
  const bool wrapper = t.config.variant == Variant::Wrapper;
  std::vector<Step> steps;
  steps.push_back({"x", shape_string(t.input.shape), "input (b, T, d_in)"});
  if (t.config.variant == Variant::FusedQkv) steps.push_back({"qkv", shape_string(t.qkv.shape), "qkv_layer(x) (b, T, 3*d_out)"});
  steps.push_back({"Q,K,V", shape_string(t.queries.shape),
                   wrapper ? "each head's W(x), side by side (b, T, h*d_out)" : "W_query(x) etc. (b, T, d_out)"});
  steps.push_back({"q,k,v", shape_string(t.q.shape), "split into heads: view + transpose (b, h, T, hd)"});
  steps.push_back({"scores", shape_string(t.scores.shape), "q @ k.transpose(2, 3) (b, h, T, T)"});
  steps.push_back({"weights", shape_string(t.weights.shape), "softmax(masked scores / sqrt(hd)) (b, h, T, T)"});
  steps.push_back({"context", shape_string(t.context.shape), "weights @ v (b, h, T, hd)"});
  steps.push_back({"merged", shape_string(t.context_merged.shape), "transpose back + merge heads (b, T, h*hd)"});
  steps.push_back({"output", shape_string(t.output.shape),
                   wrapper ? "torch.cat of the heads (b, T, h*d_out)" : "out_proj(merged) (b, T, d_out)"});

  const float right = ImGui::GetContentRegionMax().x;
  const float arrow_w = ImGui::CalcTextSize(" \xE2\x86\x92 ").x;
  ImGui::PushFont(s.ui.font_mono);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    const std::string text = st.shape;
    const float w = ImGui::CalcTextSize(st.name).x + ImGui::CalcTextSize(" ").x + ImGui::CalcTextSize(text.c_str()).x;
    if (i > 0) {
      ImGui::SameLine(0, 0);
      if (ImGui::GetCursorPosX() + arrow_w + w > right) ImGui::NewLine();
      else {
        ImGui::TextDisabled(" \xE2\x86\x92 ");
        ImGui::SameLine(0, 0);
      }
    }
    ImGui::BeginGroup();
    ImGui::TextColored(ImGui::GetStyleColorVec4(ImGuiCol_PlotHistogram), "%s", st.name);
    ImGui::SameLine(0, ImGui::CalcTextSize(" ").x);
    ImGui::TextUnformatted(text.c_str());
    ImGui::EndGroup();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", st.dims);
    if (std::string(st.name) == "output") record_widget(s, "shape_output");
  }
  ImGui::PopFont();
  ImGui::Text("Parameters: %s", thousands(s.compute.model.parameter_count()).c_str());
  record_widget(s, "parameters");
  char buf[4][64];
  std::snprintf(buf[0], sizeof buf[0], "head_dim %d", t.head_dim);
  std::snprintf(buf[1], sizeof buf[1], "matmul calls %s", thousands(t.cost.matmul_calls).c_str());
  std::snprintf(buf[2], sizeof buf[2], "FLOPs %s", thousands(t.cost.flops).c_str());
  std::snprintf(buf[3], sizeof buf[3], "forward %.2f ms", s.compute.forward_ms);
  for (const auto& item : buf) {
    const float gap = ImGui::GetFontSize() * 1.5f;
    if (ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + gap + ImGui::CalcTextSize(item).x <= right) {
      ImGui::SameLine(0, gap);
    }
    ImGui::TextDisabled("%s", item);
  }
  if (!s.compute.error.empty()) ImGui::TextDisabled("(shapes of the last valid input)");
}

}  // namespace mhaviz::gui
