#!/usr/bin/env bash
# Regenerates tests/report/testdata/resnet18_1000.jsonl.gz, the records of a
# real 1,000-trial tuning of the demo's ResNet-18 (scripts/models/resnet18.py
# --seed 0, 2 threads, as scripts/demo.sh tunes it), exported with
# `tessera records export` and compressed. tests/report/report_browser_test.cc
# imports it and opens the model's report in headless Chromium. Then the
# README's plot, docs/report_model_latency.svg: the page's first plot (the
# model's estimated latency against trials), cut out of the report written
# from the fixture as imported. The tuning takes 10-30 minutes on 2 cores;
# nothing in either file is edited by hand.
#
#   scripts/report_fixture.sh [BUILD_DIR]              # default: build
#   scripts/report_fixture.sh BUILD_DIR --plot-only    # the plot from the committed fixture
set -euo pipefail
build=${1:-build}
plot_only=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/tests/report/testdata/resnet18_1000.jsonl.gz"
plot="$root/docs/report_model_latency.svg"
tessera="$(cd "$build" && pwd)/bin/tessera"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$root/scripts/models/resnet18.py" -o "$work/resnet18.onnx" --seed 0
if [[ "$plot_only" == --plot-only ]]; then
  gzip -dc "$out" > "$work/fixture.jsonl"
else
  (cd "$work" && "$tessera" tune resnet18.onnx --trials 1000 --db fixture.db --threads 2)
  "$tessera" records export --db "$work/fixture.db" --output "$work/fixture.jsonl"
  mkdir -p "$(dirname "$out")"
  gzip -9 -n -c "$work/fixture.jsonl" > "$out"
  echo "wrote $out ($(stat -c %s "$out") bytes, $(grep -c '"type":"record"' "$work/fixture.jsonl") records)"
fi

"$tessera" records import --db "$work/imported.db" "$work/fixture.jsonl"
"$tessera" report "$work/resnet18.onnx" --db "$work/imported.db" -o "$work/report.html"
/usr/bin/python3 - "$work/report.html" "$plot" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
title = page.index("<title>estimated model latency against trials</title>")
start = page.rindex("<svg ", 0, title)
end = page.index("</svg>", title) + len("</svg>")
open(sys.argv[2], "w", encoding="utf-8").write(page[start:end] + "\n")
PY
echo "wrote $plot"
