#!/usr/bin/env bash
# The main job: first two operators tuned briefly against their vendor
# libraries, then a model from ONNX to a tuned library: generate a ResNet-18,
# compile it untuned, tune its kernels on local workers (records in
# tessera.db), compile it with the best records, and compare the latency of
# both with ONNX Runtime's on the same input, all with 2 threads, timed in
# turn (rounds of each) so that the CPU's drift does not pass for a gain.
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

echo
echo "== 3. Tuning its kernels on local workers: $trials trials, records in $db"
"$tessera" tune "$work/resnet18.onnx" --trials "$trials" --db "$db" --threads $threads

echo
echo "== 4. Compiled with the best records"
"$tessera" compile "$work/resnet18.onnx" --db "$db" -o "$work/resnet18.tsr" | tail -4
"$tessera" run "$work/resnet18.tsr" --input input="$work/input.npy" --threads $threads \
  --output-dir "$work/tuned" --bench 20 | tee "$work/tuned.txt"

echo
echo "== 5. ONNX Runtime on the same input ($threads threads)"
ort_ok=""
if node "$root/scripts/ort_run.js" "$work/resnet18.onnx" --input input="$work/input.npy" --threads $threads \
     --output-dir "$work/ort" --bench 20 > "$work/ort.txt" 2>&1; then
  ort_ok=1
  /usr/bin/python3 - "$work" <<'EOF'
import sys, numpy as np
w = sys.argv[1]
ours, ort = np.load(w + "/tuned/output.npy"), np.load(w + "/ort/output.npy")
print(f"outputs agree with ONNX Runtime: max |difference| {np.abs(ours - ort).max():.2e} (max |value| {np.abs(ort).max():.2f})")
EOF
else
  echo "ONNX Runtime is not available (run scripts/install-deps.sh):"; cat "$work/ort.txt"
fi

# A CPU's speed can move by a third within minutes (a guest's host, turbo,
# other load), and steps 2 and 4 ran minutes apart: the comparison times
# untuned, tuned and ONNX Runtime in turn, round by round, and takes the
# median of each round's ratio.
rounds=9
echo
echo "== 6. Untuned, tuned and ONNX Runtime timed in turn: $rounds rounds of 20 runs each"
: > "$work/rounds.txt"
for r in $(seq 1 $rounds); do
  u=$("$tessera" run "$work/resnet18_untuned.tsr" --input input="$work/input.npy" --threads $threads --bench 20 | latency)
  t=$("$tessera" run "$work/resnet18.tsr" --input input="$work/input.npy" --threads $threads --bench 20 | latency)
  o=""
  if [[ -n "$ort_ok" ]]; then
    o=$(node "$root/scripts/ort_run.js" "$work/resnet18.onnx" --input input="$work/input.npy" --threads $threads \
          --bench 20 2>/dev/null | sed -n 's/^median_ms=//p')
  fi
  echo "$u $t ${o:--}" >> "$work/rounds.txt"
  printf '  round %d: untuned %.2f ms, tuned %.2f ms%s\n' "$r" "$u" "$t" "${o:+, ONNX Runtime $(printf %.2f "$o") ms}"
done

echo
echo "== Latency of ResNet-18, batch 1, $threads threads (medians of $rounds rounds timed in turn)"
/usr/bin/python3 - "$work/rounds.txt" "$trials" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
untuned = [float(r[0]) for r in rows]
tuned = [float(r[1]) for r in rows]
ort = [float(r[2]) for r in rows if r[2] != "-"]
med = statistics.median
print(f"  {'Tessera, untuned':<26} {med(untuned):9.2f} ms")
print(f"  {f'Tessera, tuned ({sys.argv[2]} trials)':<26} {med(tuned):9.2f} ms")
if ort:
    print(f"  {'ONNX Runtime':<26} {med(ort):9.2f} ms")
ratios = [u / t for u, t in zip(untuned, tuned)]
line = (f"  tuning made it {med(ratios):.2f}x faster (median of the rounds' ratios, which range "
        f"{min(ratios):.2f}-{max(ratios):.2f} on this machine)")
if ort:
    line += f"; ONNX Runtime / Tessera = {med(o / t for o, t in zip(ort, tuned)):.2f} (above 1: Tessera is faster)"
print(line)
EOF
