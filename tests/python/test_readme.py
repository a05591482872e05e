"""The README's Python example, run exactly as README.md shows it, in a folder
with a model.onnx (the convolution of conftest.py)."""
import os
import re
import subprocess
import sys

from conftest import SOURCE_DIR


def readme_example():
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, "README.md should have one Python example"
    return blocks[0]


def test_readme_python_example_runs_end_to_end(model_dir):
    (model_dir / "example.py").write_text(readme_example())
    run = subprocess.run([sys.executable, "example.py"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "y (1, 1, 4, 3) float32" in run.stdout, run.stdout
    assert (model_dir / "tessera.db").exists() and (model_dir / "model.tsr").exists()
