#!/usr/bin/env python3
"""Runs one bench_* program and files its figures under bench/results/.

    python3 scripts/record_bench.py build/bin/bench_model \\
        --benchmark_filter='BM_Model_ResNet18Int8/0/' --benchmark_counters_tabular=true

The program runs with the arguments given (its table prints as usual) and
writes Google Benchmark's JSON, whose context names the machine (cpu_model,
llvm_cpu, target, tessera_commit: bench/bench_main.h). A run that exits 0 and
measured something is filed as bench/results/<llvm_cpu>/<UTC time>-<program>.json;
then `python3 scripts/render_benchmarks.py` renders BENCHMARKS.md's table.
A failed run files nothing and exits with the program's status.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print("record_bench: " + message, file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    program, args = argv[1], argv[2:]
    if any(a.startswith("--benchmark_out") for a in args):
        fail("--benchmark_out is this script's to set; leave it out")
    if not os.access(program, os.X_OK):
        fail(f"{program} is not an executable program (build it first: make build)")
    results = os.environ.get("TESSERA_BENCH_RESULTS", os.path.join(ROOT, "bench", "results"))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        status = subprocess.call([program] + args + ["--benchmark_out=" + out, "--benchmark_out_format=json"])
        if status != 0:
            print(f"record_bench: {os.path.basename(program)} exited with {status}; nothing filed", file=sys.stderr)
            return status
        try:
            with open(out) as f:
                run = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"the run wrote no readable JSON ({e}); nothing filed")
        if not run.get("benchmarks"):
            print("record_bench: no benchmark matched; nothing filed", file=sys.stderr)
            return 1
        cpu = run.get("context", {}).get("llvm_cpu")
        if not cpu:
            fail("the run's context has no llvm_cpu (is the program built with bench/bench_main.h?)")
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%S")
        folder = os.path.join(results, cpu)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{stamp}-{os.path.basename(program)}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(run, f, indent=1)
            f.write("\n")
        os.replace(path + ".tmp", path)
    print(f"record_bench: filed {len(run['benchmarks'])} figures as {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
