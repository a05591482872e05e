"""What the model-script tests share: where the repository, the model
generators and ONNX Runtime (the peer scripts/install-deps.sh installs, run
through scripts/ort_run.js) are, why ONNX Runtime cannot run here, and
running a model in it."""
import os
import shutil
import subprocess

import numpy as np
import onnx

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODELS = os.path.join(REPO, "scripts", "models")
ORT_RUN = os.path.join(REPO, "scripts", "ort_run.js")
ORT_NODE = os.path.join(REPO, ".cache", "onnxruntime", "node_modules", "onnxruntime-node")


def ort_missing():
    """Why ONNX Runtime cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not os.path.isdir(ORT_NODE):
        return "ONNX Runtime is not installed: run scripts/install-deps.sh"
    return None


def relative(got, ref):
    """Largest |got - ref| over the largest magnitude of ref."""
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / max(np.abs(ref).max(), 1e-12))


def ort_outputs(path, feeds, folder):
    """ONNX Runtime's outputs (name -> array) for `feeds`, kept in folder/out."""
    os.makedirs(folder, exist_ok=True)
    args = ["node", ORT_RUN, path, "--output-dir", os.path.join(folder, "out")]
    for name, value in feeds.items():
        np.save(os.path.join(folder, name + ".npy"), value)
        args += ["--input", f"{name}={os.path.join(folder, name + '.npy')}"]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode:
        raise AssertionError(f"ONNX Runtime failed on {path}: {run.stderr.strip()}")
    return {o.name: np.load(os.path.join(folder, "out", o.name + ".npy")) for o in onnx.load(path).graph.output}
