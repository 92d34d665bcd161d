// The KV cache view's state: the prefill chosen, the step shown, and the decode through the
// cache of the lesson's current trace (made again when the trace or the prefill changes).
// Nothing here is part of the lesson document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mhaviz/kv_cache.hpp"

namespace mhaviz::gui {

struct KvUi {
  int prefill = 1;  // the P slider: rows decoded at once before the one-at-a-time steps
  int step = 0;     // the step shown: 0 the prefill, then one per decoded row
  std::optional<DecodeTrace> decode;
  std::uint64_t decoded_generation = ~std::uint64_t{0};  // the forward it was decoded beside
  int decoded_prefill = 0;
  std::string error;       // why this session cannot be decoded (one line), or empty
  std::string note;        // what the view changed to decode (dropout off), or empty
  std::uint64_t data = 0;  // bumped when what the figure shows changes
  bool memory = false;     // the memory plot instead of the steps
  int preset = -1;         // the memory plot's model: a kv_presets() index, or -1 the lesson's module
};

}  // namespace mhaviz::gui
