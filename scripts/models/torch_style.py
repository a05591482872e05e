"""Writes ONNX graphs the way torch.onnx.export (the TorchScript exporter,
opset 17) writes them: a graph builder with PyTorch's naming, and the node
sequences that its symbolic functions emit for the layers the control-flow
and recurrent model generators use.

What is reproduced, from torch/onnx/symbolic_opset9.py, symbolic_opset11.py,
symbolic_opset13.py, symbolic_helper.py and the C++ passes behind them
(constant_fold.cpp, fixup_onnx_controlflow.cpp, peephole.cpp):

- Names. Nodes are "<scope>/<OpType>" with "_<n>" for repeats, their
  outputs "<node name>_output_<i>"; parameters keep their state_dict names;
  a value that constant folding computed from a parameter becomes an
  initializer "onnx::<consumer op>_<id>"; one computed from constants only
  becomes a Constant node. Constant folding runs on the main graph only, so
  inside If/Loop bodies the unfolded node chains stay.
- Control flow. A scripted `if` gets a Cast(to=BOOL) of its condition
  before the If (the condition is a tensor, not a TorchScript bool); a
  branch or loop body that returns a value of the enclosing scope returns
  it through an Identity inside the body.
- Constants. Axes of Squeeze/Unsqueeze and starts/ends/axes/steps of Slice
  are inputs (opset 13) written as Constant nodes next to their reader.
- Recurrent layers (_generic_rnn): Transpose [1,0,2] for batch_first, one
  ONNX node per layer with W/R/B in ONNX gate order (LSTM i,f,g,o -> i,o,f,c;
  GRU r,z,n -> z,r,n; RNN unchanged), B = [Wb, Rb] concatenated, GRU with
  linear_before_reset=1, sequence_lens left empty, a Squeeze of the
  num_directions axis (or Transpose [0,2,1,3] + Reshape [0,0,-1] when
  bidirectional), per-layer initial states; folded or unfolded.
- Linear: MatMul with the transposed weight then Add(bias, product) on 3-D
  inputs; Gemm with transB=1 on 2-D ones.
- squeeze(dim) of a dimension whose size is unknown (symbolic_opset11/13):
  Shape -> Gather -> Equal(1) -> If(Squeeze | Identity).
- F.pad(mode="reflect") at opset 11+: the pads computed at run time by
  Shape/Gather/Sub/Mul/Cast/Concat/ConstantOfShape/Reshape/Slice (flip)/
  Transpose/Reshape/Cast, then Pad(mode=reflect). On the main graph,
  constant folding turns the length arithmetic and the first Cast into
  Constant nodes and stops at ConstantOfShape and at the flip (a Slice with
  step -1), which it does not evaluate: the rest of the chain stays.
- nn.GELU() (exact): Div by sqrt(2), Erf, Add 1, Mul by the input, Mul 0.5,
  the double constants narrowed to float32 scalars.
- nn.LayerNorm at opset 17: one LayerNormalization(axis=-1).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # what opset 17 models carry
INT64_MAX = 2 ** 63 - 1

# ONNX gate order as slices of PyTorch's stacked gate weights, in units of
# hidden_size: torch's reform_permutation in _generic_rnn.
GATE_SLICES = {"LSTM": [(0, 1), (3, 4), (1, 3)],  # i | o | f,g  ->  i,o,f,c
               "GRU": [(1, 2), (0, 1), (2, 3)],   # z | r | n    ->  z,r,h
               "RNN": [(0, 1)]}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


class Graph:
    """A graph or subgraph under construction. Subgraphs share the model's
    naming state and put their parameters into the main graph, as torch does."""

    def __init__(self, name="main_graph", parent=None):
        self.name = name
        self.root = parent.root if parent else self
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []
        if parent is None:
            self.used, self.value_id, self.blocks, self.params = {}, 100, 0, set()

    def op(self, op_type, inputs, scope="", outputs=1, **attrs):
        """Appends a node; returns its output name (or list if outputs > 1)."""
        base = f"{scope}/{op_type}"
        n = self.root.used.get(base, 0)
        self.root.used[base] = n + 1
        name = base if n == 0 else f"{base}_{n}"
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def constant(self, value, dtype=np.int64, scope=""):
        """A Constant node holding `value`."""
        return self.op("Constant", [], scope, value=numpy_helper.from_array(np.asarray(value, dtype=dtype)))

    def param(self, name, array, dtype=np.float32):
        """A parameter or buffer of the module, under its state_dict name
        (written once however often it is read)."""
        if name in self.root.params:
            return name
        self.root.params.add(name)
        self.root.inits.append(numpy_helper.from_array(np.asarray(array).astype(dtype), name))
        return name

    def folded(self, consumer, array, dtype=np.float32):
        """A value constant folding computed from parameters: onnx::<consumer>_<id>."""
        self.root.value_id += 1
        return self.param(f"onnx::{consumer}_{self.root.value_id}", array, dtype)

    def input(self, name, elem, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, name, elem, shape=None):
        self.outputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def subgraph(self):
        self.root.blocks += 1
        return Graph(f"torch_jit{self.root.blocks}", self)

    def proto(self):
        return helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                 initializer=self.inits if self.root is self else None)


def make_model(graph, producer, doc=""):
    """The checked opset-17 model of a finished main graph."""
    model = helper.make_model(graph.proto(), producer_name=producer, doc_string=doc,
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def rename_output(g, value, name):
    """Gives the node output `value` the graph-output name `name`, as torch
    names the values it returns after the user's output_names."""
    for node in g.nodes:
        for i, out in enumerate(node.output):
            if out == value:
                node.output[i] = name
        for i, inp in enumerate(node.input):
            if inp == value:
                node.input[i] = name
    return name


# ---- small symbolic helpers ----

def unsqueeze(g, x, axes, scope=""):
    return g.op("Unsqueeze", [x, g.constant(axes, scope=scope)], scope)


def squeeze(g, x, axes, scope=""):
    return g.op("Squeeze", [x, g.constant(axes, scope=scope)], scope)


def slice_(g, x, starts, ends, axes, steps=None, scope=""):
    """symbolic_helper._slice_helper at opset 10+: all bounds as Constant inputs."""
    ins = [x, g.constant(starts, scope=scope), g.constant(ends, scope=scope), g.constant(axes, scope=scope)]
    if steps is not None:
        ins.append(g.constant(steps, scope=scope))
    return g.op("Slice", ins, scope)


def cond_to_bool(g, cond, scope=""):
    """The Cast(to=BOOL) torch's If fix-up puts before every scripted `if`:
    the condition is a tensor, not a TorchScript bool, even when already bool."""
    return g.op("Cast", [cond], scope, to=TensorProto.BOOL)


def if_node(g, cond, then_g, else_g, scope="", outputs=1):
    return g.op("If", [cond], scope, outputs=outputs, then_branch=then_g.proto(), else_branch=else_g.proto())


def linear3d(g, x, weight, bias, scope, name=None):
    """nn.Linear on a 3-D input: MatMul by the folded transpose, then Add(bias, .);
    without a bias (None), the MatMul alone. `name` is the layer's state_dict
    prefix, by default the scope with dots; give it where they differ: a
    module in a container is scoped from its name's last non-numeric atom
    ("blocks.0.mlp.0" is "/blocks.0/mlp/mlp.0")."""
    mm = g.op("MatMul", [x, g.folded("MatMul", np.asarray(weight).T)], scope)
    if bias is None:
        return mm
    name = scope.strip("/").replace("/", ".") if name is None else name
    return g.op("Add", [g.param(name + ".bias", bias), mm], scope)


def gemm(g, x, weight_name, bias_name, scope):
    """nn.Linear on a 2-D input: Gemm(x, W, b, transB=1) with the parameters as they are."""
    return g.op("Gemm", [x, weight_name, bias_name], scope, alpha=1.0, beta=1.0, transB=1)


def conv1d(g, x, w_name, b_name, kernel, stride=1, pad=0, scope=""):
    """nn.Conv1d: torch writes every attribute explicitly."""
    ins = [x, w_name] + ([b_name] if b_name else [])
    return g.op("Conv", ins, scope, dilations=[1], group=1, kernel_shape=[kernel], pads=[pad, pad],
                strides=[stride])


def squeeze_dynamic(g, x, dim, scope, elem=TensorProto.FLOAT):
    """x.squeeze(dim) when the size of `dim` is not known at export time."""
    size = g.op("Gather", [g.op("Shape", [x], scope), g.constant([dim], scope=scope)], scope, axis=0)
    cond = g.op("Equal", [size, g.constant([1], scope=scope)], scope)
    then_g, else_g = g.subgraph(), g.subgraph()
    then_g.output(squeeze(then_g, x, [dim], scope), elem)
    else_g.output(else_g.op("Identity", [x], scope), elem)
    return if_node(g, cond, then_g, else_g, scope)


def reflect_pad(g, x, pad, rank, scope, folded=False):
    """F.pad(x, pad, mode="reflect") at opset 11+ (pad in PyTorch's order:
    last dimension first, begin then end), with the ONNX pads computed at
    run time as symbolic_opset11._prepare_onnx_paddings writes them. With
    `folded`, the chain as constant folding leaves it on the main graph: the
    zero-extension length and the pads are Constant nodes, ConstantOfShape
    and everything after it stay."""
    if folded:
        extension = g.constant([2 * rank - len(pad)], scope=scope)
        pad_t = g.constant(pad, scope=scope)
    else:
        pad_t = g.constant(pad, scope=scope)
        pad_len = g.op("Gather", [g.op("Shape", [pad_t], scope), g.constant([0], scope=scope)], scope, axis=0)
        extension = g.op("Sub", [g.op("Mul", [g.constant(rank, scope=scope), g.constant(2, scope=scope)], scope),
                                 pad_len], scope)
        pad_t = g.op("Cast", [pad_t], scope, to=TensorProto.INT64)
    zeros = g.op("ConstantOfShape", [extension], scope,
                 value=numpy_helper.from_array(np.zeros(1, np.int64)))
    paddings = g.op("Concat", [pad_t, zeros], scope, axis=0)
    paddings = g.op("Reshape", [paddings, g.constant([-1, 2], scope=scope)], scope, allowzero=0)
    flipped = slice_(g, paddings, [-1], [-INT64_MAX], [0], [-1], scope=scope)  # symbolic_opset10.flip
    paddings = g.op("Transpose", [flipped], scope, perm=[1, 0])
    paddings = g.op("Reshape", [paddings, g.constant([-1], scope=scope)], scope, allowzero=0)
    paddings = g.op("Cast", [paddings], scope, to=TensorProto.INT64)
    return g.op("Pad", [x, paddings], scope, mode="reflect")


def gelu(g, x, scope):
    """nn.GELU() / F.gelu(x) (exact): x * (1 + erf(x / sqrt 2)) * 0.5 in the
    exporter's node order, each constant a float32 scalar Constant."""
    erf = g.op("Erf", [g.op("Div", [x, g.constant(np.sqrt(2.0), np.float32, scope)], scope)], scope)
    plus_one = g.op("Add", [erf, g.constant(1.0, np.float32, scope)], scope)
    return g.op("Mul", [g.op("Mul", [x, plus_one], scope), g.constant(0.5, np.float32, scope)], scope)


def layer_norm(g, x, prefix, weight, bias, scope, eps=1e-5):
    """nn.LayerNorm(last dimension) at opset 17: LayerNormalization(axis=-1)
    on the module's weight and bias, under their state_dict names."""
    return g.op("LayerNormalization", [x, g.param(prefix + ".weight", weight), g.param(prefix + ".bias", bias)],
                scope, axis=-1, epsilon=eps)


# ---- recurrent layers ----

def rnn_params(rng, variant, input_size, hidden, num_layers=1, bidirectional=False, prefix="lstm", cell=False):
    """PyTorch-layout parameters, initialised as PyTorch does (uniform in
    +-1/sqrt(hidden)), keyed by state_dict name. nn.LSTMCell/GRUCell
    parameters (`cell`) have no _l<k> suffix."""
    bound = 1.0 / np.sqrt(hidden)
    gates = GATES[variant] * hidden
    params = {}
    for layer in range(num_layers):
        for suffix in ([""] + (["_reverse"] if bidirectional else [])):
            size_in = input_size if layer == 0 else hidden * (2 if bidirectional else 1)
            tag = suffix if cell else f"_l{layer}{suffix}"
            for kind, shape in (("weight_ih", (gates, size_in)), ("weight_hh", (gates, hidden)),
                                ("bias_ih", (gates,)), ("bias_hh", (gates,))):
                params[f"{prefix}.{kind}{tag}"] = rng.uniform(-bound, bound, shape).astype(np.float32)
    return params


def reorder_gates(w, variant, hidden):
    """PyTorch's stacked gates in ONNX order (first axis)."""
    return np.concatenate([w[a * hidden:b * hidden] for a, b in GATE_SLICES[variant]], axis=0)


def onnx_rnn_weights(params, variant, hidden, layer, directions, prefix, cell=False):
    """The W, R, B the ONNX node reads for one layer: [dirs, G*H, in], [dirs, G*H, H], [dirs, 2*G*H]."""
    ws, rs, bs = [], [], []
    for suffix in ["", "_reverse"][:directions]:
        tag = suffix if cell else f"_l{layer}{suffix}"
        p = {k: params[f"{prefix}.{k}{tag}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        ws.append(reorder_gates(p["weight_ih"], variant, hidden))
        rs.append(reorder_gates(p["weight_hh"], variant, hidden))
        bs.append(np.concatenate([reorder_gates(p["bias_ih"], variant, hidden),
                                  reorder_gates(p["bias_hh"], variant, hidden)]))
    return np.stack(ws), np.stack(rs), np.stack(bs)


def _unfolded_weights(g, params, variant, hidden, layer, directions, prefix, scope, cell):
    """transform_weights as emitted before folding: Slice+Concat per weight,
    Concat of the two biases, Unsqueeze(0); Concat of both directions."""
    per_dir = []
    for suffix in ["", "_reverse"][:directions]:
        tag = suffix if cell else f"_l{layer}{suffix}"
        names = []
        for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            name = g.param(f"{prefix}.{kind}{tag}", params[f"{prefix}.{kind}{tag}"])
            if variant == "RNN":
                names.append(name)
                continue
            parts = [slice_(g, name, [a * hidden], [b * hidden], [0], scope=scope) for a, b in GATE_SLICES[variant]]
            names.append(g.op("Concat", parts, scope, axis=0))
        w, r, b_ih, b_hh = names
        bias = g.op("Concat", [b_ih, b_hh], scope, axis=0)
        per_dir.append([unsqueeze(g, v, [0], scope) for v in (w, r, bias)])
    if directions == 1:
        return per_dir[0]
    return [g.op("Concat", [f, b], scope, axis=0) for f, b in zip(*per_dir)]


def zero_state(g, batch, count, hidden, scope):
    """torch.zeros(count, batch, hidden) as traced with a dynamic batch size."""
    shape = g.op("Concat", [g.constant([count], scope=scope), unsqueeze(g, batch, [0], scope),
                            g.constant([hidden], scope=scope)], scope, axis=0)
    return g.op("ConstantOfShape", [shape], scope, value=numpy_helper.from_array(np.zeros(1, np.float32)))


def rnn(g, x, variant, params, hidden, num_layers, bidirectional, batch_first, scope, fold=True,
        batch=1, prefix="lstm"):
    """nn.LSTM/GRU/RNN(tanh) called without initial states, as _generic_rnn
    writes it; returns the output value name ([N, T, D*H] or [T, N, D*H])."""
    d = 2 if bidirectional else 1
    states = []  # unfolded: zeros from the input's batch size (nn.LSTM.forward), once per state kind
    if not fold:
        size = g.op("Gather", [g.op("Shape", [x], scope), g.constant(0 if batch_first else 1, scope=scope)],
                    scope, axis=0)
        states = [zero_state(g, size, num_layers * d, hidden, scope)
                  for _ in range(2 if variant == "LSTM" else 1)]
    if batch_first:
        x = g.op("Transpose", [x], scope, perm=[1, 0, 2])
    extra = {"direction": "bidirectional"} if bidirectional else {}
    if variant == "GRU":
        extra["linear_before_reset"] = 1
    elif variant == "RNN":
        extra["activations"] = ["Tanh"] * d
    for layer in range(num_layers):
        if fold:
            w, r, b = onnx_rnn_weights(params, variant, hidden, layer, d, prefix)
            wrb = [g.folded(variant, w), g.folded(variant, r), g.folded(variant, b)]
            # The zero states folded from constants only: Constant nodes, one per state.
            init = [g.constant(np.zeros((d, batch, hidden)), np.float32, scope)
                    for _ in range(2 if variant == "LSTM" else 1)]
        else:
            wrb = _unfolded_weights(g, params, variant, hidden, layer, d, prefix, scope, cell=False)
            init = states if num_layers == 1 else [
                slice_(g, s, [layer * d], [layer * d + d], [0], scope=scope) for s in states]
        outs = g.op(variant, [x] + wrb + [""] + init, scope, outputs=3 if variant == "LSTM" else 2,
                    hidden_size=hidden, **extra)
        if bidirectional:
            y = g.op("Transpose", [outs[0]], scope, perm=[0, 2, 1, 3])
            x = g.op("Reshape", [y, g.constant([0, 0, -1], scope=scope)], scope, allowzero=0)
        else:
            x = squeeze(g, outs[0], [1], scope)
    if batch_first:
        x = g.op("Transpose", [x], scope, perm=[1, 0, 2])
    return x


def lstm_cell(g, x, h, c, params, hidden, prefix, scope):
    """nn.LSTMCell(x, (h, c)) as symbolic_opset9.lstm_cell writes it inside a
    subgraph, where nothing is folded: Unsqueeze of input and states, the
    weights reordered at run time, one LSTM step, Squeeze of Y_h and Y_c."""
    xs = unsqueeze(g, x, [0], scope)
    hs, cs = unsqueeze(g, h, [0], scope), unsqueeze(g, c, [0], scope)
    wrb = _unfolded_weights(g, params, "LSTM", hidden, 0, 1, prefix, scope, cell=True)
    _, y_h, y_c = g.op("LSTM", [xs] + wrb + ["", hs, cs], scope, outputs=3, hidden_size=hidden)
    return squeeze(g, y_h, [0], scope), squeeze(g, y_c, [0], scope)
