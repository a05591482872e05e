#!/usr/bin/python3
"""The speech, audio and segmentation model generators (scripts/models/
mel_frontend.py, audio_encoder.py, speech_transformer.py,
segmentation_block.py) and their numpy reference (numpy_audio.py): each
model is generated into a temporary folder, must pass onnx.checker (full
check) and strict shape inference, and must have the structure
torch.onnx.export gives it (node sequences, attributes, folded
initializers). Where ONNX Runtime is installed (scripts/install-deps.sh),
the models run in it and must agree with the numpy forward pass of their
state_dict within 1e-4 relative (to the reference's largest magnitude):
every full-size model, and small variants (32 encoder channels, a 2-layer
64-wide encoder over 50 positions, the RSU block at 37 x 37, whose
poolings give odd sizes, with and without BatchNormalization nodes). The
reference's own layers are checked against direct sums on small inputs.

Runs with Debian's interpreter, directly or under pytest:
    /usr/bin/python3 tests/scripts/test_audio_models.py"""
import collections
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ort_peer import MODELS, ort_missing, ort_outputs, relative
sys.path.insert(0, MODELS)
import audio_encoder  # noqa: E402
import mel_frontend  # noqa: E402
import numpy_audio  # noqa: E402
import numpy_control_flow  # noqa: E402
import onnx_builder  # noqa: E402
import segmentation_block  # noqa: E402
import speech_transformer  # noqa: E402

TOLERANCE = 1e-4  # relative, to the largest magnitude of the reference
INT64_MAX = 2 ** 63 - 1




def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def shape_of(value_info):
    return [d.dim_value for d in value_info.type.tensor_type.shape.dim]


class Graph:
    """Lookups over a main graph."""

    def __init__(self, graph):
        self.graph = graph
        self.producer = {out: n for n in graph.node for out in n.output}
        self.consumers = collections.defaultdict(list)
        for n in graph.node:
            for name in n.input:
                self.consumers[name].append(n)
        self.inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}

    def nodes(self, op):
        return [n for n in self.graph.node if n.op_type == op]

    def ops(self):
        return collections.Counter(n.op_type for n in self.graph.node)

    def value(self, name):
        """`name` computed from Constant nodes and initializers alone."""
        if name in self.inits:
            return self.inits[name]
        node = self.producer[name]
        args = [self.value(i) if i else None for i in node.input]
        return numpy_control_flow.run_node(node, args, None)[list(node.output).index(name)]

    def chain(self, name, count):
        """The `count` producers up the first-input chain from `name`, nearest first."""
        nodes = []
        for _ in range(count):
            nodes.append(self.producer[name])
            name = nodes[-1].input[0]
        return nodes

    def upstream(self, name, count):
        return [n.op_type for n in self.chain(name, count)]

    def only_consumer(self, name):
        users = self.consumers[name]
        assert len(users) == 1, f"{name} has {len(users)} consumers"
        return users[0]


class ModelCase:
    """Generates `script` with `args` into a temporary folder; mixed into a
    unittest.TestCase per model."""
    script, args, output_shape = None, [], None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.path = cls.generate("model", *cls.args)
        cls.model = onnx.load(cls.path)
        cls.g = Graph(cls.model.graph)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def generate(cls, name, *args):
        path = os.path.join(cls.dir, name + ".onnx")
        subprocess.run([sys.executable, os.path.join(MODELS, cls.script), *args, "-o", path], check=True,
                       capture_output=True)
        return path

    def check_valid(self, model, output_shape):
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        self.assertEqual([(o.domain, o.version) for o in model.opset_import], [("", 17)])
        self.assertEqual(model.ir_version, 8)
        self.assertTrue(onnx_builder.is_topologically_sorted(model.graph))
        self.assertEqual([shape_of(o) for o in inferred.graph.output], [output_shape])

    def check_agrees_with_ort(self, path, feeds, ref, tag):
        """ONNX Runtime's only output against the numpy reference `ref` (or
        what `ref()` returns: a slow reference is computed only when needed)."""
        reason = ort_missing()
        if reason:
            self.skipTest(reason)
        (got,) = ort_outputs(path, feeds, os.path.join(self.dir, tag)).values()
        ref = ref() if callable(ref) else ref
        self.assertEqual(got.shape, ref.shape)
        self.assertLess(relative(got, ref), TOLERANCE, tag)
        return got

    def test_passes_checker_and_shape_inference(self):
        self.check_valid(self.model, self.output_shape)

    def check_gelu(self, g, erf):
        """Div by sqrt 2 -> Erf -> Add 1 -> Mul by the Div's input -> Mul 0.5; returns (input, output)."""
        div = g.producer[erf.input[0]]
        self.assertEqual(div.op_type, "Div")
        self.assertAlmostEqual(g.value(div.input[1]).item(), math.sqrt(2.0), places=6)
        add = g.only_consumer(erf.output[0])
        self.assertEqual((add.op_type, g.value(add.input[1]).item()), ("Add", 1.0))
        mul = g.only_consumer(add.output[0])
        self.assertEqual((mul.op_type, list(mul.input)), ("Mul", [div.input[0], add.output[0]]))
        half = g.only_consumer(mul.output[0])
        self.assertEqual((half.op_type, g.value(half.input[1]).item()), ("Mul", 0.5))
        for const in (div.input[1], add.input[1], half.input[1]):
            self.assertEqual((g.producer[const].op_type, g.value(const).dtype, g.value(const).shape),
                             ("Constant", np.float32, ()))
        return div.input[0], half.output[0]


class MelFrontend(ModelCase, unittest.TestCase):
    script, output_shape = "mel_frontend.py", [1, 80, 101]

    def audio(self, seed):
        """Noise and a 440 Hz tone after a quarter second of silence, [1, 1, 16000]."""
        rng = np.random.default_rng(seed)
        t = np.arange(16000) / 16000.0
        a = 0.1 * rng.normal(0, 1, 16000) + 0.5 * np.sin(2 * np.pi * 440.0 * t)
        a[:4000] = 0.0
        return a.reshape(1, 1, -1).astype(np.float32)

    def test_reflect_pad_as_constant_folding_leaves_it(self):
        (pad,) = self.g.nodes("Pad")
        self.assertEqual((pad.input[0], attr(pad, "mode")), ("audio", b"reflect"))
        chain = self.g.chain(pad.input[1], 6)
        self.assertEqual([n.op_type for n in chain], ["Cast", "Reshape", "Transpose", "Slice", "Reshape", "Concat"])
        concat = chain[-1]
        pads, zeros = (self.g.producer[name] for name in concat.input)
        self.assertEqual((pads.op_type, self.g.value(concat.input[0]).tolist()), ("Constant", [256, 256]))
        self.assertEqual(zeros.op_type, "ConstantOfShape")  # not folded
        self.assertEqual((self.g.producer[zeros.input[0]].op_type, self.g.value(zeros.input[0]).tolist()),
                         ("Constant", [4]))
        flip = self.g.nodes("Slice")[0]
        self.assertEqual([self.g.value(i).tolist() for i in flip.input[1:]], [[-1], [-INT64_MAX], [0], [-1]])
        # ONNX order: all begins, then all ends; only the time axis is padded.
        self.assertEqual(self.g.value(pad.input[1]).tolist(), [0, 0, 256, 0, 0, 256])
        self.assertNotIn("Shape", self.g.ops())

    def test_two_strided_convs_without_padding(self):
        convs = self.g.nodes("Conv")
        self.assertEqual([c.input[1] for c in convs], ["conv_real.weight", "conv_imag.weight"])
        for conv in convs:
            self.assertEqual(len(conv.input), 2)  # no bias
            self.assertEqual(self.g.producer[conv.input[0]].op_type, "Pad")
            self.assertEqual({a.name: helper.get_attribute_value(a) for a in conv.attribute},
                             {"dilations": [1], "group": 1, "kernel_shape": [512], "pads": [0, 0], "strides": [160]})
            self.assertEqual(self.g.inits[conv.input[1]].shape, (257, 1, 512))

    def test_conv_weights_are_the_windowed_one_sided_dft(self):
        frame = np.random.default_rng(3).normal(0, 1, 512)
        spectrum = np.fft.rfft(frame * (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(512) / 512)))
        real, imag = (self.g.inits[f"conv_{part}.weight"][:, 0, :].astype(np.float64) for part in ("real", "imag"))
        np.testing.assert_allclose(real @ frame, spectrum.real, atol=2e-4)
        np.testing.assert_allclose(imag @ frame, spectrum.imag, atol=2e-4)

    def test_mel_filters_are_slaney_triangles(self):
        """Written independently: each triangle interpolated between its
        three edges, scaled to unit area; edges equally spaced on Slaney's
        mel scale (linear below 1 kHz, log above) from 0 to 8 kHz."""
        def to_mel(hz):
            return hz * 3.0 / 200.0 if hz < 1000.0 else 15.0 + math.log(hz / 1000.0) / (math.log(6.4) / 27.0)

        def to_hz(mel):
            return mel * 200.0 / 3.0 if mel < 15.0 else 1000.0 * math.exp((mel - 15.0) * math.log(6.4) / 27.0)

        edges = [to_hz(m) for m in np.linspace(0.0, to_mel(8000.0), 82)]
        freqs = np.arange(257) * 16000.0 / 512
        expected = np.stack([np.interp(freqs, edges[i:i + 3], [0.0, 1.0, 0.0], left=0.0, right=0.0)
                             * 2.0 / (edges[i + 2] - edges[i]) for i in range(80)], axis=1)
        matmul = self.g.nodes("MatMul")[0]
        self.assertEqual(matmul.input[1], "mel_filters")
        np.testing.assert_allclose(self.g.inits["mel_filters"], expected, rtol=1e-5, atol=1e-8)

    def test_power_mel_log_and_dynamic_range_nodes(self):
        g = self.g
        pows = g.nodes("Pow")
        self.assertEqual([g.producer[p.input[0]].op_type for p in pows], ["Conv", "Conv"])
        self.assertEqual([g.value(p.input[1]).item() for p in pows], [2.0, 2.0])
        add = g.only_consumer(pows[0].output[0])
        self.assertEqual(list(add.input), [p.output[0] for p in pows])
        transpose = g.only_consumer(add.output[0])
        matmul = g.only_consumer(transpose.output[0])
        back = g.only_consumer(matmul.output[0])
        self.assertEqual([attr(transpose, "perm"), matmul.op_type, attr(back, "perm")],
                         [[0, 2, 1], "MatMul", [0, 2, 1]])
        clip = g.only_consumer(back.output[0])
        self.assertEqual((clip.op_type, clip.input[2]), ("Clip", ""))  # clamp(min=...): no max
        self.assertAlmostEqual(g.value(clip.input[1]).item(), 1e-10, delta=1e-16)
        log = g.only_consumer(clip.output[0])
        div = g.only_consumer(log.output[0])
        self.assertEqual((log.op_type, div.op_type), ("Log", "Div"))
        ln10 = g.value(div.input[1])
        self.assertEqual(ln10.shape, (1,))
        self.assertAlmostEqual(ln10.item(), math.log(10.0), places=6)
        reduce_max, maximum = g.consumers[div.output[0]]
        self.assertEqual((reduce_max.op_type, attr(reduce_max, "keepdims"), attr(reduce_max, "axes")),
                         ("ReduceMax", 0, None))
        sub = g.only_consumer(reduce_max.output[0])
        self.assertEqual((sub.op_type, g.value(sub.input[1]).item()), ("Sub", 8.0))
        self.assertEqual((maximum.op_type, list(maximum.input)), ("Max", [div.output[0], sub.output[0]]))
        plus, over = g.only_consumer(maximum.output[0]), g.producer["mel"]
        self.assertEqual([(n.op_type, g.value(n.input[1]).item()) for n in (plus, over)], [("Add", 4.0), ("Div", 4.0)])
        self.assertEqual(over.input[0], plus.output[0])

    def test_agrees_with_an_fft_reference_in_onnx_runtime(self):
        audio = self.audio(1)
        ref = numpy_audio.log_mel(audio, 512, 160, mel_frontend.mel_filters())
        self.assertAlmostEqual(ref.min(), ref.max() - 2.0)  # the silence sits on the 80 dB floor
        self.check_agrees_with_ort(self.path, {"audio": audio}, ref, "default")


class AudioEncoder(ModelCase, unittest.TestCase):
    script, output_shape = "audio_encoder.py", [1, 49, 768]

    def test_unsqueeze_then_seven_convs(self):
        g = self.g
        unsqueeze = g.producer[g.nodes("Conv")[0].input[0]]
        self.assertEqual((unsqueeze.op_type, unsqueeze.input[0], g.value(unsqueeze.input[1]).tolist()),
                         ("Unsqueeze", "audio", [1]))
        convs = g.nodes("Conv")
        self.assertEqual([attr(c, "kernel_shape") for c in convs], [[k] for k in audio_encoder.KERNELS])
        self.assertEqual([attr(c, "strides") for c in convs], [[s] for s in audio_encoder.STRIDES])
        for i, conv in enumerate(convs):
            self.assertEqual((attr(conv, "pads"), attr(conv, "dilations"), attr(conv, "group")), ([0, 0], [1], 1))
            self.assertEqual(list(conv.input[1:]), [f"conv_layers.{i}.conv.weight"])  # no bias
            self.assertEqual(g.inits[conv.input[1]].shape, (512, 1 if i == 0 else 512, audio_encoder.KERNELS[i]))

    def test_group_norm_after_the_first_conv_only(self):
        g = self.g
        (norm,) = g.nodes("InstanceNormalization")
        reshape = g.producer[norm.input[0]]
        conv0 = g.nodes("Conv")[0]
        self.assertEqual((reshape.input[0], g.value(reshape.input[1]).tolist(), attr(reshape, "allowzero")),
                         (conv0.output[0], [0, 512, -1], 0))
        self.assertEqual([g.value(i).tolist() for i in norm.input[1:]], [[1.0] * 512, [0.0] * 512])
        self.assertAlmostEqual(attr(norm, "epsilon"), 1e-5)
        back = g.only_consumer(norm.output[0])
        shape = g.producer[back.input[1]]
        self.assertEqual((back.op_type, shape.op_type, shape.input[0]), ("Reshape", "Shape", conv0.output[0]))
        mul = g.only_consumer(back.output[0])
        add = g.only_consumer(mul.output[0])
        params = audio_encoder.parameters(0)
        for node, op, kind in ((mul, "Mul", "weight"), (add, "Add", "bias")):
            self.assertEqual(node.op_type, op)
            self.assertTrue(node.input[1].startswith(f"onnx::{op}_"))
            np.testing.assert_array_equal(g.inits[node.input[1]], params[f"conv_layers.0.layer_norm.{kind}"][:, None])
        self.assertNotIn("conv_layers.0.layer_norm.weight", g.inits)  # only its folded form

    def test_gelu_after_every_conv(self):
        g = self.g
        erfs = g.nodes("Erf")
        self.assertEqual(len(erfs), 7)
        sources = [g.producer[self.check_gelu(g, erf)[0]].op_type for erf in erfs]
        self.assertEqual(sources, ["Add"] + ["Conv"] * 6)  # the first after GroupNorm's Add

    def test_layer_norm_and_projection(self):
        g = self.g
        (transpose,) = g.nodes("Transpose")
        self.assertEqual(attr(transpose, "perm"), [0, 2, 1])
        norm = g.only_consumer(transpose.output[0])
        self.assertEqual((norm.op_type, attr(norm, "axis"), list(norm.input[1:])),
                         ("LayerNormalization", -1, ["feature_projection.layer_norm.weight",
                                                     "feature_projection.layer_norm.bias"]))
        self.assertAlmostEqual(attr(norm, "epsilon"), 1e-5)
        add = g.producer["features"]
        matmul = g.producer[add.input[1]]
        self.assertEqual((add.input[0], matmul.input[0]), ("feature_projection.projection.bias", norm.output[0]))
        params = audio_encoder.parameters(0)
        np.testing.assert_array_equal(g.inits[matmul.input[1]], params["feature_projection.projection.weight"].T)

    def test_small_variant_agrees_with_onnx_runtime(self):
        path = self.generate("small", "--channels", "32", "--hidden", "48")
        model = onnx.load(path)
        self.check_valid(model, [1, 49, 48])
        self.assertEqual(Graph(model.graph).inits["conv_layers.1.conv.weight"].shape, (32, 32, 3))
        audio = (0.3 * np.random.default_rng(2).normal(0, 1, (1, 16000))).astype(np.float32)
        ref = numpy_audio.feature_encoder(audio_encoder.parameters(0, 32, 48), audio, audio_encoder.KERNELS,
                                          audio_encoder.STRIDES)
        self.check_agrees_with_ort(path, {"audio": audio}, ref, "small")

    def test_full_size_agrees_with_onnx_runtime(self):
        audio = (0.3 * np.random.default_rng(3).normal(0, 1, (1, 16000))).astype(np.float32)
        self.check_agrees_with_ort(self.path, {"audio": audio}, lambda: numpy_audio.feature_encoder(
            audio_encoder.parameters(0), audio, audio_encoder.KERNELS, audio_encoder.STRIDES), "full")


class SpeechTransformer(ModelCase, unittest.TestCase):
    script, output_shape = "speech_transformer.py", [1, 1500, 384]
    LAYERS, HEADS, POSITIONS, WIDTH = 4, 6, 1500, 384

    def test_conv_stem_gelu_and_positions(self):
        g = self.g
        convs = g.nodes("Conv")
        self.assertEqual([list(c.input[1:]) for c in convs], [["conv1.weight", "conv1.bias"],
                                                              ["conv2.weight", "conv2.bias"]])
        for conv, stride in zip(convs, (1, 2)):
            self.assertEqual({a.name: helper.get_attribute_value(a) for a in conv.attribute},
                             {"dilations": [1], "group": 1, "kernel_shape": [3], "pads": [1, 1], "strides": [stride]})
        erfs = g.nodes("Erf")
        self.assertEqual(len(erfs), 2 + self.LAYERS)
        self.assertEqual([self.check_gelu(g, erf)[0] for erf in erfs[:2]], [c.output[0] for c in convs])
        transpose = g.only_consumer(self.check_gelu(g, erfs[1])[1])
        add = g.only_consumer(transpose.output[0])
        self.assertEqual((attr(transpose, "perm"), add.op_type, add.input[1]),
                         ([0, 2, 1], "Add", "positional_embedding"))
        np.testing.assert_allclose(g.inits["positional_embedding"],
                                   speech_transformer.sinusoids(self.POSITIONS, self.WIDTH), atol=1e-6)

    def test_attention_as_whisper_writes_it(self):
        g = self.g
        scale = 64 ** -0.25
        for i in range(self.LAYERS):
            scope = f"/blocks.{i}/attn"
            mm = {part: next(n for n in g.nodes("MatMul") if n.name == f"{scope}/{part}/MatMul")
                  for part in ("query", "key", "value", "out")}
            for part, node in mm.items():
                user = g.only_consumer(node.output[0])
                if part == "key":  # no bias: straight into the head split
                    self.assertEqual(user.op_type, "Reshape")
                else:
                    self.assertEqual((user.op_type, user.input[0]), ("Add", f"blocks.{i}.attn.{part}.bias"))
            splits = {}
            for part, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])):
                head = mm[part].output[0] if part == "key" else g.only_consumer(mm[part].output[0]).output[0]
                reshape = g.only_consumer(head)
                self.assertEqual((g.value(reshape.input[1]).tolist(), attr(reshape, "allowzero")),
                                 ([1, self.POSITIONS, self.HEADS, -1], 0))
                transpose = g.only_consumer(reshape.output[0])
                self.assertEqual(attr(transpose, "perm"), perm)
                splits[part] = transpose.output[0]
            for part in ("query", "key"):  # both scaled by head_dim ** -0.25
                mul = g.only_consumer(splits[part])
                self.assertEqual(mul.op_type, "Mul")
                self.assertAlmostEqual(g.value(mul.input[1]).item(), scale, places=6)
                splits[part] = mul.output[0]
            scores = g.only_consumer(splits["query"])
            self.assertEqual((scores.op_type, list(scores.input)), ("MatMul", [splits["query"], splits["key"]]))
            softmax = g.only_consumer(scores.output[0])
            self.assertEqual((softmax.op_type, attr(softmax, "axis")), ("Softmax", -1))
            context = g.only_consumer(softmax.output[0])
            self.assertEqual(list(context.input), [softmax.output[0], splits["value"]])
            merge = g.only_consumer(context.output[0])
            reshape = g.only_consumer(merge.output[0])
            self.assertEqual((attr(merge, "perm"), g.value(reshape.input[1]).tolist()),
                             ([0, 2, 1, 3], [1, self.POSITIONS, self.WIDTH]))
            self.assertIs(g.only_consumer(reshape.output[0]), mm["out"])

    def test_pre_ln_blocks_and_counts(self):
        g = self.g
        ops = g.ops()
        self.assertEqual((ops["LayerNormalization"], ops["Softmax"], ops["MatMul"]),
                         (2 * self.LAYERS + 1, self.LAYERS, 8 * self.LAYERS))
        for norm in g.nodes("LayerNormalization"):
            self.assertEqual(attr(norm, "axis"), -1)
            self.assertAlmostEqual(attr(norm, "epsilon"), 1e-5)
        for i in range(self.LAYERS):
            attn_ln = next(n for n in g.nodes("LayerNormalization")
                           if n.name == f"/blocks.{i}/attn_ln/LayerNormalization")
            residual = [n for n in g.consumers[attn_ln.input[0]] if n.op_type == "Add"]
            self.assertEqual(len(residual), 1)  # x + attn(attn_ln(x))
            self.assertEqual(residual[0].name, f"/blocks.{i}/Add")
        self.assertEqual(g.producer["output"].name, "/ln_post/LayerNormalization")

    def test_tiny_variant_agrees_with_onnx_runtime(self):
        path = self.generate("tiny", "--layers", "2", "--positions", "50", "--d-model", "64", "--heads", "4")
        model = onnx.load(path)
        self.check_valid(model, [1, 50, 64])
        mel = np.random.default_rng(4).uniform(-1.0, 1.5, (1, 80, 100)).astype(np.float32)
        params = speech_transformer.parameters(0, speech_transformer.Config(80, 50, 64, 4, 2))
        ref = numpy_audio.whisper_encoder(params, mel, heads=4, layers=2)
        self.check_agrees_with_ort(path, {"mel": mel}, ref, "tiny")

    def test_full_size_agrees_with_onnx_runtime(self):
        mel = np.random.default_rng(5).uniform(-1.0, 1.5, (1, 80, 3000)).astype(np.float32)
        self.check_agrees_with_ort(self.path, {"mel": mel}, lambda: numpy_audio.whisper_encoder(
            speech_transformer.parameters(0), mel, heads=self.HEADS, layers=self.LAYERS), "full")


class SegmentationBlock(ModelCase, unittest.TestCase):
    script, output_shape = "segmentation_block.py", [1, 64, 320, 320]
    DILATIONS = [1, 1, 1, 1, 1, 2, 4, 8, 4, 2, 1, 1, 1, 1]

    def image(self, seed, size):
        return np.random.default_rng(seed).normal(0, 1, (1, 3, size, size)).astype(np.float32)

    def check_convs(self, g):
        convs = g.nodes("Conv")
        self.assertEqual([attr(c, "dilations") for c in convs], [[d, d] for d in self.DILATIONS])
        for conv, d in zip(convs, self.DILATIONS):
            self.assertEqual({a.name: helper.get_attribute_value(a) for a in conv.attribute},
                             {"dilations": [d, d], "group": 1, "kernel_shape": [3, 3], "pads": [d] * 4,
                              "strides": [1, 1]})
        self.assertEqual(g.ops()["Relu"], 14)
        return convs

    def test_batchnorm_folded_into_the_convs(self):
        g = self.g
        self.assertNotIn("BatchNormalization", g.ops())
        params = segmentation_block.parameters(0)
        for conv, (unit, c_in, c_out, _) in zip(self.check_convs(g), segmentation_block.units()):
            self.assertTrue(all(name.startswith("onnx::Conv_") for name in conv.input[1:]))
            self.assertEqual(g.only_consumer(conv.output[0]).op_type, "Relu")
            p = {k: params[f"{unit}.{k}"].astype(np.float64) for k in
                 ("conv_s1.weight", "conv_s1.bias", "bn_s1.weight", "bn_s1.bias", "bn_s1.running_mean",
                  "bn_s1.running_var")}
            s = p["bn_s1.weight"] / np.sqrt(p["bn_s1.running_var"] + 1e-5)
            np.testing.assert_allclose(g.inits[conv.input[1]], p["conv_s1.weight"] * s[:, None, None, None],
                                       rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(g.inits[conv.input[2]], (p["conv_s1.bias"] - p["bn_s1.running_mean"]) * s
                                       + p["bn_s1.bias"], rtol=1e-5, atol=1e-7)
            self.assertEqual(g.inits[conv.input[1]].shape, (c_out, c_in, 3, 3))

    def test_ceil_mode_pools(self):
        pools = self.g.nodes("MaxPool")
        self.assertEqual([p.name for p in pools], ["/pool1/MaxPool", "/pool2/MaxPool", "/pool3/MaxPool"])
        for pool in pools:
            self.assertEqual(len(pool.output), 1)  # the indices output dropped
            self.assertEqual({a.name: helper.get_attribute_value(a) for a in pool.attribute},
                             {"ceil_mode": 1, "dilations": [1, 1], "kernel_shape": [2, 2], "pads": [0, 0, 0, 0],
                              "strides": [2, 2]})

    def test_upsample_like_as_resize_to_traced_sizes(self):
        g = self.g
        resizes = g.nodes("Resize")
        self.assertEqual(len(resizes), 3)
        for resize in resizes:
            self.assertEqual({a.name: helper.get_attribute_value(a) for a in resize.attribute},
                             {"coordinate_transformation_mode": b"half_pixel", "cubic_coeff_a": -0.75,
                              "mode": b"linear", "nearest_mode": b"floor"})
            self.assertEqual(list(resize.input[1:3]), ["", ""])  # no roi, no scales
            sizes = g.producer[resize.input[3]]
            head, cast = (g.producer[name] for name in sizes.input)
            self.assertEqual((sizes.op_type, attr(sizes, "axis"), cast.op_type, attr(cast, "to")),
                             ("Concat", 0, "Cast", onnx.TensorProto.INT64))
            self.assertEqual(g.upstream(head.output[0], 2), ["Slice", "Shape"])
            self.assertEqual(g.producer[head.input[0]].input[0], resize.input[0])  # N, C of the source
            self.assertEqual([g.value(i).tolist() for i in head.input[1:]], [[0], [2], [0]])
            hw = g.producer[cast.input[0]]
            self.assertEqual((hw.op_type, attr(hw, "axis")), ("Concat", 0))
            targets = set()
            for unsqueeze, axis in zip((g.producer[name] for name in hw.input), (2, 3)):
                self.assertEqual((unsqueeze.op_type, g.value(unsqueeze.input[1]).tolist()), ("Unsqueeze", [0]))
                gather = g.producer[unsqueeze.input[0]]
                self.assertEqual((gather.op_type, attr(gather, "axis"), g.value(gather.input[1]).tolist()),
                                 ("Gather", 0, axis))  # a scalar index: a scalar size
                shape = g.producer[gather.input[0]]
                self.assertEqual(shape.op_type, "Shape")
                targets.add(shape.input[0])
            # the target is the skip tensor concatenated with the upsampled one
            (target,) = targets
            concat = g.only_consumer(resize.output[0])
            self.assertEqual((concat.op_type, attr(concat, "axis"), list(concat.input)),
                             ("Concat", 1, [resize.output[0], target]))

    def test_skip_concats_and_residual(self):
        g = self.g
        channel_concats = [c for c in g.nodes("Concat") if attr(c, "axis") == 1]
        self.assertEqual(len(channel_concats), 6)
        (add,) = g.nodes("Add")
        self.assertEqual([g.producer[i].name for i in add.input],
                         ["/rebnconv1d/relu_s1/Relu", "/rebnconvin/relu_s1/Relu"])
        self.assertEqual(add.output[0], "output")

    def test_batchnorm_variant(self):
        path = self.generate("batchnorm37", "--size", "37", "--batchnorm")
        model = onnx.load(path)
        self.check_valid(model, [1, 64, 37, 37])
        g = Graph(model.graph)
        norms = g.nodes("BatchNormalization")
        self.assertEqual(len(norms), 14)
        for conv, norm, (unit, _, _, _) in zip(self.check_convs(g), norms, segmentation_block.units()):
            self.assertEqual(list(conv.input[1:]), [f"{unit}.conv_s1.weight", f"{unit}.conv_s1.bias"])
            self.assertEqual(list(norm.input), [conv.output[0]] + [f"{unit}.bn_s1.{k}" for k in
                                                                   ("weight", "bias", "running_mean", "running_var")])
            self.assertEqual(len(norm.output), 1)
            self.assertEqual(attr(norm, "training_mode"), 0)
            self.assertAlmostEqual(attr(norm, "epsilon"), 1e-5)
            self.assertAlmostEqual(attr(norm, "momentum"), 0.9, places=6)
        image = self.image(6, 37)
        ref = numpy_audio.rsu_block(segmentation_block.parameters(0), image)
        self.check_agrees_with_ort(path, {"input": image}, ref, "batchnorm37")

    def test_small_variant_agrees_with_onnx_runtime(self):
        path = self.generate("size37", "--size", "37")
        self.check_valid(onnx.load(path), [1, 64, 37, 37])
        image = self.image(7, 37)
        ref = numpy_audio.rsu_block(segmentation_block.parameters(0), image)
        self.check_agrees_with_ort(path, {"input": image}, ref, "size37")

    def test_full_size_agrees_with_onnx_runtime(self):
        image = self.image(8, 320)
        self.check_agrees_with_ort(self.path, {"input": image}, lambda: numpy_audio.rsu_block(
            segmentation_block.parameters(0), image), "full")


class ReferenceLayers(unittest.TestCase):
    """numpy_audio's layers against direct sums on small inputs."""

    def test_conv1d_is_a_strided_dilated_correlation(self):
        rng = np.random.default_rng(0)
        x, w, b = rng.normal(size=(1, 2, 11)), rng.normal(size=(3, 2, 3)), rng.normal(size=3)
        got = numpy_audio.conv1d(x, w, b, stride=2, pad=1, dilation=2)
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
        want = np.array([[[b[m] + sum(w[m, c, k] * xp[0, c, 2 * t + 2 * k] for c in range(2) for k in range(3))
                           for t in range(got.shape[2])] for m in range(3)]])
        self.assertEqual(got.shape, (1, 3, 5))
        np.testing.assert_allclose(got, want, atol=1e-12)

    def test_conv2d_with_dilation_keeps_the_size(self):
        rng = np.random.default_rng(1)
        x, w = rng.normal(size=(1, 2, 7, 6)), rng.normal(size=(2, 2, 3, 3))
        got = numpy_audio.conv2d(x, w, pad=2, dilation=2)
        xp = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
        want = np.zeros((1, 2, 7, 6))
        for m, i, j in np.ndindex(2, 7, 6):
            want[0, m, i, j] = sum(w[m, c, u, v] * xp[0, c, i + 2 * u, j + 2 * v]
                                   for c in range(2) for u in range(3) for v in range(3))
        np.testing.assert_allclose(got, want, atol=1e-12)

    def test_ceil_mode_pooling_keeps_the_partial_last_window(self):
        x = np.arange(25.0).reshape(1, 1, 5, 5)
        got = numpy_audio.max_pool2d_ceil(x)
        np.testing.assert_array_equal(got[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])
        self.assertEqual([numpy_audio.pooled_size(n) for n in (1, 2, 37, 19, 10)], [1, 1, 19, 10, 5])

    def test_bilinear_resize_uses_half_pixel_centres(self):
        x = np.array([0.0, 1.0]).reshape(1, 1, 1, 2)
        np.testing.assert_allclose(numpy_audio.resize_bilinear(x, 1, 4)[0, 0, 0], [0.0, 0.25, 0.75, 1.0])
        y = np.random.default_rng(2).normal(size=(1, 2, 5, 3))
        np.testing.assert_allclose(numpy_audio.resize_bilinear(y, 5, 3), y)
        np.testing.assert_allclose(numpy_audio.resize_bilinear(y, 10, 6)[:, :, 1::2, 1::2][:, :, :4, :2],
                                   0.75 * 0.75 * y[:, :, :4, :2] + 0.75 * 0.25 * (y[:, :, 1:5, :2] + y[:, :, :4, 1:3])
                                   + 0.25 * 0.25 * y[:, :, 1:5, 1:3])

    def test_norms_and_gelu(self):
        rng = np.random.default_rng(3)
        x = rng.normal(size=(1, 4, 9))
        one_group = numpy_audio.group_norm(x, 1, np.ones(4), np.zeros(4))
        np.testing.assert_allclose(one_group, (x - x.mean()) / np.sqrt(x.var() + 1e-5))
        per_channel = numpy_audio.group_norm(x, 4, np.ones(4), np.zeros(4))
        np.testing.assert_allclose(per_channel, numpy_audio.layer_norm(x, np.ones(9), np.zeros(9)))
        self.assertAlmostEqual(float(numpy_audio.gelu(np.array(1.0))), 0.8413447460685429, places=12)
        self.assertEqual(float(numpy_audio.gelu(np.array(0.0))), 0.0)


if __name__ == "__main__":
    unittest.main()
