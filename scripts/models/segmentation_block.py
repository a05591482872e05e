#!/usr/bin/python3
"""Writes a U^2-Net-style residual U-block (RSU) as torch.onnx.export writes it, with random weights.

The PyTorch module is one RSU block at 320 x 320 (in 3, mid 16, out 64
channels), made of U^2-Net's REBNCONV units (Conv2d 3x3 with dilation d and
padding d, BatchNorm2d, ReLU):

    hxin = self.rebnconvin(x)                        # 3 -> 64
    hx1 = self.rebnconv1(hxin)                       # 64 -> 16, 320 x 320
    hx2 = self.rebnconv2(self.pool1(hx1))            # MaxPool2d(2, 2, ceil_mode=True): 160
    hx3 = self.rebnconv3(self.pool2(hx2))            # 80
    hx4 = self.rebnconv4(self.pool3(hx3))            # 40, dilation 1
    hx5 = self.rebnconv5(hx4)                        # dilation 2
    hx6 = self.rebnconv6(hx5)                        # dilation 4
    hx7 = self.rebnconv7(hx6)                        # dilation 8
    hx6d = self.rebnconv6d(torch.cat((hx7, hx6), 1))     # 32 -> 16, dilation 4
    hx5d = self.rebnconv5d(torch.cat((hx6d, hx5), 1))    # dilation 2
    hx4d = self.rebnconv4d(torch.cat((hx5d, hx4), 1))    # dilation 1
    hx3d = self.rebnconv3d(torch.cat((_upsample_like(hx4d, hx3), hx3), 1))
    hx2d = self.rebnconv2d(torch.cat((_upsample_like(hx3d, hx2), hx2), 1))
    hx1d = self.rebnconv1d(torch.cat((_upsample_like(hx2d, hx1), hx1), 1))   # 32 -> 64
    return hx1d + hxin

with U^2-Net's _upsample_like(src, tar) = F.interpolate(src,
size=tar.shape[2:], mode="bilinear") (align_corners left unset, so False);
the bottom is RSU4F's dilated stack. Exported in eval mode with opset 17
and the default constant folding. Input `input` float32 [1, 3, 320, 320],
output `output` float32 [1, 64, 320, 320]; --size S for S x S.

What the exporter writes:
- BatchNorm: folded into the convolutions. In eval mode, with constant
  folding on (the defaults), the exporter's Conv+BatchNormalization fusion
  runs: each Conv gets weight W * s and bias (b - mean) * s + beta, with
  s = gamma / sqrt(var + 1e-5), as initializers "onnx::Conv_<id>", and no
  BatchNormalization node is left. --batchnorm writes the graph without
  that fusion (recent releases run it only under constant folding, so
  do_constant_folding=False gives it; nothing else here is folded): Conv on
  "<unit>.conv_s1.weight"/".bias", then BatchNormalization(epsilon 1e-5,
  momentum 0.9, training_mode 0) on "<unit>.bn_s1.weight", ".bias",
  ".running_mean", ".running_var".
- Conv with every attribute written: dilations [d, d], group 1,
  kernel_shape [3, 3], pads [d, d, d, d], strides [1, 1]; then Relu.
- MaxPool(ceil_mode=1, dilations [1, 1], kernel_shape [2, 2], pads
  [0, 0, 0, 0], strides [2, 2]), its index output dropped.
- torch.cat as Concat(axis=1); the residual as Add(hx1d, hxin).
- _upsample_like: the target's traced sizes, Shape -> Gather(Constant 2)
  and Shape -> Gather(Constant 3), each Unsqueeze(axes [0]) and Concat
  into a list; the source's Shape sliced to [N, C] (Slice with Constant
  starts [0], ends [2], axes [0]); Cast of the list to int64; Concat; then
  Resize(src, "", "", sizes) with coordinate_transformation_mode
  half_pixel, cubic_coeff_a -0.75, mode linear, nearest_mode floor. Sizes,
  not scales: pooling with ceil_mode makes odd sizes (e.g. 37 -> 19 -> 10
  -> 5) that a scale of 2 would not restore.

Deterministic for a given --seed: He-normal convolutions, small biases,
BatchNorm statistics near the identity (scale 0.8..1.2, variance
0.5..1.5), so activations stay of order 1.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/segmentation_block.py -o rsu.onnx [--seed 0] [--size 320] [--batchnorm]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto

import torch_style as ts

IN_CH, MID_CH, OUT_CH, SIZE = 3, 16, 64, 320
EPS, MOMENTUM = 1e-5, 0.1
FLOAT = TensorProto.FLOAT


def units(in_ch=IN_CH, mid=MID_CH, out=OUT_CH):
    """(name, input channels, output channels, dilation) of each REBNCONV, in call order."""
    return [("rebnconvin", in_ch, out, 1), ("rebnconv1", out, mid, 1), ("rebnconv2", mid, mid, 1),
            ("rebnconv3", mid, mid, 1), ("rebnconv4", mid, mid, 1), ("rebnconv5", mid, mid, 2),
            ("rebnconv6", mid, mid, 4), ("rebnconv7", mid, mid, 8), ("rebnconv6d", 2 * mid, mid, 4),
            ("rebnconv5d", 2 * mid, mid, 2), ("rebnconv4d", 2 * mid, mid, 1), ("rebnconv3d", 2 * mid, mid, 1),
            ("rebnconv2d", 2 * mid, mid, 1), ("rebnconv1d", 2 * mid, out, 1)]


def parameters(seed):
    """The module's state_dict (num_batches_tracked left out: the graph does not read it)."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, c_in, c_out, _ in units():
        p = name + "."
        params[p + "conv_s1.weight"] = rng.normal(0.0, np.sqrt(2.0 / (9 * c_in)), (c_out, c_in, 3, 3))
        params[p + "conv_s1.bias"] = rng.normal(0.0, 0.05, c_out)
        params[p + "bn_s1.weight"] = rng.uniform(0.8, 1.2, c_out)
        params[p + "bn_s1.bias"] = rng.normal(0.0, 0.1, c_out)
        params[p + "bn_s1.running_mean"] = rng.normal(0.0, 0.1, c_out)
        params[p + "bn_s1.running_var"] = rng.uniform(0.5, 1.5, c_out)
    return {name: value.astype(np.float32) for name, value in params.items()}


def fuse_conv_bn(p, unit):
    """The fused Conv weight and bias, computed in float32 as the exporter does."""
    q = unit + "."
    scale = p[q + "bn_s1.weight"] / np.sqrt(p[q + "bn_s1.running_var"] + np.float32(EPS))
    weight = p[q + "conv_s1.weight"] * scale[:, None, None, None]
    bias = (p[q + "conv_s1.bias"] - p[q + "bn_s1.running_mean"]) * scale + p[q + "bn_s1.bias"]
    return weight, bias


def rebnconv(g, x, p, unit, dilation, batchnorm):
    """REBNCONV: Conv (fused with its BatchNorm unless `batchnorm`), Relu."""
    attrs = dict(dilations=[dilation] * 2, group=1, kernel_shape=[3, 3], pads=[dilation] * 4, strides=[1, 1])
    conv_scope, q = f"/{unit}/conv_s1", unit + "."
    if batchnorm:
        w, b = (g.param(q + f"conv_s1.{k}", p[q + f"conv_s1.{k}"]) for k in ("weight", "bias"))
        y = g.op("Conv", [x, w, b], conv_scope, **attrs)
        stats = [g.param(q + f"bn_s1.{k}", p[q + f"bn_s1.{k}"])
                 for k in ("weight", "bias", "running_mean", "running_var")]
        y = g.op("BatchNormalization", [y] + stats, f"/{unit}/bn_s1", epsilon=EPS, momentum=1.0 - MOMENTUM,
                 training_mode=0)
    else:
        w, b = fuse_conv_bn(p, unit)
        y = g.op("Conv", [x, g.folded("Conv", w), g.folded("Conv", b)], conv_scope, **attrs)
    return g.op("Relu", [y], f"/{unit}/relu_s1")


def max_pool(g, x, scope):
    """nn.MaxPool2d(2, stride=2, ceil_mode=True)."""
    return g.op("MaxPool", [x], scope, ceil_mode=1, dilations=[1, 1], kernel_shape=[2, 2], pads=[0, 0, 0, 0],
                strides=[2, 2])


def upsample_like(g, src, tar):
    """F.interpolate(src, size=tar.shape[2:], mode="bilinear") with sizes traced from `tar`."""
    dims = [g.op("Gather", [g.op("Shape", [tar]), g.constant(axis)], axis=0) for axis in (2, 3)]
    size = g.op("Concat", [ts.unsqueeze(g, d, [0]) for d in dims], axis=0)
    head = ts.slice_(g, g.op("Shape", [src]), [0], [2], [0])
    sizes = g.op("Concat", [head, g.op("Cast", [size], to=TensorProto.INT64)], axis=0)
    return g.op("Resize", [src, "", "", sizes], coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
                mode="linear", nearest_mode="floor")


def build(seed=0, size=SIZE, batchnorm=False):
    """The exported block on [1, 3, size, size]."""
    p = parameters(seed)
    g = ts.Graph()
    dil = {name: d for name, _, _, d in units()}
    conv = lambda x, unit: rebnconv(g, x, p, unit, dil[unit], batchnorm)
    cat = lambda a, b: g.op("Concat", [a, b], axis=1)
    hxin = conv(g.input("input", FLOAT, [1, IN_CH, size, size]), "rebnconvin")
    hx1 = conv(hxin, "rebnconv1")
    hx2 = conv(max_pool(g, hx1, "/pool1"), "rebnconv2")
    hx3 = conv(max_pool(g, hx2, "/pool2"), "rebnconv3")
    hx4 = conv(max_pool(g, hx3, "/pool3"), "rebnconv4")
    hx5 = conv(hx4, "rebnconv5")
    hx6 = conv(hx5, "rebnconv6")
    hx7 = conv(hx6, "rebnconv7")
    hx6d = conv(cat(hx7, hx6), "rebnconv6d")
    hx5d = conv(cat(hx6d, hx5), "rebnconv5d")
    hx4d = conv(cat(hx5d, hx4), "rebnconv4d")
    hx3d = conv(cat(upsample_like(g, hx4d, hx3), hx3), "rebnconv3d")
    hx2d = conv(cat(upsample_like(g, hx3d, hx2), hx2), "rebnconv2d")
    hx1d = conv(cat(upsample_like(g, hx2d, hx1), hx1), "rebnconv1d")
    out = g.op("Add", [hx1d, hxin])
    g.output(ts.rename_output(g, out, "output"), FLOAT, [1, OUT_CH, size, size])
    kind = "BatchNormalization kept" if batchnorm else "BatchNorm folded into Conv"
    doc = f"U^2-Net-style RSU block ({IN_CH}->{MID_CH}->{OUT_CH}), {size}x{size}, {kind}"
    return ts.make_model(g, producer="tessera-segmentation_block", doc=doc)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--size", type=int, default=SIZE, help=f"input height and width (default {SIZE})")
    parser.add_argument("--batchnorm", action="store_true",
                        help="keep BatchNormalization nodes (the graph without the Conv+BatchNorm fusion)")
    args = parser.parse_args(argv)
    if args.size < 8:
        parser.error("--size must be at least 8 (three 2x2 poolings)")
    try:
        onnx.save(build(args.seed, args.size, args.batchnorm), args.output)
    except OSError as e:
        print(f"segmentation_block.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
