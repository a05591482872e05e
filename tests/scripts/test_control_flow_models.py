#!/usr/bin/python3
"""The control-flow and recurrent model generators (scripts/models/
lstm_speech.py, gru_speech.py, streaming_vad.py, gated_classifier.py,
loop_model.py) and their numpy reference (numpy_control_flow.py,
numpy_rnn.py): each model is generated into a temporary folder, must pass
onnx.checker (full check) and strict shape inference, and must have the
structure torch.onnx.export gives it; the shuffled variants must hold the
same nodes out of topological order. Where ONNX Runtime is installed
(scripts/install-deps.sh), every model runs in it and must agree with the
numpy reference (recurrent models within 1e-4 relative), the VAD over five
calls with its state carried.

Set CONTROL_FLOW_MODELS_DIR to keep the models, inputs and ONNX Runtime
outputs in that folder instead of a temporary one.

Runs with Debian's interpreter, directly or under pytest:
    /usr/bin/python3 tests/scripts/test_control_flow_models.py"""
import collections
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_peer import MODELS, ort_missing, ort_outputs, relative
sys.path.insert(0, MODELS)
import loop_model  # noqa: E402
import lstm_speech  # noqa: E402
import numpy_control_flow  # noqa: E402
import numpy_rnn  # noqa: E402
import onnx_builder  # noqa: E402

TOLERANCE = 1e-4  # relative, to the largest magnitude of the reference




class Graph:
    """Lookups over one (sub)graph."""

    def __init__(self, graph):
        self.graph = graph
        self.producer = {out: n for n in graph.node for out in n.output}
        self.inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}

    def nodes(self, op):
        return [n for n in self.graph.node if n.op_type == op]

    def ops(self):
        return collections.Counter(n.op_type for n in self.graph.node)

    def const(self, name):
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant":
            return numpy_helper.to_array(attr(node, "value"))
        return self.inits[name]


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


class ModelCase:
    """Generates `script` with `args` (and variants) into a folder; mixed
    into a unittest.TestCase per model."""
    script, args = None, []

    @classmethod
    def setUpClass(cls):
        keep = os.environ.get("CONTROL_FLOW_MODELS_DIR")
        cls.tmp = None if keep else tempfile.TemporaryDirectory()
        cls.dir = os.path.join(keep, cls.__name__) if keep else cls.tmp.name
        os.makedirs(cls.dir, exist_ok=True)
        cls.path = cls.generate("model", *cls.args)
        cls.model = onnx.load(cls.path)
        cls.g = Graph(cls.model.graph)

    @classmethod
    def tearDownClass(cls):
        if cls.tmp:
            cls.tmp.cleanup()

    @classmethod
    def generate(cls, name, *args):
        path = os.path.join(cls.dir, name + ".onnx")
        subprocess.run([sys.executable, os.path.join(MODELS, cls.script), *args, "-o", path], check=True,
                       capture_output=True)
        return path

    def run_ort(self, path, feeds, tag):
        return ort_outputs(path, feeds, os.path.join(self.dir, tag))

    def check_valid(self, model):
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        self.assertEqual([(o.domain, o.version) for o in model.opset_import], [("", 17)])
        self.assertTrue(onnx_builder.is_topologically_sorted(model.graph))

    def check_agrees_with_ort(self, path, feeds, tag, tolerance=TOLERANCE):
        """ONNX Runtime against the numpy reference; returns ORT's outputs."""
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        got = self.run_ort(path, feeds, tag)
        ref = numpy_control_flow.run(onnx.load(path), feeds)
        for name, value in ref.items():
            self.assertEqual(got[name].shape, value.shape, name)
            self.assertLess(relative(got[name], value), tolerance, f"{tag}: {name}")
        return got

    def test_passes_checker_and_shape_inference(self):
        self.check_valid(self.model)

    def test_shuffled_model_has_the_same_nodes_out_of_order(self):
        path = self.generate("shuffled", *self.args, "--shuffle-nodes")
        shuffled = onnx.load(path)
        key = lambda n: (n.op_type, n.name, tuple(n.input), tuple(n.output))
        self.assertEqual(collections.Counter(map(key, shuffled.graph.node)),
                         collections.Counter(map(key, self.model.graph.node)))
        self.assertFalse(onnx_builder.is_topologically_sorted(shuffled.graph))
        with self.assertRaises(onnx.checker.ValidationError):
            onnx.checker.check_model(shuffled)
        again = onnx.load(self.generate("shuffled_again", *self.args, "--shuffle-nodes"))
        self.assertEqual([n.name for n in again.graph.node], [n.name for n in shuffled.graph.node])
        feeds = self.feeds(7)
        ref = numpy_control_flow.run(self.model, feeds)
        for name, value in numpy_control_flow.run(shuffled, feeds).items():
            np.testing.assert_array_equal(value, ref[name])
        if ort_missing() is None:
            got = self.run_ort(path, feeds, "shuffled")
            for name, value in ref.items():
                self.assertLess(relative(got[name], value), TOLERANCE, name)


class SpeechCase(ModelCase):
    variant, gates = None, None

    def feeds(self, seed, batch=1):
        return {"input": np.random.default_rng(seed).normal(0, 1, (batch, 100, 64)).astype(np.float32)}

    def test_node_sequence_is_torchs(self):
        seq = [n.op_type for n in self.model.graph.node if n.op_type != "Constant"]
        rnn = self.variant
        self.assertEqual(seq, ["Transpose", rnn, "Squeeze", rnn, "Squeeze", "Transpose", "MatMul", "Add"])
        for t in self.g.nodes("Transpose"):
            self.assertEqual(attr(t, "perm"), [1, 0, 2])
        for s in self.g.nodes("Squeeze"):
            self.assertEqual(self.g.const(s.input[1]).tolist(), [1])  # the num_directions axis
        add = self.g.producer["output"]
        self.assertEqual(add.input[0], "fc.bias")  # Add(bias, MatMul), torch's operand order
        mm = self.g.producer[add.input[1]]
        self.assertTrue(mm.input[1].startswith("onnx::MatMul_"))
        np.testing.assert_array_equal(self.g.inits[mm.input[1]], self.params()["fc.weight"].T)

    def params(self, bidirectional=False):
        return lstm_speech.parameters(0, self.variant, bidirectional)

    def check_rnn_nodes(self, g, directions):
        hid, gh = 128, self.gates * 128
        for layer, node in enumerate(g.nodes(self.variant)):
            w, r, b = (g.inits[name] for name in node.input[1:4])
            self.assertEqual(w.shape, (directions, gh, 64 if layer == 0 else hid * directions))
            self.assertEqual((r.shape, b.shape), ((directions, gh, hid), (directions, 2 * gh)))
            self.assertTrue(all(name.startswith(f"onnx::{self.variant}_") for name in node.input[1:4]))
            self.assertEqual(node.input[4], "")  # sequence_lens
            for state in node.input[5:]:  # the zero states, folded into Constant nodes
                self.assertEqual(g.producer[state].op_type, "Constant")
                np.testing.assert_array_equal(g.const(state), np.zeros((directions, 1, hid), np.float32))
            lstm = self.variant == "LSTM"
            self.assertEqual((len(node.input), len(node.output)), (7, 3) if lstm else (6, 2))
            self.assertEqual(attr(node, "linear_before_reset"), None if lstm else 1)  # PyTorch's GRU
            self.assertEqual(attr(node, "hidden_size"), hid)
            self.assertEqual(attr(node, "direction"), b"bidirectional" if directions == 2 else None)

    def test_rnn_nodes_and_weight_shapes(self):
        self.check_rnn_nodes(self.g, 1)

    def test_gate_order(self):
        """PyTorch stacks LSTM gates i,f,g,o and GRU gates r,z,n; ONNX wants
        i,o,f,c and z,r,h: W, R and both biases are reordered."""
        node = self.g.nodes(self.variant)[0]
        w, r, b = (self.g.inits[name][0] for name in node.input[1:4])
        params = self.params()
        p = {k: params[f"{self.variant.lower()}.{k}_l0"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        hid = 128
        blocks = lambda a: [a[k * hid:(k + 1) * hid] for k in range(self.gates)]
        order = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}[self.variant]
        for onnx_value, torch_value in ((w, p["weight_ih"]), (r, p["weight_hh"]),
                                        (b[:self.gates * hid], p["bias_ih"]), (b[self.gates * hid:], p["bias_hh"])):
            for got, k in zip(blocks(onnx_value), order):
                np.testing.assert_array_equal(got, blocks(torch_value)[k])

    def test_reference_computes_what_pytorch_computes(self):
        x = self.feeds(1)["input"]
        got = numpy_control_flow.run(self.model, {"input": x})["output"]
        self.assertLess(relative(got, lstm_speech.pytorch_forward(self.variant, self.params(), x, False)), 1e-5)

    def test_agrees_with_onnx_runtime(self):
        self.check_agrees_with_ort(self.path, self.feeds(2), "default")

    def test_bidirectional(self):
        path = self.generate("bidirectional", "--bidirectional")
        model = onnx.load(path)
        self.check_valid(model)
        g = Graph(model.graph)
        self.check_rnn_nodes(g, 2)
        self.assertNotIn("Squeeze", g.ops())
        for reshape in g.nodes("Reshape"):  # after Transpose(0,2,1,3): [T, N, 2*H]
            self.assertEqual(g.producer[reshape.input[0]].op_type, "Transpose")
            self.assertEqual(attr(g.producer[reshape.input[0]], "perm"), [0, 2, 1, 3])
            self.assertEqual((g.const(reshape.input[1]).tolist(), attr(reshape, "allowzero")), ([0, 0, -1], 0))
        x = self.feeds(3)["input"]
        ref = lstm_speech.pytorch_forward(self.variant, self.params(True), x, True)
        self.assertLess(relative(numpy_control_flow.run(model, {"input": x})["output"], ref), 1e-5)
        self.check_agrees_with_ort(path, {"input": x}, "bidirectional")

    def test_unfolded(self):
        path = self.generate("unfolded", "--unfolded")
        model = onnx.load(path)
        self.check_valid(model)
        g = Graph(model.graph)
        self.assertEqual(model.graph.input[0].type.tensor_type.shape.dim[0].dim_param, "batch")
        for op in ("Shape", "Gather", "ConstantOfShape", "Slice", "Concat", "Unsqueeze"):
            self.assertIn(op, g.ops())
        prefix = self.variant.lower()
        self.assertEqual(g.inits[f"{prefix}.weight_ih_l0"].shape, (self.gates * 128, 64))
        folded = [name for name in g.inits if name.startswith("onnx::")]
        self.assertEqual(folded, [g.nodes("MatMul")[0].input[1]])  # fc's transposed weight only
        x = self.feeds(4)["input"]
        folded = numpy_control_flow.run(self.model, {"input": x})["output"]
        np.testing.assert_allclose(numpy_control_flow.run(model, {"input": x})["output"], folded, atol=1e-6)
        self.check_agrees_with_ort(path, self.feeds(5, batch=2), "unfolded")


class LstmSpeech(SpeechCase, unittest.TestCase):
    script, variant, gates = "lstm_speech.py", "LSTM", 4


class GruSpeech(SpeechCase, unittest.TestCase):
    script, variant, gates = "gru_speech.py", "GRU", 3


class StreamingVad(ModelCase, unittest.TestCase):
    script = "streaming_vad.py"

    def feeds(self, seed, sr=16000, state=None):
        rng = np.random.default_rng(seed)
        return {"input": (0.2 * rng.normal(0, 1, (1, 512))).astype(np.float32),
                "state": np.zeros((2, 1, 128), np.float32) if state is None else state,
                "sr": np.array(sr, np.int64)}

    def branches(self, node):
        return Graph(attr(node, "then_branch")), Graph(attr(node, "else_branch"))

    def test_inputs_outputs_and_top_level_if(self):
        io = lambda vs: [(v.name, v.type.tensor_type.elem_type, [d.dim_value for d in v.type.tensor_type.shape.dim])
                         for v in vs]
        self.assertEqual(io(self.model.graph.input), [("input", TensorProto.FLOAT, [1, 512]),
                                                      ("state", TensorProto.FLOAT, [2, 1, 128]),
                                                      ("sr", TensorProto.INT64, [])])
        self.assertEqual(io(self.model.graph.output), [("output", TensorProto.FLOAT, [1, 1]),
                                                       ("stateN", TensorProto.FLOAT, [2, 1, 128])])
        self.assertEqual([n.op_type for n in self.model.graph.node], ["Constant", "Equal", "Cast", "If"])
        equal, cast, if_ = self.model.graph.node[1:]
        self.assertEqual((equal.input[0], self.g.const(equal.input[1]).tolist()), ("sr", 16000))
        self.assertEqual(attr(cast, "to"), TensorProto.BOOL)
        self.assertEqual(list(if_.output), ["output", "stateN"])

    def test_branches_hold_nested_shape_check_ifs(self):
        sixteen, eight = self.branches(self.model.graph.node[-1])
        for branch, window, n_fft, nested in ((sixteen, 512, 256, 2), (eight, 256, 128, 3)):
            ifs = branch.nodes("If")
            self.assertEqual(len(ifs), nested)
            # if x.dim() == 1: x = x.unsqueeze(0)  ->  Shape, Size, Equal(1), Cast, If(Unsqueeze | Identity)
            cast = branch.producer[ifs[0].input[0]]
            equal = branch.producer[cast.input[0]]
            size = branch.producer[equal.input[0]]
            self.assertEqual([cast.op_type, equal.op_type, size.op_type, branch.producer[size.input[0]].op_type],
                             ["Cast", "Equal", "Size", "Shape"])
            then_g, else_g = self.branches(ifs[0])
            self.assertEqual((then_g.ops(), else_g.ops()), ({"Constant": 1, "Unsqueeze": 1}, {"Identity": 1}))
            self.assertEqual(else_g.graph.node[0].input[0], "input")  # read from the main graph
            # x.squeeze(-1) of an unknown size -> Shape, Gather, Equal, If(Squeeze | Identity), no Cast
            squeeze_if = ifs[-1]
            self.assertEqual(branch.producer[squeeze_if.input[0]].op_type, "Equal")
            then_g, else_g = self.branches(squeeze_if)
            self.assertEqual((then_g.ops(), else_g.ops()), ({"Constant": 1, "Squeeze": 1}, {"Identity": 1}))
            if nested == 3:  # 8 kHz: if x.shape[-1] > 256: x = x[:, -256:]
                then_g, else_g = self.branches(ifs[1])
                self.assertEqual((then_g.ops()["Slice"], else_g.ops()), (1, {"Identity": 1}))
            conv = branch.nodes("Conv")[0]
            self.assertEqual(self.g.inits[conv.input[1]].shape, (n_fft + 2, 1, n_fft))  # cos and sin rows
            self.assertEqual(attr(conv, "strides"), [n_fft // 2])
            self.assertEqual(len(branch.nodes("Conv")), 6)
            pad = branch.nodes("Pad")[0]  # its pads computed at run time, ending in a Cast
            self.assertEqual((attr(pad, "mode"), branch.producer[pad.input[1]].op_type), (b"reflect", "Cast"))
            lstm = branch.nodes("LSTM")[0]
            self.assertEqual(attr(lstm, "hidden_size"), 128)
            w = branch.producer[lstm.input[1]]  # reordered at run time: Unsqueeze(Concat(3 x Slice))
            self.assertEqual([w.op_type, branch.producer[w.input[0]].op_type], ["Unsqueeze", "Concat"])
            slices = [branch.producer[i] for i in branch.producer[w.input[0]].input]
            self.assertEqual([s.op_type for s in slices], ["Slice"] * 3)
            self.assertTrue(slices[0].input[0].endswith("decoder.rnn.weight_ih"))
            self.assertEqual([branch.const(s.input[1]).tolist() for s in slices], [[0], [384], [128]])
            for op in ("Sigmoid", "ReduceMean", "Sqrt", "Pow"):
                self.assertIn(op, branch.ops())

    def test_8k_branch_reads_the_last_256_samples_only(self):
        a = self.feeds(1, 8000)
        b = dict(a, input=a["input"].copy())
        b["input"][:, :256] = 0.5
        run = lambda f: numpy_control_flow.run(self.model, f)["output"]
        np.testing.assert_array_equal(run(a), run(b))
        self.assertNotEqual(run(dict(a, sr=np.array(16000))).item(), run(dict(b, sr=np.array(16000))).item())

    def test_five_calls_with_state_carried_agree_with_onnx_runtime(self):
        for sr in (16000, 8000):
            state = None
            for call in range(5):
                feeds = self.feeds(10 + call, sr, state)
                got = self.check_agrees_with_ort(self.path, feeds, f"sr{sr}_call{call}")
                self.assertTrue(0.0 < got["output"].item() < 1.0)
                if state is not None:
                    self.assertFalse(np.array_equal(got["stateN"], state))
                state = got["stateN"]


class GatedClassifier(ModelCase, unittest.TestCase):
    script = "gated_classifier.py"
    SCALES = [0.1, 0.3, 1.0, 3.0, 10.0]

    def feeds(self, seed, scale=1.0):
        rng = np.random.default_rng(seed)
        x = scale * rng.uniform(0, 1, (1, 3, 32, 32)) + rng.normal(0, 0.3, (1, 3, 32, 32))
        return {"input": x.astype(np.float32)}

    def test_if_on_the_first_heads_score(self):
        if_ = self.g.nodes("If")[0]
        chain = [self.g.producer[if_.input[0]]]
        while chain[-1].op_type != "Gemm":
            chain.append(self.g.producer[chain[-1].input[0]])
        self.assertEqual([n.op_type for n in chain], ["Cast", "Greater", "ReduceMax", "Sigmoid", "Gemm"])
        self.assertAlmostEqual(self.g.const(chain[1].input[1]).item(), 0.5)
        self.assertEqual(attr(chain[2], "keepdims"), 0)
        then_g, else_g = Graph(attr(if_, "then_branch")), Graph(attr(if_, "else_branch"))
        self.assertEqual(then_g.ops(), {"Gemm": 1, "Softmax": 1})
        self.assertEqual(then_g.nodes("Gemm")[0].input[1:], ["head2.weight", "head2.bias"])  # main-graph initializers
        self.assertEqual(else_g.ops(), {"Constant": 1, "ConstantOfShape": 1})
        for branch in (then_g, else_g):
            out = branch.graph.output[0].type.tensor_type
            self.assertEqual((out.elem_type, [d.dim_value for d in out.shape.dim]), (TensorProto.FLOAT, [1, 10]))

    def test_both_branches_agree_with_onnx_runtime(self):
        opened = []
        for k, scale in enumerate(self.SCALES):
            feeds = self.feeds(k, scale)
            ref = numpy_control_flow.run(self.model, feeds)
            opened.append(ref["score"].item() > 0.5)
            self.assertAlmostEqual(float(ref["output"].sum()), 1.0 if opened[-1] else 0.0, places=5)
            self.check_agrees_with_ort(self.path, feeds, f"scale{k}")
        self.assertIn(True, opened)
        self.assertIn(False, opened)

    def test_threshold_zero_always_runs_the_second_head(self):
        path = self.generate("open", "--threshold", "0")
        got = self.check_agrees_with_ort(path, self.feeds(0, 0.1), "open")
        self.assertAlmostEqual(float(got["output"].sum()), 1.0, places=5)


class LoopModel(ModelCase, unittest.TestCase):
    script = "loop_model.py"

    def feeds(self, seed):
        return {"input": np.random.default_rng(seed).normal(0, 1, (10, 1, 16)).astype(np.float32)}

    def expected(self, x, steps=None):
        p = loop_model.parameters(0)
        h, ys = np.zeros((1, 32)), []
        for t in range(x.shape[0] if steps is None else steps):
            h = np.tanh(x[t] @ p["cell_x.weight"].T + p["cell_x.bias"] + h @ p["cell_h.weight"].T + p["cell_h.bias"])
            ys.append(h @ p["proj.weight"].T + p["proj.bias"])
        return np.stack(ys), h

    def check_loop(self, model, trips):
        g = Graph(model.graph)
        loop = g.nodes("Loop")[0]
        self.assertTrue(trips(g, loop.input[0]))
        self.assertEqual((g.producer[loop.input[1]].op_type, g.const(loop.input[1]).item()), ("Constant", True))
        self.assertEqual(g.producer[loop.input[2]].op_type, "ConstantOfShape")
        body = Graph(attr(loop, "body"))
        kinds = [(i.name, i.type.tensor_type.elem_type) for i in body.graph.input[:2]]
        self.assertEqual(kinds, [("i", TensorProto.INT64), ("cond", TensorProto.BOOL)])
        cond_out = body.producer[body.graph.output[0].name]
        self.assertEqual((cond_out.op_type, cond_out.input[0]), ("Identity", loop.input[1]))  # the outer true
        self.assertEqual(body.nodes("Gather")[0].input, ["input", "i"])  # x[t] from the enclosing graph
        self.assertEqual(attr(body.nodes("Gemm")[0], "transB"), 1)
        return loop, body

    def test_loop_as_torch_writes_a_scripted_for_loop(self):
        def from_shape(g, m):
            gather = g.producer[m]
            return gather.op_type == "Gather" and g.producer[gather.input[0]].op_type == "Shape" and \
                g.const(gather.input[1]).item() == 0
        loop, body = self.check_loop(self.model, from_shape)
        self.assertEqual((len(body.graph.input), len(body.graph.output), len(loop.output)), (3, 3, 2))

    def test_agrees_with_a_plain_loop_and_onnx_runtime(self):
        feeds = self.feeds(1)
        ref = numpy_control_flow.run(self.model, feeds)
        ys, h = self.expected(feeds["input"])
        self.assertLess(relative(ref["output"], ys), 1e-5)
        self.assertLess(relative(ref["hidden"], h), 1e-5)
        self.check_agrees_with_ort(self.path, feeds, "default")

    def test_trip_count_constant_and_input(self):
        model = onnx.load(self.generate("constant", "--trip-count", "constant"))
        self.check_valid(model)
        self.check_loop(model, lambda g, m: g.producer[m].op_type == "Constant" and g.const(m).item() == 10)
        path = self.generate("input", "--trip-count", "input")
        model = onnx.load(path)
        self.check_valid(model)
        self.check_loop(model, lambda g, m: m == "steps")
        feeds = dict(self.feeds(2), steps=np.array(4, np.int64))
        got = self.check_agrees_with_ort(path, feeds, "input")
        self.assertLess(relative(got["output"], self.expected(feeds["input"], 4)[0]), 1e-5)

    def test_sequence_form_of_opset_13(self):
        path = self.generate("sequence", "--sequence")
        model = onnx.load(path)
        self.check_valid(model)
        g = Graph(model.graph)
        loop, body = self.check_loop(model, lambda g, m: True)
        self.assertEqual(g.producer[loop.input[3]].op_type, "SequenceEmpty")
        self.assertEqual(body.ops()["SequenceInsert"], 1)
        concat = g.producer["output"]
        self.assertEqual((concat.op_type, attr(concat, "axis"), attr(concat, "new_axis")), ("ConcatFromSequence", 0, 1))
        feeds = self.feeds(3)
        np.testing.assert_array_equal(numpy_control_flow.run(model, feeds)["output"],
                                      numpy_control_flow.run(self.model, feeds)["output"])
        self.check_agrees_with_ort(path, feeds, "sequence")


class ScanModel(ModelCase, unittest.TestCase):
    script, args = "loop_model.py", ["--kind", "scan"]

    def feeds(self, seed):
        return {"input": np.random.default_rng(seed).normal(0, 1, (1, 10, 8)).astype(np.float32)}

    def test_scan_attributes_and_body(self):
        scan = self.g.nodes("Scan")[0]
        self.assertEqual([attr(scan, k) for k in ("num_scan_inputs", "scan_input_axes", "scan_output_axes")],
                         [1, [1], [1, 1]])
        body = Graph(attr(scan, "body"))
        self.assertEqual((len(body.graph.input), len(body.graph.output)), (2, 3))
        self.assertIn("scale", body.nodes("Mul")[0].input)  # read from the main graph

    def test_cumulative_sum_in_both_directions(self):
        for args, tag in (([], "forward"), (["--reverse"], "reverse")):
            path = self.generate(tag, *self.args, *args)
            model = onnx.load(path)
            self.check_valid(model)
            x = self.feeds(1)["input"]
            cum = np.cumsum(x[:, ::-1], axis=1)[:, ::-1] if args else np.cumsum(x, axis=1)
            ref = numpy_control_flow.run(model, {"input": x})
            np.testing.assert_allclose(ref["output"], cum, atol=1e-5)
            np.testing.assert_allclose(ref["total"], x.sum(axis=1), atol=1e-5)
            self.check_agrees_with_ort(path, {"input": x}, tag)


class RecurrentReference(unittest.TestCase):
    """numpy_rnn.py on every attribute of LSTM/GRU/RNN, as single-node models
    against ONNX Runtime (which has no layout=1: that one is checked against
    layout=0 on transposed data)."""
    BI, REV = {"direction": "bidirectional"}, {"direction": "reverse"}
    CASES = [  # (op, attributes, other arguments of numpy_rnn.single_node_model)
        ("LSTM", {}, {}), ("LSTM", REV, {}), ("LSTM", {"clip": 0.3}, {}), ("LSTM", {"input_forget": 1}, {}),
        ("LSTM", {}, {"peepholes": True}), ("LSTM", BI, {"lens": [5, 2, 3]}), ("LSTM", REV, {"lens": [5, 2, 3]}),
        ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "Tanh"], "activation_alpha": [0.3, 0.2],
                  "activation_beta": [0.6]}, {}),
        ("LSTM", dict(BI, activations=["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Softsign", "Softplus"]), {}),
        ("GRU", {}, {}), ("GRU", dict(BI, linear_before_reset=1), {"lens": [1, 5, 4]}),
        ("GRU", dict(REV, clip=0.4), {}),
        ("GRU", {"activations": ["HardSigmoid", "Elu"], "activation_alpha": [0.25, 0.8], "activation_beta": [0.4]}, {}),
        ("RNN", {}, {}), ("RNN", {"activations": ["Relu"]}, {"initial_state": False}),
        ("RNN", dict(BI, activations=["Affine", "ScaledTanh"], activation_alpha=[0.5, 1.5], activation_beta=[0.1, 0.7]),
         {"lens": [3, 5, 1]}),
        ("RNN", {"activations": ["ThresholdedRelu"], "activation_alpha": [0.2], "clip": 1.0}, {}),
    ]

    def test_attributes_agree_with_onnx_runtime(self):
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        with tempfile.TemporaryDirectory() as folder:
            for k, (op, attrs, extra) in enumerate(self.CASES):
                with self.subTest(op=op, attrs=attrs, **extra):
                    model, feeds = numpy_rnn.single_node_model(op, seed=k, **extra, **attrs)
                    path = os.path.join(folder, f"case{k}.onnx")
                    onnx.save(model, path)
                    got = ort_outputs(path, feeds, os.path.join(folder, str(k)))
                    for name, value in numpy_control_flow.run(model, feeds).items():
                        self.assertLess(relative(got[name], value), TOLERANCE, name)

    def test_layout_1_is_layout_0_transposed(self):
        for op in ("LSTM", "GRU", "RNN"):
            attrs = {"direction": "bidirectional"}
            m0, f0 = numpy_rnn.single_node_model(op, seed=3, lens=[4, 5, 2], **attrs)
            m1, _ = numpy_rnn.single_node_model(op, seed=3, lens=[4, 5, 2], layout=1, **attrs)
            f1 = dict(f0, **{k: np.swapaxes(f0[k], 0, 1) for k in ("X", "initial_h", "initial_c") if k in f0})
            r0, r1 = numpy_control_flow.run(m0, f0), numpy_control_flow.run(m1, f1)
            np.testing.assert_array_equal(r1["Y"], r0["Y"].transpose(2, 0, 1, 3))
            np.testing.assert_array_equal(r1["Y_h"], np.swapaxes(r0["Y_h"], 0, 1))


class ShuffleHelper(unittest.TestCase):
    def test_subgraph_reads_count_as_dependencies(self):
        branch = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "branch", [],
                                   [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
        make = helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(np.ones(1, np.float32)))
        if_ = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
        graph = helper.make_graph([make, if_], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        self.assertTrue(onnx_builder.is_topologically_sorted(graph))
        del graph.node[:]
        graph.node.extend([if_, make])
        self.assertFalse(onnx_builder.is_topologically_sorted(graph))


if __name__ == "__main__":
    unittest.main()
