"""tessera.Module: loading a package, its inputs and outputs, runs against
`tessera run`, and the errors a user can cause."""
import os
import subprocess

import numpy as np
import pytest

import tessera
from conftest import tessera_binary


def inputs_of(module, seed=0):
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape).astype(t.dtype) for t in module.inputs}


def test_inputs_and_outputs_have_names_shapes_and_dtypes(package):
    m = tessera.Module(package)
    assert [(t.name, t.shape, t.dtype) for t in m.inputs] == [("x", (1, 1, 7, 5), "float32"),
                                                           ("W", (1, 1, 3, 3), "float32")]
    assert [(t.name, t.shape, t.dtype) for t in m.outputs] == [("y", (1, 1, 4, 3), "float32")]


def test_run_matches_tessera_run_bit_for_bit(package, model_dir):
    m = tessera.Module(package, threads=1)
    given = inputs_of(m)
    for name, array in given.items():
        np.save(model_dir / (name + ".npy"), array)
    cli = subprocess.run([tessera_binary(), "run", package, "--input", "x=x.npy", "--input", "W=W.npy",
                          "--output-dir", str(model_dir / "out"), "--threads", "1"],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    expected = np.load(model_dir / "out" / "y.npy")
    y = m.run(**given)["y"]
    assert y.dtype == np.float32 and y.shape == (1, 1, 4, 3)
    np.testing.assert_array_equal(y, expected)
    # The same through a positional dict, and from arrays numpy did not align.
    np.testing.assert_array_equal(m.run(given)["y"], expected)


def test_run_reads_strided_and_aligned_inputs_alike(package):
    m = tessera.Module(package)
    given = inputs_of(m, seed=1)
    expected = m.run(**given)["y"]
    aligned = {name: tessera.empty(a.shape) for name, a in given.items()}
    for name, a in aligned.items():
        a[...] = given[name]
        assert a.ctypes.data % 64 == 0
    np.testing.assert_array_equal(m.run(**aligned)["y"], expected)
    # A strided view (every other column of a wider array) is copied, not misread.
    wide = np.zeros((1, 1, 7, 10), np.float32)
    wide[..., ::2] = given["x"]
    np.testing.assert_array_equal(m.run(x=wide[..., ::2], W=given["W"])["y"], expected)


def test_outputs_are_not_overwritten_by_later_runs(package):
    m = tessera.Module(package)
    first_inputs = inputs_of(m, seed=2)
    first = m.run(**first_inputs)["y"]
    kept = first.copy()
    second = m.run(**inputs_of(m, seed=3))["y"]
    assert not np.array_equal(second, kept)
    np.testing.assert_array_equal(first, kept)
    assert first.flags.owndata or first.base is not None
    assert first.ctypes.data % 64 == 0


def test_wrong_shape_is_a_value_error_with_tesseras_message(package):
    m = tessera.Module(package)
    given = inputs_of(m)
    with pytest.raises(ValueError, match=r"input 'x' must be float32\[1, 1, 7, 5\], got float32\[1, 7, 5\]"):
        m.run(x=given["x"][0], W=given["W"])


def test_wrong_dtype_is_a_type_error_with_tesseras_message(package):
    m = tessera.Module(package)
    given = inputs_of(m)
    with pytest.raises(TypeError, match=r"input 'x' must be float32\[1, 1, 7, 5\], got float64\[1, 1, 7, 5\]"):
        m.run(x=given["x"].astype(np.float64), W=given["W"])
    with pytest.raises(TypeError, match="complex128"):
        m.run(x=given["x"].astype(np.complex128), W=given["W"])


def test_unknown_or_missing_input_is_a_value_error_naming_the_inputs(package):
    m = tessera.Module(package)
    given = inputs_of(m)
    with pytest.raises(ValueError, match=r"the model has no input 'z' \(its inputs: 'x', 'W'\)"):
        m.run(z=given["x"], **given)
    with pytest.raises(ValueError, match=r"input 'W' is missing \(its inputs: 'x', 'W'\)"):
        m.run(x=given["x"])
    # A misspelled name is named, even when the count of inputs is right.
    with pytest.raises(ValueError, match=r"the model has no input 'w' \(its inputs: 'x', 'W'\)"):
        m.run(x=given["x"], w=given["W"])


def test_benchmark_and_profile_time_the_model_as_the_command_line_does(package):
    m = tessera.Module(package, threads=1)
    given = inputs_of(m)
    timing = m.benchmark(given, runs=20, warmup=2)
    assert set(timing) == {"median_ms", "mean_ms", "min_ms", "runs"}
    assert timing["runs"] == 20
    assert 0 < timing["min_ms"] <= timing["median_ms"]
    calls = m.profile(given, runs=5)
    assert [c["call"] for c in calls] == list(range(len(calls)))
    assert calls and all(c["kernel"] and c["ms"] >= 0 for c in calls)
    assert any(c["nodes"] for c in calls)  # the package's metadata names the model's nodes
    with pytest.raises(ValueError, match="runs >= 1"):
        m.benchmark(given, runs=0)
    with pytest.raises(ValueError, match="no input 'z'"):
        m.profile({"z": given["x"]})
    # The module still runs as before, with the same result.
    np.testing.assert_array_equal(m.run(given)["y"], m.run(given)["y"])


def test_the_package_has_a_version():
    assert tessera.__version__ and tessera.__version__[0].isdigit()
    assert tessera.__version__ in tessera._tessera.build


def test_a_package_that_does_not_load_is_a_tessera_error(tmp_path):
    with pytest.raises(tessera.Error, match="nothing.tsr") as missing:
        tessera.Module(str(tmp_path / "nothing.tsr"))
    assert missing.value.code == "not-found"
    assert isinstance(missing.value, RuntimeError)
    junk = tmp_path / "junk.tsr"
    junk.write_bytes(b"not a package")
    with pytest.raises(tessera.Error) as corrupt:
        tessera.Module(str(junk))
    assert corrupt.value.code == "parse-error"


def test_openmp_waits_passively_as_packages_run_it():
    # import tessera set it before its library loaded OpenMP (ctest's
    # environment leaves it unset), as tessera-run and the C API do.
    assert os.environ.get("OMP_WAIT_POLICY") == "passive"
