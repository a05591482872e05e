"""A streaming model called call after call with its state carried, as a
voice-activity detector runs: the VAD of scripts/models/streaming_vad.py
(If on the sample rate bound at compile time, nested shape-check Ifs, STFT
as a Conv, an LSTM cell with state in and out) against ONNX Runtime at every
call, and the same stream again in one run of ONNX Runtime's state."""
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
CALLS = 20


def ort_call(model, folder, feeds):
    """ONNX Runtime's outputs for one call: {name: array}."""
    args = ["node", ORT_RUN, model, "--output-dir", os.path.join(folder, "out")]
    for name, value in feeds.items():
        path = os.path.join(folder, name + ".npy")
        np.save(path, value)
        args += ["--input", name + "=" + path]
    subprocess.run(args, check=True, capture_output=True)
    out = os.path.join(folder, "out")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


@pytest.mark.parametrize("rate", [16000, 8000])
def test_the_vad_matches_onnx_runtime_call_after_call(tmp_path, rate):
    if shutil.which("node") is None or not os.path.isdir(ORT_NODE):
        pytest.skip("ONNX Runtime (node, .cache/onnxruntime) is not installed: scripts/install-deps.sh")
    model = str(tmp_path / "vad.onnx")
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "models", "streaming_vad.py"), "-o", model,
                    "--seed", "3"], check=True, capture_output=True)
    package = tessera.compile(model, output=str(tmp_path / "vad.tsr"), values={"sr": rate}, use_records=False)
    vad = tessera.Module(package)
    assert sorted(i.name for i in vad.inputs) == ["input", "state"]
    samples = 512  # the model takes 512 samples at either rate
    rng = np.random.default_rng(7)
    state = np.zeros((2, 1, 128), dtype=np.float32)
    ort_state = state.copy()
    worst = 0.0
    for call in range(CALLS):
        # Speech-like: a tone that comes and goes, under noise.
        t = np.arange(samples) + call * samples
        chunk = (0.3 * np.sin(t * 0.05) * (call % 4 < 2) + 0.02 * rng.standard_normal(samples)).astype(np.float32)
        ours = vad.run({"input": chunk[None, :], "state": state})
        want = ort_call(model, str(tmp_path), {"input": chunk[None, :], "state": ort_state,
                                               "sr": np.array(rate, dtype=np.int64)})
        for name in ("output", "stateN"):
            scale = max(1e-6, float(np.max(np.abs(want[name]))))
            err = float(np.max(np.abs(ours[name] - want[name]))) / scale
            worst = max(worst, err)
            assert err <= 1e-4, (call, name, err)
        state, ort_state = ours["stateN"], want["stateN"]
    print("worst relative error over %d calls: %.2e" % (CALLS, worst))
