"""Reference semantics of ONNX's recurrent operators LSTM, GRU and RNN
(opset 14 and later, the same through opset 22) in numpy, computed in
float64 and returned in the input's type.

Everything the operators define is followed: direction (forward, reverse,
bidirectional), activations (per direction; defaults Sigmoid/Tanh/Tanh for
LSTM, Sigmoid/Tanh for GRU, Tanh for RNN) with activation_alpha /
activation_beta consumed in order by the functions that take them (ONNX's
defaults otherwise), clip (bounds every pre-activation), sequence_lens (a
batch entry stops at its length: Y is zero past it, Y_h holds its last
state, reverse runs from its own last step), layout (1: batch first),
LSTM's peepholes P and input_forget (f = 1 - i), GRU's linear_before_reset.

    outputs = lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, hidden_size=..., ...)
    outputs = gru(X, W, R, B, sequence_lens, initial_h, hidden_size=..., ...)
    outputs = rnn(X, W, R, B, sequence_lens, initial_h, hidden_size=..., ...)

each returning the full tuple (Y, Y_h[, Y_c]); `run_node(node, inputs)` maps
an ONNX node and its input arrays (None for empty) to its outputs, and
`single_node_model(op, ...)` writes a random opset-17 one-node model with
its feeds, to hold this reference against a runtime attribute by attribute.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper

# Functions that read alpha / beta, and ONNX's default values for them.
ALPHA = {"affine": 1.0, "leakyrelu": 0.01, "thresholdedrelu": 1.0, "scaledtanh": 1.0, "hardsigmoid": 0.2,
         "elu": 1.0}
BETA = {"affine": 0.0, "scaledtanh": 1.0, "hardsigmoid": 0.5}
DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}


def _function(name, a, b):
    funcs = {
        "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "tanh": np.tanh,
        "relu": lambda x: np.maximum(x, 0.0),
        "affine": lambda x: a * x + b,
        "leakyrelu": lambda x: np.where(x >= 0, x, a * x),
        "thresholdedrelu": lambda x: np.where(x > a, x, 0.0),
        "scaledtanh": lambda x: a * np.tanh(b * x),
        "hardsigmoid": lambda x: np.clip(a * x + b, 0.0, 1.0),
        "elu": lambda x: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0.0)) - 1.0)),
        "softsign": lambda x: x / (1.0 + np.abs(x)),
        "softplus": lambda x: np.logaddexp(0.0, x),
    }
    key = name.lower()
    if key not in funcs:
        raise ValueError(f"unknown activation function {name!r}")
    return funcs[key]


def activations(op, directions, names=None, alphas=None, betas=None):
    """Per direction, the list of activation callables of `op`."""
    per_dir = len(DEFAULTS[op])
    names = list(names) if names else DEFAULTS[op] * directions
    if len(names) == per_dir and directions == 2:
        names = names * 2
    if len(names) != per_dir * directions:
        raise ValueError(f"{op} takes {per_dir * directions} activations, got {len(names)}")
    alphas, betas = list(alphas or []), list(betas or [])
    funcs = []
    for name in names:
        key = name.lower()
        a = alphas.pop(0) if key in ALPHA and alphas else ALPHA.get(key, 0.0)
        b = betas.pop(0) if key in BETA and betas else BETA.get(key, 0.0)
        funcs.append(_function(name, a, b))
    return [funcs[d * per_dir:(d + 1) * per_dir] for d in range(directions)]


def _cell(op, acts, w, r, b, p, clip, input_forget, linear_before_reset, hidden):
    """The step function of one direction: (x_t, h, c) -> (h', c')."""
    clip_fn = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    wb, rb = b[:len(b) // 2], b[len(b) // 2:]

    def lstm_step(x, h, c):
        g = x @ w.T + h @ r.T + wb + rb
        gi, go, gf, gc = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
        pi, po, pf = (p[k * hidden:(k + 1) * hidden] for k in range(3))
        i = acts[0](clip_fn(gi + pi * c))
        f = 1.0 - i if input_forget else acts[0](clip_fn(gf + pf * c))
        c_new = f * c + i * acts[1](clip_fn(gc))
        o = acts[0](clip_fn(go + po * c_new))
        return o * acts[2](c_new), c_new

    def gru_step(x, h, c):
        gx = x @ w.T + wb
        z = acts[0](clip_fn(gx[:, :hidden] + h @ r[:hidden].T + rb[:hidden]))
        rr = acts[0](clip_fn(gx[:, hidden:2 * hidden] + h @ r[hidden:2 * hidden].T + rb[hidden:2 * hidden]))
        if linear_before_reset:
            pre = gx[:, 2 * hidden:] + rr * (h @ r[2 * hidden:].T + rb[2 * hidden:])
        else:
            pre = gx[:, 2 * hidden:] + (rr * h) @ r[2 * hidden:].T + rb[2 * hidden:]
        return (1.0 - z) * acts[1](clip_fn(pre)) + z * h, c

    def rnn_step(x, h, c):
        return acts[0](clip_fn(x @ w.T + h @ r.T + wb + rb)), c

    return {"LSTM": lstm_step, "GRU": gru_step, "RNN": rnn_step}[op]


def recurrent(op, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *,
              hidden_size=None, direction="forward", activations_=None, activation_alpha=None,
              activation_beta=None, clip=None, layout=0, input_forget=0, linear_before_reset=0):
    """(Y, Y_h) for GRU and RNN, (Y, Y_h, Y_c) for LSTM."""
    dtype = X.dtype
    f64 = lambda v: None if v is None else np.asarray(v, dtype=np.float64)
    X, W, R, B, initial_h, initial_c, P = map(f64, (X, W, R, B, initial_h, initial_c, P))
    if layout:
        X = X.transpose(1, 0, 2)
        initial_h = None if initial_h is None else initial_h.transpose(1, 0, 2)
        initial_c = None if initial_c is None else initial_c.transpose(1, 0, 2)
    steps, batch, _ = X.shape
    dirs = 2 if direction == "bidirectional" else 1
    hidden = hidden_size or R.shape[-1]
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    B = np.zeros((dirs, 2 * gates * hidden)) if B is None else B
    P = np.zeros((dirs, 3 * hidden)) if P is None else P
    h0 = np.zeros((dirs, batch, hidden)) if initial_h is None else initial_h
    c0 = np.zeros((dirs, batch, hidden)) if initial_c is None else initial_c
    lens = np.full(batch, steps) if sequence_lens is None else np.asarray(sequence_lens).astype(np.int64)
    acts = activations(op, dirs, activations_, activation_alpha, activation_beta)
    Y = np.zeros((steps, dirs, batch, hidden))
    Y_h, Y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        step = _cell(op, acts[d], W[d], R[d], B[d], P[d], clip, input_forget, linear_before_reset, hidden)
        reverse = direction == "reverse" or d == 1
        h, c = h0[d], c0[d]
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            active = (t < lens)[:, None]
            h_new, c_new = step(X[t], h, c)
            h, c = np.where(active, h_new, h), np.where(active, c_new, c)
            Y[t, d] = np.where(active, h_new, 0.0)
        Y_h[d], Y_c[d] = h, c
    if layout:
        Y, Y_h, Y_c = Y.transpose(2, 0, 1, 3), Y_h.transpose(1, 0, 2), Y_c.transpose(1, 0, 2)
    outs = (Y, Y_h, Y_c) if op == "LSTM" else (Y, Y_h)
    return tuple(o.astype(dtype) for o in outs)


def lstm(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, **attrs):
    return recurrent("LSTM", X, W, R, B, sequence_lens, initial_h, initial_c, P, **attrs)


def gru(X, W, R, B=None, sequence_lens=None, initial_h=None, **attrs):
    return recurrent("GRU", X, W, R, B, sequence_lens, initial_h, **attrs)


def rnn(X, W, R, B=None, sequence_lens=None, initial_h=None, **attrs):
    return recurrent("RNN", X, W, R, B, sequence_lens, initial_h, **attrs)


def run_node(node, inputs):
    """Outputs of an LSTM/GRU/RNN node for its inputs (None where empty)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    kw = {"hidden_size": attrs.get("hidden_size"), "clip": attrs.get("clip"), "layout": attrs.get("layout", 0),
          "direction": attrs.get("direction", b"forward").decode(),
          "activations_": [s.decode() for s in attrs.get("activations", [])] or None,
          "activation_alpha": attrs.get("activation_alpha"), "activation_beta": attrs.get("activation_beta")}
    if node.op_type == "LSTM":
        kw["input_forget"] = attrs.get("input_forget", 0)
    if node.op_type == "GRU":
        kw["linear_before_reset"] = attrs.get("linear_before_reset", 0)
    args = list(inputs) + [None] * (8 - len(inputs))
    n_in = {"LSTM": 8, "GRU": 6, "RNN": 6}[node.op_type]
    return recurrent(node.op_type, *args[:n_in], **kw)


def single_node_model(op, seed=0, layout=0, lens=None, peepholes=False, initial_state=True, **attrs):
    """(model, feeds): one `op` node with `attrs` on random inputs, 5 steps,
    batch 3, 4 features, hidden 3; `lens` the sequence_lens, `peepholes`
    (LSTM) a random P, `initial_state` random initial_h (and _c)."""
    rng = np.random.default_rng(seed)
    steps, batch, width, hid = 5, 3, 4, 3
    d = 2 if attrs.get("direction") == "bidirectional" else 1
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    state = (batch, d, hid) if layout else (d, batch, hid)
    feeds = {"X": rng.normal(0, 1, (batch, steps, width) if layout else (steps, batch, width)),
             "W": 0.7 * rng.normal(0, 1, (d, gates * hid, width)), "R": 0.7 * rng.normal(0, 1, (d, gates * hid, hid)),
             "B": 0.5 * rng.normal(0, 1, (d, 2 * gates * hid))}
    names = ["X", "W", "R", "B", "", ""] + (["", ""] if op == "LSTM" else [])
    if lens is not None:
        feeds["sequence_lens"], names[4] = np.array(lens, np.int32), "sequence_lens"
    if initial_state:
        feeds["initial_h"], names[5] = rng.normal(0, 1, state), "initial_h"
        if op == "LSTM":
            feeds["initial_c"], names[6] = rng.normal(0, 1, state), "initial_c"
    if peepholes:
        feeds["P"], names[7] = rng.normal(0, 1, (d, 3 * hid)), "P"
    while names[-1] == "":
        names.pop()
    feeds = {k: v if v.dtype == np.int32 else v.astype(np.float32) for k, v in feeds.items()}
    outs = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    out_shapes = [[batch, steps, d, hid] if layout else [steps, d, batch, hid], list(state), list(state)]
    inputs = [helper.make_tensor_value_info(k, TensorProto.INT32 if v.dtype == np.int32 else TensorProto.FLOAT,
                                            list(v.shape)) for k, v in feeds.items()]
    graph = helper.make_graph([helper.make_node(op, names, outs, hidden_size=hid, layout=layout, **attrs)], op.lower(),
                              inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, s)
                                       for o, s in zip(outs, out_shapes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model, feeds
