#!/usr/bin/python3
"""Writes a gated two-head classifier ONNX model, as a scripted module
exported by torch.onnx.export (opset 17), with random weights.

A small convolutional trunk (Conv 3->16 stride 2, Relu, Conv 16->32 stride
2, Relu, GlobalAveragePool, Flatten) feeds a detection head (Gemm to one
score, Sigmoid); the classification head (Gemm to 10 classes, Softmax) runs
only when the detection score passes the threshold:

    score = torch.sigmoid(self.head1(f))
    if score.max() > 0.5:
        out = torch.softmax(self.head2(f), dim=1)
    else:
        out = torch.zeros(1, 10)

exported as ReduceMax(keepdims=0) -> Greater(Constant 0.5) -> Cast(to=BOOL)
-> If, the Cast being torch's control-flow fix-up. The then branch holds
the head (Gemm with transB=1 on the main graph's "head2.weight" /
"head2.bias", Softmax axis 1); the else branch makes the zeros from a
Constant shape with ConstantOfShape (nothing is folded inside a branch).
Both branches give float [1, 10].

Input `input` float32 [1, 3, 32, 32]; outputs `score` [1, 1] and `output`
[1, 10]. Deterministic for a given --seed; --threshold changes the gate.
--shuffle-nodes writes the top-level nodes in a seeded non-topological order.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/gated_classifier.py -o gated_classifier.onnx [--seed 0]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

import onnx_builder
import torch_style as ts

TRUNK = [(3, 16), (16, 32)]  # (in, out) channels, 3x3 kernels, stride 2, padding 1
CLASSES, SIZE = 10, 32


def parameters(seed):
    rng = np.random.default_rng(seed)
    params = {}
    for k, (cin, cout) in zip((0, 2), TRUNK):
        params[f"features.{k}.weight"] = rng.normal(0.0, np.sqrt(2.0 / (cin * 9)), (cout, cin, 3, 3))
        params[f"features.{k}.bias"] = rng.normal(0.0, 0.05, cout)
    width = TRUNK[-1][1]
    # A detector that fires on strong features: positive weights, negative
    # bias, so that faint inputs leave the gate closed and strong ones open it.
    params["head1.weight"] = np.abs(rng.normal(0.0, 1.0 / np.sqrt(width), (1, width)))
    params["head1.bias"] = np.full(1, -1.0)
    params["head2.weight"] = rng.normal(0.0, 1.0 / np.sqrt(width), (CLASSES, width))
    params["head2.bias"] = rng.normal(0.0, 0.05, CLASSES)
    return {k: v.astype(np.float32) for k, v in params.items()}


def build(seed=0, threshold=0.5):
    params = parameters(seed)
    g = ts.Graph()
    x = g.input("input", TensorProto.FLOAT, [1, 3, SIZE, SIZE])
    for k in (0, 2):
        w = g.param(f"features.{k}.weight", params[f"features.{k}.weight"])
        b = g.param(f"features.{k}.bias", params[f"features.{k}.bias"])
        x = g.op("Conv", [x, w, b], f"/features/features.{k}", dilations=[1, 1], group=1, kernel_shape=[3, 3],
                 pads=[1, 1, 1, 1], strides=[2, 2])
        x = g.op("Relu", [x], f"/features/features.{k + 1}")
    f = g.op("Flatten", [g.op("GlobalAveragePool", [x], "/pool")], "", axis=1)
    for name in ("head1", "head2"):
        g.param(f"{name}.weight", params[f"{name}.weight"])
        g.param(f"{name}.bias", params[f"{name}.bias"])
    score = g.op("Sigmoid", [ts.gemm(g, f, "head1.weight", "head1.bias", "/head1")])
    top = g.op("ReduceMax", [score], keepdims=0)
    cond = ts.cond_to_bool(g, g.op("Greater", [top, g.constant(threshold, np.float32)]))
    then_g, else_g = g.subgraph(), g.subgraph()
    logits = ts.gemm(then_g, f, "head2.weight", "head2.bias", "/head2")
    then_g.output(then_g.op("Softmax", [logits], axis=1), TensorProto.FLOAT, [1, CLASSES])
    zeros = else_g.op("ConstantOfShape", [else_g.constant([1, CLASSES])],
                      value=numpy_helper.from_array(np.zeros(1, np.float32)))
    else_g.output(zeros, TensorProto.FLOAT, [1, CLASSES])
    out = ts.if_node(g, cond, then_g, else_g)
    g.output(ts.rename_output(g, score, "score"), TensorProto.FLOAT, [1, 1])
    g.output(ts.rename_output(g, out, "output"), TensorProto.FLOAT, [1, CLASSES])
    return ts.make_model(g, producer="tessera-gated_classifier",
                         doc="classifier whose second head runs behind an If on the first head's score")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and shuffle (default 0)")
    parser.add_argument("--threshold", type=float, default=0.5, help="score above which head 2 runs (default 0.5)")
    parser.add_argument("--shuffle-nodes", action="store_true",
                        help="write the top-level nodes in a seeded non-topological order")
    args = parser.parse_args(argv)
    model = build(args.seed, args.threshold)
    if args.shuffle_nodes:
        model = onnx_builder.shuffle_nodes(model, args.seed)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"gated_classifier.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
