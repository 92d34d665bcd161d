// The values the size sliders stop at. A plain slider over 1..8192 jumps hundreds per
// pixel (issue 13: d_out went from 2 to 445 on a small drag); these steps are the sizes
// people use, so a small drag moves to the next sensible size.
#pragma once

#include <vector>

namespace mhaviz::gui {

// Every integer up to 16, then 1.5x and 2x steps (24, 32, 48, 64, 96, ..., 6144, 8192)
// up to max, plus current when it is none of them (GPT-2 XL's 1600 stays where it is).
// Ascending. max >= 1.
std::vector<int> size_steps(int current, int max);
// Index of the step nearest to value (ties: the smaller). steps non-empty and ascending.
int nearest_step(const std::vector<int>& steps, int value);

}  // namespace mhaviz::gui
