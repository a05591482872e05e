"""A small float32 ONNX interpreter in numpy for the operators of the model
generators here (convolutional nets, MobileNetV2 and the transformer
encoder), enough to calibrate a model for static quantization without a
runtime, and to run the QDQ models quantize_static.py writes: QuantizeLinear
and DequantizeLinear (per tensor, or per channel along `axis`) compute what
ONNX Runtime's reference kernels do, so a QDQ model runs as ONNX Runtime
runs it without its integer fusions (QLinearConv and the like round their
requantization differently, a step or two at the output).

    values = run(model, {"input": x}, observe=lambda name, value: ...)

runs the graph once in node order, calls `observe` for every graph input and
every node output, and returns the graph outputs by name. Intermediate
values are dropped as soon as their last reader has run."""
import math

import numpy as np
from onnx import helper, numpy_helper


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pads(attrs, spatial):
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("auto_pad other than NOTSET")
    pads = list(attrs.get("pads", [0] * (2 * spatial)))
    return pads[:spatial], pads[spatial:]


def _windows(x, kernel, strides, dilations):
    """View [N, C, out_h, out_w, kh, kw] of the 2-D windows of padded x."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False)


def conv(x, w, b, attrs):
    if x.ndim != 4:
        raise NotImplementedError("Conv on other than 2-D images")
    group = attrs.get("group", 1)
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    begin, end = _pads(attrs, 2)
    x = np.pad(x, ((0, 0), (0, 0), (begin[0], end[0]), (begin[1], end[1])))
    m, cg, kh, kw = w.shape
    outs = []
    for g in range(group):
        win = _windows(x[:, g * cg:(g + 1) * cg], (kh, kw), strides, dilations)
        n, _, oh, ow = win.shape[:4]
        cols = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, cg * kh * kw, oh * ow)
        wg = w[g * (m // group):(g + 1) * (m // group)].reshape(m // group, -1)
        outs.append(np.matmul(wg, cols).reshape(n, m // group, oh, ow))
    y = np.concatenate(outs, axis=1) if group > 1 else outs[0]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def max_pool(x, attrs):
    if attrs.get("ceil_mode", 0) or attrs.get("storage_order", 0) or x.ndim != 4:
        raise NotImplementedError("MaxPool with ceil_mode, storage_order or not 2-D")
    begin, end = _pads(attrs, 2)
    x = np.pad(x, ((0, 0), (0, 0), (begin[0], end[0]), (begin[1], end[1])), constant_values=-np.inf)
    win = _windows(x, attrs["kernel_shape"], attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1]))
    return win.max(axis=(4, 5))


def gemm(a, b, c, attrs):
    a = a.T if attrs.get("transA", 0) else a
    b = b.T if attrs.get("transB", 0) else b
    y = np.float32(attrs.get("alpha", 1.0)) * np.matmul(a, b)
    if c is not None:
        y = y + np.float32(attrs.get("beta", 1.0)) * c
    return y


def batch_norm(x, scale, bias, mean, var, attrs):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = (scale / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))).reshape(shape)
    return (x - mean.reshape(shape)) * inv + bias.reshape(shape)


def reshape(x, shape):
    shape = [x.shape[i] if d == 0 else int(d) for i, d in enumerate(shape)]
    return x.reshape(shape)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _div(x, y):
    """ONNX's Div: integers rounded toward zero (C's division), not numpy's floor."""
    if np.issubdtype(x.dtype, np.integer):
        return (np.abs(x) // np.abs(y) * np.sign(x) * np.sign(y)).astype(x.dtype)
    return x / y


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _reduce_mean(x, a):
    return x.mean(axis=tuple(a.get("axes", range(x.ndim))), keepdims=bool(a.get("keepdims", 1)))


def _flatten(x, a):
    axis = a.get("axis", 1) % max(x.ndim, 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def _clip(x, lo, hi):
    return np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi)


def _constant(attrs):
    if "value" in attrs:
        return numpy_helper.to_array(attrs["value"])
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                        ("value_ints", np.int64)):
        if name in attrs:
            return np.asarray(attrs[name], dtype)
    raise NotImplementedError(f"Constant with attributes {sorted(attrs)}")


def _per_axis(param, x, axis):
    """A scale or zero point shaped to broadcast along `axis` of x (1-D: per
    channel; 0-D: per tensor)."""
    param = np.asarray(param)
    if param.ndim == 0:
        return param
    shape = [1] * x.ndim
    shape[axis % x.ndim] = param.size
    return param.reshape(shape)


def quantize_linear(x, scale, zero_point, attrs):
    """saturate(round_half_even(x / scale) + zero_point), the type of the zero
    point (uint8 without one)."""
    axis = attrs.get("axis", 1)
    zp = np.zeros((), np.uint8) if zero_point is None else np.asarray(zero_point)
    info = np.iinfo(zp.dtype)
    q = np.round(x / _per_axis(scale, x, axis)) + _per_axis(zp, x, axis).astype(np.float32)
    return np.clip(q, info.min, info.max).astype(zp.dtype)


def dequantize_linear(x, scale, zero_point, attrs):
    """(x - zero_point) * scale in float32."""
    axis = attrs.get("axis", 1)
    zp = 0 if zero_point is None else _per_axis(zero_point, x, axis).astype(np.int64)
    return ((x.astype(np.int64) - zp).astype(np.float32) * _per_axis(scale, x, axis)).astype(np.float32)


OPS = {
    "Conv": lambda i, a: conv(i[0], i[1], i[2] if len(i) > 2 else None, a),
    "BatchNormalization": lambda i, a: batch_norm(*i[:5], a),
    "Relu": lambda i, a: np.maximum(i[0], np.float32(0)),
    "Clip": lambda i, a: _clip(i[0], i[1] if len(i) > 1 else None, i[2] if len(i) > 2 else None),
    "MaxPool": lambda i, a: max_pool(i[0], a),
    "GlobalAveragePool": lambda i, a: i[0].mean(axis=tuple(range(2, i[0].ndim)), keepdims=True),
    "Flatten": lambda i, a: _flatten(i[0], a),
    "Gemm": lambda i, a: gemm(i[0], i[1], i[2] if len(i) > 2 else None, a),
    "MatMul": lambda i, a: np.matmul(i[0], i[1]),
    "Add": lambda i, a: i[0] + i[1],
    "Sub": lambda i, a: i[0] - i[1],
    "Mul": lambda i, a: i[0] * i[1],
    "Div": lambda i, a: _div(i[0], i[1]),
    "Pow": lambda i, a: np.power(i[0], i[1]),
    "Sqrt": lambda i, a: np.sqrt(i[0]),
    "Erf": lambda i, a: _erf(i[0]).astype(i[0].dtype),
    "Softmax": lambda i, a: softmax(i[0], a.get("axis", -1)),
    "ReduceMean": lambda i, a: _reduce_mean(i[0], a),
    "Reshape": lambda i, a: reshape(i[0], i[1]),
    "Transpose": lambda i, a: np.transpose(i[0], a.get("perm")),
    "Concat": lambda i, a: np.concatenate(i, axis=a["axis"]),
    "Identity": lambda i, a: i[0],
    "Constant": lambda i, a: _constant(a),
    "QuantizeLinear": lambda i, a: quantize_linear(i[0], i[1], i[2] if len(i) > 2 else None, a),
    "DequantizeLinear": lambda i, a: dequantize_linear(i[0], i[1], i[2] if len(i) > 2 else None, a),
}
# Operators whose output keeps its own type; every other one is float32.
TYPED_OUTPUTS = {"Constant", "QuantizeLinear"}


def run(model, feeds, observe=None):
    """Runs `model` on `feeds` (name -> array); returns {output name: array}."""
    graph = model.graph
    values = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    last_use = {}
    for idx, node in enumerate(graph.node):
        for name in node.input:
            last_use[name] = idx
    outputs = {o.name for o in graph.output}
    for inp in graph.input:
        if inp.name in values:
            continue
        if inp.name not in feeds:
            raise ValueError(f"no value for graph input {inp.name!r}")
        values[inp.name] = np.asarray(feeds[inp.name], dtype=np.float32)
        if observe:
            observe(inp.name, values[inp.name])
    for idx, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in OPS:
            raise NotImplementedError(f"the numpy runtime has no {node.op_type} (node {node.name!r})")
        args = [values[name] if name else None for name in node.input]
        while args and args[-1] is None:
            args.pop()
        result = OPS[node.op_type](args, _attrs(node))
        typed = node.op_type in TYPED_OUTPUTS
        values[node.output[0]] = np.asarray(result) if typed else np.asarray(result, dtype=np.float32)
        if observe:
            observe(node.output[0], values[node.output[0]])
        for name in node.input:
            if last_use.get(name) == idx and name not in outputs and name not in feeds:
                values.pop(name, None)
    return {name: values[name] for name in outputs}
