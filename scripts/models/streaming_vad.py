#!/usr/bin/python3
"""Writes a streaming voice-activity model shaped like Silero VAD's, as a
scripted module exported by torch.onnx.export (opset 17), with random weights.

Inputs `input` float [1, 512] (samples), `state` float [2, 1, 128] (LSTM h
and c carried between calls), `sr` int64 scalar; outputs `output` float
[1, 1] (speech probability) and `stateN` float [2, 1, 128]. Call it chunk
after chunk, feeding stateN back as state (zeros at the start).

The main graph is what a scripted `if sr == 16000: ... else: ...` exports to:
Constant(16000) -> Equal -> Cast(to=BOOL) -> If, the Cast being torch's
control-flow fix-up (the condition is a tensor, not a TorchScript bool).
Each branch is one per-rate model (16 kHz: 512-sample window, 256-point
STFT with hop 128; 8 kHz: the last 256 samples, 128-point STFT, hop 64),
with everything inlined and nothing constant-folded (torch folds the main
graph only):

- `if x.dim() == 1: x = x.unsqueeze(0)`: Shape -> Size -> Equal(1) -> Cast
  -> nested If (then Unsqueeze, else Identity);
- 8 kHz only, `if x.shape[-1] > 256: x = x[:, -256:]`: Shape -> Gather(-1)
  -> Greater -> Cast -> nested If (then Slice, else Identity);
- STFT: F.pad(x, [0, pad], "reflect") (its pads computed at run time),
  Unsqueeze, a Conv1d by the constant windowed cos/sin basis, Slice of the
  real and imaginary halves, Pow 2 / Add / Sqrt;
- encoder: four Conv1d (kernel 3, strides 1,2,2,1) + Relu;
- x.squeeze(-1) of a dimension unknown at export: Shape -> Gather -> Equal
  -> nested If (then Squeeze, else Identity), cond a [1] tensor, no Cast;
- nn.LSTMCell(x, (state[0], state[1])): Gather of h and c, the one-step LSTM
  with its weights reordered at run time (Slice/Concat/Unsqueeze), Squeeze;
- decoder: Unsqueeze(-1), Relu, Conv1d(128 -> 1, kernel 1), Sigmoid, then
  ReduceMean over time; stateN = torch.stack([h, c]) (Unsqueeze + Concat).

All parameters are main-graph initializers under their state_dict names,
read from inside the branches. Deterministic for a given --seed.
--shuffle-nodes writes the top-level nodes in a seeded non-topological order.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/streaming_vad.py -o streaming_vad.onnx [--seed 0]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto

import onnx_builder
import torch_style as ts

SAMPLES, HIDDEN = 512, 128
RATES = {16000: {"window": 512, "pad": 64, "n_fft": 256, "hop": 128, "prefix": "_model"},
         8000: {"window": 256, "pad": 32, "n_fft": 128, "hop": 64, "prefix": "_model_8k"}}
ENCODER = [(128, 1), (64, 2), (64, 2), (128, 1)]  # (output channels, stride), kernel 3, padding 1
FLOAT = TensorProto.FLOAT


def stft_basis(n_fft):
    """The [2 * (n_fft/2 + 1), 1, n_fft] real/imaginary DFT rows, Hann-windowed."""
    n = np.arange(n_fft)
    k = np.arange(n_fft // 2 + 1)[:, None]
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * n / n_fft)
    real = np.cos(2.0 * np.pi * k * n / n_fft) * window
    imag = -np.sin(2.0 * np.pi * k * n / n_fft) * window
    return np.concatenate([real, imag])[:, None, :].astype(np.float32)


def parameters(seed):
    """The state_dict of both per-rate models."""
    rng = np.random.default_rng(seed)
    params = {}
    for rate in sorted(RATES, reverse=True):
        cfg = RATES[rate]
        p = cfg["prefix"]
        params[f"{p}.stft.forward_basis_buffer"] = stft_basis(cfg["n_fft"])
        cin = cfg["n_fft"] // 2 + 1
        for k, (cout, _) in enumerate(ENCODER):
            params[f"{p}.encoder.{k}.reparam_conv.weight"] = rng.normal(0.0, np.sqrt(2.0 / (cin * 3)),
                                                                        (cout, cin, 3)).astype(np.float32)
            params[f"{p}.encoder.{k}.reparam_conv.bias"] = rng.normal(0.0, 0.05, cout).astype(np.float32)
            cin = cout
        params.update(ts.rnn_params(rng, "LSTM", HIDDEN, HIDDEN, prefix=f"{p}.decoder.rnn", cell=True))
        params[f"{p}.decoder.decoder.2.weight"] = rng.normal(0.0, 0.5, (1, HIDDEN, 1)).astype(np.float32)
        params[f"{p}.decoder.decoder.2.bias"] = np.zeros(1, np.float32)
    return params


def branch(parent, rate, params):
    """The subgraph of one per-rate model."""
    cfg = RATES[rate]
    p, scope = cfg["prefix"], "/" + cfg["prefix"]
    g = parent.subgraph()
    # if x.dim() == 1: x = x.unsqueeze(0)
    rank = g.op("Size", [g.op("Shape", ["input"], scope)], scope)
    cond = ts.cond_to_bool(g, g.op("Equal", [rank, g.constant(1, scope=scope)], scope), scope)
    then_g, else_g = g.subgraph(), g.subgraph()
    then_g.output(ts.unsqueeze(then_g, "input", [0], scope), FLOAT)
    else_g.output(else_g.op("Identity", ["input"], scope), FLOAT)
    x = ts.if_node(g, cond, then_g, else_g, scope)
    if cfg["window"] < SAMPLES:  # if x.shape[-1] > window: x = x[:, -window:]
        length = g.op("Gather", [g.op("Shape", [x], scope), g.constant(-1, scope=scope)], scope, axis=0)
        cond = ts.cond_to_bool(g, g.op("Greater", [length, g.constant(cfg["window"], scope=scope)], scope), scope)
        then_g, else_g = g.subgraph(), g.subgraph()
        then_g.output(ts.slice_(then_g, x, [-cfg["window"]], [ts.INT64_MAX], [1], [1], scope), FLOAT)
        else_g.output(else_g.op("Identity", [x], scope), FLOAT)
        x = ts.if_node(g, cond, then_g, else_g, scope)
    # STFT magnitude
    s = scope + "/stft"
    x = ts.reflect_pad(g, x, [0, cfg["pad"]], 2, s)
    x = ts.unsqueeze(g, x, [1], s)
    basis = g.param(f"{p}.stft.forward_basis_buffer", params[f"{p}.stft.forward_basis_buffer"])
    ft = ts.conv1d(g, x, basis, None, cfg["n_fft"], stride=cfg["hop"], scope=s)
    bins = cfg["n_fft"] // 2 + 1
    real = ts.slice_(g, ft, [0], [bins], [1], [1], scope=s)
    imag = ts.slice_(g, ft, [bins], [ts.INT64_MAX], [1], [1], scope=s)
    squares = [g.op("Pow", [v, g.constant(2.0, np.float32, s)], s) for v in (real, imag)]
    x = g.op("Sqrt", [g.op("Add", squares, s)], s)
    # encoder
    for k, (_, stride) in enumerate(ENCODER):
        e = f"{scope}/encoder/encoder.{k}"
        w = g.param(f"{p}.encoder.{k}.reparam_conv.weight", params[f"{p}.encoder.{k}.reparam_conv.weight"])
        b = g.param(f"{p}.encoder.{k}.reparam_conv.bias", params[f"{p}.encoder.{k}.reparam_conv.bias"])
        x = g.op("Relu", [ts.conv1d(g, x, w, b, 3, stride=stride, pad=1, scope=e + "/reparam_conv")],
                 e + "/activation")
    # decoder: LSTM cell on the carried state
    d = scope + "/decoder"
    x = ts.squeeze_dynamic(g, x, -1, d)
    h = g.op("Gather", ["state", g.constant(0, scope=d)], d, axis=0)
    c = g.op("Gather", ["state", g.constant(1, scope=d)], d, axis=0)
    h, c = ts.lstm_cell(g, x, h, c, params, HIDDEN, f"{p}.decoder.rnn", d + "/rnn")
    y = g.op("Relu", [ts.unsqueeze(g, h, [-1], d)], d + "/decoder/decoder.1")
    w = g.param(f"{p}.decoder.decoder.2.weight", params[f"{p}.decoder.decoder.2.weight"])
    b = g.param(f"{p}.decoder.decoder.2.bias", params[f"{p}.decoder.decoder.2.bias"])
    y = g.op("Sigmoid", [ts.conv1d(g, y, w, b, 1, scope=d + "/decoder/decoder.2")], d + "/decoder/decoder.3")
    g.output(g.op("ReduceMean", [y], scope, axes=[2], keepdims=0), FLOAT)
    g.output(g.op("Concat", [ts.unsqueeze(g, h, [0], d), ts.unsqueeze(g, c, [0], d)], d, axis=0), FLOAT)
    return g


def build(seed=0):
    params = parameters(seed)
    g = ts.Graph()
    g.input("input", FLOAT, [1, SAMPLES])
    g.input("state", FLOAT, [2, 1, HIDDEN])
    g.input("sr", TensorProto.INT64, [])
    cond = ts.cond_to_bool(g, g.op("Equal", ["sr", g.constant(16000)]))
    then_g, else_g = branch(g, 16000, params), branch(g, 8000, params)
    out, state = ts.if_node(g, cond, then_g, else_g, outputs=2)
    g.output(ts.rename_output(g, out, "output"), FLOAT, [1, 1])
    g.output(ts.rename_output(g, state, "stateN"), FLOAT, [2, 1, HIDDEN])
    return ts.make_model(g, producer="tessera-streaming_vad",
                         doc="Silero-VAD-shaped streaming model, scripted torch.onnx.export style")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and shuffle (default 0)")
    parser.add_argument("--shuffle-nodes", action="store_true",
                        help="write the top-level nodes in a seeded non-topological order")
    args = parser.parse_args(argv)
    model = build(args.seed)
    if args.shuffle_nodes:
        model = onnx_builder.shuffle_nodes(model, args.seed)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"streaming_vad.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
