#!/usr/bin/python3
"""Writes a ResNet-18 ONNX model (torchvision's layout) with random weights.

Deterministic for a given --seed: He-initialised convolutions and BatchNorms
with random but sane statistics, so activations stay finite through all 18
layers. Input `input` float32 [N,3,224,224], output `output` [N,1000], opset 13.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/resnet18.py -o resnet18.onnx [--seed 0] [--batch 1]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper

import onnx_builder

class Builder(onnx_builder.Builder):
    """The collector with this model's layers."""

    def conv_bn(self, x, name, cin, cout, k, stride, relu):
        """Conv (no bias) + BatchNorm [+ ReLU], as torchvision's conv + bn pairs."""
        fan_in = cin * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin, k, k))
        self.nodes.append(helper.make_node(
            "Conv", [x, self.const(name + ".weight", w)], [name + ".conv"], name=name,
            kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
        # Sane statistics: gamma near 1, small beta and mean, variance near 1.
        gamma = self.rng.uniform(0.5, 1.0, cout)
        beta = self.rng.normal(0.0, 0.1, cout)
        mean = self.rng.normal(0.0, 0.1, cout)
        var = self.rng.uniform(0.5, 1.5, cout)
        out = name + ".bn"
        self.nodes.append(helper.make_node(
            "BatchNormalization",
            [name + ".conv", self.const(name + ".bn.weight", gamma), self.const(name + ".bn.bias", beta),
             self.const(name + ".bn.running_mean", mean), self.const(name + ".bn.running_var", var)],
            [out], name=name + ".bn", epsilon=1e-5))
        if relu:
            self.nodes.append(helper.make_node("Relu", [out], [name + ".relu"], name=name + ".relu"))
            out = name + ".relu"
        return out

    def basic_block(self, x, name, cin, cout, stride):
        y = self.conv_bn(x, name + ".conv1", cin, cout, 3, stride, relu=True)
        y = self.conv_bn(y, name + ".conv2", cout, cout, 3, 1, relu=False)
        shortcut = x
        if stride != 1 or cin != cout:
            shortcut = self.conv_bn(x, name + ".downsample", cin, cout, 1, stride, relu=False)
        self.nodes.append(helper.make_node("Add", [y, shortcut], [name + ".add"], name=name + ".add"))
        self.nodes.append(helper.make_node("Relu", [name + ".add"], [name + ".out"], name=name + ".relu"))
        return name + ".out"


def build(seed, batch):
    b = Builder(np.random.default_rng(seed))
    x = b.conv_bn("input", "conv1", 3, 64, 7, 2, relu=True)
    b.nodes.append(helper.make_node("MaxPool", [x], ["maxpool"], name="maxpool",
                                    kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "maxpool", 64
    for stage, cout in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            stride = 2 if (stage > 1 and block == 0) else 1
            x = b.basic_block(x, f"layer{stage}.{block}", cin, cout, stride)
            cin = cout
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["avgpool"], name="avgpool"))
    b.nodes.append(helper.make_node("Flatten", ["avgpool"], ["flatten"], name="flatten", axis=1))
    fc_w = b.rng.normal(0.0, np.sqrt(1.0 / 512), (1000, 512))
    fc_b = b.rng.normal(0.0, 0.01, 1000)
    b.nodes.append(helper.make_node(
        "Gemm", ["flatten", b.const("fc.weight", fc_w), b.const("fc.bias", fc_b)], ["output"],
        name="fc", transB=1))

    return b.model("resnet18", [batch, 3, 224, 224], [batch, 1000], producer="tessera-resnet18")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--batch", type=int, default=1, help="batch size N of input and output (default 1)")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    model = build(args.seed, args.batch)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"resnet18.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
