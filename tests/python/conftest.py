"""Shared fixtures of the Python module's tests. CTest (tests/python/CMakeLists.txt)
sets PYTHONPATH to the built package and TESSERA_BUILD_DIR, TESSERA_SOURCE_DIR."""
import os
import shutil

import pytest

BUILD_DIR = os.environ.get("TESSERA_BUILD_DIR", "")
SOURCE_DIR = os.environ.get("TESSERA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
# A small real model: one 3x3 convolution, inputs x [1,1,7,5] and W [1,1,3,3].
CONV_MODEL = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx"


def tessera_binary():
    return os.path.join(BUILD_DIR, "bin", "tessera")


@pytest.fixture
def model_dir(tmp_path):
    """A folder holding model.onnx (the convolution), the working directory of the test."""
    if not os.path.exists(CONV_MODEL):
        pytest.skip("libonnx-testdata is not installed")
    shutil.copy(CONV_MODEL, tmp_path / "model.onnx")
    old = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(old)


@pytest.fixture
def package(model_dir):
    """The convolution compiled from its fallbacks: model.tsr in model_dir."""
    import tessera
    return tessera.compile("model.onnx", output=str(model_dir / "model.tsr"), use_records=False)
