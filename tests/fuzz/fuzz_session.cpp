// libFuzzer target: session parsing and validation, then a small forward pass whose
// invariants must hold for every session the parser accepts.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "mhaviz/export.hpp"
#include "mhaviz/session.hpp"
#include "mhaviz/trace.hpp"

namespace {

[[noreturn]] void broken(const char* what) {
  __builtin_trap();
  (void)what;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mhaviz::Session s;
  try {
    s = mhaviz::parse_session(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const mhaviz::SessionError& e) {
    // Errors are one line and name a field: "field: problem".
    const std::string_view msg = e.what();
    if (msg.empty() || msg.find('\n') != std::string_view::npos || msg.find(": ") == std::string_view::npos) broken("message");
    return 0;
  }
  // Accepted: the round trip must give the same session, and a forward of a small one must be sane.
  const mhaviz::Session back = mhaviz::parse_session(mhaviz::session_to_json(s));
  if (back.tokens != s.tokens || back.embeddings != s.embeddings) broken("round trip");
  if (mhaviz::estimate_memory_bytes(s.model, s.d_in(), s.num_tokens(), s.batch) > (std::int64_t{8} << 20)) return 0;
  const mhaviz::Model m = mhaviz::build_model(s.model, s.d_in());
  const mhaviz::Trace t = mhaviz::forward(m, s.input_tensor());
  for (int b = 0; b < t.batch; ++b)
    for (int h = 0; h < t.heads; ++h)
      for (int i = 0; i < t.tokens; ++i) {
        double sum = 0;
        for (int j = 0; j < t.tokens; ++j) {
          const float w = t.weights.at({b, h, i, j});
          if (!(w >= 0.0f && w <= 1.0f)) broken("weight range");
          if (t.masked(i, j) && w != 0.0f) broken("mask");
          sum += w;
        }
        if (std::fabs(sum - 1.0) > 1e-4) broken("row sum");
      }
  for (float x : t.output.data)
    if (!std::isfinite(x)) broken("output not finite");
  (void)mhaviz::to_npy(t.output);
  return 0;
}
