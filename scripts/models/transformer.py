#!/usr/bin/python3
"""Writes a transformer encoder ONNX model as PyTorch exports one, with random weights.

nn.TransformerEncoder of post-norm layers (batch_first, GELU) exported by
torch.onnx at opset 13: every Linear is MatMul + Add with a pre-transposed
weight; attention is Reshape / Transpose around MatMul, Div by sqrt(head
size), an additive key-padding mask (Add), Softmax and MatMul, with K split
into heads by one Transpose (perm 0,2,3,1: PyTorch's consecutive transposes
fused); LayerNorm is written out as ReduceMean / Sub / Pow / ReduceMean / Add
/ Sqrt / Div / Mul / Add; GELU as the erf form x * 0.5 * (1 + erf(x / sqrt 2))
in PyTorch's node order (Div, Erf, Add, Mul, Mul).

Deterministic for a given --seed. Input `input` float32 [N, seq, d_model],
output `output` of the same shape. Defaults: 2 layers, d_model 256, 4 heads,
feed-forward 1024, sequence 128, batch 1; the last --pad positions of the
sequence are masked out as keys.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/transformer.py -o transformer.onnx [--seed 0]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper

import onnx_builder

class Builder(onnx_builder.Builder):
    """The collector with this model's layers."""

    def linear(self, x, name, fan_in, fan_out):
        """torch.nn.Linear on a 3-D input: MatMul with W^T as an initializer, then Add."""
        w = self.rng.normal(0.0, 1.0 / np.sqrt(fan_in), (fan_in, fan_out))
        b = self.rng.normal(0.0, 0.02, fan_out)
        y = self.node("MatMul", [x, self.const(name + ".weight", w)], name + ".matmul")
        return self.node("Add", [y, self.const(name + ".bias", b)], name + ".add")

    def layer_norm(self, x, name, width):
        """LayerNorm over the last axis as primitive nodes (eps 1e-5)."""
        mean = self.node("ReduceMean", [x], name + ".mean", axes=[-1], keepdims=1)
        dev = self.node("Sub", [x, mean], name + ".sub")
        sq = self.node("Pow", [dev, self.const(name + ".two", np.array(2.0))], name + ".pow")
        var = self.node("ReduceMean", [sq], name + ".var", axes=[-1], keepdims=1)
        var_eps = self.node("Add", [var, self.const(name + ".eps", np.array(1e-5))], name + ".add_eps")
        std = self.node("Sqrt", [var_eps], name + ".sqrt")
        normed = self.node("Div", [dev, std], name + ".div")
        gamma = self.const(name + ".weight", self.rng.uniform(0.8, 1.2, width))
        beta = self.const(name + ".bias", self.rng.normal(0.0, 0.05, width))
        scaled = self.node("Mul", [normed, gamma], name + ".mul")
        return self.node("Add", [scaled, beta], name + ".out")

    def gelu(self, x, name):
        """GELU, erf form, as torch.onnx writes it."""
        d = self.node("Div", [x, self.const(name + ".sqrt2", np.array(np.sqrt(2.0)))], name + ".div")
        e = self.node("Erf", [d], name + ".erf")
        a = self.node("Add", [e, self.const(name + ".one", np.array(1.0))], name + ".add")
        m = self.node("Mul", [x, a], name + ".mul")
        return self.node("Mul", [m, self.const(name + ".half", np.array(0.5))], name + ".out")

    def attention(self, x, name, batch, seq, d_model, heads, mask):
        head = d_model // heads
        split = self.const(name + ".split_shape", [batch, seq, heads, head], np.int64)
        q = self.node("Reshape", [self.linear(x, name + ".q", d_model, d_model), split], name + ".q.heads")
        k = self.node("Reshape", [self.linear(x, name + ".k", d_model, d_model), split], name + ".k.heads")
        v = self.node("Reshape", [self.linear(x, name + ".v", d_model, d_model), split], name + ".v.heads")
        q = self.node("Transpose", [q], name + ".q.t", perm=[0, 2, 1, 3])  # [N, H, S, D]
        k = self.node("Transpose", [k], name + ".k.t", perm=[0, 2, 3, 1])  # [N, H, D, S]: K^T
        v = self.node("Transpose", [v], name + ".v.t", perm=[0, 2, 1, 3])
        scores = self.node("MatMul", [q, k], name + ".scores")
        scale = self.const(name + ".scale", np.array(np.sqrt(float(head))))
        scores = self.node("Div", [scores, scale], name + ".scaled")
        scores = self.node("Add", [scores, mask], name + ".masked")
        probs = self.node("Softmax", [scores], name + ".softmax", axis=-1)
        ctx = self.node("MatMul", [probs, v], name + ".context")  # [N, H, S, D]
        ctx = self.node("Transpose", [ctx], name + ".context.t", perm=[0, 2, 1, 3])
        merge = self.const(name + ".merge_shape", [batch, seq, d_model], np.int64)
        ctx = self.node("Reshape", [ctx, merge], name + ".context.merged")
        return self.linear(ctx, name + ".out_proj", d_model, d_model)

    def encoder_layer(self, x, name, batch, seq, d_model, heads, ff, mask):
        """Post-norm layer: x = LN(x + attn(x)); x = LN(x + ff(x))."""
        a = self.attention(x, name + ".self_attn", batch, seq, d_model, heads, mask)
        x = self.layer_norm(self.node("Add", [x, a], name + ".residual1"), name + ".norm1", d_model)
        h = self.gelu(self.linear(x, name + ".linear1", d_model, ff), name + ".gelu")
        f = self.linear(h, name + ".linear2", ff, d_model)
        return self.layer_norm(self.node("Add", [x, f], name + ".residual2"), name + ".norm2", d_model)


def build(args):
    b = Builder(np.random.default_rng(args.seed))
    mask = np.zeros((1, 1, 1, args.seq), dtype=np.float32)
    if args.pad:
        mask[..., -args.pad:] = -1e4  # PyTorch's float key-padding mask
    mask_name = b.const("key_padding_mask", mask)
    x = "input"
    for layer in range(args.layers):
        x = b.encoder_layer(x, f"layers.{layer}", args.batch, args.seq, args.d_model, args.heads, args.ff, mask_name)
    b.nodes.append(helper.make_node("Identity", [x], ["output"], name="output"))
    shape = [args.batch, args.seq, args.d_model]
    return b.model("transformer_encoder", shape, shape, producer="tessera-transformer")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--batch", type=int, default=1, help="batch size N (default 1)")
    parser.add_argument("--seq", type=int, default=128, help="sequence length (default 128)")
    parser.add_argument("--layers", type=int, default=2, help="encoder layers (default 2)")
    parser.add_argument("--d-model", dest="d_model", type=int, default=256, help="model width (default 256)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--ff", type=int, default=1024, help="feed-forward width (default 1024)")
    parser.add_argument("--pad", type=int, default=8, help="masked key positions at the end (default 8)")
    args = parser.parse_args(argv)
    for flag in ("batch", "seq", "layers", "d_model", "heads", "ff"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.d_model % args.heads:
        parser.error("--d-model must be a multiple of --heads")
    if not 0 <= args.pad < args.seq:
        parser.error("--pad must be in [0, seq)")
    model = build(args)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"transformer.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
