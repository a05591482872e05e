#!/usr/bin/env bash
# Runs every benchmark program (bench_*) in the build; each prints its figures
# with the counters BENCHMARKS.md quotes (vs_peer, build_ms, ...) and files
# them under bench/results/ (scripts/record_bench.py); then
# `python3 scripts/render_benchmarks.py` renders BENCHMARKS.md's table.
set -uo pipefail
build=${1:-build}
status=0
for b in "$build"/bin/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  /usr/bin/python3 "$(dirname "$0")/record_bench.py" "$b" --benchmark_counters_tabular=true || status=1
done
exit $status
