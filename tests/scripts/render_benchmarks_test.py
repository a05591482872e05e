#!/usr/bin/env python3
"""scripts/render_benchmarks.py and scripts/record_bench.py on trees the test
writes: the newest figure wins, a repeated run gives its median, a
transcribed figure is marked, --check fails on a stale table and passes once
rendered, bad files are refused by name and nothing is rewritten."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts")
RENDER = os.path.join(SCRIPTS, "render_benchmarks.py")
RECORD = os.path.join(SCRIPTS, "record_bench.py")
sys.path.insert(0, SCRIPTS)
import render_benchmarks  # noqa: E402

CATALOGUE = {"groups": [{"title": "Models", "note": "Against a peer.", "rows": [
    {"program": "bench_model", "name": "BM_Model_A/0", "what": "model A untuned", "counters": ["vs_peer", "ms"],
     "goal": "≥ 1.0"},
    {"program": "bench_model", "name": "BM_Model_A/0", "variant": "in turn", "what": "A, in turn",
     "counters": ["vs_peer"]},
    {"program": "bench_model", "name": "BM_Model_AB/0", "what": "model AB", "counters": ["vs_peer"]},
]}]}


def run_file(cpu, date, benchmarks, model="Test CPU"):
    return {"context": {"date": date + "T10:00:00+00:00", "executable": "build/bin/bench_model",
                        "llvm_cpu": cpu, "cpu_model": model}, "benchmarks": benchmarks}


class Tree:
    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        os.makedirs(os.path.join(self.root, "bench", "results"))
        self.write("bench/catalogue.json", CATALOGUE)
        with open(self.path("BENCHMARKS.md"), "w") as f:
            f.write("# Benchmarks\n\nIntro.\n\n" + render_benchmarks.BEGIN + "\nold\n" + render_benchmarks.END +
                    "\n\nAfter.\n")

    def path(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, data):
        os.makedirs(os.path.dirname(self.path(rel)), exist_ok=True)
        with open(self.path(rel), "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))

    def render(self, *args):
        return subprocess.run([sys.executable, RENDER, "--root", self.root, *args], capture_output=True, text=True)

    def doc(self):
        with open(self.path("BENCHMARKS.md")) as f:
            return f.read()


class RenderTest(unittest.TestCase):
    def tree(self):
        t = Tree()
        self.addCleanup(t.tmp.cleanup)
        return t

    def test_newest_figure_median_and_transcription(self):
        t = self.tree()
        t.write("bench/results/znver4/old.json", run_file("znver4", "2026-11-01", [
            {"name": "BM_Model_A/0/iterations:1/manual_time", "run_type": "iteration", "vs_peer": 0.5, "ms": 9.0}]))
        t.write("bench/results/znver4/new.json", run_file("znver4", "2026-11-20", [
            {"name": "BM_Model_A/0/iterations:1/manual_time", "run_name": "BM_Model_A/0/iterations:1/manual_time",
             "run_type": "iteration", "vs_peer": 1.0, "ms": 3.0},
            {"name": "BM_Model_A/0/iterations:1/manual_time_median",
             "run_name": "BM_Model_A/0/iterations:1/manual_time", "run_type": "aggregate",
             "aggregate_name": "median", "vs_peer": 1.234, "ms": 2.5},
            {"name": "BM_Model_A/0/iterations:1/manual_time_mean",
             "run_name": "BM_Model_A/0/iterations:1/manual_time", "run_type": "aggregate",
             "aggregate_name": "mean", "vs_peer": 7.0, "ms": 7.0},
            {"name": "BM_Model_AB/0/iterations:1", "run_type": "iteration", "vs_peer": 2.0},
            {"name": "BM_Other/1", "run_type": "iteration", "vs_peer": 3.0}], model="AMD EPYC"))
        t.write("bench/results/sapphirerapids/transcribed.json", {
            "context": {"llvm_cpu": "sapphirerapids", "cpu_model": "Intel Xeon",
                        "transcribed_from": "the old table"},
            "benchmarks": [{"program": "bench_model", "name": "BM_Model_A/0", "variant": "in turn",
                            "date": "2026-11-25", "vs_peer": 0.97, "note": "0.97 in turn"}]})
        r = t.render("--check")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("stale", r.stderr)
        r = t.render()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no row of bench/catalogue.json for bench_model BM_Other/1", r.stderr)
        doc = t.doc()
        self.assertTrue(doc.startswith("# Benchmarks\n\nIntro.\n\n"))
        self.assertTrue(doc.endswith("\n\nAfter.\n"))
        self.assertIn("`sapphirerapids`: Intel Xeon; `znver4`: AMD EPYC", doc)
        self.assertIn("\n### Models (`bench_model`)\n", doc)
        self.assertNotIn("`bench_model` BM_", doc)
        self.assertIn("| BM_Model_A/0 | model A untuned | vs_peer · ms | ≥ 1.0 | — | 1.23 · 2.50 (11-20) |", doc)
        self.assertIn("| BM_Model_A/0 (in turn) | A, in turn | vs_peer |  | 0.97* (11-25) | — |", doc)
        self.assertIn("| BM_Model_AB/0 | model AB | vs_peer |  | — | 2.00 (11-20) |", doc)
        self.assertEqual(t.render("--check").returncode, 0)

    def test_bad_files_are_named_and_nothing_is_rewritten(self):
        cases = {
            "bench/results/znver4/broken.json": "{ not json",
            "bench/results/znver4/no_cpu.json": json.dumps({"context": {}, "benchmarks": []}),
            "bench/results/zen9/misfiled.json": json.dumps(run_file("znver4", "2026-11-01", [])),
        }
        for rel, text in cases.items():
            t = self.tree()
            before = t.doc()
            t.write(rel, text)
            r = t.render()
            self.assertEqual(r.returncode, 2, rel)
            self.assertIn(os.path.basename(rel), r.stderr)
            self.assertEqual(t.doc(), before, rel)
        t = self.tree()
        t.write("bench/catalogue.json", {"groups": [{"title": "G", "rows": [{"program": "p", "name": "n"}]}]})
        r = t.render()
        self.assertEqual(r.returncode, 2)
        self.assertIn("needs a \"what\"", r.stderr)
        t = self.tree()
        t.write("BENCHMARKS.md", "# Benchmarks without markers\n")
        r = t.render()
        self.assertEqual(r.returncode, 2)
        self.assertIn("no rendered table", r.stderr)


class RecordTest(unittest.TestCase):
    def fake_program(self, folder, body):
        path = os.path.join(folder, "bench_fake")
        with open(path, "w") as f:
            f.write("#!/usr/bin/env python3\nimport sys, json\n"
                    "out = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark_out=')][0]\n" + body)
        os.chmod(path, 0o755)
        return path

    def test_files_a_run_under_its_cpu_and_nothing_on_failure(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = os.path.join(tmp, "results")
            env = dict(os.environ, TESSERA_BENCH_RESULTS=results)
            ok = self.fake_program(tmp, "json.dump({'context': {'llvm_cpu': 'znver4'}, "
                                        "'benchmarks': [{'name': 'BM_X'}]}, open(out, 'w'))\n")
            r = subprocess.run([sys.executable, RECORD, ok, "--benchmark_filter=X"], capture_output=True, text=True,
                               env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            files = os.listdir(os.path.join(results, "znver4"))
            self.assertEqual(len(files), 1)
            self.assertTrue(files[0].endswith("-bench_fake.json"))
            failing = self.fake_program(tmp, "sys.exit(3)\n")
            r = subprocess.run([sys.executable, RECORD, failing], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 3)
            self.assertIn("nothing filed", r.stderr)
            self.assertEqual(len(os.listdir(os.path.join(results, "znver4"))), 1)
            r = subprocess.run([sys.executable, RECORD, ok, "--benchmark_out=x.json"], capture_output=True,
                               text=True, env=env)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--benchmark_out", r.stderr)


if __name__ == "__main__":
    unittest.main()
