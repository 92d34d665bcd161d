#include "slider_steps.hpp"

#include <algorithm>
#include <cstdlib>

namespace mhaviz::gui {

std::vector<int> size_steps(int current, int max) {
  std::vector<int> out;
  for (int v = 1; v <= std::min(16, max); ++v) out.push_back(v);
  for (int p = 16; p < max; p *= 2) {
    if (p + p / 2 <= max && p + p / 2 > 16) out.push_back(p + p / 2);
    if (2 * p <= max) out.push_back(2 * p);
  }
  if (current >= 1 && current <= max && std::find(out.begin(), out.end(), current) == out.end()) out.push_back(current);
  std::sort(out.begin(), out.end());
  return out;
}

int nearest_step(const std::vector<int>& steps, int value) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(steps.size()); ++i)
    if (std::abs(steps[static_cast<std::size_t>(i)] - value) < std::abs(steps[static_cast<std::size_t>(best)] - value)) best = i;
  return best;
}

}  // namespace mhaviz::gui
