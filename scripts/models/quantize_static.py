#!/usr/bin/python3
"""Writes a statically quantized QDQ ONNX model the way ONNX Runtime's
quantization tool writes it: quant_pre_process, then quantize_static with
quant_format=QDQ, per_channel=True, activation_type=QUInt8 (or QInt8 with
--activation-type int8: ONNX Runtime's S8S8 form, asymmetric int8
activations), weight_type=QInt8, calibrate_method=MinMax and every other
argument at its default.

Pre-processing is what quant_pre_process does to these models: ONNX Runtime
loads every Constant node as an initializer named after its output; its
basic-level graph optimizer folds each Conv + BatchNormalization pair into
the Conv (new initializers ConvBnFusion_W_<weight> and ConvBnFusion_BN_B_<bn
bias>; the Conv takes over the BatchNormalization's output name), shares
equal small initializers (ConstantSharing: the first of each value in its
initializer map's order stays, the rest are read through it and dropped),
fills in every attribute's schema default, writes the nodes in its own
topological order and imports the operator domains ONNX Runtime 1.30
registers; then ONNX shape inference and the "onnx.quant.pre_process" mark.

Calibration runs the pre-processed float model on --calibration random inputs
(uniform in [-1, 1), seeded by --calibration-seed) with the numpy interpreter
in numpy_runtime.py and keeps each tensor's minimum and maximum, as the MinMax
calibrator does with its ReduceMin / ReduceMax outputs.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/quantize_static.py --model resnet18 -o resnet18_qdq.onnx
        [--seed 0] [--batch 1] [--calibration 8] [--calibration-seed 1] [--activation-type uint8|int8]
        [--size S] [--width W]
--model is resnet18, convnet or mobilenet_v2 (generated here with --seed,
--batch, and --size for the last two, --width for mobilenet_v2) or the path
of a float .onnx model.

A Clip (mobilenet_v2's ReLU6) or Relu whose input only it reads is folded
away as ONNX Runtime's QDQRemovableActivation does: its input takes the
output's calibrated range and the producer writes the output directly, so a
Conv + Clip pair becomes one Conv followed by one Q/DQ pair, clamping at the
calibrated [0, max] instead of [0, 6].
"""
import argparse
import copy
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_runtime  # noqa: E402
import quant_common as qc  # noqa: E402

# Every operator domain ONNX Runtime 1.30's CPU build registers, in the order
# its optimizer wrote them into a saved model (kept after the model's own).
ORT_OPSET_IMPORTS = [("", 13), ("ai.onnx.ml", 5), ("ai.onnx.training", 1), ("ai.onnx.preview", 1),
                     ("com.microsoft", 1), ("ai.onnx.preview.training", 1), ("com.microsoft.experimental", 1),
                     ("com.microsoft.nchwc", 1), ("org.pytorch.aten", 1)]

# quantize_static's default op_types_to_quantize: the union of the QLinear
# and QDQ operator registries (registry.py).
OP_TYPES_TO_QUANTIZE = {
    "ArgMax", "Conv", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "LeakyRelu", "Sigmoid", "MaxPool",
    "GlobalAveragePool", "Split", "Pad", "Reshape", "Squeeze", "Unsqueeze", "Resize", "AveragePool", "Concat",
    "Softmax", "Where", "Gather", "Transpose", "EmbedLayerNormalization", "ConvTranspose", "Slice",
    "GatherElements", "InstanceNormalization", "LayerNormalization", "BatchNormalization"}
# Ops whose output shares the input's scale and zero point (QDQDirect8BitOp),
# with the opset each needs at least.
DIRECT_8BIT = {"Reshape": 1, "Transpose": 1, "Squeeze": 1, "Unsqueeze": 1, "AveragePool": 1, "Slice": 1,
               "MaxPool": 12, "Resize": 11}
NOT_REIMPLEMENTED = {"Split", "Pad", "Gather", "GatherElements", "Where"}


# ---- pre-processing: what ONNX Runtime's basic optimizer does to these models ----

def ort_topological_order(nodes):
    """ONNX Runtime's GraphViewer order: a depth-first walk up from the nodes
    nobody reads, each node placed after its producers, producers stacked in
    node-index order (so the latest one is walked first)."""
    producer = {out: i for i, node in enumerate(nodes) for out in node.output}
    inputs_of = [sorted({producer[name] for name in node.input if name in producer}) for node in nodes]
    read = {j for lst in inputs_of for j in lst}
    stack = [(i, False) for i in range(len(nodes)) if i not in read]
    visited, order = set(), []
    while stack:
        idx, leave = stack.pop()
        if leave:
            order.append(idx)
            continue
        if idx in visited:
            continue
        visited.add(idx)
        stack.append((idx, True))
        stack.extend((j, False) for j in inputs_of[idx] if j not in visited)
    return [nodes[i] for i in order]


def fold_batch_norms(graph):
    """ConvBNFusion: W' = W * s and B' = B_bn - mean * s (or (B - mean) * s +
    B_bn with a Conv bias), s = gamma / sqrt(var + epsilon), all in float32."""
    inits = {i.name: i for i in graph.initializer}
    outputs = {o.name for o in graph.output}
    removed = set()
    for conv in list(graph.node):
        readers = qc.consumers(graph, conv.output[0])
        if conv.op_type != "Conv" or conv.domain or len(readers) != 1 or conv.output[0] in outputs:
            continue
        bn = readers[0]
        eps = [a for a in bn.attribute if a.name == "epsilon"]
        if (bn.op_type != "BatchNormalization" or bn.output[0] in outputs or len(bn.output) != 1
                or bn.input[0] != conv.output[0] or not all(n in inits for n in bn.input[1:5])
                or conv.input[1] not in inits or (len(conv.input) > 2 and conv.input[2] not in inits)):
            continue
        gamma, beta, mean, var = (numpy_helper.to_array(inits[n]) for n in bn.input[1:5])
        w = numpy_helper.to_array(inits[conv.input[1]])
        if w.dtype != np.float32 or w.shape[0] != gamma.shape[0]:
            continue
        epsilon = np.float32(eps[0].f if eps else 1e-5)
        s = gamma / np.sqrt(var + epsilon)
        w = w * s.reshape((-1,) + (1,) * (w.ndim - 1))
        if len(conv.input) > 2:
            b = (numpy_helper.to_array(inits[conv.input[2]]) - mean) * s + beta
        else:
            b = beta - mean * s
        w_name, b_name = "ConvBnFusion_W_" + conv.input[1], "ConvBnFusion_BN_B_" + bn.input[2]
        if w_name in inits or b_name in inits:
            raise ValueError(f"fusing {conv.name!r}: {w_name!r} or {b_name!r} exists already")
        for arr, name in ((w, w_name), (b, b_name)):
            inits[name] = numpy_helper.from_array(arr.astype(np.float32), name)
            graph.initializer.append(inits[name])
        removed.update(list(conv.input[1:]) + list(bn.input[1:]))
        del conv.input[1:]
        conv.input.extend([w_name, b_name])
        conv.output[0] = bn.output[0]
        graph.node.remove(bn)
    unused = removed - {name for node in graph.node for name in node.input}
    for init in [i for i in graph.initializer if i.name in unused]:
        graph.initializer.remove(init)


def add_default_attributes(node, opset):
    """Every optional attribute with a schema default that the node leaves
    out, as ONNX Runtime adds them when it resolves the graph; sorted by name."""
    schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    present = {a.name for a in node.attribute}
    attrs = list(node.attribute)
    for name, attr in schema.attributes.items():
        if name not in present and attr.default_value.type != onnx.AttributeProto.UNDEFINED:
            default = copy.deepcopy(attr.default_value)
            default.name = name
            attrs.append(default)
    del node.attribute[:]
    node.attribute.extend(sorted(attrs, key=lambda a: a.name))


def constants_to_initializers(graph):
    """What ONNX Runtime does with Constant nodes when it loads a graph: each
    becomes an initializer named after its output, after the graph's own."""
    for node in [n for n in graph.node if n.op_type == "Constant" and n.domain in ("", "ai.onnx")]:
        attr = node.attribute[0]
        if attr.name == "value":
            tensor = copy.deepcopy(attr.t)
        elif attr.name in ("value_float", "value_floats", "value_int", "value_ints"):
            value = helper.get_attribute_value(attr)
            tensor = numpy_helper.from_array(np.asarray(value, np.int64 if "int" in attr.name else np.float32))
        else:
            raise NotImplementedError(f"Constant {node.name!r} with a {attr.name} attribute")
        tensor.name = node.output[0]
        graph.initializer.append(tensor)
        graph.node.remove(node)


# ConstantSharing walks ONNX Runtime's initializers in the iteration order
# of its std::unordered_map<std::string, ...>, filled in the order the graph
# lists them (Constant nodes' values after the initializers); in ONNX Runtime
# 1.30 the first initializer of each value stays and the others are read
# through it (checked against onnxruntime-node 1.30.0's basic optimizer).
# libstdc++'s order is reproduced here: std::hash<std::string> (_Hash_bytes,
# 64-bit), buckets growing through _BUCKET_COUNTS (_Prime_rehash_policy, one
# insertion at a time, max load factor 1), a new element first in its bucket,
# or first in the list if its bucket is empty.
_HASH_MUL, _MASK64 = 0xc6a4a7935bd1e995, (1 << 64) - 1
_BUCKET_COUNTS = [13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933, 351061,
                  712697, 1447153, 2938679, 5967347, 12117689]
SHARE_MAX_ELEMENTS = 8  # ConstantSharing::TENSOR_ELEM_COUNT_THRESHOLD
SHARE_TYPES = {TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64}


def libstdcxx_string_hash(text):
    """std::hash<std::string> of GCC's libstdc++ on a 64-bit target (_Hash_bytes, seed 0xc70f6907)."""
    data = text.encode()

    def mul(v):
        return (v * _HASH_MUL) & _MASK64

    def shift_mix(v):
        return v ^ (v >> 47)

    whole = len(data) & ~7
    h = 0xc70f6907 ^ mul(len(data))
    for i in range(0, whole, 8):
        h = mul(h ^ mul(shift_mix(mul(int.from_bytes(data[i:i + 8], "little")))))
    if len(data) & 7:
        h = mul(h ^ int.from_bytes(data[whole:], "little"))
    return shift_mix(mul(shift_mix(h)))


def unordered_map_order(keys):
    """The iteration order of a libstdc++ std::unordered_map after inserting
    distinct `keys` in turn: a singly linked list from a head (None), each
    bucket known by the node before its first one (its `before`)."""
    hashes = {k: libstdcxx_string_hash(k) for k in keys}
    nxt, before = {None: None}, {}
    counts = iter(_BUCKET_COUNTS)
    buckets, size = next(counts), 0

    def link(key):  # _M_insert_bucket_begin, and each step of _M_rehash_aux
        b = hashes[key] % buckets
        if b in before:
            nxt[key], nxt[before[b]] = nxt[before[b]], key
        else:
            nxt[key], nxt[None] = nxt[None], key
            if nxt[key] is not None:
                before[hashes[nxt[key]] % buckets] = key
            before[b] = None

    for key in keys:
        if size + 1 > buckets:
            buckets, node, nxt[None], before = next(counts), nxt[None], None, {}
            while node is not None:
                following = nxt[node]
                link(node)
                node = following
        link(key)
        size += 1
    order, node = [], nxt[None]
    while node is not None:
        order.append(node)
        node = nxt[node]
    return order


def share_constants(graph, map_order):
    """ConstantSharing: equal initializers of up to 8 elements and a shared
    type, read by nodes and not graph inputs or outputs, are all read through
    the first of them in `map_order`; the others are dropped."""
    bound = {i.name for i in graph.input} | {o.name for o in graph.output}
    readers = {name for node in graph.node for name in node.input}
    inits = {i.name: i for i in graph.initializer}
    first, replace = {}, {}
    for name in map_order:
        init = inits.get(name)
        if (init is None or name in bound or name not in readers or init.data_type not in SHARE_TYPES
                or not 0 < int(np.prod(init.dims)) <= SHARE_MAX_ELEMENTS):
            continue
        key = (init.data_type, tuple(init.dims), numpy_helper.to_array(init).tobytes())
        replace[name] = first.setdefault(key, name)
    for node in graph.node:
        for i, name in enumerate(node.input):
            node.input[i] = replace.get(name, name)
    for name, kept in replace.items():
        if kept != name:
            graph.initializer.remove(inits[name])


def preprocess(model):
    """quant_pre_process(model) as it comes out for these models."""
    model = copy.deepcopy(model)
    graph = model.graph
    constants_to_initializers(graph)
    loaded = [i.name for i in graph.initializer]
    fold_batch_norms(graph)
    # The fusion adds its initializers to the map before the unused ones go.
    known = set(loaded)
    added = [i.name for i in graph.initializer if i.name not in known]
    share_constants(graph, unordered_map_order(loaded + added))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    for node in graph.node:
        add_default_attributes(node, opset)
    ordered = ort_topological_order(list(graph.node))
    del graph.node[:]
    graph.node.extend(ordered)
    present = {o.domain for o in model.opset_import}
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in ORT_OPSET_IMPORTS if d not in present)
    del graph.value_info[:]
    model = onnx.shape_inference.infer_shapes(model)
    qc.set_metadata(model, "onnx.quant.pre_process", "onnxruntime.quant")
    return model


# ---- MinMax calibration ----

def tensors_to_calibrate(model, op_types):
    """Float inputs and outputs (not initializers) of the nodes to quantize."""
    types = qc.tensor_types(model)
    inits = {i.name for i in model.graph.initializer}
    return {name for node in model.graph.node if node.op_type in op_types
            for name in list(node.input) + list(node.output)
            if types.get(name) in (TensorProto.FLOAT, TensorProto.FLOAT16) and name not in inits}


def calibration_inputs(model, count, seed):
    """`count` feeds of uniform [-1, 1) float32 values for the graph inputs."""
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = []
    for _ in range(count):
        feed = {}
        for inp in model.graph.input:
            if inp.name not in inits:
                shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
                feed[inp.name] = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        feeds.append(feed)
    return feeds


def calibrate(model, feeds, op_types=OP_TYPES_TO_QUANTIZE):
    """{tensor: (min, max)} in float32 over all feeds."""
    wanted = tensors_to_calibrate(model, op_types)
    ranges = {}

    def observe(name, value):
        if name in wanted:
            lo, hi = np.float32(np.nanmin(value)), np.float32(np.nanmax(value))
            old = ranges.get(name, (lo, hi))
            ranges[name] = (min(old[0], lo), max(old[1], hi))

    for feed in feeds:
        numpy_runtime.run(model, feed, observe)
    return ranges


# ---- the QDQ quantizer ----

class QDQQuantizer:
    """QDQQuantizer.quantize_model for uint8 (or int8) activations and int8 weights."""

    def __init__(self, model, ranges, per_channel=True, op_types=OP_TYPES_TO_QUANTIZE,
                 activation_type=TensorProto.UINT8):
        self.model = model
        self.graph = model.graph
        self.per_channel = per_channel
        self.activation_type = activation_type
        self.op_types = op_types
        self.opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        self.types = qc.tensor_types(model)
        self.ranges = dict(ranges)
        self.tensors = {}  # name -> {"weight": bool, "axis": int|None, "provider": (input, node)|None}
        self.biases = {}  # name -> (node name, input, weight, beta)
        self.to_remove = []
        self.done = {}  # name -> (scale name, zero point name) once Q/DQ nodes exist
        self.adjust_ranges()
        self.params = {t: qc.compute_scale_zp(lo, hi, activation_type, False) for t, (lo, hi) in self.ranges.items()}

    def adjust_ranges(self):
        """A Relu/Clip input read by nothing else takes the output's range; Softmax outputs get [0, 1]."""
        for node in self.graph.node:
            if node.op_type not in self.op_types:
                continue
            if node.op_type in ("Relu", "Clip"):
                if (len(qc.consumers(self.graph, node.input[0])) == 1 and node.input[0] in self.ranges
                        and node.output[0] in self.ranges):
                    self.ranges[node.input[0]] = self.ranges[node.output[0]]
            elif node.op_type == "Softmax":
                self.ranges[node.output[0]] = (np.float32(0.0), np.float32(1.0))

    def quantizable(self, name):
        init = qc.find_initializer(self.graph, name)
        elem = init.data_type if init is not None else self.types.get(name)
        return elem in (TensorProto.FLOAT, TensorProto.FLOAT16)

    def mark(self, name, weight=False, axis=None, provider=None):
        if not self.quantizable(name):
            return
        if provider is not None or axis is not None:
            self.tensors[name] = {"weight": weight, "axis": axis, "provider": provider}
        elif name not in self.tensors:
            self.tensors[name] = {"weight": weight, "axis": None, "provider": None}

    def mark_weight(self, name, default_axis):
        """Per channel along default_axis where the weight is an initializer of
        high enough rank, else per tensor."""
        init = qc.find_initializer(self.graph, name)
        rank = len(init.dims) if init is not None else 0
        if self.per_channel and -rank <= default_axis < rank:
            self.mark(name, weight=True, axis=default_axis % rank)
        else:
            self.mark(name, weight=True)

    def mark_bias(self, node, bias, beta=1.0):
        init = qc.find_initializer(self.graph, bias)
        if init is None or init.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16):
            return
        if bias in self.biases:  # a bias shared by two nodes is duplicated for the second
            prefix = [i.name[len(bias):] for i in self.graph.initializer if i.name.startswith(bias)]
            suffix = max([int(s) for s in prefix if s.isdigit()] + [-1]) + 1
            copy_ = copy.deepcopy(init)
            copy_.name = f"{bias}{suffix}"
            self.graph.initializer.append(copy_)
            for i, name in enumerate(node.input):
                if name == bias:
                    node.input[i] = copy_.name
            bias = copy_.name
        self.biases[bias] = (node.name, node.input[0], node.input[1], beta)

    def is_marked(self, name):
        return name in self.tensors or name in self.biases

    def quantize_node(self, node):
        op = node.op_type
        if op in ("Conv", "ConvTranspose"):
            self.mark(node.input[0])
            self.mark(node.output[0])
            self.mark_weight(node.input[1], 0 if op == "Conv" else 1)
            if len(node.input) == 3:
                self.mark_bias(node, node.input[2])
        elif op == "Gemm":
            attrs = {a.name: a for a in node.attribute}
            self.mark(node.input[0])
            self.mark(node.output[0])
            trans_b = "transB" in attrs and helper.get_attribute_value(attrs["transB"]) > 0
            self.mark_weight(node.input[1], 0 if trans_b else 1)
            if len(node.input) == 3 and qc.find_initializer(self.graph, node.input[2]) is not None:
                self.mark_bias(node, node.input[2], helper.get_attribute_value(attrs["beta"]) if "beta" in attrs else 1.0)
                if "beta" in attrs:
                    attrs["beta"].f = 1.0
        elif op == "MatMul":
            for name in list(node.input) + list(node.output):
                if qc.find_initializer(self.graph, name) is not None:
                    self.mark_weight(name, 1)
                else:
                    self.mark(name)
        elif op in ("Relu", "Clip"):
            if not self.is_marked(node.input[0]):
                return
            if not self.replace_upstream_output(node.input[0], node.output[0]):
                self.mark(node.input[0])
            else:
                self.to_remove.append(node)
            self.mark(node.output[0])
        elif op in DIRECT_8BIT:
            if self.opset >= DIRECT_8BIT[op] and self.is_marked(node.input[0]):
                self.mark(node.output[0], provider=(node.input[0], node.name))
        elif op in ("InstanceNormalization", "LayerNormalization", "BatchNormalization"):
            self.mark(node.input[0])
            if qc.find_initializer(self.graph, node.input[1]) is not None:
                self.mark_weight(node.input[1], 1)
            else:
                self.mark(node.input[1])
            if len(node.input) > 2 and node.input[2]:
                self.mark_bias(node, node.input[2])
            for name in node.output:
                self.mark(name)
        elif op in NOT_REIMPLEMENTED:
            raise NotImplementedError(f"QDQ quantization of {op} (node {node.name!r}) is not reimplemented here")
        else:
            for name in list(node.input) + list(node.output):
                self.mark(name)

    def replace_upstream_output(self, upstream, output):
        """The Relu/Clip folding: the producer writes the activation's output directly."""
        if (output in self.params and upstream in self.params and len(qc.consumers(self.graph, upstream)) == 1
                and upstream not in {o.name for o in self.graph.output}
                and upstream not in {i.name for i in self.graph.input}):
            qc.replace_output_of_all_nodes(self.graph, upstream, output)
            self.tensors.pop(upstream, None)
            return True
        return False

    def initializer_params(self):
        """(zero point, scale, axis) of every marked initializer; per-channel weights are symmetric."""
        params = {}
        for name, info in self.tensors.items():
            init = qc.find_initializer(self.graph, name)
            if init is None:
                continue
            qtype = TensorProto.INT8 if info["weight"] else self.activation_type
            symmetric = info["weight"]  # WeightSymmetric defaults to True for int8, ActivationSymmetric to False
            zp, scale = qc.weight_params(numpy_helper.to_array(init), qtype, symmetric, info["axis"])
            params[name] = (zp, scale, info["axis"], qtype)
        return params

    def adjust_weight_scales(self, wparams):
        """Widens a symmetric int8 weight scale where input_scale * weight_scale
        would push the int32 bias out of range (QDQDisableWeightAdjustForInt32Bias off)."""
        qrange = float(np.iinfo(np.int32).max) - float(np.iinfo(np.int32).min + 1)
        for bias, (_, inp, weight, _) in self.biases.items():
            if inp not in self.params or inp not in self.tensors or weight not in wparams:
                continue
            zp, scale, axis, qtype = wparams[weight]
            if qtype != TensorProto.INT8 or zp.any():
                continue
            data = qc.initializer_array(self.graph, bias)
            input_scale = float(self.params[inp][1])
            if axis is None:
                absmax = max(abs(min(float(data.min()), 0.0)), abs(max(float(data.max()), 0.0)))
                channels = [(None, absmax)]
            else:
                channels = [(i, abs(float(data[i]))) for i in range(scale.shape[0])]
            for i, absmax in channels:
                smallest = 1.0001 * (2.0 * absmax) / qrange
                current = float(scale if i is None else scale[i])
                candidate = input_scale * current
                if 0.0 < candidate < smallest:
                    new = np.float32(current * (smallest / candidate))
                    if i is None:
                        scale = np.array(new, dtype=np.float32)
                    else:
                        scale[i] = new
            wparams[weight] = (zp, scale, axis, qtype)

    def add_qdq(self, name, scale, zp):
        graph = self.graph
        source, dq_out = name, qc.dq_output(name)
        if name in {o.name for o in graph.output}:
            source, dq_out = qc.q_input(name), name
            qc.replace_output_of_all_nodes(graph, name, source)
        else:
            qc.replace_input_of_all_nodes(graph, name, dq_out)
        graph.node.extend([
            helper.make_node("QuantizeLinear", [source, scale, zp], [qc.q_output(name)], qc.q_suffix(name)),
            helper.make_node("DequantizeLinear", [qc.q_output(name), scale, zp], [dq_out], qc.dq_suffix(name))])
        self.done[name] = (scale, zp)

    def quantize_weight(self, name, zp, scale, axis, qtype):
        graph = self.graph
        data = qc.initializer_array(graph, name)
        qc.add_initializer(graph, qc.make_scalar_or_vector(name + "_zero_point", qtype, zp))
        qc.add_initializer(graph, qc.make_scalar_or_vector(name + "_scale", TensorProto.FLOAT, scale))
        q = qc.quantize_array(data, scale, zp, qtype) if axis is None else \
            qc.quantize_per_channel(data, scale, zp, axis, qtype)
        qc.add_initializer(graph, numpy_helper.from_array(q, name + "_quantized"))
        qc.replace_input_of_all_nodes(graph, name, qc.dq_output(name))
        graph.node.append(helper.make_node(
            "DequantizeLinear", [name + "_quantized", name + "_scale", name + "_zero_point"], [qc.dq_output(name)],
            qc.dq_suffix(name), axis=axis))
        self.done[name] = (name + "_scale", name + "_zero_point")

    def quantize_bias(self, bias, node_name, inp, weight, beta):
        graph = self.graph
        weight_scale = qc.initializer_array(graph, self.done[weight][0])
        input_scale = qc.initializer_array(graph, self.done[inp][0])
        q, scale = qc.quantize_bias(qc.initializer_array(graph, bias), input_scale, weight_scale, beta)
        qc.remove_initializer(graph, bias)
        name = bias + "_quantized"
        graph.initializer.append(numpy_helper.from_array(q, name))
        graph.initializer.append(numpy_helper.from_array(scale, name + "_scale"))
        if scale.size > 1:
            graph.initializer.append(numpy_helper.from_array(np.zeros(scale.shape, np.int32), name + "_zero_point"))
        else:
            graph.initializer.append(helper.make_tensor(name + "_zero_point", TensorProto.INT32, [], [0]))
        graph.node.append(helper.make_node(
            "DequantizeLinear", [name, name + "_scale", name + "_zero_point"], [bias], qc.dq_suffix(bias),
            axis=0 if scale.size > 1 else None))

    def quantize_model(self):
        for node in list(self.graph.node):
            if node.op_type in self.op_types:
                self.quantize_node(node)
        wparams = self.initializer_params()
        self.adjust_weight_scales(wparams)
        for name, info in list(self.tensors.items()):
            if info["provider"] is not None:
                continue
            if name in wparams:
                self.quantize_weight(name, *wparams[name])
            elif name in self.params:
                zp, scale = self.params[name]
                qtype = self.activation_type
                qc.add_initializer(self.graph, qc.make_scalar_or_vector(name + "_zero_point", qtype, zp))
                qc.add_initializer(self.graph, qc.make_scalar_or_vector(name + "_scale", TensorProto.FLOAT, scale))
                self.add_qdq(name, name + "_scale", name + "_zero_point")
            else:
                raise ValueError(f"no calibration range for tensor {name!r}")
            del self.tensors[name]
        while self.tensors:
            before = len(self.tensors)
            for name, info in list(self.tensors.items()):
                if info["provider"][0] in self.done:
                    del self.tensors[name]
                    self.add_qdq(name, *self.done[info["provider"][0]])
            if len(self.tensors) == before:
                raise ValueError(f"tensors share parameters with unquantized ones: {sorted(self.tensors)}")
        for bias, (node_name, inp, weight, beta) in self.biases.items():
            self.quantize_bias(bias, node_name, inp, weight, beta)
        for node in self.to_remove:
            self.graph.node.remove(node)
        missing = qc.clean_initializers(self.graph)
        if missing:
            raise ValueError(f"the quantized graph reads undefined tensors: {sorted(missing)}")
        return qc.finish(self.model)


def quantize_static(float_model, calibration=8, calibration_seed=1, per_channel=True,
                    activation_type=TensorProto.UINT8):
    """The QDQ model of `float_model` (a ModelProto): pre-processed, calibrated
    on `calibration` seeded random inputs, quantized."""
    model = qc.load_with_shape_infer(preprocess(float_model))
    ranges = calibrate(model, calibration_inputs(model, calibration, calibration_seed))
    return QDQQuantizer(model, ranges, per_channel, activation_type=activation_type).quantize_model()


def float_model(name, seed, batch, size=None, width=1.0):
    """The float model --model names: a generator here (at its own default
    size where `size` is None), or an .onnx file."""
    sized = [size] if size else []
    if name == "resnet18":
        import resnet18
        return resnet18.build(seed, batch)
    if name == "convnet":
        import convnet
        return convnet.build(seed, batch, *sized)
    if name == "mobilenet_v2":
        import mobilenet_v2
        return mobilenet_v2.build(seed, batch, *sized, width=width)
    return onnx.load(name)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True,
                        help="resnet18, convnet, mobilenet_v2, or the path of a float .onnx model")
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated model's weights (default 0)")
    parser.add_argument("--batch", type=int, default=1, help="batch size of the generated model (default 1)")
    parser.add_argument("--size", type=int, help="convnet, mobilenet_v2: image height and width (default 64, 224)")
    parser.add_argument("--width", type=float, default=1.0, help="mobilenet_v2: width multiplier (default 1.0)")
    parser.add_argument("--calibration", type=int, default=8, help="calibration inputs (default 8)")
    parser.add_argument("--calibration-seed", type=int, default=1, help="seed of the calibration inputs (default 1)")
    parser.add_argument("--activation-type", choices=["uint8", "int8"], default="uint8",
                        help="type of the quantized activations (default uint8, ONNX Runtime's QUInt8)")
    args = parser.parse_args(argv)
    if args.batch < 1 or args.calibration < 1:
        parser.error("--batch and --calibration must be at least 1")
    if args.size is not None and args.size < (32 if args.model == "mobilenet_v2" else 8):
        parser.error("--size must be at least 8 (convnet) or 32 (mobilenet_v2)")
    if not 0.0 < args.width <= 4.0:
        parser.error("--width must be in (0, 4]")
    try:
        source = float_model(args.model, args.seed, args.batch, args.size, args.width)
    except OSError as e:
        print(f"quantize_static.py: cannot read {args.model}: {e.strerror}", file=sys.stderr)
        return 1
    activation_type = TensorProto.INT8 if args.activation_type == "int8" else TensorProto.UINT8
    model = quantize_static(source, args.calibration, args.calibration_seed, activation_type=activation_type)
    return qc.save(model, args.output, "quantize_static.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
