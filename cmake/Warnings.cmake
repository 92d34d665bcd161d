# Options shared by our own targets: warnings as errors (third-party headers come in
# as SYSTEM), and the instruction set, MHAVIZ_ARCH. What ships (the release preset, the
# .deb) targets x86-64-v2 (SSE4.2, no AVX): the binary starts on any x86-64 CPU of the
# last fifteen years, and the GEMM kernels that need AVX2 + FMA or AVX-512 are compiled
# for them by function attributes and chosen at run time (core/src/kernels/gemm.cpp). `native`
# (the `native` preset) compiles everything for the build machine: such a binary may die
# with "Illegal instruction" on another CPU. Every target gets the same -march so that
# inline Eigen code is compiled alike in all of them. AVX-512 stays off even then: GCC 12
# reports false maybe-uninitialized errors inside its own avx512 intrinsics headers, and
# on two cores the 512-bit paths gained nothing measurable over AVX2.
set(MHAVIZ_ARCH "x86-64-v2" CACHE STRING "-march for our targets: x86-64-v2 (portable, shipped) or native")
if(MHAVIZ_ARCH STREQUAL "native")
  set(MHAVIZ_ARCH_FLAGS -march=native -mno-avx512f)
else()
  set(MHAVIZ_ARCH_FLAGS -march=${MHAVIZ_ARCH} -mtune=generic)
endif()

function(mhaviz_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wimplicit-fallthrough -Werror ${MHAVIZ_ARCH_FLAGS})
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
