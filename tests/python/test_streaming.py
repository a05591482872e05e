"""A streaming model called call after call with its state carried, as a
voice-activity detector runs: the VAD of scripts/models/streaming_vad.py
(If on the sample rate bound at compile time, nested shape-check Ifs, STFT
as a Conv, an LSTM cell with state in and out) against ONNX Runtime over
1,000 consecutive calls (each side carrying its own state), and 10,000
calls that leave the process's memory where it was."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tessera

from conftest import SOURCE_DIR

ORT_RUN = os.path.join(SOURCE_DIR, "scripts", "ort_run.js")
ORT_NODE = os.path.join(SOURCE_DIR, ".cache", "onnxruntime", "node_modules", "onnxruntime-node")
CALLS = 1000
SAMPLES = 512  # the model takes 512 samples at either rate


def make_vad(folder):
    model = os.path.join(folder, "vad.onnx")
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "models", "streaming_vad.py"), "-o", model,
                    "--seed", "3"], check=True, capture_output=True)
    return model


def chunks(calls, seed=7):
    """Speech-like audio: a tone that comes and goes under noise, [calls, 1, SAMPLES]."""
    rng = np.random.default_rng(seed)
    t = np.arange(calls * SAMPLES).reshape(calls, 1, SAMPLES)
    on = (np.arange(calls) % 40 < 20).reshape(calls, 1, 1)
    return (0.3 * np.sin(t * 0.05) * on + 0.02 * rng.standard_normal(t.shape)).astype(np.float32)


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.mark.parametrize("rate", [16000, 8000])
def test_the_vad_matches_onnx_runtime_call_after_call(tmp_path, rate):
    if shutil.which("node") is None or not os.path.isdir(ORT_NODE):
        pytest.skip("ONNX Runtime (node, .cache/onnxruntime) is not installed: scripts/install-deps.sh")
    model = make_vad(str(tmp_path))
    vad = tessera.Module(tessera.compile(model, output=str(tmp_path / "vad.tsr"), values={"sr": rate},
                                         use_records=False))
    assert sorted(i.name for i in vad.inputs) == ["input", "state"]
    audio = chunks(CALLS)
    state0 = np.zeros((2, 1, 128), dtype=np.float32)
    np.save(tmp_path / "audio.npy", audio)
    np.save(tmp_path / "state.npy", state0)
    np.save(tmp_path / "sr.npy", np.array(rate, dtype=np.int64))
    subprocess.run(["node", ORT_RUN, model, "--stream", str(CALLS), "--per-call", "input", "--carry", "stateN=state",
                    "--input", "input=%s" % (tmp_path / "audio.npy"), "--input", "state=%s" % (tmp_path / "state.npy"),
                    "--input", "sr=%s" % (tmp_path / "sr.npy"), "--output-dir", str(tmp_path / "ort")],
                   check=True, capture_output=True)
    want = {name: np.load(tmp_path / "ort" / (name + ".npy")) for name in ("output", "stateN")}
    state = state0
    for call in range(CALLS):
        ours = vad.run({"input": audio[call], "state": state})
        for name in ("output", "stateN"):
            w = want[name][call]
            err = float(np.max(np.abs(ours[name] - w))) / max(1e-6, float(np.max(np.abs(w))))
            assert err <= 1e-4, (call, name, err)
        state = ours["stateN"]


def test_ten_thousand_calls_leave_memory_where_it_was(tmp_path):
    vad = tessera.Module(tessera.compile(make_vad(str(tmp_path)), output=str(tmp_path / "vad.tsr"),
                                         values={"sr": 16000}, use_records=False))
    audio = chunks(100)
    state = np.zeros((2, 1, 128), dtype=np.float32)
    for call in range(1000):  # warm: every buffer and cache in place
        state = vad.run({"input": audio[call % 100], "state": state})["stateN"]
    before = rss_kib()
    for call in range(10000):
        state = vad.run({"input": audio[call % 100], "state": state})["stateN"]
    grown = rss_kib() - before
    assert grown < 1024, "RSS grew by %d KiB over 10,000 calls" % grown
    assert np.all(np.isfinite(state))


@pytest.mark.parametrize("script,values", [("streaming_vad.py", {"sr": 16000}), ("lstm_speech.py", None)])
def test_a_model_with_its_nodes_shuffled_compiles_to_the_same_package(tmp_path, script, values):
    packages = []
    for shuffled in (False, True):
        model = str(tmp_path / ("shuffled.onnx" if shuffled else "sorted.onnx"))
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "models", script), "-o", model, "--seed", "3"]
                       + (["--shuffle-nodes"] if shuffled else []), check=True, capture_output=True)
        packages.append(tessera.compile(model, output=model[:-5] + ".tsr", values=values, use_records=False,
                                        byoc="none"))
    with open(packages[0], "rb") as a, open(packages[1], "rb") as b:
        assert a.read() == b.read()
