// `mhaviz dump` output: every named tensor with its shape, as JSON.
#pragma once

#include <string>

#include "mhaviz/model.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

// {"format": "mhaviz-dump", "version": 1, "session": {...}, "cost": {...},
//  "tensors": {NAME: {"shape": [...], "data": [row-major, 9 significant digits]}}}
std::string dump_json(const Session& session, const Model& model, const Trace& trace);

// Shortest decimal text with 9 significant digits at most ("0.5", "-0.451920271").
void append_number(std::string& out, float x);

}  // namespace mhaviz
