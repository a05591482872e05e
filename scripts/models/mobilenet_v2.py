#!/usr/bin/python3
"""Writes torchvision's MobileNetV2 as torch.onnx.export writes it, with random weights.

The PyTorch model is torchvision.models.mobilenet_v2(width_mult=W) in eval
mode, exported as torch.onnx.export(model, x, opset_version=17,
input_names=["input"], output_names=["output"]) with the default constant
folding:

    features.0        Conv2dNormActivation(3, 32W, 3x3, stride 2): Conv, BN, ReLU6
    features.1..17    InvertedResidual(t, c, n, s) for (1,16,1,1) (6,24,2,2)
                      (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1):
                        conv.0  1x1 expand to round(in * t), BN, ReLU6 (not when t = 1)
                        conv.*  3x3 depthwise (groups = channels), stride s, BN, ReLU6
                        conv.*  1x1 project to c, BN (linear)
                      and x + conv(x) where the stride is 1 and in == out channels
    features.18       Conv2dNormActivation(320W, 1280 max(1, W), 1x1), BN, ReLU6
    adaptive_avg_pool2d(x, (1, 1)), torch.flatten(x, 1)
    classifier        Dropout(0.2) (gone in eval), Linear(1280 max(1, W), 1000)

channels rounded by torchvision's _make_divisible(c * W, 8).

What the exporter writes (torch 2.x, TorchScript exporter):
- BatchNorm folded into every convolution (the eval-mode Conv + BN fusion of
  eval_peephole.cpp): W * s and beta - mean * s, s = gamma / sqrt(var +
  1e-5), in float32, as initializers "onnx::Conv_<id>", weight then bias;
  each fused Conv takes three value ids (its output, weight, bias).
- Conv with every attribute written: dilations [1, 1], group (1, or the
  channels for the depthwise ones), kernel_shape, pads [p, p, p, p],
  strides.
- ReLU6 (nn.ReLU6 is a Hardtanh(0, 6); symbolic_opset11.hardtanh): Clip
  whose min and max are two Constant nodes holding float32 scalars 0 and 6,
  "<scope>/Constant" and "<scope>/Constant_1", written before the Clip.
- The residual as Add(x, conv(x)) in the block's scope, the pooling as
  GlobalAveragePool, torch.flatten as Flatten(axis=1), the Linear as
  Gemm(alpha 1, beta 1, transB 1) on "classifier.1.weight" / ".bias".
- Names from the module tree (a container's child is named from its last
  non-numeric atom): "/features/features.1/conv/conv.0/conv.0.0/Conv",
  "/features/features.1/conv/conv.0/conv.0.2/Clip", "/features/features.3/Add",
  "/GlobalAveragePool", "/Flatten", "/classifier/classifier.1/Gemm"; values
  "<node name>_output_0".

Input `input` float32 [N, 3, S, S] (S = --size, 224), output `output`
float32 [N, 1000].

Deterministic for a given --seed: He-normal convolutions (fan-in), BatchNorm
scale in [0.5, 1], shift near 1 before a ReLU6 (most units active, as in a
trained MobileNet; centred shifts make the random net chaotic, and its QDQ
form 10-20% off the float one) and near 0 on the linear projections, and
running statistics measured on a seeded batch of inputs uniform in [-1, 1)
(the range the quantizer calibrates on), so every BatchNorm normalizes and
activations stay of order 1 through all 52 convolutions; PyTorch's uniform
Linear initialisation.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/mobilenet_v2.py -o mobilenet_v2.onnx [--seed 0] [--batch 1]
        [--size 224] [--width 1.0]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto

import numpy_runtime
import torch_style as ts

CLASSES = 1000
EPS = 1e-5  # nn.BatchNorm2d's default
# (expand ratio t, channels c, blocks n, first stride s): torchvision's inverted_residual_setting.
SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
           (6, 320, 1, 1)]
# The exporter numbers values as it traces; the first fused Conv's output,
# weight and bias take ids 538, 539, 540 here (representative, not measured).
FIRST_VALUE_ID = 537
STATS_BATCH = 2  # images the running statistics are measured on


def make_divisible(v, divisor=8):
    """torchvision's _make_divisible: v rounded to a multiple of divisor, at
    least divisor and not more than 10% below v."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def scope(module):
    """The exporter's scope of a module given by its state_dict prefix: each
    enclosing module named from its last non-numeric atom on
    ("features.1.conv.0.0" is "/features/features.1/conv/conv.0/conv.0.0")."""
    atoms = module.split(".")
    names = []
    for end in range(1, len(atoms) + 1):
        start = max([i for i in range(end) if not atoms[i].isnumeric()], default=0)
        names.append(".".join(atoms[start:end]))
    return "/" + "/".join(names)


def layout(width=1.0):
    """features.0..18 as a list of (module, [conv], residual); a conv is
    (conv module, bn module, relu6 module or None, cin, cout, kernel, stride, groups)."""
    cin = make_divisible(32 * width)
    last = make_divisible(1280 * max(1.0, width))
    features = [("features.0", [("features.0.0", "features.0.1", "features.0.2", 3, cin, 3, 2, 1)], False)]
    for t, c, n, s in SETTING:
        cout = make_divisible(c * width)
        for i in range(n):
            name, stride, hidden = f"features.{len(features)}", s if i == 0 else 1, int(round(cin * t))
            convs = []
            if t != 1:
                convs.append((f"{name}.conv.0.0", f"{name}.conv.0.1", f"{name}.conv.0.2", cin, hidden, 1, 1, 1))
            k = len(convs)
            convs.append((f"{name}.conv.{k}.0", f"{name}.conv.{k}.1", f"{name}.conv.{k}.2",
                          hidden, hidden, 3, stride, hidden))
            convs.append((f"{name}.conv.{k + 1}", f"{name}.conv.{k + 2}", None, hidden, cout, 1, 1, 1))
            features.append((name, convs, stride == 1 and cin == cout))
            cin = cout
    name = f"features.{len(features)}"
    features.append((name, [(name + ".0", name + ".1", name + ".2", cin, last, 1, 1, 1)], False))
    return features


def bn_scale(p, bn):
    """gamma / sqrt(running_var + eps) in float32, as the exporter's fusion computes it."""
    return p[bn + ".weight"] / np.sqrt(p[bn + ".running_var"] + np.float32(EPS))


def fuse_conv_bn(p, conv, bn):
    """eval_peephole.cpp's fuseConvBatchNorm on a Conv without bias: W * s and beta - mean * s."""
    s = bn_scale(p, bn)
    return (p[conv + ".weight"] * s.reshape(-1, 1, 1, 1)).astype(np.float32), \
        (p[bn + ".bias"] - p[bn + ".running_mean"] * s).astype(np.float32)


def parameters(seed, width=1.0, size=224):
    """The model's state_dict (num_batches_tracked left out: the exporter
    drops it). Each BatchNorm's running statistics are the mean and variance
    of its input over a seeded batch, measured layer by layer."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, (STATS_BATCH, 3, size, size)).astype(np.float32)
    p, features = {}, layout(width)
    for _, convs, residual in features:
        block_input = x
        for conv, bn, relu6, cin, cout, k, stride, groups in convs:
            fan_in = cin // groups * k * k
            w = rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // groups, k, k)).astype(np.float32)
            p[conv + ".weight"] = w
            y = numpy_runtime.conv(x, w, None, {"group": groups, "strides": [stride] * 2, "pads": [k // 2] * 4})
            channel = (1, -1, 1, 1)
            p[bn + ".weight"] = rng.uniform(0.5, 1.0, cout).astype(np.float32)
            # Before a ReLU6 the shift is positive, as in trained MobileNets: most
            # units pass, so the net is not chaotic and quantizes as a trained one does.
            p[bn + ".bias"] = rng.normal(1.0 if relu6 else 0.0, 0.3 if relu6 else 0.1, cout).astype(np.float32)
            p[bn + ".running_mean"] = y.mean(axis=(0, 2, 3)).astype(np.float32)
            # A channel the batch leaves (nearly) constant keeps a variance floor.
            p[bn + ".running_var"] = np.maximum(y.var(axis=(0, 2, 3)), 1e-2).astype(np.float32)
            x = (y - p[bn + ".running_mean"].reshape(channel)) * bn_scale(p, bn).reshape(channel) + \
                p[bn + ".bias"].reshape(channel)
            if relu6:
                x = np.clip(x, 0.0, 6.0)
        if residual:
            x = block_input + x
    last = features[-1][1][-1][4]
    bound = 1.0 / np.sqrt(last)
    p["classifier.1.weight"] = rng.uniform(-bound, bound, (CLASSES, last)).astype(np.float32)
    p["classifier.1.bias"] = rng.uniform(-bound, bound, CLASSES).astype(np.float32)
    return p


def relu6(g, x, module):
    """nn.ReLU6 at opset 11+: Clip(x, Constant 0, Constant 6), float32 scalars."""
    sc = scope(module)
    lo = g.constant(0.0, np.float32, sc)
    hi = g.constant(6.0, np.float32, sc)
    return g.op("Clip", [x, lo, hi], sc)


def build(seed=0, batch=1, size=224, width=1.0):
    """The exported model for images of `size` x `size` and width multiplier `width`."""
    p = parameters(seed, width, size)
    g = ts.Graph()
    g.value_id = FIRST_VALUE_ID
    # The classifier's parameters are the only ones the export keeps under
    # their own names; they come first, the folded ones after them.
    fc_w = g.param("classifier.1.weight", p["classifier.1.weight"])
    fc_b = g.param("classifier.1.bias", p["classifier.1.bias"])
    x = g.input("input", TensorProto.FLOAT, [batch, 3, size, size])
    for module, convs, residual in layout(width):
        block_input = x
        for conv, bn, act, cin, cout, k, stride, groups in convs:
            w, b = fuse_conv_bn(p, conv, bn)
            g.value_id += 1  # the fused Conv's output value
            x = g.op("Conv", [x, g.folded("Conv", w), g.folded("Conv", b)], scope(conv), dilations=[1, 1],
                     group=groups, kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride])
            if act:
                x = relu6(g, x, act)
        if residual:
            x = g.op("Add", [block_input, x], scope(module))
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    y = ts.gemm(g, x, fc_w, fc_b, scope("classifier.1"))
    g.output(ts.rename_output(g, y, "output"), TensorProto.FLOAT, [batch, CLASSES])
    doc = f"torchvision mobilenet_v2(width_mult={width}) at {size}x{size}, torch.onnx.export style"
    return ts.make_model(g, producer="tessera-mobilenet_v2", doc=doc)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--batch", type=int, default=1, help="batch size N of input and output (default 1)")
    parser.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    parser.add_argument("--width", type=float, default=1.0, help="width multiplier (default 1.0)")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    if args.size < 32:
        parser.error("--size must be at least 32 (five stride-2 stages)")
    if not 0.0 < args.width <= 4.0:
        parser.error("--width must be in (0, 4]")
    try:
        onnx.save(build(args.seed, args.batch, args.size, args.width), args.output)
    except OSError as e:
        print(f"mobilenet_v2.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
