"""float16 models through the Python module: a conv net converted as
onnxconverter-common writes it (scripts/models/float16.py) compiles, takes
and gives numpy float16 arrays, agrees with the float32 model within
float16's precision, and refuses a float32 array saying what it wants."""
import os
import sys

import numpy as np
import onnx
import pytest

import tessera

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts", "models"))
import convnet  # noqa: E402
import float16  # noqa: E402


@pytest.fixture
def models(tmp_path):
    """The conv net in float32 and converted to float16, both compiled."""
    float_model = convnet.build(seed=3, batch=1)
    onnx.save(float_model, tmp_path / "float32.onnx")
    onnx.save(float16.convert_float_to_float16(float_model), tmp_path / "float16.onnx")
    return {name: tessera.Module(tessera.compile(str(tmp_path / (name + ".onnx")),
                                                 output=str(tmp_path / (name + ".tsr")), use_records=False))
            for name in ("float32", "float16")}


def test_a_float16_model_takes_and_gives_float16_arrays(models):
    half = models["float16"]
    assert [(t.name, t.dtype) for t in half.inputs] == [("input", "float16")]
    assert [t.dtype for t in half.outputs] == ["float16"]
    x = np.random.default_rng(0).uniform(-1, 1, half.inputs[0].shape).astype(np.float32)
    got = half.run(input=x.astype(np.float16))["output"]
    want = models["float32"].run(input=x)["output"]
    assert got.dtype == np.float16 and got.shape == want.shape
    # float16 weights and input: a few of float16's steps of the output's scale.
    assert np.abs(got.astype(np.float32) - want).max() <= 1e-2 * np.abs(want).max()


def test_a_float32_array_for_a_float16_input_is_refused_saying_what_it_wants(models):
    half = models["float16"]
    with pytest.raises(TypeError, match="float16"):
        half.run(input=np.zeros(half.inputs[0].shape, np.float32))
