"""tessera.tune and tessera.compile: the same job as the command line, its
records in the database, its errors, and Ctrl-C during a tune."""
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tessera


def count_records(db):
    if not os.path.exists(db):
        return 0
    try:
        with sqlite3.connect(db, timeout=10) as c:
            return c.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.OperationalError:  # the tuner has not made its tables yet
        return 0


def test_tune_an_operator_stores_its_records(tmp_path):
    db = str(tmp_path / "t.db")
    result = tessera.tune("matmul:M=32,N=32,K=32", trials=8, batch=4, db=db, progress=False)
    assert result["stopped"] is False
    assert result["stored_ok"] >= 8
    [task] = result["tasks"]
    assert task["name"] == "matmul:M=32,N=32,K=32" and task["trials"] == 8
    assert 0 < task["best_cost_s"] < 1
    assert count_records(db) == result["stored"]
    with sqlite3.connect(db) as c:
        [command] = c.execute("SELECT command_line FROM sessions").fetchone()
    assert command.startswith("tessera tune --op matmul:M=32,N=32,K=32") and "--trials 8" in command


def test_tune_releases_the_gil(tmp_path):
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.monotonic()
    try:
        tessera.tune("matmul:M=32,N=32,K=32", trials=4, batch=4, db=str(tmp_path / "g.db"), progress=False)
    finally:
        done.set()
        counter.join()
    seconds = time.monotonic() - start
    # Held by the tune, the GIL would let the counter run only between the
    # tuner's 100 ms checks for signals: a few ticks a second, not hundreds.
    assert ticks[0] > 100 * seconds, (ticks[0], seconds)


def test_tune_then_compile_a_model_uses_the_records(model_dir):
    result = tessera.tune("model.onnx", trials=8, batch=4, db="m.db", progress=False)
    assert [t["trials"] for t in result["tasks"]] == [8]
    path = tessera.compile("model.onnx", db="m.db")
    assert path == "model.tsr" and os.path.exists(path)
    m = tessera.Module(path)
    x = np.ones((1, 1, 7, 5), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    # Strides 2, padding 1: a corner sees 4 ones, an edge 6, the middle 9.
    y = m.run(x=x, W=w)["y"][0, 0]
    assert y[0, 0] == 4 and y[1, 1] == 9


def test_a_prior_db_warms_the_tune_and_is_not_stored(tmp_path):
    prior, db = tmp_path / "prior.db", str(tmp_path / "t.db")
    tessera.tune("matmul:M=32,N=32,K=32", trials=4, batch=4, db=prior, progress=False,
                 target="llvm -mcpu=x86-64-v3 -num-cores=2")
    result = tessera.tune("matmul:M=32,N=32,K=32", trials=4, batch=4, db=db, prior_db=prior, progress=False)
    assert count_records(db) == result["stored"]
    with sqlite3.connect(db) as c:
        [(target,)] = c.execute("SELECT DISTINCT target FROM records").fetchall()  # this machine's alone
        assert "x86-64-v3" not in target
        [command] = c.execute("SELECT command_line FROM sessions").fetchone()
    assert "--prior-db " + str(prior) in command
    with pytest.raises(tessera.Error, match="cannot read the prior records in .*missing.db"):
        tessera.tune("matmul:M=32,N=32,K=32", trials=4, db=db, prior_db=tmp_path / "missing.db", progress=False)


def test_option_errors_are_value_and_type_errors(tmp_path):
    db = str(tmp_path / "t.db")
    with pytest.raises(ValueError, match="--trials must be positive"):
        tessera.tune("matmul:M=32,N=32,K=32", trials=0, db=db)
    with pytest.raises(TypeError, match="unexpected keyword argument 'trails'"):
        tessera.tune("matmul:M=32,N=32,K=32", trails=8, db=db)
    with pytest.raises(ValueError):
        tessera.tune("matmul:M=32", trials=8, db=db)
    assert not os.path.exists(db)


def test_compile_errors_carry_tesseras_messages(model_dir):
    with pytest.raises(tessera.Error, match="absent.onnx") as missing:
        tessera.compile("absent.onnx")
    assert missing.value.code == "not-found"
    with pytest.raises(ValueError, match="expected an .onnx model"):
        tessera.compile("model.tsr")
    with pytest.raises(ValueError):
        tessera.compile("model.onnx", target="llvm -mcpu=no-such-cpu")


MAXPOOL_MODEL = "/usr/share/libonnx-testdata/data/node/test_maxpool_2d_default/model.onnx"


def test_tune_times_the_backends_regions_and_compile_reads_them(tmp_path):
    if not os.path.exists(MAXPOOL_MODEL):
        pytest.skip("libonnx-testdata is not installed")
    db = str(tmp_path / "p.db")
    tessera.tune(MAXPOOL_MODEL, trials=4, batch=4, db=db, byoc="dnnl", progress=False)
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT backend, session_id, backend_seconds > 0, tessera_seconds > 0 "
                         "FROM region_times").fetchall()
    assert rows == [("dnnl", 1, 1, 1)]
    path = tessera.compile(MAXPOOL_MODEL, output=str(tmp_path / "p.tsr"), db=db)  # byoc="auto"
    m = tessera.Module(path)
    x = np.arange(3 * 32 * 32, dtype=np.float32).reshape(1, 3, 32, 32)
    y = list(m.run(x=x).values())[0]
    assert y.shape == (1, 3, 31, 31) and y[0, 0, 0, 0] == 33  # the max of x[0, 0, 0:2, 0:2]


def test_an_unknown_backend_is_a_value_error(tmp_path):
    db = str(tmp_path / "b.db")
    with pytest.raises(ValueError, match="byoc: "):
        tessera.tune(MAXPOOL_MODEL, trials=2, db=db, byoc="tpu")
    with pytest.raises(ValueError, match="byoc applies to a model"):
        tessera.tune("matmul:M=8,N=8,K=8", trials=2, db=db, byoc="dnnl")
    with pytest.raises(ValueError, match="byoc: "):
        tessera.compile(MAXPOOL_MODEL, output=str(tmp_path / "b.tsr"), byoc="tpu")
    assert not os.path.exists(db)


def start_long_tune(db, batch=4, records=1):
    """A subprocess tuning far longer than any test waits, once more than
    `records` - 1 records are stored."""
    script = ("import tessera\n"
              "tessera.tune('matmul:M=128,N=128,K=128', trials=2000, batch=%d, db=%r)\n"
              "print('not interrupted')\n" % (batch, db))
    # Python installs its KeyboardInterrupt handler only where SIGINT is not
    # ignored (a background job's is): the child starts with the default.
    # -X faulthandler: a crash prints where it happened, not an empty stderr.
    child = subprocess.Popen([sys.executable, "-X", "faulthandler", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 180
    while count_records(db) < records and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if child.poll() is not None or count_records(db) < records:
        child.kill()
        pytest.fail("the tune stored nothing: %s" % (child.communicate(),))
    return child


def interrupt(child, times):
    try:
        for i in range(times):
            if i:
                time.sleep(0.5)  # apart: Python's handler runs once per check
            child.send_signal(signal.SIGINT)
        return child.communicate(timeout=180)
    finally:
        if child.poll() is None:
            child.kill()


def test_ctrl_c_stops_after_the_batch_keeps_its_records_and_raises_keyboard_interrupt(tmp_path):
    db = str(tmp_path / "c.db")
    child = start_long_tune(db)
    stored_before = count_records(db)
    out, err = interrupt(child, 1)
    assert "KeyboardInterrupt" in err, (child.returncode, err, out[-2000:])  # a crash: -11 and faulthandler's trace
    assert "not interrupted" not in out
    assert "stopped by Ctrl-C after the batch" in out, out
    assert child.returncode != 0
    assert count_records(db) >= stored_before
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM records WHERE error_kind = 'ok'").fetchone()[0] > 0
        # The session was closed: the job wound up, it was not killed.
        assert c.execute("SELECT COUNT(*) FROM sessions WHERE ended IS NULL").fetchone()[0] == 0


def test_second_ctrl_c_drops_the_batch_in_flight(tmp_path):
    db = str(tmp_path / "c.db")
    # The two baselines, then a first batch stored (a batch's records are
    # stored together). The search for the second batch follows (under a
    # second or so, even on a loaded machine): a Ctrl-C there has no batch to
    # drop. A second later the second batch (32 candidates: about ten
    # seconds) is in flight when the two Ctrl-Cs come.
    child = start_long_tune(db, batch=32, records=3)
    time.sleep(1.0)
    out, err = interrupt(child, 2)
    assert "KeyboardInterrupt" in err, (child.returncode, err, out[-2000:])  # a crash: -11 and faulthandler's trace
    assert "stopped by Ctrl-C at once (the batch in flight was dropped)" in out, out
    assert count_records(db) > 0


def test_compile_binds_a_scalar_input_to_a_value(tmp_path):
    """values={"sr": ...}: the If on the sample rate becomes its branch and
    the package no longer takes the bound input."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    wide = helper.make_graph([helper.make_node("Relu", ["x"], ["ra"])], "wide", [], [helper.make_tensor_value_info("ra", TensorProto.FLOAT, [3])])
    narrow = helper.make_graph([helper.make_node("Neg", ["x"], ["rb"])], "narrow", [], [helper.make_tensor_value_info("rb", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Equal", ["sr", "k"], ["is_16k"]),
             helper.make_node("If", ["is_16k"], ["y"], then_branch=wide, else_branch=narrow)]
    graph = helper.make_graph(nodes, "rate", [x, sr], [y], [helper.make_tensor("k", TensorProto.INT64, [], [16000])])
    path = str(tmp_path / "rate.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    data = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    for rate, want in ((16000, np.maximum(data, 0)), (8000, -data)):
        package = tessera.compile(path, output=str(tmp_path / ("r%d.tsr" % rate)), values={"sr": rate},
                                  use_records=False)
        module = tessera.Module(package)
        assert [i.name for i in module.inputs] == ["x"]
        np.testing.assert_array_equal(module.run({"x": data})["y"], want)
    with pytest.raises(tessera.Error, match="is not an integer"):
        tessera.compile(path, output=str(tmp_path / "bad.tsr"), values={"sr": 0.5}, use_records=False)
    with pytest.raises(TypeError):
        tessera.compile(path, output=str(tmp_path / "bad.tsr"), values={"sr": "fast"})


def test_an_if_and_a_loop_on_data_run_on_the_device(tmp_path):
    """Unbound, the If on the sample rate and a Loop whose trip count is an
    input run on the device: the branch the input names, as many iterations
    as it says."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    steps = helper.make_tensor_value_info("steps", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    acc = helper.make_tensor_value_info("acc", TensorProto.FLOAT, [3])
    wide = helper.make_graph([helper.make_node("Relu", ["x"], ["ra"])], "wide", [],
                             [helper.make_tensor_value_info("ra", TensorProto.FLOAT, [3])])
    narrow = helper.make_graph([helper.make_node("Neg", ["x"], ["rb"])], "narrow", [],
                               [helper.make_tensor_value_info("rb", TensorProto.FLOAT, [3])])
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "x"], ["a_next"]), helper.make_node("Identity", ["c"], ["c_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a_next", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Equal", ["sr", "k"], ["is_16k"]),
             helper.make_node("If", ["is_16k"], ["y"], then_branch=wide, else_branch=narrow),
             helper.make_node("Loop", ["steps", "", "zeros"], ["acc"], body=body)]
    graph = helper.make_graph(nodes, "on_data", [x, sr, steps], [y, acc],
                              [helper.make_tensor("k", TensorProto.INT64, [], [16000]),
                               helper.make_tensor("zeros", TensorProto.FLOAT, [3], [0, 0, 0])])
    path = str(tmp_path / "on_data.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    module = tessera.Module(tessera.compile(path, output=str(tmp_path / "on_data.tsr"), use_records=False))
    data = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    for rate, n, want in ((16000, 3, np.maximum(data, 0)), (8000, 0, -data), (16000, 5, np.maximum(data, 0))):
        out = module.run({"x": data, "sr": np.array(rate, dtype=np.int64), "steps": np.array(n, dtype=np.int64)})
        np.testing.assert_array_equal(out["y"], want)
        np.testing.assert_allclose(out["acc"], data * n, rtol=1e-6)


def test_tune_ends_with_the_twelve_largest_tasks_unless_verbose(tmp_path, capfd):
    db = str(tmp_path / "v.db")
    ops = ["matmul:M=%d,N=16,K=16" % (8 * (i + 1)) for i in range(13)]
    tessera.tune(ops, trials=13, batch=13, db=db)
    quiet = capfd.readouterr().out
    assert "... 1 more task, " in quiet, quiet
    assert "matmul:M=8,N=16,K=16" not in quiet.split(" share weight")[-1]  # the smallest, counted, not listed
    tessera.tune(ops, trials=13, batch=13, db=db, verbose=True)
    loud = capfd.readouterr().out.split(" share weight")[-1]
    assert "more task" not in loud, loud
    assert all(op in loud for op in ops), loud
