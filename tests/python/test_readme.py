"""The README's Python example, run exactly as README.md shows it, in a folder
with a model.onnx (the convolution of conftest.py)."""
import os
import re
import signal
import subprocess
import sys

import pytest
from conftest import BUILD_DIR, SOURCE_DIR


def readme_example():
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, "README.md should have one Python example"
    return blocks[0]


def with_dynamic_batch(path):
    """The model at `path` rewritten with its first input's batch dynamic, as
    exporters write it (a named dimension)."""
    import onnx
    model = onnx.load(path)
    dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    dim.Clear()
    dim.dim_param = "N"
    onnx.save(model, path)


@pytest.mark.parametrize("batch", ["fixed", "dynamic"])
def test_readme_python_example_runs_end_to_end(model_dir, batch):
    if batch == "dynamic":
        with_dynamic_batch(str(model_dir / "model.onnx"))
    (model_dir / "example.py").write_text(readme_example())
    run = subprocess.run([sys.executable, "example.py"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "y (1, 1, 4, 3) float32" in run.stdout, run.stdout
    assert (model_dir / "tessera.db").exists() and (model_dir / "model.tsr").exists()


def test_an_unbound_dynamic_dimension_is_named_in_pythons_terms(model_dir):
    import tessera
    with_dynamic_batch(str(model_dir / "model.onnx"))
    with pytest.raises(tessera.Error) as unbound:
        tessera.compile("model.onnx", output="model.tsr", use_records=False)
    assert "bind them with input_shapes={'x': [d0, d1, ...]}" in str(unbound.value), str(unbound.value)
    assert "--input-shape" not in str(unbound.value)
    assert unbound.value.code == "invalid-argument"
    with pytest.raises(tessera.Error) as rank:
        tessera.compile("model.onnx", output="model.tsr", use_records=False, input_shapes={"x": [1, 7, 5]})
    assert "input 'x': input_shapes gives rank 3 but the model's rank is 4" in str(rank.value), str(rank.value)


def walkthrough():
    """The README's ```sh blocks in order, each with the ```text sample that
    follows it (None when none does)."""
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        text = f.read()
    blocks = []
    previous = None
    for match in re.finditer(r"```(sh|text)\n(.*?)```", text, re.S):
        kind, body = match.groups()
        if kind == "sh":
            blocks.append([body, None])
        elif previous == "sh":
            blocks[-1][1] = body
        previous = kind
    return blocks


def sample_pattern(line):
    """A sample line as a pattern: its numbers any numbers, its runs of
    spaces any runs (columns widen with their numbers)."""
    parts = re.split(r"\d+(?:\.\d+)?", line.strip())
    pattern = r"\d+(?:\.\d+)?".join(re.escape(p) for p in parts)
    return re.compile(re.sub(r"(\\ )+", r"\\s+", pattern))


def test_readme_walkthrough_runs_as_written_and_prints_its_samples(tmp_path):
    """Each ```sh block of README.md, in order, in one shell from a folder
    laid out as the repository (build/, scripts/); each sample's lines,
    numbers aside, are among what its block printed."""
    if not BUILD_DIR:
        pytest.skip("TESSERA_BUILD_DIR is not set")
    root = tmp_path / "repo"
    root.mkdir()
    os.symlink(BUILD_DIR, root / "build")
    os.symlink(os.path.join(SOURCE_DIR, "scripts"), root / "scripts")
    blocks = walkthrough()
    assert len(blocks) >= 5, "README.md's walk-through has %d blocks" % len(blocks)
    script = "set -e\nexec 2>&1\n"
    for i, (commands, _) in enumerate(blocks):
        script += "echo '@@ block %d @@'\n%s" % (i, commands)
    env = dict(os.environ, TMPDIR=str(tmp_path), PATH="/usr/bin:/bin")
    child = subprocess.Popen(["/bin/bash", "-c", script], cwd=root, env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        out, _ = child.communicate(timeout=900)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # a tracker or worker a failed block left running
        except ProcessLookupError:
            pass
    assert child.returncode == 0, out[-4000:]
    printed = re.split(r"^@@ block \d+ @@\n", out, flags=re.M)[1:]
    assert len(printed) == len(blocks)
    for (commands, sample), got in zip(blocks, printed):
        if sample is None:
            continue
        lines = got.splitlines()
        for want in sample.splitlines():
            if want.strip() in ("", "..."):
                continue
            pattern = sample_pattern(want)
            assert any(pattern.fullmatch(line.strip()) for line in lines), \
                "README.md shows %r after\n%s\nbut the commands printed:\n%s" % (want, commands, got[-3000:])
