"""What the model-script tests share: where the repository, the model
generators and ONNX Runtime (the peer scripts/install-deps.sh installs, run
through scripts/ort_run.js) are, and why ONNX Runtime cannot run here."""
import os
import shutil

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
