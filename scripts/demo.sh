#!/usr/bin/env bash
# The main job as it stands: build hand-scheduled kernels with Tessera and
# race them against OpenBLAS (and an im2col + OpenBLAS convolution) on this
# machine, two threads each, measured in the same run.
set -euo pipefail
build=${1:-build}
echo "== Tessera: hand-scheduled kernels vs peers (2 threads; vs_peer > 1 means Tessera is faster)"
"$build/bin/bench_core" --benchmark_filter='BM_Core_(HandMatmul1024|HandConv2dResNet|BuildMatmul1024)' \
  --benchmark_counters_tabular=true
