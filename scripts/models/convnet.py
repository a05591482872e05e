#!/usr/bin/python3
"""Writes a small convolutional classifier ONNX model with random weights.

Three Conv (with bias) + Relu layers (3->16 stride 1, 16->32 stride 2, 32->64
stride 2, all 3x3 with padding 1), a 2x2 MaxPool, GlobalAveragePool, Flatten
and a Gemm head (transB=1) to 10 classes: the shape of network that dynamic
quantization turns into ConvInteger and MatMulInteger.

Deterministic for a given --seed: He-initialised convolutions, small biases.
Input `input` float32 [N,3,64,64], output `output` [N,10], opset 13.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/convnet.py -o convnet.onnx [--seed 0] [--batch 1] [--size 64]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper

import onnx_builder

CLASSES = 10
LAYERS = [(3, 16, 1), (16, 32, 2), (32, 64, 2)]  # (in channels, out channels, stride)


def build(seed, batch, size=64):
    b = onnx_builder.Builder(np.random.default_rng(seed))
    x = "input"
    for i, (cin, cout, stride) in enumerate(LAYERS, start=1):
        w = b.rng.normal(0.0, np.sqrt(2.0 / (cin * 9)), (cout, cin, 3, 3))
        bias = b.rng.normal(0.0, 0.05, cout)
        y = b.node("Conv", [x, b.const(f"conv{i}.weight", w), b.const(f"conv{i}.bias", bias)], f"conv{i}",
                   kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1])
        x = b.node("Relu", [y], f"relu{i}")
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("GlobalAveragePool", [x], "avgpool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    fc_w = b.rng.normal(0.0, np.sqrt(1.0 / LAYERS[-1][1]), (CLASSES, LAYERS[-1][1]))
    fc_b = b.rng.normal(0.0, 0.01, CLASSES)
    b.nodes.append(helper.make_node(
        "Gemm", [x, b.const("fc.weight", fc_w), b.const("fc.bias", fc_b)], ["output"], name="fc", transB=1))
    return b.model("convnet", [batch, 3, size, size], [batch, CLASSES], producer="tessera-convnet")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--batch", type=int, default=1, help="batch size N of input and output (default 1)")
    parser.add_argument("--size", type=int, default=64, help="input height and width (default 64)")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    if args.size < 8:
        parser.error("--size must be at least 8")
    model = build(args.seed, args.batch, args.size)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"convnet.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
