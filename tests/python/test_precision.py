"""tessera.compile(..., precision="bf16" or "fp16"): a small encoder
(scripts/models/transformer.py) compiles with its weight products in
bfloat16 where this CPU has a bfloat16 dot product, or with their weights
stored in float16, stays within that precision of the float32 package, and
a precision the target cannot run is a ValueError naming what is missing."""
import os
import sys
from types import SimpleNamespace

import numpy as np
import onnx
import pytest

import tessera

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts", "models"))
import transformer  # noqa: E402


@pytest.fixture
def encoder(tmp_path):
    path = tmp_path / "encoder.onnx"
    sizes = SimpleNamespace(seed=2, batch=1, seq=16, layers=1, d_model=32, heads=2, ff=64, pad=2)
    onnx.save(transformer.build(sizes), path)
    return str(path)


def test_bf16_stays_within_its_precision_of_float32(encoder, tmp_path):
    try:
        reduced = tessera.compile(encoder, output=str(tmp_path / "bf16.tsr"), use_records=False, precision="bf16")
    except ValueError as e:
        assert "lacks" in str(e)
        pytest.skip("this CPU has no bfloat16 dot product: %s" % e)
    full = tessera.Module(tessera.compile(encoder, output=str(tmp_path / "fp32.tsr"), use_records=False))
    half = tessera.Module(reduced)
    x = np.random.default_rng(0).uniform(-1, 1, full.inputs[0].shape).astype(np.float32)
    want = full.run({full.inputs[0].name: x})
    got = half.run({half.inputs[0].name: x})
    for name, w in want.items():
        assert got[name].dtype == np.float32
        err = np.abs(got[name] - w).max()
        assert 0 < err <= 2e-2 * np.abs(w).max(), (name, err)


def test_fp16_weights_stay_within_their_precision_of_float32_in_a_smaller_package(encoder, tmp_path):
    try:
        reduced = tessera.compile(encoder, output=str(tmp_path / "fp16.tsr"), use_records=False, precision="fp16")
    except ValueError as e:
        assert "F16C" in str(e)
        pytest.skip("this CPU has no float16 conversions: %s" % e)
    full_path = tessera.compile(encoder, output=str(tmp_path / "fp32.tsr"), use_records=False)
    assert os.path.getsize(reduced) < os.path.getsize(full_path)
    full, half = tessera.Module(full_path), tessera.Module(reduced)
    x = np.random.default_rng(1).uniform(-1, 1, full.inputs[0].shape).astype(np.float32)
    want = full.run({full.inputs[0].name: x})
    got = half.run({half.inputs[0].name: x})
    for name, w in want.items():
        assert got[name].dtype == np.float32
        err = np.abs(got[name] - w).max()
        assert 0 < err <= 2e-3 * np.abs(w).max(), (name, err)


def test_a_precision_the_target_cannot_run_is_a_value_error(encoder, tmp_path):
    with pytest.raises(ValueError, match="AVX512-BF16"):
        tessera.compile(encoder, output=str(tmp_path / "x.tsr"), precision="bf16",
                        target="llvm -mtriple=x86_64-linux-gnu -mcpu=znver3")
    with pytest.raises(ValueError, match="expected fp32, bf16 or fp16"):
        tessera.compile(encoder, output=str(tmp_path / "y.tsr"), precision="int4")
    with pytest.raises(ValueError, match="F16C"):
        tessera.compile(encoder, output=str(tmp_path / "z.tsr"), precision="fp16",
                        target="llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64")
    assert not os.path.exists(tmp_path / "x.tsr")
