"""LSTM, GRU and RNN through tessera.compile against the reference of
scripts/models/numpy_rnn.py (held against ONNX Runtime attribute by
attribute in tests/scripts/test_control_flow_models.py): one node, 5 steps,
batch 3, its weights given as inputs, each attribute the operators define."""
import os
import sys

import numpy as np
import onnx
import pytest

import tessera

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts", "models"))
import numpy_rnn  # noqa: E402

CASES = [
    ("LSTM", {}, {}),
    ("LSTM", {"direction": "bidirectional"}, {}),
    ("LSTM", {"direction": "reverse", "clip": 0.5}, {}),
    ("LSTM", {"input_forget": 1}, {"peepholes": True}),
    ("LSTM", {}, {"layout": 1, "initial_state": False}),
    ("LSTM", {}, {"lens": [5, 3, 1]}),
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "Softsign"], "activation_alpha": [0.3, 0.05],
              "activation_beta": [0.4]}, {}),
    ("GRU", {}, {}),
    ("GRU", {"linear_before_reset": 1, "direction": "bidirectional"}, {}),
    ("GRU", {"linear_before_reset": 1}, {"lens": [2, 5, 4], "initial_state": False}),
    ("GRU", {"activations": ["Sigmoid", "Relu"], "clip": 1.5}, {"layout": 1}),
    ("RNN", {}, {}),
    ("RNN", {"activations": ["Relu", "Tanh"], "direction": "bidirectional"}, {}),
    ("RNN", {}, {"lens": [1, 5, 2]}),
]


def case_id(case):
    op, attrs, opts = case
    return "-".join([op] + ["%s=%s" % kv for kv in sorted(attrs.items())] + ["%s=%s" % kv for kv in sorted(opts.items())])


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_matches_the_reference(tmp_path, case):
    op, attrs, opts = case
    model, feeds = numpy_rnn.single_node_model(op, seed=len(case_id(case)), **opts, **attrs)
    path = str(tmp_path / "cell.onnx")
    onnx.save(model, path)
    module = tessera.Module(tessera.compile(path, output=str(tmp_path / "cell.tsr"), use_records=False))
    ours = module.run(feeds)
    node = model.graph.node[0]
    want = numpy_rnn.run_node(node, [feeds.get(name) if name else None for name in node.input])
    for name, value in zip(node.output, want):
        np.testing.assert_allclose(ours[name], value, rtol=1e-4, atol=2e-5, err_msg=name)


def test_shorter_sequences_in_reverse_are_refused_saying_why(tmp_path):
    model, _ = numpy_rnn.single_node_model("LSTM", lens=[5, 3, 1], direction="bidirectional")
    path = str(tmp_path / "cell.onnx")
    onnx.save(model, path)
    with pytest.raises(tessera.Error, match="forward direction only"):
        tessera.compile(path, output=str(tmp_path / "cell.tsr"), use_records=False)
