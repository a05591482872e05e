#!/usr/bin/python3
"""scripts/models/float16.py: each model is generated into a temporary folder
and converted with and without --keep-io-types (release 1.16, and 1.14 for
its boundary names), then checked: onnx.checker (full check), float16
initializers holding the tool's clamped values, the types of the graph's
inputs and outputs, the boundary Casts and their names, the Casts around
blocked ops; where ONNX Runtime is installed (scripts/install-deps.sh), the
float16 model must agree with the float32 one on the same random input.

Tolerances, as the largest |float16 - float32| over the float32 output's
range (max - min): ResNet-18 2e-2, conv net, transformer, Loop model and the
blocked-op models 1e-2. ONNX Runtime 1.30 (CPU) measured at most 5e-4,
2.5e-4, 7e-4, 2.5e-4 and 8.5e-4: its CPU provider, without float16 kernels
for most of these ops, widens the graph back to float32 when it loads it
(Casts named InsertedPrecisionFreeCast_*, weights widened), so what is
measured is mostly the float16 rounding of the weights; the bounds leave
room for a build that computes in float16.

Runs with Debian's interpreter, directly or under pytest:
    /usr/bin/python3 tests/scripts/test_float16_models.py
    /usr/bin/python3 -m pytest tests/scripts/test_float16_models.py"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_peer import MODELS, ORT_RUN, ort_missing

sys.path.insert(0, MODELS)
import float16  # noqa: E402
import onnx_builder  # noqa: E402

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16


def generate(script, *args):
    subprocess.run([sys.executable, os.path.join(MODELS, script), *args], check=True, capture_output=True)


def ort_outputs(model, feeds, folder):
    """ONNX Runtime's outputs {name: array} for `feeds` {name: array}."""
    args = ["node", ORT_RUN, model, "--output-dir", os.path.join(folder, "out")]
    for name, value in feeds.items():
        path = os.path.join(folder, name + ".npy")
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    shutil.rmtree(os.path.join(folder, "out"), ignore_errors=True)
    subprocess.run(args, check=True, capture_output=True)
    out = os.path.join(folder, "out")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def expected_half(values):
    """The tool's float32 -> float16 of constants, written independently:
    nonzero magnitudes below 1e-7 become 1e-7, finite ones above 1e4 become
    1e4, the sign kept; then rounded to float16."""
    a = np.asarray(values, dtype=np.float64)
    mag = np.abs(a)
    a = np.where((mag > 0) & (mag < 1e-7), np.sign(a) * 1e-7, a)
    a = np.where(np.isfinite(a) & (np.abs(a) > 1e4), np.sign(a) * 1e4, a)
    return a.astype(np.float16)


def same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float16).view(np.uint16), np.asarray(b, np.float16).view(np.uint16))


def attr(node, name):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return None


def elem(vi):
    return vi.type.tensor_type.elem_type


def nodes_named(model):
    return {n.name: n for n in model.graph.node}


def convert(model, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tool's truncation warnings
        return float16.convert_float_to_float16(model, **kwargs)


def relative_error(got, ref):
    return float(np.abs(got.astype(np.float32) - ref).max() / (ref.max() - ref.min()))


class Float16ModelChecks:
    """Writes the float model and its float16 forms into a temporary folder
    (a mixin: each model's class adds unittest.TestCase)."""
    script = None       # the generator
    args = []           # its options (and float16.py's, after --model)
    model = None        # float16.py's --model
    shape = None        # the input's shape
    tolerance = None    # largest error over the output's range
    classifier = False  # whether the arg-max must agree too

    VARIANTS = {"plain": [], "keep": ["--keep-io-types"], "plain_1.14": ["--release", "1.14"],
                "keep_1.14": ["--keep-io-types", "--release", "1.14"]}

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.float_path = os.path.join(cls.dir.name, "float.onnx")
        generate(cls.script, *cls.args, "-o", cls.float_path)
        cls.float = onnx.load(cls.float_path)
        cls.paths, cls.models = {}, {}
        for name, extra in cls.VARIANTS.items():
            cls.paths[name] = os.path.join(cls.dir.name, name + ".onnx")
            generate("float16.py", "--model", cls.model, *cls.args, *extra, "-o", cls.paths[name])
            cls.models[name] = onnx.load(cls.paths[name])

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_checker_passes_and_nodes_are_sorted(self):
        for name, model in self.models.items():
            with self.subTest(name):
                onnx.checker.check_model(model, full_check=True)
                self.assertTrue(onnx_builder.is_topologically_sorted(model.graph))
                self.assertEqual(model.producer_name, self.float.producer_name)  # the tool leaves it

    def test_float_initializers_are_float16_with_the_tools_values(self):
        originals = {i.name: i for i in self.float.graph.initializer}
        for name, model in self.models.items():
            with self.subTest(name):
                self.assertEqual({i.name for i in model.graph.initializer}, set(originals))
                for init in model.graph.initializer:
                    before = originals[init.name]
                    if before.data_type != FLOAT:
                        self.assertEqual(init, before)
                        continue
                    self.assertEqual(init.data_type, FLOAT16, init.name)
                    self.assertTrue(same_bits(numpy_helper.to_array(init),
                                              expected_half(numpy_helper.to_array(before))), init.name)

    def test_graph_inputs_and_outputs_keep_float32_only_with_keep_io_types(self):
        for name, model in self.models.items():
            want = FLOAT if name.startswith("keep") else FLOAT16
            with self.subTest(name):
                self.assertEqual([(v.name, elem(v)) for v in model.graph.input], [("input", want)])
                self.assertEqual([(v.name, elem(v)) for v in model.graph.output], [("output", want)])
                self.assertFalse([v.name for v in model.graph.value_info if elem(v) == FLOAT])

    def test_no_casts_without_keep_io_types(self):
        for name in ("plain", "plain_1.14"):
            self.assertNotIn("Cast", {n.op_type for n in self.models[name].graph.node})

    def test_boundary_casts_of_release_1_16(self):
        # A Cast to float16 per node reading the input, named after it; one
        # Cast to float in front of the output, named after its producer.
        model = self.models["keep"]
        by_name = nodes_named(model)
        readers = [n.name for n in self.float.graph.node if "input" in n.input]
        producer = [n.name for n in self.float.graph.node if "output" in n.output][0]
        casts = sorted(n.name for n in model.graph.node if n.op_type == "Cast")
        self.assertEqual(casts, sorted(["input_cast_to_" + r for r in readers] + [producer + "_cast_to_output"]))
        for reader in readers:
            cast = by_name["input_cast_to_" + reader]
            self.assertEqual((list(cast.input), list(cast.output), attr(cast, "to")),
                             (["input"], [cast.name], FLOAT16))
            self.assertIn(cast.name, by_name[reader].input)
            self.assertNotIn("input", by_name[reader].input)
        cast = by_name[producer + "_cast_to_output"]
        self.assertEqual((list(cast.input), list(cast.output), attr(cast, "to")), ([cast.name], ["output"], FLOAT))
        self.assertEqual(list(by_name[producer].output), [cast.name])
        declared = {v.name: elem(v) for v in model.graph.value_info}
        self.assertEqual(declared[cast.name], FLOAT16)

    def test_boundary_casts_of_release_1_14(self):
        # One Cast per graph input and output, named by the index.
        model = self.models["keep_1.14"]
        casts = {n.name: n for n in model.graph.node if n.op_type == "Cast"}
        self.assertEqual(sorted(casts), ["graph_input_cast0", "graph_output_cast0"])
        cin, cout = casts["graph_input_cast0"], casts["graph_output_cast0"]
        self.assertEqual((list(cin.input), list(cin.output), attr(cin, "to")),
                         (["input"], ["graph_input_cast_0"], FLOAT16))
        self.assertEqual((list(cout.input), list(cout.output), attr(cout, "to")),
                         (["graph_output_cast_0"], ["output"], FLOAT))
        readers = [n for n in model.graph.node if n is not cin and "graph_input_cast_0" in n.input]
        self.assertEqual(len(readers), len([n for n in self.float.graph.node if "input" in n.input]))
        self.assertEqual(len([n for n in model.graph.node if "graph_output_cast_0" in n.output]), 1)

    def test_agrees_with_float_model(self):
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        rng = np.random.default_rng(20240)
        for _ in range(2):
            x = rng.uniform(-1.0, 1.0, self.shape).astype(np.float32)
            ref = ort_outputs(self.float_path, {"input": x}, self.dir.name)["output"]
            for name in ("plain", "keep", "keep_1.14"):
                keep = name.startswith("keep")
                got = ort_outputs(self.paths[name], {"input": x if keep else x.astype(np.float16)},
                                  self.dir.name)["output"]
                self.assertEqual(got.dtype, np.float32 if keep else np.float16)
                self.assertLess(relative_error(got, ref), self.tolerance, name)
                if self.classifier:
                    np.testing.assert_array_equal(got.argmax(-1), ref.argmax(-1))


class ResNet18(Float16ModelChecks, unittest.TestCase):
    script, model, args = "resnet18.py", "resnet18", ["--seed", "3"]
    shape, tolerance, classifier = [1, 3, 224, 224], 2e-2, True


class ConvNet(Float16ModelChecks, unittest.TestCase):
    script, model, args = "convnet.py", "convnet", []
    shape, tolerance, classifier = [1, 3, 64, 64], 1e-2, True

    def test_same_seed_writes_the_same_bytes(self):
        again = os.path.join(self.dir.name, "again.onnx")
        generate("float16.py", "--model", "convnet", "--keep-io-types", "-o", again)
        with open(again, "rb") as a, open(self.paths["keep"], "rb") as b:
            self.assertEqual(a.read(), b.read())


class Transformer(Float16ModelChecks, unittest.TestCase):
    script, model, args = "transformer.py", "transformer", ["--seq", "32", "--layers", "2"]
    shape, tolerance = [1, 32, 256], 1e-2

    def test_key_padding_mask_stays_minus_1e4(self):
        mask = [i for i in self.models["plain"].graph.initializer if i.name == "key_padding_mask"][0]
        self.assertEqual(float(numpy_helper.to_array(mask).min()), -1e4)  # at the bound: not clamped

    def test_block_op_softmax(self):
        """--block-op Softmax: each Softmax reads a Cast to float and writes
        through a Cast to float16, and the model still agrees."""
        path = os.path.join(self.dir.name, "block_softmax.onnx")
        generate("float16.py", "--model", "transformer", *self.args, "--block-op", "Softmax", "-o", path)
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        by_name = nodes_named(model)
        for layer in range(2):
            sm = f"layers.{layer}.self_attn.softmax"
            cin, cout = by_name[sm + "_input_cast0"], by_name[sm + "_output_cast0"]
            self.assertEqual((list(cin.input), attr(cin, "to")), ([f"layers.{layer}.self_attn.masked"], FLOAT))
            self.assertEqual(list(by_name[sm].input), [sm + "_input_cast_0"])
            self.assertEqual(list(by_name[sm].output), [sm + "_output_cast_0"])
            self.assertEqual((list(cout.input), list(cout.output), attr(cout, "to")),
                             ([sm + "_output_cast_0"], [sm], FLOAT16))
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        x = np.random.default_rng(7).uniform(-1.0, 1.0, self.shape).astype(np.float32)
        ref = ort_outputs(self.float_path, {"input": x}, self.dir.name)["output"]
        got = ort_outputs(path, {"input": x.astype(np.float16)}, self.dir.name)["output"]
        self.assertLess(relative_error(got, ref), self.tolerance)


class LoopSubgraph(unittest.TestCase):
    """A Loop (loop_model.py): its body is converted too; with keep_io_types
    the body reads the enclosing input through the last of its Casts."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.float_path = os.path.join(cls.dir.name, "loop.onnx")
        generate("loop_model.py", "-o", cls.float_path)
        cls.paths = {}
        for name, extra in (("plain", []), ("keep", ["--keep-io-types"]), ("keep_1.14", ["--keep-io-types",
                                                                                           "--release", "1.14"])):
            cls.paths[name] = os.path.join(cls.dir.name, name + ".onnx")
            generate("float16.py", "--model", cls.float_path, *extra, "-o", cls.paths[name])

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def body(self, model):
        return [a.g for n in model.graph.node if n.op_type == "Loop" for a in n.attribute if a.name == "body"][0]

    def test_body_is_float16(self):
        for name, path in self.paths.items():
            with self.subTest(name):
                model = onnx.load(path)
                onnx.checker.check_model(model, full_check=True)
                body = self.body(model)
                types = [elem(v) for v in list(body.input) + list(body.output) + list(body.value_info)]
                self.assertNotIn(FLOAT, types)
                self.assertIn(FLOAT16, types)
                const = [n for n in model.graph.node if n.op_type == "ConstantOfShape"][0]
                self.assertEqual(attr(const, "value").data_type, FLOAT16)

    def test_body_reads_the_input_through_a_cast(self):
        body = self.body(onnx.load(self.paths["keep"]))
        gather = [n for n in body.node if n.op_type == "Gather"][0]
        self.assertEqual(gather.input[0], "input_cast_to_/Shape_1")  # the last reader's Cast
        body = self.body(onnx.load(self.paths["keep_1.14"]))
        gather = [n for n in body.node if n.op_type == "Gather"][0]
        self.assertEqual(gather.input[0], "graph_input_cast_0")

    def test_agrees_with_float_model(self):
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        x = np.random.default_rng(3).uniform(-1.0, 1.0, [10, 1, 16]).astype(np.float32)
        ref = ort_outputs(self.float_path, {"input": x}, self.dir.name)
        for name, path in self.paths.items():
            keep = name.startswith("keep")
            got = ort_outputs(path, {"input": x if keep else x.astype(np.float16)}, self.dir.name)
            for out in ("output", "hidden"):
                self.assertLess(relative_error(got[out], ref[out]), 1e-2, (name, out))


def synthetic(nodes, inits, inputs, outputs):
    graph = helper.make_graph(nodes, "synthetic", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, producer_name="test", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    return model


def tensor(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


class Clamping(unittest.TestCase):
    """Constants: magnitudes clamped to [1e-7, 1e4], 0, inf and NaN kept, in
    raw_data, in float_data (written as int32_data) and in a Constant."""
    VALUES = [1e-9, -1e-9, 3e4, -1e5, 0.0, 1.5, np.inf, -np.inf, np.nan, 1e-7, 2e-6, 65504.0]
    WANT = [1e-7, -1e-7, 1e4, -1e4, 0.0, 1.5, np.inf, -np.inf, np.nan, 1e-7, 2e-6, 1e4]

    def setUp(self):
        listed = helper.make_tensor("listed", FLOAT, [len(self.VALUES)], self.VALUES)  # float_data
        const = helper.make_node("Constant", [], ["c"], name="const", value=tensor("v", self.VALUES))
        nodes = [const, helper.make_node("Add", ["x", "raw"], ["a"], name="add"),
                 helper.make_node("Mul", ["a", "listed"], ["m"], name="mul"),
                 helper.make_node("Sub", ["m", "c"], ["y"], name="sub")]
        self.model = synthetic(nodes, [tensor("raw", self.VALUES), listed],
                               [helper.make_tensor_value_info("x", FLOAT, [len(self.VALUES)])],
                               [helper.make_tensor_value_info("y", FLOAT, [len(self.VALUES)])])
        self.want = np.array(self.WANT, dtype=np.float16)

    def check(self, t):
        self.assertEqual(t.data_type, FLOAT16)
        got = numpy_helper.to_array(t)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(self.want))
        keep = ~np.isnan(self.want)
        self.assertTrue(same_bits(got[keep], self.want[keep]), got)

    def test_clamps_tiny_and_huge_values(self):
        for release in ("1.16", "1.14"):
            with self.subTest(release):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    out = float16.convert_float_to_float16(self.model, release=release)
                self.assertTrue(any("truncated" in str(w.message) for w in caught))
                onnx.checker.check_model(out, full_check=True)
                inits = {i.name: i for i in out.graph.initializer}
                self.check(inits["raw"])
                self.assertEqual(len(inits["raw"].raw_data), 2 * len(self.VALUES))
                self.check(inits["listed"])
                self.assertFalse(inits["listed"].float_data)
                self.assertEqual(len(inits["listed"].int32_data), len(self.VALUES))
                self.check(attr(nodes_named(out)["const"], "value"))
                self.assertEqual(float(self.want[0]), float(np.float16(1.1920929e-07)))  # 2^-23, float16's nearest
        self.assertEqual(numpy_helper.to_array(self.model.graph.initializer[0]).dtype, np.float32)  # input untouched

    def test_other_bounds(self):
        out = convert(self.model, min_positive_val=1e-5, max_finite_val=65504.0)
        got = numpy_helper.to_array([i for i in out.graph.initializer if i.name == "raw"][0])
        tiny = float(np.float16(1e-5))
        self.assertEqual([float(v) for v in got[:4]], [tiny, -tiny, 3e4, -65504.0])


class BlockedOps(unittest.TestCase):
    """Resize, Max and Min (in DEFAULT_OP_BLOCK_LIST) run in float32 between Casts.

    x [1,3,4,4] -> Relu -> Resize (scales) -> Relu -> Max(., c) -> Min(., d) -> Add(., bias) -> y"""

    def setUp(self):
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Resize", ["r", "", "scales"], ["rs"], name="resize", mode="linear"),
                 helper.make_node("Relu", ["rs"], ["r2"], name="relu2"),
                 helper.make_node("Max", ["r2", "c"], ["mx"], name="max"),
                 helper.make_node("Min", ["mx", "d"], ["mn"], name="min"),
                 helper.make_node("Add", ["mn", "bias"], ["y"], name="add")]
        rng = np.random.default_rng(5)
        inits = [tensor("scales", [1, 1, 2, 2]), tensor("c", 0.25), tensor("d", 0.75),
                 tensor("bias", rng.normal(0, 0.1, [1, 3, 1, 1]))]
        self.model = synthetic(nodes, inits, [helper.make_tensor_value_info("x", FLOAT, [1, 3, 4, 4])],
                               [helper.make_tensor_value_info("y", FLOAT, [1, 3, 8, 8])])

    def casts(self, model):
        return {n.name: (list(n.input), list(n.output), attr(n, "to")) for n in model.graph.node if n.op_type == "Cast"}

    def test_release_1_16(self):
        out = convert(self.model)
        onnx.checker.check_model(out, full_check=True)
        by_name = nodes_named(out)
        # Casts in, out; between two blocked nodes the Cast pair is removed:
        # Max writes max_output_cast_0 in float32 and Min reads it directly.
        self.assertEqual(self.casts(out), {
            "resize_input_cast0": (["r"], ["resize_input_cast_0"], FLOAT),
            "resize_output_cast0": (["resize_output_cast_0"], ["rs"], FLOAT16),
            "max_input_cast0": (["r2"], ["max_input_cast_0"], FLOAT),
            "min_output_cast0": (["min_output_cast_0"], ["mn"], FLOAT16)})
        self.assertEqual(list(by_name["resize"].input), ["resize_input_cast_0", "", "scales"])
        self.assertEqual(list(by_name["max"].input), ["max_input_cast_0", "c"])
        self.assertEqual(list(by_name["min"].input), ["max_output_cast_0", "d"])
        # A blocked node's initializers stay float32; the others become float16.
        types = {i.name: i.data_type for i in out.graph.initializer}
        self.assertEqual(types, {"scales": FLOAT, "c": FLOAT, "d": FLOAT, "bias": FLOAT16})
        self.agrees(out, keep=False)

    def test_release_1_14(self):
        out = convert(self.model, release="1.14")
        onnx.checker.check_model(out, full_check=True)
        # Every float initializer is float16, so a blocked node's get Casts
        # too (by input index), and no Cast pair is removed.
        self.assertEqual(self.casts(out), {
            "resize_input_cast0": (["r"], ["resize_input_cast_0"], FLOAT),
            "resize_input_cast2": (["scales"], ["resize_input_cast_2"], FLOAT),
            "resize_output_cast0": (["resize_output_cast_0"], ["rs"], FLOAT16),
            "max_input_cast0": (["r2"], ["max_input_cast_0"], FLOAT),
            "max_input_cast1": (["c"], ["max_input_cast_1"], FLOAT),
            "max_output_cast0": (["max_output_cast_0"], ["mx"], FLOAT16),
            "min_input_cast0": (["mx"], ["min_input_cast_0"], FLOAT),
            "min_input_cast1": (["d"], ["min_input_cast_1"], FLOAT),
            "min_output_cast0": (["min_output_cast_0"], ["mn"], FLOAT16)})
        self.assertEqual({i.data_type for i in out.graph.initializer}, {FLOAT16})
        self.agrees(out, keep=False)

    def test_blocked_node_on_a_kept_float32_input(self):
        """1.16, keep_io_types, x read only by a blocked Resize: the Cast to
        float16 and the Resize's Cast back are removed as a pair."""
        model = synthetic([helper.make_node("Resize", ["x", "", "scales"], ["rs"], name="resize", mode="linear"),
                           helper.make_node("Relu", ["rs"], ["y"], name="relu")],
                          [tensor("scales", [1, 1, 2, 2])],
                          [helper.make_tensor_value_info("x", FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", FLOAT, [1, 3, 8, 8])])
        out = convert(model, keep_io_types=True)
        onnx.checker.check_model(out, full_check=True)
        self.assertEqual(self.casts(out), {
            "resize_output_cast0": (["resize_output_cast_0"], ["rs"], FLOAT16),
            "relu_cast_to_y": (["relu_cast_to_y"], ["y"], FLOAT)})
        self.assertEqual(list(nodes_named(out)["resize"].input), ["x", "", "scales"])
        self.assertEqual([elem(v) for v in list(out.graph.input) + list(out.graph.output)], [FLOAT, FLOAT])

    def test_blocked_node_writing_a_graph_output(self):
        """1.16 declares a blocked node's graph output float16 before it
        looks at keep_io_types, so that output comes out float16 even then;
        1.14 keeps it float32."""
        model = synthetic([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                           helper.make_node("Max", ["r", "c"], ["y"], name="max")],
                          [tensor("c", 0.5)], [helper.make_tensor_value_info("x", FLOAT, [4])],
                          [helper.make_tensor_value_info("y", FLOAT, [4])])
        out = convert(model, keep_io_types=True)
        onnx.checker.check_model(out, full_check=True)
        self.assertEqual([elem(v) for v in out.graph.input], [FLOAT])
        self.assertEqual([elem(v) for v in out.graph.output], [FLOAT16])
        self.assertEqual(self.casts(out)["max_output_cast0"], (["max_output_cast_0"], ["y"], FLOAT16))
        out = convert(model, keep_io_types=True, release="1.14")
        onnx.checker.check_model(out, full_check=True)
        self.assertEqual([elem(v) for v in out.graph.output], [FLOAT])
        self.assertEqual(self.casts(out)["max_output_cast0"], (["max_output_cast_0"], ["graph_output_cast_0"], FLOAT16))

    def test_refuses_a_float16_model_in_1_16(self):
        once = convert(self.model)
        with self.assertRaises(ValueError):
            convert(once)
        convert(once, check_fp16_ready=False)
        convert(once, release="1.14")  # 1.14 has no such check

    def test_empty_block_list_converts_everything(self):
        out = convert(self.model, op_block_list=[])
        self.assertFalse(self.casts(out))
        self.assertEqual({i.data_type for i in out.graph.initializer}, {FLOAT16})
        out = convert(self.model, op_block_list=[], node_block_list=["relu2"])
        self.assertEqual(sorted(self.casts(out)), ["relu2_input_cast0", "relu2_output_cast0"])

    def agrees(self, converted, keep):
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m16.onnx")
            onnx.save(converted, path)
            onnx.save(self.model, os.path.join(folder, "m32.onnx"))
            x = np.random.default_rng(9).uniform(-1.0, 1.0, [1, 3, 4, 4]).astype(np.float32)
            ref = ort_outputs(os.path.join(folder, "m32.onnx"), {"x": x}, folder)["y"]
            got = ort_outputs(path, {"x": x if keep else x.astype(np.float16)}, folder)["y"]
            self.assertLess(relative_error(got, ref), 1e-2)


class CommandLine(unittest.TestCase):
    def test_unreadable_model_is_an_error(self):
        with tempfile.TemporaryDirectory() as folder:
            run = subprocess.run([sys.executable, os.path.join(MODELS, "float16.py"), "--model",
                                  os.path.join(folder, "missing.onnx"), "-o", os.path.join(folder, "out.onnx")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 1)
            self.assertIn("float16.py: cannot read", run.stderr)


if __name__ == "__main__":
    unittest.main()
