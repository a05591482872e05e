#!/usr/bin/python3
"""Writes a 2-layer LSTM speech model as torch.onnx.export writes it, with random weights.

The PyTorch model is nn.LSTM(64, 128, num_layers=2, batch_first=True)
called without initial states, then nn.Linear(128 or 256, 32) on every
frame; exported with opset 17 and the default constant folding. The graph is
what symbolic_opset9._generic_rnn writes:

    input [1,T,64] -> Transpose(1,0,2) -> LSTM -> Squeeze(axis 1) -> LSTM
      -> Squeeze(axis 1) -> Transpose(1,0,2) -> MatMul -> Add -> output [1,T,32]

- one LSTM node per layer (hidden_size 128, sequence_lens empty); W, R, B
  initializers "onnx::LSTM_<id>" in ONNX gate order i,o,f,c (PyTorch stacks
  i,f,g,o): W [1,512,64] then [1,512,128], R [1,512,128], B [1,1024] =
  [W_bias, R_bias];
- the zero initial states nn.LSTM makes when h0/c0 are not given, folded
  into Constant nodes [num_directions, 1, 128] per layer;
- with --bidirectional: direction=bidirectional, W/R/B with 2 directions and
  Transpose(0,2,1,3) + Reshape(0,0,-1) instead of the Squeeze;
- with --unfolded: the graph before constant folding, with a dynamic batch
  axis: the gate reordering as Slice/Concat/Unsqueeze on the PyTorch-layout
  parameters ("lstm.weight_ih_l0", ...), the zero states from Shape/Gather/
  Unsqueeze/Concat/ConstantOfShape and sliced per layer;
- the Linear as MatMul by the folded transposed weight, then Add(bias, .).

Deterministic for a given --seed (PyTorch's uniform initialisation).
--shuffle-nodes writes the top-level nodes in a seeded non-topological order.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/lstm_speech.py -o lstm_speech.onnx [--seed 0] [--steps 100]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto

import onnx_builder
import torch_style

FEATURES, HIDDEN, LAYERS, CLASSES = 64, 128, 2, 32


def parameters(seed, variant="LSTM", bidirectional=False):
    """The PyTorch state_dict of the model (recurrent layers, then fc)."""
    rng = np.random.default_rng(seed)
    prefix = variant.lower()
    params = torch_style.rnn_params(rng, variant, FEATURES, HIDDEN, LAYERS, bidirectional, prefix)
    width = HIDDEN * (2 if bidirectional else 1)
    bound = 1.0 / np.sqrt(width)
    params["fc.weight"] = rng.uniform(-bound, bound, (CLASSES, width)).astype(np.float32)
    params["fc.bias"] = rng.uniform(-bound, bound, CLASSES).astype(np.float32)
    return params


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def pytorch_layer(variant, x, p, reverse=False):
    """One direction of nn.LSTM / nn.GRU from zero states, in PyTorch's own
    gate order and equations (LSTM i,f,g,o; GRU r,z,n with the reset gate
    applied after the recurrent product), float64: x [T, N, I] -> [T, N, H]."""
    w_ih, w_hh, b_ih, b_hh = (p[k].astype(np.float64) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    hid = w_hh.shape[1]
    h, c = np.zeros((x.shape[1], hid)), np.zeros((x.shape[1], hid))
    ys = np.zeros((x.shape[0], x.shape[1], hid))
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        gi, gh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        if variant == "LSTM":
            i, f, o = (_sigmoid(gi[:, k * hid:(k + 1) * hid] + gh[:, k * hid:(k + 1) * hid]) for k in (0, 1, 3))
            c = f * c + i * np.tanh(gi[:, 2 * hid:3 * hid] + gh[:, 2 * hid:3 * hid])
            h = o * np.tanh(c)
        else:
            r, z = (_sigmoid(gi[:, k * hid:(k + 1) * hid] + gh[:, k * hid:(k + 1) * hid]) for k in (0, 1))
            h = (1 - z) * np.tanh(gi[:, 2 * hid:] + r * gh[:, 2 * hid:]) + z * h
        ys[t] = h
    return ys


def pytorch_forward(variant, params, x, bidirectional=False):
    """What the PyTorch model computes on x [N, T, 64], from its state_dict
    (independent of the ONNX gate reordering): logits [N, T, 32], float64."""
    y = np.asarray(x, np.float64).transpose(1, 0, 2)
    prefix = variant.lower()
    for layer in range(LAYERS):
        outs = []
        for suffix in ["", "_reverse"][:1 + bool(bidirectional)]:
            p = {k: params[f"{prefix}.{k}_l{layer}{suffix}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
            outs.append(pytorch_layer(variant, y, p, reverse=bool(suffix)))
        y = np.concatenate(outs, axis=-1)
    return y.transpose(1, 0, 2) @ params["fc.weight"].T + params["fc.bias"]


def build_speech_rnn(variant, seed=0, steps=100, bidirectional=False, unfolded=False):
    """The exported speech model with an nn.LSTM, nn.GRU or nn.RNN core."""
    params = parameters(seed, variant, bidirectional)
    prefix = variant.lower()
    g = torch_style.Graph()
    batch = "batch" if unfolded else 1
    x = g.input("input", TensorProto.FLOAT, [batch, steps, FEATURES])
    y = torch_style.rnn(g, x, variant, params, HIDDEN, LAYERS, bidirectional, batch_first=True,
                        scope=f"/{prefix}", fold=not unfolded, prefix=prefix)
    logits = torch_style.linear3d(g, y, params["fc.weight"], params["fc.bias"], "/fc")
    g.output(torch_style.rename_output(g, logits, "output"), TensorProto.FLOAT, [batch, steps, CLASSES])
    kind = "bidirectional " if bidirectional else ""
    doc = f"{kind}{LAYERS}-layer {variant}({FEATURES}, {HIDDEN}) + Linear({CLASSES}), torch.onnx.export style"
    return torch_style.make_model(g, producer=f"tessera-{prefix}_speech", doc=doc)


def build(seed=0, steps=100, bidirectional=False, unfolded=False):
    return build_speech_rnn("LSTM", seed, steps, bidirectional, unfolded)


def speech_main(argv, variant, doc):
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and shuffle (default 0)")
    parser.add_argument("--steps", type=int, default=100, help="time steps T of the input (default 100)")
    parser.add_argument("--bidirectional", action="store_true", help="bidirectional layers")
    parser.add_argument("--unfolded", action="store_true",
                        help="write the graph before constant folding (dynamic batch)")
    parser.add_argument("--shuffle-nodes", action="store_true",
                        help="write the top-level nodes in a seeded non-topological order")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    model = build_speech_rnn(variant, args.seed, args.steps, args.bidirectional, args.unfolded)
    if args.shuffle_nodes:
        model = onnx_builder.shuffle_nodes(model, args.seed)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"{variant.lower()}_speech.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


def main(argv):
    return speech_main(argv, "LSTM", __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
