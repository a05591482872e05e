"""A numpy reference interpreter for ONNX models with control flow and
recurrence (opset 13-17), the reference the control-flow and recurrent
model generators are checked against.

    outputs = run(model, {"input": x, ...})        # {output name: array}

Unlike numpy_runtime.py (float32 only, nodes in file order), values keep
their types (int64 shapes, bool conditions, sequences as Python lists) and
nodes run in dependency order, so graphs whose nodes are not topologically
sorted run too. Subgraphs read the values of their enclosing scopes.

Semantics followed: If (then_branch / else_branch on a one-element
condition), Loop (optional trip count M and condition, loop-carried values,
scan outputs stacked along a new first axis, the iteration number as int64),
Scan (opset 9+: state variables, scan_input_axes / _directions,
scan_output_axes / _directions), SequenceEmpty / SequenceInsert /
ConcatFromSequence, LSTM / GRU / RNN from numpy_rnn.py, and the operators
the generators write (Conv 1-D and 2-D through numpy_runtime.conv).
"""
import numpy as np
from onnx import helper, numpy_helper

import numpy_rnn
import numpy_runtime

try:
    _NP_TYPE = helper.tensor_dtype_to_np_dtype
except AttributeError:  # onnx < 1.13
    from onnx import mapping
    _NP_TYPE = mapping.TENSOR_TYPE_TO_NP_TYPE.__getitem__


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _axes(axes, rank):
    return sorted(int(a) % rank for a in axes)


def _unsqueeze(x, axes):
    rank = x.ndim + len(axes)
    for a in _axes(axes, rank):
        x = np.expand_dims(x, a)
    return x


def _squeeze(x, axes=None):
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(_axes(axes, x.ndim)))


def _slice(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        a, s, e, st = int(a) % x.ndim, int(s), int(e), int(st)
        dim = x.shape[a]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        if st > 0:
            index[a] = slice(min(max(s, 0), dim), min(max(e, 0), dim), st)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
            index[a] = slice(s, None if e < 0 else e, st)
    return x[tuple(index)]


def _reshape(x, shape, allowzero=0):
    shape = [x.shape[i] if d == 0 and not allowzero else int(d) for i, d in enumerate(shape)]
    return x.reshape(shape)


def _conv(x, w, b, a):
    """N-d Conv for 1-D and 2-D inputs: 1-D runs as 2-D with a unit height."""
    if x.ndim == 4:
        return numpy_runtime.conv(x, w, b, a)
    pads = list(a.get("pads", [0, 0]))
    a2 = {"group": a.get("group", 1), "strides": [1] + list(a.get("strides", [1])),
          "dilations": [1] + list(a.get("dilations", [1])), "pads": [0, pads[0], 0, pads[1]]}
    return numpy_runtime.conv(x[:, :, None, :], w[:, :, None, :], b, a2)[:, :, 0, :]


def _pad(x, pads, value=None, mode=b"constant"):
    pads = [int(p) for p in pads]
    n = x.ndim
    width = list(zip(pads[:n], pads[n:]))
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode == "constant":
        return np.pad(x, width, constant_values=0 if value is None else value.item())
    return np.pad(x, width, mode={"reflect": "reflect", "edge": "edge"}[mode])


def _reduce(fn, x, a, axes=None):
    axes = a.get("axes", axes)
    if axes is None or len(axes) == 0:
        if a.get("noop_with_empty_axes", 0):
            return x
        axes = range(x.ndim)
    return fn(x, axis=tuple(_axes(axes, x.ndim)), keepdims=bool(a.get("keepdims", 1)))


def _constant(a):
    if "value" in a:
        return numpy_helper.to_array(a["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in a:
            return np.array(a[key], dtype=dtype)
    raise NotImplementedError(f"Constant with {sorted(a)}")


def _concat_from_sequence(seq, a):
    if a.get("new_axis", 0):
        return np.stack(seq, axis=a["axis"])
    return np.concatenate(seq, axis=a["axis"])


def _sequence_insert(seq, t, pos=None):
    seq = list(seq)
    seq.insert(len(seq) if pos is None else int(pos), t)
    return seq


def _b(x):
    return np.asarray(x, dtype=bool)


# Each takes (inputs, attributes) and returns one value (or a tuple of them).
OPS = {
    "Identity": lambda i, a: i[0],
    "Constant": lambda i, a: _constant(a),
    "ConstantOfShape": lambda i, a: np.full([int(d) for d in i[0]], *(
        (numpy_helper.to_array(a["value"]).reshape(-1)[0], numpy_helper.to_array(a["value"]).dtype)
        if "value" in a else (0.0, np.float32))),
    "Shape": lambda i, a: np.array(i[0].shape[a.get("start", 0):a.get("end", None)], dtype=np.int64),
    "Size": lambda i, a: np.array(i[0].size, dtype=np.int64),
    "Cast": lambda i, a: np.asarray(i[0]).astype(_NP_TYPE(a["to"])),
    "Gather": lambda i, a: np.take(i[0], i[1].astype(np.int64), axis=a.get("axis", 0)),
    "Unsqueeze": lambda i, a: _unsqueeze(i[0], i[1]),
    "Squeeze": lambda i, a: _squeeze(i[0], i[1] if len(i) > 1 else None),
    "Slice": lambda i, a: _slice(*i),
    "Reshape": lambda i, a: _reshape(i[0], i[1], a.get("allowzero", 0)),
    "Transpose": lambda i, a: np.transpose(i[0], a.get("perm")),
    "Concat": lambda i, a: np.concatenate(i, axis=a["axis"]),
    "Flatten": lambda i, a: numpy_runtime._flatten(i[0], a),
    "Pad": lambda i, a: _pad(i[0], i[1], i[2] if len(i) > 2 else None, a.get("mode", b"constant")),
    "Equal": lambda i, a: np.equal(i[0], i[1]),
    "Greater": lambda i, a: np.greater(i[0], i[1]),
    "Less": lambda i, a: np.less(i[0], i[1]),
    "Not": lambda i, a: np.logical_not(i[0]),
    "And": lambda i, a: np.logical_and(i[0], i[1]),
    "Or": lambda i, a: np.logical_or(i[0], i[1]),
    "Where": lambda i, a: np.where(_b(i[0]), i[1], i[2]),
    "Add": lambda i, a: i[0] + i[1],
    "Sub": lambda i, a: i[0] - i[1],
    "Mul": lambda i, a: i[0] * i[1],
    "Div": lambda i, a: i[0] / i[1] if i[0].dtype.kind == "f" else np.trunc(i[0] / i[1]).astype(i[0].dtype),
    "Pow": lambda i, a: np.power(i[0], i[1].astype(i[0].dtype)),
    "Sqrt": lambda i, a: np.sqrt(i[0]),
    "Exp": lambda i, a: np.exp(i[0]),
    "Neg": lambda i, a: -i[0],
    "Abs": lambda i, a: np.abs(i[0]),
    "Relu": lambda i, a: np.maximum(i[0], np.zeros((), i[0].dtype)),
    "Sigmoid": lambda i, a: (1.0 / (1.0 + np.exp(-i[0].astype(np.float64)))).astype(i[0].dtype),
    "Tanh": lambda i, a: np.tanh(i[0]),
    "MatMul": lambda i, a: np.matmul(i[0], i[1]),
    "Gemm": lambda i, a: numpy_runtime.gemm(i[0], i[1], i[2] if len(i) > 2 else None, a).astype(i[0].dtype),
    "Softmax": lambda i, a: numpy_runtime.softmax(i[0], a.get("axis", -1)),
    "Conv": lambda i, a: _conv(i[0], i[1], i[2] if len(i) > 2 else None, a),
    "GlobalAveragePool": lambda i, a: i[0].mean(axis=tuple(range(2, i[0].ndim)), keepdims=True),
    "ReduceMean": lambda i, a: _reduce(np.mean, i[0], a),
    "ReduceMax": lambda i, a: _reduce(np.max, i[0], a),
    "ReduceSum": lambda i, a: _reduce(np.sum, i[0], a, i[1] if len(i) > 1 else None),
    "SequenceEmpty": lambda i, a: [],
    "SequenceInsert": lambda i, a: _sequence_insert(*i),
    "ConcatFromSequence": lambda i, a: _concat_from_sequence(i[0], a),
    "SequenceLength": lambda i, a: np.array(len(i[0]), dtype=np.int64),
}


class Scope:
    """The values visible in a graph: its own, then its enclosing scopes'."""

    def __init__(self, parent=None):
        self.values, self.parent = {}, parent

    def __contains__(self, name):
        return name in self.values or (self.parent is not None and name in self.parent)

    def __getitem__(self, name):
        if name in self.values:
            return self.values[name]
        if self.parent is None:
            raise KeyError(name)
        return self.parent[name]


def _reads(node):
    """Everything `node` needs: its inputs and its subgraphs' outer reads."""
    names = {n for n in node.input if n}
    for attr in node.attribute:
        for g in ([attr.g] if attr.type == attr.GRAPH else list(attr.graphs)):
            inner = {i.name for i in g.input} | {i.name for i in g.initializer}
            for n in g.node:
                names |= _reads(n) - inner
                inner |= set(n.output)
            names |= {o.name for o in g.output} - inner
    return names


def run_graph(graph, feeds, parent=None):
    """Runs `graph` with its inputs bound to `feeds` (a list in input order,
    or a dict); returns its outputs as a list."""
    scope = Scope(parent)
    if not isinstance(feeds, dict):
        feeds = {inp.name: value for inp, value in zip(graph.input, feeds)}
    for init in graph.initializer:
        scope.values[init.name] = numpy_helper.to_array(init)
    for inp in graph.input:
        if inp.name in feeds:
            scope.values[inp.name] = feeds[inp.name]
        elif inp.name not in scope.values:
            raise ValueError(f"no value for graph input {inp.name!r}")
    # Run every node whose reads are available, in file order, pass after
    # pass: a sorted graph takes one pass, an unsorted one a few more.
    pending = [(node, _reads(node)) for node in graph.node]
    while pending:
        waiting = []
        for node, reads in pending:
            if not all(name in scope for name in reads):
                waiting.append((node, reads))
                continue
            args = [scope[name] if name else None for name in node.input]
            for name, value in zip(node.output, run_node(node, args, scope)):
                if name:
                    scope.values[name] = value
        if len(waiting) == len(pending):
            missing = sorted({name for _, reads in waiting for name in reads if name not in scope})
            raise ValueError(f"graph {graph.name!r}: nothing can run, missing {missing[:5]}")
        pending = waiting
    return [scope[o.name] for o in graph.output]


def _if(node, args, scope):
    a = _attrs(node)
    branch = a["then_branch"] if np.asarray(args[0]).reshape(-1)[0] else a["else_branch"]
    return run_graph(branch, {}, scope)


def _loop(node, args, scope):
    body = _attrs(node)["body"]
    trip, cond, carried = args[0], args[1], list(args[2:])
    n_carried = len(carried)
    scans, i = [], 0
    keep_going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
    while keep_going and (trip is None or i < int(trip)):
        outs = run_graph(body, [np.array(i, dtype=np.int64), np.array(keep_going)] + carried, scope)
        keep_going = bool(np.asarray(outs[0]).reshape(-1)[0])
        carried = outs[1:1 + n_carried]
        scans.append(outs[1 + n_carried:])
        i += 1
    n_scan = len(body.output) - 1 - n_carried
    stacked = [np.stack([s[k] for s in scans]) if scans else np.zeros((0,), np.float32) for k in range(n_scan)]
    return carried + stacked


def _scan(node, args, scope):
    a = _attrs(node)
    body, k = a["body"], a["num_scan_inputs"]
    states, xs = list(args[:len(args) - k]), args[len(args) - k:]
    in_axes = list(a.get("scan_input_axes", [0] * k))
    in_dirs = list(a.get("scan_input_directions", [0] * k))
    seq = xs[0].shape[in_axes[0] % xs[0].ndim]
    steps = []
    for t in range(seq):
        sl = [np.take(x, seq - 1 - t if d else t, axis=ax % x.ndim) for x, ax, d in zip(xs, in_axes, in_dirs)]
        outs = run_graph(body, states + sl, scope)
        states = outs[:len(states)]
        steps.append(outs[len(states):])
    n_out = len(body.output) - len(states)
    out_axes = list(a.get("scan_output_axes", [0] * n_out))
    out_dirs = list(a.get("scan_output_directions", [0] * n_out))
    scanned = []
    for j in range(n_out):
        per_step = [s[j] for s in steps][::(-1 if out_dirs[j] else 1)]
        scanned.append(np.stack(per_step, axis=out_axes[j] % (per_step[0].ndim + 1)))
    return states + scanned


CONTROL = {"If": _if, "Loop": _loop, "Scan": _scan}


def run_node(node, args, scope):
    """The outputs (a list) of one node for its input values."""
    if node.domain not in ("", "ai.onnx"):
        raise NotImplementedError(f"domain {node.domain!r} (node {node.name!r})")
    if node.op_type in CONTROL:
        return CONTROL[node.op_type](node, args, scope)
    if node.op_type in ("LSTM", "GRU", "RNN"):
        return list(numpy_rnn.run_node(node, args))
    if node.op_type not in OPS:
        raise NotImplementedError(f"the numpy reference has no {node.op_type} (node {node.name!r})")
    while args and args[-1] is None:
        args.pop()
    result = OPS[node.op_type](args, _attrs(node))
    if isinstance(result, list):  # a sequence
        return [result]
    return [np.asarray(result)]


def run(model, feeds):
    """Runs `model` on `feeds` (name -> array); returns {output name: array}."""
    outs = run_graph(model.graph, dict(feeds))
    return {o.name: v for o, v in zip(model.graph.output, outs)}
