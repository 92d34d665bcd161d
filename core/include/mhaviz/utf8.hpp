// UTF-8 of one code point (the tokenizers' and the app's text fields').
#pragma once

#include <cstdint>
#include <string>

namespace mhaviz {

// Appends cp (at most U+10FFFF) to out as 1 to 4 bytes.
void append_utf8(std::string& out, std::uint32_t cp);

}  // namespace mhaviz
