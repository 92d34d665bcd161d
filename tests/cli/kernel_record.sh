#!/bin/sh
# The suite's one kernel record: `mhaviz calibrate` into DIR, which the CLI tests read as their
# settings directory and the GUI tests copy into each fresh --config-dir (guitest.py), where
# every launch that runs a model used to calibrate again (4-6 s each under ASan).
# A CPU with neither AVX-512F nor AVX2 + FMA has nothing to calibrate: no record, not a failure.
# Usage: kernel_record.sh PATH/TO/mhaviz DIR
set -u
out=$("$1" calibrate --config-dir "$2" 2>&1) && { printf '%s\n' "$out" | tail -n 1; exit 0; }
case $out in
  *"nothing to calibrate"*) echo "no record: this CPU's products run in OpenBLAS"; exit 0 ;;
esac
printf '%s\n' "$out" >&2
exit 1
