# Sourced by the bench_*_vs_torch.sh scripts before they start Python. Debian's OpenBLAS
# (0.3.21) picks its kernels by CPU model at load time, and on a CPU newer than it knows it falls
# back to a generic one: on a 2-core Intel Xeon of CPU model 207 it chose Prescott (SSE3) and
# torch.mm ran at 40 GFLOP/s against 200–220 with the AVX-512 kernels. PyTorch as installed is
# then not the reference the comparison means, nor its SGEMM the floor. Where OpenBLAS names
# such a core and OPENBLAS_CORETYPE is unset, the widest core type this CPU runs is exported
# (SkylakeX with AVX-512F, Haswell with AVX2) and a line says so.
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  _core=$(OPENBLAS_VERBOSE=2 /usr/bin/python3 -c 'import torch; torch.mm(torch.ones(4, 4), torch.ones(4, 4))' 2>&1 |
    sed -n 's/^Core: //p' | head -1)
  case "$_core" in
    Prescott | Katmai | Coppermine | Northwood | Core2 | Penryn | Dunnington | Nehalem | Atom | Barcelona)
      if grep -q -w avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
      elif grep -q -w avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
      [ -n "${OPENBLAS_CORETYPE:-}" ] &&
        echo "OpenBLAS does not know this CPU (it chose the $_core kernels): OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE for torch" ;;
  esac
  unset _core
fi
