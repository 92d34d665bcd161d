# Options shared by our own targets: warnings as errors (third-party headers come in
# as SYSTEM), and, with MHAVIZ_NATIVE, the build machine's instruction set. mhaviz is
# built where it runs (README), and Eigen's vectorised exp in the softmax is 3x faster
# with AVX2 than with the SSE2 baseline. Every target gets the same -march so that
# inline Eigen code is compiled alike in all of them. AVX-512 stays off: GCC 12 reports
# false maybe-uninitialized errors inside its own avx512 intrinsics headers, and on two
# cores the 512-bit paths gained nothing measurable over AVX2.
option(MHAVIZ_NATIVE "Compile for the build machine's CPU (-march=native)" ON)

function(mhaviz_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wimplicit-fallthrough -Werror
    $<$<BOOL:${MHAVIZ_NATIVE}>:-march=native -mno-avx512f>)
  # GCC 12 at -O3 reports a false -Wrestrict inside libstdc++ for `"literal" + std::string`
  # (GCC bug 105329, fixed in GCC 13); the release preset must build with Debian 12's GCC.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  # GCC 12 with -fsanitize=address reports false maybe-uninitialized errors inside
  # libstdc++'s own <regex> (std::function moves in the NFA builder), which gtest and
  # our tests include; the same code compiles clean without the sanitizer.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND MHAVIZ_ASAN)
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
endfunction()
