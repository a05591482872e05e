"""What quantize_static.py and quantize_dynamic.py share: ONNX Runtime's
quantization arithmetic and the graph bookkeeping its quantization tool does
around it, rewritten in numpy + onnx.helper.

The arithmetic follows onnxruntime/python/tools/quantization/quant_utils.py
(compute_scale_zp, quantize_nparray, the symmetric and full ranges of each
type) and base_quantizer.py (bias to int32 with scale input_scale *
weight_scale); the bookkeeping follows onnx_model.py (topological_sort as
ONNXModel.save_model_to_file runs it, clean_initializers) and the metadata
that quant_utils.py's load_model_with_shape_infer stamps on a model."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRODUCER_NAME = "onnx.quantize"  # what the quantizers write as producer_name
PRODUCER_VERSION = "0.1.0"

# (qmin, qmax) per type: the full range, and the symmetric one that drops
# -128 (int8) or 255 (uint8) so that zero sits in the middle.
FULL_RANGE = {TensorProto.UINT8: (0, 255), TensorProto.INT8: (-128, 127)}
SYMMETRIC_RANGE = {TensorProto.UINT8: (0, 254), TensorProto.INT8: (-127, 127)}
NP_TYPE = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def q_suffix(name):
    return name + "_QuantizeLinear"


def q_output(name):
    return name + "_QuantizeLinear_Output"


def q_input(name):
    return name + "_QuantizeLinear_Input"


def dq_suffix(name):
    return name + "_DequantizeLinear"


def dq_output(name):
    return name + "_DequantizeLinear_Output"


def compute_scale_zp(rmin, rmax, qtype, symmetric):
    """(zero point, scale) for the real range [rmin, rmax] (float32 scalars):
    the range is widened to hold 0, made +-max(|rmin|, |rmax|) if symmetric;
    scale = (rmax - rmin) / (qmax - qmin), the difference taken in float32 and
    the division in float64, then rounded to float32; the zero point is
    round((qmin + qmax) / 2) if symmetric, else round(qmin - rmin / scale)
    with scale still in float64 (numpy rounds half to even). A range too
    small for a normal float32 scale gets scale 1 and zero point 0."""
    qmin, qmax = (SYMMETRIC_RANGE if symmetric else FULL_RANGE)[qtype]
    rmin = np.minimum(np.float32(rmin), np.float32(0))
    rmax = np.maximum(np.float32(rmax), np.float32(0))
    if symmetric:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax))
        rmin, rmax = -absmax, absmax
    scale = float(np.float32(rmax - rmin)) / (float(qmax) - float(qmin))
    if scale < np.finfo(np.float32).tiny:
        return np.array(0, dtype=NP_TYPE[qtype]), np.array(1.0, dtype=np.float32)
    if symmetric:
        zero = np.round((qmin + qmax) / 2.0)
    else:
        zero = np.round(float(qmin) - float(rmin) / scale)
    return np.array(zero, dtype=NP_TYPE[qtype]), np.array(scale, dtype=np.float32)


def data_scale_zp(data, qtype, symmetric):
    """compute_scale_zp over the minimum and maximum of an array."""
    flat = np.asarray(data, dtype=np.float32).ravel()
    if flat.size == 0:
        return np.array(0, dtype=NP_TYPE[qtype]), np.array(1.0, dtype=np.float32)
    return compute_scale_zp(flat.min(), flat.max(), qtype, symmetric)


def quantize_array(data, scale, zero_point, qtype):
    """round(x / scale) + zero_point in float32, clipped to the full range."""
    qmin, qmax = FULL_RANGE[qtype]
    q = (np.asarray(data, dtype=np.float32) / np.float32(scale)).round() + np.float32(zero_point)
    return np.clip(q, qmin, qmax).astype(NP_TYPE[qtype])


def quantize_per_channel(data, scales, zero_points, axis, qtype):
    """quantize_array of each slice along `axis` with its own scale and zero point."""
    parts = []
    shape = list(data.shape)
    shape[axis] = 1
    for i in range(data.shape[axis]):
        parts.append(quantize_array(data.take(i, axis), scales[i], zero_points[i], qtype).reshape(shape))
    return np.concatenate(parts, axis)


def weight_params(data, qtype, symmetric, axis):
    """(zero points, scales) of a weight: per tensor (0-d arrays) when axis is
    None, else one pair per slice along axis (1-d arrays)."""
    if axis is None:
        return data_scale_zp(data, qtype, symmetric)
    pairs = [data_scale_zp(data.take(i, axis), qtype, symmetric) for i in range(data.shape[axis])]
    return np.asarray([p[0] for p in pairs]), np.asarray([p[1] for p in pairs])


def quantize_bias(bias, input_scale, weight_scale, beta=1.0):
    """(int32 bias, float32 scale): scale = input_scale * weight_scale * beta
    in float32, bias / scale in float64, rounded half to even and clipped to
    int32."""
    scale = np.asarray(input_scale, dtype=np.float32) * np.asarray(weight_scale, dtype=np.float32) * beta
    scale = np.asarray(scale, dtype=np.float32)
    q = (np.asarray(bias, dtype=np.float64) / scale.astype(np.float64)).round()
    info = np.iinfo(np.int32)
    q = np.clip(q, float(info.min), float(info.max)).astype(np.int32)
    return q.reshape(np.shape(bias)), scale.reshape(-1)


def make_scalar_or_vector(name, elem_type, values):
    """An initializer built the way onnx.helper.make_tensor stores lists
    (float_data / int32_data), shaped like `values` (0-d or 1-d)."""
    values = np.asarray(values)
    return helper.make_tensor(name, elem_type, list(values.shape), values.ravel().tolist())


def find_initializer(graph, name):
    for init in graph.initializer:
        if init.name == name:
            return init
    return None


def add_initializer(graph, tensor):
    """Appends `tensor` unless an initializer of that name exists (ONNXModel.add_initializer)."""
    if find_initializer(graph, tensor.name) is None:
        graph.initializer.append(tensor)


def remove_initializer(graph, name):
    init = find_initializer(graph, name)
    if init is not None:
        graph.initializer.remove(init)


def replace_input_of_all_nodes(graph, old, new):
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


def replace_output_of_all_nodes(graph, old, new):
    for node in graph.node:
        for i, name in enumerate(node.output):
            if name == old:
                node.output[i] = new


def consumers(graph, name):
    return [node for node in graph.node if name in node.input]


def clean_initializers(graph):
    """Drops the initializers no node and no graph output reads; returns the
    tensors read that nothing defines (which must be none)."""
    wanted = {name for node in graph.node for name in node.input if name}
    wanted.update(out.name for out in graph.output)
    wanted.difference_update(name for node in graph.node for name in node.output)
    for init in [i for i in graph.initializer if i.name not in wanted]:
        graph.initializer.remove(init)
    wanted.difference_update(i.name for i in graph.initializer)
    wanted.difference_update(i.name for i in graph.input)
    return wanted


def topological_sort(graph):
    """The node order ONNX Runtime's quantization tool saves: nodes without
    inputs first, then every node whose inputs are all initializers or graph
    inputs, released while walking those names in sorted order, then a
    breadth-first walk over the outputs of the nodes placed so far. Ties keep
    the order the nodes had, so the result depends on it."""
    nodes = list(graph.node)
    deps_count = [0] * len(nodes)
    deps_to_nodes = {}
    placed = []
    for idx, node in enumerate(nodes):
        deps_count[idx] = sum(1 for name in node.input if name)
        if deps_count[idx] == 0:
            placed.append(node)
            continue
        for name in node.input:
            if name:
                deps_to_nodes.setdefault(name, []).append(idx)
    sources = sorted(set([i.name for i in graph.initializer] + [i.name for i in graph.input]))
    for name in sources:
        for idx in deps_to_nodes.get(name, []):
            deps_count[idx] -= 1
            if deps_count[idx] == 0:
                placed.append(nodes[idx])
    start = 0
    while start < len(placed):
        for output in placed[start].output:
            for idx in deps_to_nodes.get(output, []):
                deps_count[idx] -= 1
                if deps_count[idx] == 0:
                    placed.append(nodes[idx])
        start += 1
    if len(placed) != len(nodes):
        raise ValueError("the quantized graph is not a DAG")
    del graph.node[:]
    graph.node.extend(placed)


def set_metadata(model, key, value):
    """Puts key first and keeps the other properties after it, as the
    quantization tool's add_infer_metadata / add_pre_process_metadata do."""
    props = {key: value}
    for prop in model.metadata_props:
        props[prop.key] = prop.value
    helper.set_model_props(model, props)


def load_with_shape_infer(model):
    """A copy of `model` with ONNX shape inference's value_info and the
    "onnx.infer" mark, as load_model_with_shape_infer returns it."""
    inferred = onnx.shape_inference.infer_shapes(model)
    set_metadata(inferred, "onnx.infer", "onnxruntime.quant")
    return inferred


def tensor_types(model):
    """Element type of every tensor the graph declares: value_info, outputs, inputs."""
    types = {}
    for vi in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input):
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type.tensor_type.elem_type
    return types


def initializer_array(graph, name):
    init = find_initializer(graph, name)
    return None if init is None else numpy_helper.to_array(init)


def finish(model):
    """Stamps the producer, sorts the nodes and checks the model."""
    model.producer_name = PRODUCER_NAME
    model.producer_version = PRODUCER_VERSION
    topological_sort(model.graph)
    onnx.checker.check_model(model)
    return model


def save(model, path, prog):
    """Writes `model` to `path`; 0 on success, else 1 with a message naming `prog`."""
    try:
        onnx.save(model, path)
    except OSError as e:
        print(f"{prog}: cannot write {path}: {e.strerror}", file=sys.stderr)
        return 1
    return 0
