// The LoadError message a call throws, for tests of the one-line errors of model files.
#pragma once

#include <functional>
#include <string>

#include "mhaviz/load_error.hpp"

namespace mhaviz::test {

inline std::string load_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LoadError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace mhaviz::test
