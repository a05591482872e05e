#!/usr/bin/python3
"""Writes a float16 ONNX model the way onnxconverter-common's
float16.convert_float_to_float16 writes it (the converter ONNX Runtime's
float16 documentation points to), from that function's source, rewritten in
numpy + onnx.helper. Every argument is at its default unless given:
min_positive_val=1e-7, max_finite_val=1e4, keep_io_types=False,
op_block_list=DEFAULT_OP_BLOCK_LIST, node_block_list=[].

Two generations of the function are reproduced (--release):
- 1.16 (the default; released as 1.15.0 in July 2025, unchanged in 1.16.0):
  ONNX shape inference, then graph by graph, breadth first over subgraphs:
  float graph inputs, value_info, outputs, initializers and TENSOR
  attributes (a Constant's `value`) become float16, values clamped in
  magnitude to [1e-7, 1e4] (0, inf and NaN unchanged). A blocked node
  (listed op type or node name) keeps float32: a Cast to float named
  `<node>_input_cast<i>` (output `<node>_input_cast_<i>`) before each
  float16 input it reads from value_info or the graph inputs, a Cast to
  float16 `<node>_output_cast<i>` (input `<node>_output_cast_<i>`) after each
  float output, its initializers left float32. With keep_io_types the
  top-level float inputs and outputs stay float32: a Cast to float16
  `<input>_cast_to_<consumer>` per consuming node, a Cast to float
  `<producer>_cast_to_<output>` in front of each output. Then the tool's
  node sort and its removal of Cast(to float16) -> Cast(to float) pairs.
  A model that already holds float16 is refused (check_fp16_ready).
- 1.14 (August 2023 to July 2025, still what many pins install): with
  keep_io_types one Cast per float graph input `graph_input_cast<i>` (output
  `graph_input_cast_<i>`, i the input's index) and per float output
  `graph_output_cast<i>` (input `graph_output_cast_<i>`); every float
  initializer becomes float16, a blocked one too (it then gets a Cast to
  float like any other input); a Cast to float in the model is turned into a
  Cast to float16; the same node sort, no pair removal, no fp16 check.

The tool's quirks are kept, since they decide what the files hold (the
output was compared byte for byte with the tool's own function on the
generators in this folder, both releases, with and without keep_io_types
and block lists): a Constant's value_float and sequence element types stay
float32; in 1.16 under keep_io_types an output written by a blocked node
comes out float16, a node that also reads a graph output keeps reading the
float32 name, and a subgraph reading a graph input that no top-level node
reads gets it uncast (ONNX Runtime refuses such models, as it refuses the
tool's); 1.14's sort can put an If before the Cast its branches read
(onnx.checker rejects that order, ONNX Runtime runs it).

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/float16.py --model resnet18|transformer|convnet|PATH.onnx -o OUT.onnx
        [--seed 0] [--keep-io-types] [--block-op OP ...] [--block-node NAME ...] [--release 1.16|1.14]
        [--min-positive-val 1e-7] [--max-finite-val 1e4] [--batch 1] [--size 64] [--seq 128] [--layers 2]
        [--d-model 256] [--heads 4] [--ff 1024] [--pad 8]
--model is a generator here (--seed, --batch and the model's own options as
the generator takes them) or the path of a float .onnx model. --block-op
adds op types to DEFAULT_OP_BLOCK_LIST.
"""
import argparse
import copy
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import float_models  # noqa: E402
import quant_common as qc  # noqa: E402

FLOAT = TensorProto.FLOAT
FLOAT16 = TensorProto.FLOAT16

# The op types the tool keeps in float32 by default (DEFAULT_OP_BLOCK_LIST):
# the ai.onnx.ml operators, and ONNX ops that lacked float16 CUDA kernels.
DEFAULT_OP_BLOCK_LIST = [
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
    "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
    "RandomUniformLike", "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier",
    "TreeEnsembleRegressor", "ZipMap", "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum",
    "Min", "Max", "Upsample"]

# --release values and the implementation each names.
RELEASES = {"1.16": "1.16", "1.15": "1.16", "1.14": "1.14"}


# ---- values ----

def clamp_to_float16(values, min_positive_val=1e-7, max_finite_val=1e4):
    """`values` as float16 with sign and finiteness kept: magnitudes in
    (0, min_positive_val) become min_positive_val, finite ones above
    max_finite_val become max_finite_val; 0, +-inf and NaN pass. Compared and
    replaced in the array's own float type (float64 for float_data, float32
    for raw_data, as the tool reads them), then rounded to float16. Warns,
    like the tool, when the extremes reach the bounds."""
    a = np.asarray(values)
    lo, hi = a.dtype.type(min_positive_val), a.dtype.type(max_finite_val)
    pos, neg = a[a > 0], a[a < 0]
    if pos.size and pos.max() >= hi:
        warnings.warn(f"the float32 number {pos.max()} will be truncated to {max_finite_val}")
    if pos.size and pos.min() <= lo:
        warnings.warn(f"the float32 number {pos.min()} will be truncated to {min_positive_val}")
    if neg.size and neg.min() <= -hi:
        warnings.warn(f"the float32 number {neg.min()} will be truncated to {-max_finite_val}")
    if neg.size and neg.max() >= -lo:
        warnings.warn(f"the float32 number {neg.max()} will be truncated to {-min_positive_val}")
    with np.errstate(invalid="ignore"):
        a = np.where((a > 0) & (a < lo), lo, a)
        a = np.where((a > -lo) & (a < 0), -lo, a)
        a = np.where((a > hi) & (a < np.inf), hi, a)
        a = np.where((a > -np.inf) & (a < -hi), -hi, a)
    return a.astype(np.float16)


def tensor_to_float16(tensor, min_positive_val=1e-7, max_finite_val=1e4):
    """Turns a FLOAT TensorProto into FLOAT16 in place, storage kept as the
    tool keeps it: float_data becomes int32_data holding the float16 bit
    patterns, raw_data becomes float16 raw_data. Other types are left alone."""
    if tensor.data_type != FLOAT:
        return tensor
    tensor.data_type = FLOAT16
    if len(tensor.float_data):
        half = clamp_to_float16(np.array(tensor.float_data, dtype=np.float64), min_positive_val, max_finite_val)
        tensor.int32_data[:] = half.view(np.uint16).astype(np.int64).tolist()
        del tensor.float_data[:]
    if tensor.raw_data:
        half = clamp_to_float16(np.frombuffer(tensor.raw_data, dtype="<f4"), min_positive_val, max_finite_val)
        tensor.raw_data = half.astype("<f2").tobytes()
    return tensor


# ---- graph helpers ----

def elem_type(value_info):
    return value_info.type.tensor_type.elem_type


def blocked(node, op_block_list, node_block_list):
    return node.op_type in op_block_list or node.name in node_block_list


def add_cast(graph, source, target, name, to):
    graph.node.append(helper.make_node("Cast", [source], [target], name=name, to=to))


def add_value_info_like(graph, like, name, elem):
    """A value_info entry named `name` with `like`'s shape and type `elem`."""
    vi = graph.value_info.add()
    vi.CopyFrom(like)
    vi.name = name
    vi.type.tensor_type.elem_type = elem
    return vi


def subgraphs(node):
    """The graphs held by the node's attributes, as the tool reaches them:
    a GRAPH attribute with at least one node, then every GRAPHS entry with
    at least one node."""
    found = []
    for attr in node.attribute:
        if len(attr.g.node) > 0:
            found.append(attr.g)
        found.extend(g for g in attr.graphs if len(g.node) > 0)
    return found


def sort_nodes(graph):
    """The tool's sort_graph_node: while some node's output is still pending,
    take the first remaining node (in the current order) that reads none of
    the pending outputs. Only a node's own inputs count (not what its
    subgraphs read); nodes left over go first, unchanged."""
    remaining = list(graph.node)
    pending = {}
    for node in remaining:
        for out in node.output:
            pending[out] = node
    ordered = []
    while pending:
        pick = next((i for i, n in enumerate(remaining) if not any(name in pending for name in n.input)), None)
        if pick is None:
            raise ValueError("the graph has a cycle: the tool's node sort cannot order it")
        node = remaining.pop(pick)
        ordered.append(node)
        for out in node.output:
            pending.pop(out, None)
    del graph.node[:]
    graph.node.extend(remaining + ordered)


def sort_topology(graph):
    """sort_nodes on the graph, then on every subgraph of its nodes, depth first."""
    sort_nodes(graph)
    for node in graph.node:
        for attr in node.attribute:
            if len(attr.g.node) > 0:
                sort_topology(attr.g)
            for g in attr.graphs:
                sort_topology(g)


def holds_float16(graph):
    """check_if_fp16_ready: a float16 input, output or value_info, a float16
    initializer, or a Cast whose first attribute is 10 (FLOAT16)."""
    if any(elem_type(vi) == FLOAT16 for vi in list(graph.output) + list(graph.input) + list(graph.value_info)):
        return True
    if any(init.data_type == FLOAT16 for init in graph.initializer):
        return True
    return any(n.op_type == "Cast" and len(n.attribute) and n.attribute[0].i == FLOAT16 for n in graph.node)


# ---- 1.15 / 1.16: graph by graph ----

def _cast_graph_inputs(graph, top, keep_io_types, renamed):
    """process_graph_input. Top level with keep_io_types: a Cast to float16
    per (float input, consuming node), named and written
    `<input>_cast_to_<consumer>`; `renamed` keeps the last one per input for
    the subgraphs. Otherwise float inputs are declared float16."""
    if not (top and keep_io_types):
        for vi in graph.input:
            if elem_type(vi) == FLOAT:
                vi.type.tensor_type.elem_type = FLOAT16
        return
    for vi in graph.input:
        if elem_type(vi) != FLOAT:
            continue
        for consumer in [n for n in graph.node if vi.name in n.input]:
            cast = vi.name + "_cast_to_" + consumer.name
            add_cast(graph, vi.name, cast, cast, FLOAT16)
            add_value_info_like(graph, vi, cast, FLOAT16)
            for i, name in enumerate(consumer.input):
                if name == vi.name:
                    consumer.input[i] = cast
                    renamed[vi.name] = cast


def _convert_attributes(graph, op_block_list, node_block_list, lo, hi):
    """process_tensor_in_node: the float TENSOR and TENSORS attributes of the
    nodes not blocked become float16; returns the blocked nodes' outputs,
    whose value_info stays float."""
    keep = set()
    for node in graph.node:
        if blocked(node, op_block_list, node_block_list):
            keep.update(node.output)
            continue
        for attr in node.attribute:
            if attr.t.data_type == FLOAT:
                tensor_to_float16(attr.t, lo, hi)
            for t in attr.tensors:
                tensor_to_float16(t, lo, hi)
    return keep


def _cast_around_blocked(graph, op_block_list, node_block_list):
    """process_node_in_block_list, node by node in graph order. An input is
    looked up in value_info then the graph inputs; if the first entry of
    that name is float16, a Cast to float feeds the node. An output is looked
    up in value_info then the graph outputs; if float, the node writes
    `<node>_output_cast_<i>` and a Cast to float16 writes the old name, whose
    entry becomes float16. Initializers are in neither list: they get no Cast.
    (The Casts added here are not visited again, so blocking "Cast" itself
    cannot loop.)"""
    for node in [n for n in graph.node if blocked(n, op_block_list, node_block_list)]:
        for i, name in enumerate(node.input):
            vi = next((v for v in list(graph.value_info) + list(graph.input) if v.name == name), None)
            if vi is None or elem_type(vi) != FLOAT16:
                continue
            target = f"{node.name}_input_cast_{i}"
            add_value_info_like(graph, vi, target, FLOAT)
            add_cast(graph, name, target, f"{node.name}_input_cast{i}", FLOAT)
            node.input[i] = target
        for i, name in enumerate(node.output):
            vi = next((v for v in list(graph.value_info) + list(graph.output) if v.name == name), None)
            if vi is None or elem_type(vi) != FLOAT:
                continue
            source = f"{node.name}_output_cast_{i}"
            add_value_info_like(graph, vi, source, FLOAT)
            vi.type.tensor_type.elem_type = FLOAT16
            add_cast(graph, source, name, f"{node.name}_output_cast{i}", FLOAT16)
            node.output[i] = source


def _convert_graph_outputs(graph, top, keep_io_types):
    """process_graph_output. Top level with keep_io_types: each float output
    written by a node gets a Cast to float named `<producer>_cast_to_<output>`
    (the producer now writes that name, declared float16). Otherwise float
    outputs are declared float16."""
    if not (top and keep_io_types):
        for vi in graph.output:
            if elem_type(vi) == FLOAT:
                vi.type.tensor_type.elem_type = FLOAT16
        return
    for vi in graph.output:
        if elem_type(vi) != FLOAT:
            continue
        producers = [n for n in graph.node if vi.name in n.output]
        if len(producers) > 1:
            raise ValueError(f"graph output {vi.name} is written by {len(producers)} nodes")
        for producer in producers:
            cast = producer.name + "_cast_to_" + vi.name
            add_cast(graph, cast, vi.name, cast, FLOAT)
            add_value_info_like(graph, vi, cast, FLOAT16)
            for i, name in enumerate(producer.output):
                if name == vi.name:
                    producer.output[i] = cast


def _remove_cast_pairs(graph):
    """remove_unnecessary_cast_node on the top-level graph: a Cast to float16
    whose only reader is a Cast to float is dropped with it, the reader of
    the second Cast reading what the first read. Casts written right after a
    Constant stay. Lookups go by node name (last Cast of a name wins) and by
    tensor (last Cast reading or writing it wins), as in the tool. A Cast
    with several readers is never paired (the tool compares the to attribute
    with 32 and 16 there); the cases where the tool fails fail here too."""
    nodes = list(graph.node)
    casts = [n for n in nodes if n.op_type == "Cast"]
    by_name, reading, writing = {}, {}, {}
    for cast in casts:
        by_name[cast.name] = cast
        for name in cast.input:
            reading[name] = cast
        for name in cast.output:
            writing[name] = cast
    readers, writer = {}, {}
    for node in nodes:
        for name in node.input:
            if name in writing:
                readers.setdefault(writing[name].name, []).append(node)
        for name in node.output:
            if name in reading:
                writer[reading[name].name] = node
    removable = [id(c) for c in casts]
    for cast_name, up in writer.items():
        if up.op_type == "Constant":
            removable.remove(id(by_name[cast_name]))

    def to(node):
        return node.attribute[0].i

    pairs = []
    for cast_name, down in readers.items():
        first = by_name[cast_name]
        if len(down) == 1:
            second = down[0]
            if (second.op_type == "Cast" and to(first) == FLOAT16 and to(second) == FLOAT
                    and id(second) in removable and id(first) in removable):
                pairs.append((first, second))
        else:
            for second in down:
                if (second.op_type == "Cast" and to(second) == 32 and to(first) == 16
                        and id(second) in removable and id(first) in removable):
                    pairs.append((first, second))
    for first, second in pairs:
        up = writer.get(first.name)
        down = readers.get(second.name)
        if up is not None and down is None:
            raise ValueError("The downstream node of the second cast node should be graph output")
        if down is None or len(down) > 1:
            raise ValueError(f"onnxconverter-common fails on the Cast pair {first.name} -> {second.name} "
                             "(a reader list or no neighbour where it expects one node)")
        source = first.input[0]
        for i, name in enumerate(down[0].input):
            if name in second.output:
                down[0].input[i] = source
    dropped = {id(n) for pair in pairs for n in pair}
    kept = [n for n in nodes if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)


def _convert_current(model, keep_io_types, op_block_list, node_block_list, lo, hi):
    """convert_float_to_float16 of onnxconverter-common 1.15.0 / 1.16.0."""
    renamed = {}
    level, top = [model.graph], True
    while level:
        next_level = []
        for graph in level:
            _cast_graph_inputs(graph, top, keep_io_types, renamed)
            keep = _convert_attributes(graph, op_block_list, node_block_list, lo, hi)
            for vi in graph.value_info:  # process_value_info
                if vi.name not in keep and elem_type(vi) == FLOAT:
                    vi.type.tensor_type.elem_type = FLOAT16
            _cast_around_blocked(graph, op_block_list, node_block_list)
            # process_initializers: all but what a blocked node reads.
            fp32_inits = {name for n in graph.node if blocked(n, op_block_list, node_block_list) for name in n.input}
            for init in graph.initializer:
                if init.name not in fp32_inits:
                    tensor_to_float16(init, lo, hi)
            _convert_graph_outputs(graph, top, keep_io_types)
            for node in graph.node:
                if not blocked(node, op_block_list, node_block_list):
                    next_level.extend(subgraphs(node))
            if not top:  # process_node_input_output: outer inputs read through their Cast
                for node in graph.node:
                    for i, name in enumerate(node.input):
                        if name in renamed:
                            node.input[i] = renamed[name]
                    for i, name in enumerate(node.output):
                        if name in renamed:
                            node.output[i] = renamed[name]
            top = False
        level = next_level
    sort_topology(model.graph)
    _remove_cast_pairs(model.graph)
    return model


# ---- 1.14: one breadth-first walk, then the blocked nodes ----

def _convert_1_14(model, keep_io_types, op_block_list, node_block_list, lo, hi):
    """convert_float_to_float16 of onnxconverter-common 1.14.0."""
    graph = model.graph
    renamed = {}       # graph input / output name -> the Cast's float16 side
    skip_io = set()    # graph inputs and outputs that stay float
    io_casts = set()   # names of the Casts added for them
    fp16_values = {}   # name -> first float16 value_info seen (the tool's value_info_list)

    def seen(vi):
        fp16_values.setdefault(vi.name, vi)

    if keep_io_types:
        for i, vi in enumerate(graph.input):
            if elem_type(vi) == FLOAT:
                renamed[vi.name], name = f"graph_input_cast_{i}", f"graph_input_cast{i}"
                skip_io.add(vi.name)
                seen(add_value_info_like(graph, vi, renamed[vi.name], FLOAT16))
                add_cast(graph, vi.name, renamed[vi.name], name, FLOAT16)
                io_casts.add(name)
        for i, vi in enumerate(graph.output):
            if elem_type(vi) == FLOAT:
                renamed[vi.name], name = f"graph_output_cast_{i}", f"graph_output_cast{i}"
                skip_io.add(vi.name)
                seen(add_value_info_like(graph, vi, renamed[vi.name], FLOAT16))
                add_cast(graph, renamed[vi.name], vi.name, name, FLOAT)
                io_casts.add(name)

    blocked_nodes = []  # in the order met
    home = {}  # blocked node name -> its graph (the tool keys them by name: the last one wins)
    level = [graph]
    while level:
        next_level = []
        for g in level:
            for node in g.node:
                if node.name in io_casts:
                    continue
                for i, name in enumerate(node.input):
                    if name in renamed:
                        node.input[i] = renamed[name]
                for i, name in enumerate(node.output):
                    if name in renamed:
                        node.output[i] = renamed[name]
                if blocked(node, op_block_list, node_block_list):
                    blocked_nodes.append(node)
                    home[node.name] = g
                    continue
                if node.op_type == "Cast":
                    for attr in node.attribute:
                        if attr.name == "to" and attr.i == FLOAT:
                            attr.i = FLOAT16
                            break
                for attr in node.attribute:
                    if attr.t.data_type == FLOAT:
                        tensor_to_float16(attr.t, lo, hi)
                    for t in attr.tensors:
                        tensor_to_float16(t, lo, hi)
                    if attr.type == AttributeProto.GRAPH or attr.HasField("g"):
                        next_level.append(attr.g)
                    next_level.extend(attr.graphs)
            for init in g.initializer:
                if init.data_type == FLOAT:
                    tensor_to_float16(init, lo, hi)
                    seen(helper.make_tensor_value_info(init.name, FLOAT16, list(init.dims)))
            for vi in list(g.input) + list(g.output) + list(g.value_info):
                if elem_type(vi) == FLOAT and vi.name not in skip_io:
                    vi.type.tensor_type.elem_type = FLOAT16
                    seen(vi)
        level = next_level

    # A blocked node's inputs and outputs known as float16 get Casts, in the
    # graph `home` gives for its name.
    for node in blocked_nodes:
        g = home[node.name]
        for i, name in enumerate(node.input):
            if name in fp16_values:
                target = f"{node.name}_input_cast_{i}"
                add_value_info_like(g, fp16_values[name], target, FLOAT)
                add_cast(g, name, target, f"{node.name}_input_cast{i}", FLOAT)
                node.input[i] = target
        for i, name in enumerate(node.output):
            if name in fp16_values:
                source = f"{node.name}_output_cast_{i}"
                add_value_info_like(g, fp16_values[name], source, FLOAT)
                add_cast(g, source, name, f"{node.name}_output_cast{i}", FLOAT16)
                node.output[i] = source
    sort_topology(model.graph)
    return model


# ---- the entry point ----

def convert_float_to_float16(model, min_positive_val=1e-7, max_finite_val=1e4, keep_io_types=False,
                             disable_shape_infer=False, op_block_list=None, node_block_list=None,
                             check_fp16_ready=True, release="1.16"):
    """The float16 model of `model` (a ModelProto, left untouched) as
    onnxconverter-common's convert_float_to_float16 of `release` ("1.16",
    also "1.15"; or "1.14") returns it for the same arguments; see the
    module's documentation. check_fp16_ready exists from 1.15 on."""
    if not isinstance(model, onnx.ModelProto):
        raise ValueError(f"Expected model type is an ONNX ModelProto but got {type(model)}")
    if release not in RELEASES:
        raise ValueError(f"release must be one of {sorted(RELEASES)}, not {release!r}")
    op_block_list = set(DEFAULT_OP_BLOCK_LIST if op_block_list is None else op_block_list)
    node_block_list = set(node_block_list or [])
    if disable_shape_infer:
        model = copy.deepcopy(model)
    else:
        model = onnx.shape_inference.infer_shapes(model)
    if RELEASES[release] == "1.14":
        return _convert_1_14(model, keep_io_types, op_block_list, node_block_list, min_positive_val, max_finite_val)
    if check_fp16_ready and holds_float16(model.graph):
        raise ValueError("The model is already converted to float16, if convert again, the model might be wrong. "
                         "If you are sure to convert again, please set check_fp16_ready=False.")
    return _convert_current(model, keep_io_types, op_block_list, node_block_list, min_positive_val, max_finite_val)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    float_models.add_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--keep-io-types", action="store_true",
                        help="keep float32 graph inputs and outputs, with Casts at the boundary")
    parser.add_argument("--block-op", nargs="+", action="extend", default=[], metavar="OP",
                        help="op types kept in float32, added to DEFAULT_OP_BLOCK_LIST")
    parser.add_argument("--block-node", nargs="+", action="extend", default=[], metavar="NAME",
                        help="node names kept in float32 (node_block_list)")
    parser.add_argument("--release", choices=sorted(RELEASES), default="1.16",
                        help="onnxconverter-common release to reproduce (default 1.16, same as 1.15)")
    parser.add_argument("--min-positive-val", type=float, default=1e-7,
                        help="smallest magnitude kept for a nonzero constant (default 1e-7)")
    parser.add_argument("--max-finite-val", type=float, default=1e4,
                        help="largest magnitude kept for a finite constant (default 1e4)")
    args = parser.parse_args(argv)
    float_models.check_arguments(parser, args)
    try:
        source = float_models.load(args)
    except OSError as e:
        print(f"float16.py: cannot read {args.model}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        model = convert_float_to_float16(source, args.min_positive_val, args.max_finite_val, args.keep_io_types,
                                         op_block_list=DEFAULT_OP_BLOCK_LIST + args.block_op,
                                         node_block_list=args.block_node, release=args.release)
    except ValueError as e:
        print(f"float16.py: {e}", file=sys.stderr)
        return 1
    return qc.save(model, args.output, "float16.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
