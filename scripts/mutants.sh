#!/usr/bin/env bash
# Mutation run (by hand, not in CI): plants each mutation of the list below, one at a time,
# in a scratch copy of this tree, rebuilds only the targets its tests need (one build
# directory, incrementally), runs those tests, and prints killed / survived and the kill rate.
#
#   scripts/mutants.sh              every mutation
#   scripts/mutants.sh ID [ID ...]  only these (IDs as in the list)
#   scripts/mutants.sh --list       the list
#   scripts/mutants.sh --check      only that every mutation's text is still in its file,
#                                   exactly once (no build; the test suite runs it)
#   MUTANTS_CPU=max scripts/mutants.sh avx2-col-remainder ...
#                                   core_tests run under qemu-x86_64 -cpu max (AVX2, no
#                                   AVX-512: the machines of this kind without it); mutations
#                                   whose tests are not all in core_tests are left out
#
# MUTANTS_DIR (default /tmp/mhaviz-mutants) holds the copy (src/) and its dev-preset build;
# a second run reuses it and rebuilds only what changed. The suite must pass unmutated
# first. A mutation whose text is no longer in its file stops the run (the list is out of
# date); one that does not compile counts as neither killed nor survived, nor does one whose
# tests pass with some of them skipped because this CPU cannot run the code (AVX-512 under
# MUTANTS_CPU=max): "skipped on this CPU".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${MUTANTS_DIR:-/tmp/mhaviz-mutants}
SRC=$WORK/src
BUILD=$SRC/build/dev
LOG=$WORK/logs

# [SECTION] The list: mutant ID "what it breaks" "targets" "ctest regex" FILE OLD NEW [FILE OLD NEW ...]
# OLD must occur exactly once in FILE; several FILE OLD NEW triples make one mutation.
IDS=()
declare -A WHAT TARGETS TESTS EDITS
mutant() {
  local id=$1
  IDS+=("$id")
  WHAT[$id]=$2
  TARGETS[$id]=$3
  TESTS[$id]=$4
  shift 4
  local edits=""
  while [ $# -gt 0 ]; do
    edits+=$(printf '%s\0%s\0%s\0' "$1" "$2" "$3" | base64 -w0)" "
    shift 3
  done
  EDITS[$id]=$edits
}

CORE="core_tests"
KERNEL_TESTS='^(Kernels/Gemm|Backends/OracleOnBackend)\.'
REFERENCE_TESTS='^Sessions/Reference\.'

mutant avx512-col-remainder "AVX-512 tile: the second register's column mask one column wide (writes past n)" \
  "$CORE" "$KERNEL_TESTS" \
  core/src/kernels/gemm.cpp "cols > 16 ? (1u << (cols - 16)) - 1u : 0u" "cols > 16 ? (1u << (cols - 15)) - 1u : 0u"
mutant avx2-col-remainder "AVX2 tile: the second register's column mask one column short (last column unwritten)" \
  "$CORE" "$KERNEL_TESTS" \
  core/src/kernels/gemm.cpp "_mm256_set1_epi32(cols - 8 * v)" "_mm256_set1_epi32(cols - 8 * v - (v == 1))"
mutant avx512-tile-rows "AVX-512: an 11-row edge tile computes 10 rows (the last row of m = 11, 23 ... unwritten)" \
  "$CORE" "$KERNEL_TESTS" \
  core/src/kernels/gemm.cpp "tile<11, Full, BT>," "tile<10, Full, BT>,"
mutant avx2-tile-rows "AVX2: a 3-row edge tile computes 2 rows (the last row of m = 3, 9, 15 ... unwritten)" \
  "$CORE" "$KERNEL_TESTS" \
  core/src/kernels/gemm.cpp "tile2<3, 2, Full, BT>," "tile2<2, 2, Full, BT>,"
mutant avx2-lane-mask "AVX2 tile: the first register's column mask lets a 7-column edge write an eighth column" \
  "$CORE" "$KERNEL_TESTS" \
  core/src/kernels/gemm.cpp "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)" "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 6)"
mutant recover-heads-zero "session recovery keeps num_heads 0 (d_out % num_heads divides by zero for a split variant)" \
  "$CORE" '^SessionRecover\.' \
  core/src/lesson/session_recover.cpp '"model.num_heads", 1, Limits::kMaxHeads' '"model.num_heads", 0, Limits::kMaxHeads'
mutant recover-view-head "session recovery clamps the view's head to num_heads, one past the last" \
  "$CORE" '^SessionRecover\.|^Session\.' \
  core/src/lesson/session_recover.cpp '"view.head", 0, heads - 1,' '"view.head", 0, heads,'
mutant st-end-boundary "safetensors: a tensor ending one byte past the data accepted (and read)" \
  "$CORE" '^Safetensors\.' \
  core/src/trained/safetensors.cpp "if (t.end > data_size)" "if (t.end > data_size + 1)"
mutant st-dtype-size "safetensors: I64 sized 4 bytes instead of 8" \
  "$CORE" '^Safetensors\.' \
  core/src/trained/safetensors.cpp '{StDtype::I64, "I64", 8, false}' '{StDtype::I64, "I64", 4, false}'
mutant atomic-in-place "write_file_atomic truncates and writes the target itself instead of temp + rename" \
  "$CORE" '^Session\.' \
  core/src/lesson/session.cpp "const int fd = ::mkstemp(name.data());" "const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);" \
  core/src/lesson/session.cpp "const std::string tmp(name.data());" "const std::string tmp(path);"
mutant dropout-upper "dropout 1 accepted (p <= 1)" \
  "$CORE mhaviz" '^Session\.|^cli$' \
  core/src/lesson/session.cpp "if (!(p >= 0.0 && p < 1.0)) {" "if (!(p >= 0.0 && p <= 1.0)) {"
mutant dropout-lower "negative dropout accepted (p >= -1)" \
  "$CORE mhaviz" '^Session\.|^cli$' \
  core/src/lesson/session.cpp "if (!(p >= 0.0 && p < 1.0)) {" "if (!(p >= -1.0 && p < 1.0)) {"
mutant keep-rule "dropout keeps a cell when u < p instead of u < 1 - p (forward and loop oracle alike)" \
  "$CORE" "$REFERENCE_TESTS|^Reference\\." \
  core/src/lesson/forward.cpp "const bool kept = torch_uniform53(gen) < keep_p;" "const bool kept = torch_uniform53(gen) < c.dropout;" \
  core/src/lesson/reference.cpp "const bool kept = torch_uniform53(gen) < 1.0 - c.dropout;" "const bool kept = torch_uniform53(gen) < c.dropout;"
mutant softmax-mask "softmax hides the diagonal too (one cell too many masked per row past the first)" \
  "$CORE" '^Invariants\.SoftmaxRowsSumToOneAndMaskedCellsAreZero$|^Backends/AttentionOnBackend\.' \
  core/include/mhaviz/attention_mask.hpp "r.end = std::min(r.end, i + 1);" "r.end = std::min(r.end, std::max<std::int64_t>(1, i));"
mutant scale "scores scaled by 1/hd instead of 1/sqrt(hd)" \
  "$CORE" "$REFERENCE_TESTS" \
  core/src/kernels/softmax.hpp "divide(static_cast<float>(std::sqrt(static_cast<double>(head_dim))))" "divide(static_cast<float>(static_cast<double>(head_dim)))"
mutant mask "no causal mask in the forward" \
  "$CORE" "$REFERENCE_TESTS" \
  core/src/lesson/trace.cpp "m.causal = c.causal;" "m.causal = false;"
mutant merge-order "heads merged in reverse order" \
  "$CORE" "$REFERENCE_TESTS" \
  core/src/kernels/head_split.cpp "dst + r * H * hd + static_cast<std::int64_t>(h) * hd" "dst + r * H * hd + static_cast<std::int64_t>(H - 1 - h) * hd"
mutant init-bound "kaiming_uniform bound sqrt(6)·std instead of sqrt(3)·std" \
  "$CORE" "$REFERENCE_TESTS" \
  core/src/lesson/model.cpp "const double bound = std::sqrt(3.0) * std_dev;" "const double bound = std::sqrt(6.0) * std_dev;"
mutant npy-header "NPY header padded to 16 bytes instead of 64" \
  "$CORE mhaviz" '^Export\.|^cli$' \
  core/src/lesson/export.cpp "header.append((64 - unpadded % 64) % 64, ' ');" "header.append((16 - unpadded % 16) % 16, ' ');"
mutant diverging-sign "diverging colour scale as wide as the largest positive value only (a more negative score off the map)" \
  "app_tests" '^ColorScale\.' \
  app/figure/colormap.cpp "const float m = std::max(std::fabs(lo), std::fabs(hi));" "const float m = std::fabs(hi);"
mutant diverging-picked "signed scores on the diverging map picked by hand get [lo, hi], zero off the map's middle" \
  "app_tests" '^ColorScale\.' \
  app/figure/colormap.cpp "(diverging_for_signed || sequential == Colormap::Diverging)" "(diverging_for_signed)"
mutant log-floor "log colour scale's floor three decades below the largest weight instead of four" \
  "app_tests" '^ColorScale\.' \
  app/figure/colormap.cpp "out.vmin = std::max(min_pos, hi * 1e-4f);" "out.vmin = std::max(min_pos, hi * 1e-3f);"
mutant head-clamp "the app no longer keeps the selected head within the trace's heads (--head 99, fewer heads)" \
  "mhaviz" '^gui_head_clamp$' \
  app/gui/document.cpp "s.view.head = std::clamp(s.view.head, 0, std::max(0, c.trace.heads - 1));" "s.view.head = std::max(0, s.view.head);"
mutant autosave "no autosave while the app runs (only on a clean exit)" \
  "mhaviz" '^gui_kill9$' \
  app/gui/app.cpp "if (!L.measuring && glfwGetTime() - s.last_edit_time > 1.0) autosave(s);" "if (false) autosave(s);"

# [SECTION] Running
list() {
  for id in "${IDS[@]}"; do printf '%-22s %s\n    tests: %s\n' "$id" "${WHAT[$id]}" "${TESTS[$id]}"; done
}

# Copies the tracked and new (not ignored) files of this tree into $SRC, keeping their
# times, so the build there redoes only what changed since the last run.
sync_copy() {
  mkdir -p "$SRC" "$LOG"
  (cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$SRC" -xpf -
}

# edit apply|restore ID: plants each of the mutation's edits in $SRC (exit 3 when an OLD text
# does not occur exactly once), or copies the original files back (with a new time, so the
# build redoes them).
edit() {
  # shellcheck disable=SC2086
  python3 - "$1" "$ROOT" "$SRC" ${EDITS[$2]} <<'PY' || exit 3
import base64, shutil, sys
mode, root, src = sys.argv[1:4]
for e in sys.argv[4:]:
    file, old, new, _ = base64.b64decode(e).split(b"\0")
    file = file.decode()
    if mode == "restore":
        shutil.copyfile(root + "/" + file, src + "/" + file)
        continue
    text = open(src + "/" + file, "rb").read()
    if text.count(old) != 1:
        sys.exit("%s: the text to mutate occurs %d times: %s" % (file, text.count(old), old.decode()))
    open(src + "/" + file, "wb").write(text.replace(old, new))
PY
}

# Each mutation's OLD texts occur exactly once in this tree: an edit of the code they name
# would otherwise leave the list out of date until the next run by hand.
check() {
  local stale=0
  for id in "${IDS[@]}"; do
    # shellcheck disable=SC2086
    python3 - "$ROOT" ${EDITS[$id]} <<'PY' || { echo "$id: out of date" >&2; stale=$((stale + 1)); }
import base64, sys
for e in sys.argv[2:]:
    file, old, _, _ = base64.b64decode(e).split(b"\0")
    n = open(sys.argv[1] + "/" + file.decode(), "rb").read().count(old)
    if n != 1:
        sys.exit("%s: the text to mutate occurs %d times: %s" % (file.decode(), n, old.decode()))
PY
  done
  echo "${#IDS[@]} mutations, $stale out of date"
  [ "$stale" -eq 0 ]
}

# The tests CTest (or a gtest binary run alone) lists as failed in LOG: the first three names,
# and how many more.
killers() {
  local names n
  # CTest's closing list: "27 - NAME (Failed)", "(Timeout)", "(SEGFAULT)", "(NUMERICAL)" for SIGFPE ...
  names=$({ grep -E '^[[:space:]]*[0-9]+ - [^ ]+ \([A-Za-z ]+\)$' "$1" |
    sed -E 's/^[[:space:]]*[0-9]+ - ([^ ]+).*/\1/'; grep -E '^\[  FAILED  \] [^ ]+(, | \(|$)' "$1" |
    sed -E 's/^\[  FAILED  \] ([^ ,]+).*/\1/'; } | awk '!seen[$0]++' || true)
  # A gtest binary run directly (under qemu) that died in a test: the test it was running.
  [ -n "$names" ] || names=$(awk '/^\[ RUN      \]/ { run = $4 } /^\[ +(OK|FAILED|SKIPPED) +\] [^ ]+ \(/ { run = "" }
                                  END { if (run != "") print run " (crashed)" }' "$1")
  n=$(printf '%s\n' "$names" | grep -c . || true)
  printf '%s' "$(printf '%s\n' "$names" | head -3 | paste -sd, -)"
  if [ "$n" -gt 3 ]; then printf ' and %d more' $((n - 3)); fi
  return 0
}

build() { cmake --build "$BUILD" -j2 --target "$@" > "$LOG/build.log" 2>&1; }
tests() {
  if [ -z "${MUTANTS_CPU:-}" ]; then
    ctest --test-dir "$BUILD" -j2 -R "$1" --output-on-failure > "$2" 2>&1
    return
  fi
  # Under the emulator: the core_tests cases CTest's regex names, as one gtest filter.
  local filter
  filter=$("$BUILD/tests/core_tests" --gtest_list_tests | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }' |
    grep -E "$1" | paste -sd: -)
  qemu-x86_64 -cpu "$MUTANTS_CPU" "$BUILD/tests/core_tests" --gtest_filter="$filter" > "$2" 2>&1
}

main() {
  if [ "${1:-}" = "--list" ]; then list; exit 0; fi
  if [ "${1:-}" = "--check" ]; then check; exit; fi
  local chosen=("${IDS[@]}")
  [ $# -gt 0 ] && chosen=("$@")
  if [ -n "${MUTANTS_CPU:-}" ]; then
    local kept=()
    for id in "${chosen[@]}"; do [ "${TARGETS[$id]:-}" = "$CORE" ] && kept+=("$id"); done
    chosen=("${kept[@]}")
    echo "under qemu-x86_64 -cpu $MUTANTS_CPU: ${chosen[*]}"
  fi
  for id in "${chosen[@]}"; do [ -n "${WHAT[$id]+x}" ] || { echo "unknown mutant: $id (see --list)" >&2; exit 2; }; done

  sync_copy
  for id in "${chosen[@]}"; do edit restore "$id"; done  # a run stopped half-way left one planted
  [ -f "$BUILD/CMakeCache.txt" ] || (cd "$SRC" && cmake --preset dev > "$LOG/configure.log")
  local all_targets="" all_tests=""
  for id in "${chosen[@]}"; do all_targets+=" ${TARGETS[$id]}"; all_tests+="${all_tests:+|}${TESTS[$id]}"; done
  echo "baseline: building$(echo "$all_targets" | tr ' ' '\n' | sort -u | tr '\n' ' ')in $BUILD"
  # shellcheck disable=SC2046
  build $(echo "$all_targets" | tr ' ' '\n' | sort -u) || { echo "the unmutated tree does not build: $LOG/build.log" >&2; exit 1; }
  if ! tests "$all_tests" "$LOG/baseline.log"; then
    echo "the tests fail without any mutation: $LOG/baseline.log" >&2
    exit 1
  fi
  echo "baseline: $(grep -E 'tests passed|^\[  PASSED  \]|^\[  SKIPPED \] [0-9]|^\[ backends \]' "$LOG/baseline.log" | paste -sd' ' - || true)"

  local killed=0 survived=0 broken=0 unrunnable=0 survivors=() skips=()
  for id in "${chosen[@]}"; do
    edit apply "$id"
    local verdict log="$LOG/$id.log"
    # shellcheck disable=SC2086
    if ! build ${TARGETS[$id]}; then
      verdict="does not compile"
      broken=$((broken + 1))
      cp "$LOG/build.log" "$log"
    elif tests "${TESTS[$id]}" "$log"; then
      # A mutation in code this CPU cannot run (AVX-512 on an AVX2 CPU) passes with the tests
      # that would run that code skipped: counted apart, neither killed nor survived (on a
      # CPU that runs every backend nothing is skipped, and such a mutation is judged there).
      local skipped
      skipped=$(grep -cE '\*\*\*Skipped|^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)' "$log" || true)
      if [ "$skipped" -gt 0 ]; then
        verdict="skipped on this CPU ($skipped of its tests cannot run here)"
        unrunnable=$((unrunnable + 1))
        skips+=("$id")
      else
        verdict="SURVIVED"
        survived=$((survived + 1))
        survivors+=("$id")
      fi
    else
      verdict="killed by $(killers "$log")"
      killed=$((killed + 1))
    fi
    edit restore "$id"
    printf '%-22s %s\n' "$id" "$verdict"
  done
  local total=$((killed + survived))
  echo "killed $killed, survived $survived${survivors:+ (${survivors[*]})}," \
    "skipped on this CPU $unrunnable${skips:+ (${skips[*]})}, did not compile $broken;" \
    "kill rate $killed/$total = $(awk -v k=$killed -v t=$total 'BEGIN { printf "%.0f%%", t ? 100 * k / t : 0 }')"
  echo "logs: $LOG"
}

main "$@"; exit  # one line: editing this file during a run cannot feed bash new lines
