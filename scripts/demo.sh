#!/usr/bin/env bash
# The main job as it stands: hand-scheduled kernels against OpenBLAS, then a
# short tuning run of a matmul on local workers (records in tessera.db).
set -euo pipefail
build=${1:-build}
echo "== 1. Hand-scheduled kernels vs peers (2 threads; vs_peer > 1 means Tessera is faster)"
"$build/bin/bench_core" --benchmark_filter='BM_Core_(HandMatmul1024|HandConv2dResNet|BuildMatmul1024)' \
  --benchmark_counters_tabular=true
echo
echo "== 2. Tuning matmul 512x512x512 on local workers: 48 trials, records in tessera.db"
"$build/bin/tessera" tune --op matmul:M=512,N=512,K=512 --trials 48 --db tessera.db --repeat 2 --min-repeat-ms 20
echo
echo "== 3. What tessera.db holds now"
"$build/bin/tessera" records stats --db tessera.db
