#!/usr/bin/python3
"""Writes a wav2vec2-style feature encoder as torch.onnx.export writes it, with random weights.

The PyTorch module is wav2vec2-base's convolutional feature encoder and
feature projection:

    x = audio.unsqueeze(1)                                  # [1, 1, T]
    for i, layer in enumerate(self.conv_layers):            # 7 x Conv1d(C, C, k, s, bias=False)
        x = layer.conv(x)                                   # k 10,3,3,3,3,2,2; s 5,2,2,2,2,2,2
        if i == 0:
            x = layer.layer_norm(x)                         # GroupNorm(C, C): one group per channel
        x = layer.activation(x)                             # GELU (exact)
    x = x.transpose(1, 2)                                   # [1, frames, C]
    x = self.feature_projection.layer_norm(x)               # LayerNorm(C)
    return self.feature_projection.projection(x)            # Linear(C, 768)

exported with opset 17 and the default constant folding. Input `audio`
float32 [1, 16000] (one second at 16 kHz), output `features` float32
[1, 49, 768]. C is 512 (--channels for a smaller variant).

What the exporter writes:
- Unsqueeze(axes Constant [1]).
- Conv per layer with every attribute written (dilations [1], group 1,
  kernel_shape [k], pads [0, 0], strides [s]) and no bias input; weights
  "conv_layers.<i>.conv.weight" [C, C_in, k].
- GroupNorm, for which opset 17 has no operator: Reshape to [0, C, -1]
  (allowzero=0) -> InstanceNormalization with Constant scale ones [C] and
  bias zeros [C] (epsilon 1e-5) -> Reshape back to Shape(input) -> Mul by
  the weight and Add of the bias, each unsqueezed to [C, 1] and folded into
  an initializer "onnx::Mul_<id>" / "onnx::Add_<id>".
- GELU: Div by sqrt(2), Erf, Add 1, Mul by the input, Mul 0.5.
- Transpose [0, 2, 1]; LayerNormalization(axis=-1, epsilon 1e-5) on
  "feature_projection.layer_norm.weight"/".bias"; MatMul by the folded
  transposed weight "onnx::MatMul_<id>" [C, 768], then Add(bias, product).

Deterministic for a given --seed: He-normal convolution weights (std
sqrt(2 / fan_in)), norm scales near 1 and small shifts, PyTorch's uniform
Linear initialisation, so activations stay of order 1.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/audio_encoder.py -o audio_encoder.onnx [--seed 0] [--channels 512]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto

import torch_style as ts

KERNELS = (10, 3, 3, 3, 3, 2, 2)
STRIDES = (5, 2, 2, 2, 2, 2, 2)
SAMPLES, CHANNELS, HIDDEN = 16000, 512, 768
FLOAT = TensorProto.FLOAT


def frames(samples):
    """Output frames of the convolution stack for `samples` input samples."""
    for k, s in zip(KERNELS, STRIDES):
        samples = (samples - k) // s + 1
    return samples


def parameters(seed, channels=CHANNELS, hidden=HIDDEN):
    """The module's state_dict."""
    rng = np.random.default_rng(seed)
    params, c_in = {}, 1
    for i, k in enumerate(KERNELS):
        params[f"conv_layers.{i}.conv.weight"] = rng.normal(0.0, np.sqrt(2.0 / (c_in * k)), (channels, c_in, k))
        c_in = channels
    for prefix in ("conv_layers.0.layer_norm", "feature_projection.layer_norm"):
        params[prefix + ".weight"] = rng.uniform(0.8, 1.2, channels)
        params[prefix + ".bias"] = rng.normal(0.0, 0.1, channels)
    bound = 1.0 / np.sqrt(channels)
    params["feature_projection.projection.weight"] = rng.uniform(-bound, bound, (hidden, channels))
    params["feature_projection.projection.bias"] = rng.uniform(-bound, bound, hidden)
    return {name: value.astype(np.float32) for name, value in params.items()}


def group_norm(g, x, groups, weight, bias, scope, eps=1e-5):
    """nn.GroupNorm(groups, C) on a 3-D input at opset 17, through
    InstanceNormalization on [N, groups, -1]; the affine part applied after
    the Reshape back, its weight and bias folded to [C, 1]."""
    y = g.op("Reshape", [x, g.constant([0, groups, -1], scope=scope)], scope, allowzero=0)
    ones, zeros = np.ones(groups), np.zeros(groups)
    y = g.op("InstanceNormalization", [y, g.constant(ones, np.float32, scope), g.constant(zeros, np.float32, scope)],
             scope, epsilon=eps)
    y = g.op("Reshape", [y, g.op("Shape", [x], scope)], scope, allowzero=0)
    y = g.op("Mul", [y, g.folded("Mul", np.asarray(weight)[:, None])], scope)
    return g.op("Add", [y, g.folded("Add", np.asarray(bias)[:, None])], scope)


def build(seed=0, channels=CHANNELS, hidden=HIDDEN, samples=SAMPLES):
    """The exported encoder with C = `channels` and a `hidden`-wide projection."""
    p = parameters(seed, channels, hidden)
    g = ts.Graph()
    x = ts.unsqueeze(g, g.input("audio", FLOAT, [1, samples]), [1])
    for i, (k, s) in enumerate(zip(KERNELS, STRIDES)):
        scope, name = f"/conv_layers.{i}", f"conv_layers.{i}.conv.weight"
        x = ts.conv1d(g, x, g.param(name, p[name]), None, k, s, 0, scope + "/conv")
        if i == 0:
            x = group_norm(g, x, channels, p["conv_layers.0.layer_norm.weight"], p["conv_layers.0.layer_norm.bias"],
                           scope + "/layer_norm")
        x = ts.gelu(g, x, scope + "/activation")
    x = g.op("Transpose", [x], perm=[0, 2, 1])
    prefix = "feature_projection.layer_norm"
    x = ts.layer_norm(g, x, prefix, p[prefix + ".weight"], p[prefix + ".bias"], "/feature_projection/layer_norm")
    prefix = "feature_projection.projection"
    y = ts.linear3d(g, x, p[prefix + ".weight"], p[prefix + ".bias"], "/feature_projection/projection")
    g.output(ts.rename_output(g, y, "features"), FLOAT, [1, frames(samples), hidden])
    doc = f"wav2vec2-style feature encoder: 7 Conv1d({channels}) + GroupNorm + GELU, LayerNorm, Linear({hidden})"
    return ts.make_model(g, producer="tessera-audio_encoder", doc=doc)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--channels", type=int, default=CHANNELS, help=f"convolution channels (default {CHANNELS})")
    parser.add_argument("--hidden", type=int, default=HIDDEN, help=f"projection width (default {HIDDEN})")
    parser.add_argument("--samples", type=int, default=SAMPLES, help=f"audio samples (default {SAMPLES})")
    args = parser.parse_args(argv)
    if args.channels < 1 or args.hidden < 1:
        parser.error("--channels and --hidden must be at least 1")
    if frames(args.samples) < 1:
        parser.error(f"--samples {args.samples} is too short for the convolution stack (400 at least)")
    try:
        onnx.save(build(args.seed, args.channels, args.hidden, args.samples), args.output)
    except OSError as e:
        print(f"audio_encoder.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
