#!/usr/bin/env bash
# The main job: first two operators tuned briefly against their vendor
# libraries, then a model from ONNX to a tuned library: generate a ResNet-18,
# compile it untuned, tune its kernels on local workers (records in
# tessera.db), compile it with the best records, and compare the latency of
# both with ONNX Runtime's on the same input, all with 2 threads.
#
#   make demo                      # TRIALS=600 by default: a first round of 16 for each of the
#                                  # 24 kernels, then about 14 rounds where they gain most
#   TRIALS=1000 make demo          # a longer search (resumes from tessera.db)
set -euo pipefail
build=${1:-build}
trials=${TRIALS:-600}
db=${DB:-tessera.db}
root=$(cd "$(dirname "$0")/.." && pwd)
work="$build/demo"
mkdir -p "$work"
tessera="$build/bin/tessera"
threads=2

latency() {  # the median of `tessera run --bench` in ms
  sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'
}

echo "== 0. Operators: matmul 1024^3 and a ResNet conv (56x56x64, 3x3), 64 trials each in the knob space,"
echo "      the best kernel re-timed against OpenBLAS / oneDNN in the same run (vs_peer > 1: Tessera is faster)"
"$build/bin/bench_tune" --benchmark_counters_tabular=true \
  --benchmark_filter='BM_Tune_Matmul1024/trials:64/knob:1|BM_Tune_ResNetConvs/trials:64/knob:1/layers:1'

echo
echo "== 1. A ResNet-18 with random weights (python3-onnx), input 'input' [1, 3, 224, 224]"
/usr/bin/python3 "$root/scripts/models/resnet18.py" -o "$work/resnet18.onnx" --seed 0
/usr/bin/python3 -c "import numpy as np; np.save('$work/input.npy', np.random.default_rng(1).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32))"

echo
echo "== 2. Untuned: every kernel from its template's fallback"
"$tessera" compile "$work/resnet18.onnx" --no-records -o "$work/resnet18_untuned.tsr" | tail -3
"$tessera" run "$work/resnet18_untuned.tsr" --input input="$work/input.npy" --threads $threads \
  --output-dir "$work/untuned" --bench 20 | tee "$work/untuned.txt"
untuned=$(latency < "$work/untuned.txt")

echo
echo "== 3. Tuning its kernels on local workers: $trials trials, records in $db"
"$tessera" tune "$work/resnet18.onnx" --trials "$trials" --db "$db" --threads $threads

echo
echo "== 4. Compiled with the best records"
"$tessera" compile "$work/resnet18.onnx" --db "$db" -o "$work/resnet18.tsr" | tail -4
"$tessera" run "$work/resnet18.tsr" --input input="$work/input.npy" --threads $threads \
  --output-dir "$work/tuned" --bench 20 | tee "$work/tuned.txt"
tuned=$(latency < "$work/tuned.txt")

echo
echo "== 5. ONNX Runtime on the same input ($threads threads)"
ort=""
if node "$root/scripts/ort_run.js" "$work/resnet18.onnx" --input input="$work/input.npy" --threads $threads \
     --output-dir "$work/ort" --bench 20 > "$work/ort.txt" 2>&1; then
  ort=$(sed -n 's/^median_ms=//p' "$work/ort.txt")
  /usr/bin/python3 - "$work" <<'EOF'
import sys, numpy as np
w = sys.argv[1]
ours, ort = np.load(w + "/tuned/output.npy"), np.load(w + "/ort/output.npy")
print(f"outputs agree with ONNX Runtime: max |difference| {np.abs(ours - ort).max():.2e} (max |value| {np.abs(ort).max():.2f})")
EOF
else
  echo "ONNX Runtime is not available (run scripts/install-deps.sh):"; cat "$work/ort.txt"
fi

echo
echo "== Latency of ResNet-18, batch 1, $threads threads (median of 20 runs)"
printf '  %-26s %9.2f ms\n' "Tessera, untuned" "$untuned" "Tessera, tuned ($trials trials)" "$tuned"
[[ -n "$ort" ]] && printf '  %-26s %9.2f ms\n' "ONNX Runtime" "$ort"
awk -v u="$untuned" -v t="$tuned" -v o="$ort" 'BEGIN {
  printf "  tuning made it %.2fx faster", u / t
  if (o != "") printf "; ONNX Runtime / Tessera = %.2f (above 1: Tessera is faster)", o / t
  printf "\n" }'
