#!/bin/sh
# Runs the app ($MHAVIZ_BIN) with $MHAVIZ_PRELOAD preloaded, for the GUI tests under
# AddressSanitizer (see CMakeLists.txt). The driver is not instrumented, so ASan's
# library-order check is off.
LD_PRELOAD="$MHAVIZ_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:verify_asan_link_order=0" \
  exec "$MHAVIZ_BIN" "$@"
