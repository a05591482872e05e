#!/usr/bin/python3
"""Writes a Whisper-tiny-like audio encoder as torch.onnx.export writes it, with random weights.

The PyTorch module is Whisper's AudioEncoder built from plain torch.nn
layers (no dtype-casting wrappers), tiny's sizes by default:

    x = F.gelu(self.conv1(mel))             # Conv1d(80, 384, 3, padding=1)
    x = F.gelu(self.conv2(x))               # Conv1d(384, 384, 3, stride=2, padding=1) -> [1, 384, 1500]
    x = x.permute(0, 2, 1) + self.positional_embedding       # buffer [1500, 384], sinusoids
    for block in self.blocks:               # 4 pre-LN residual blocks
        x = x + block.attn(block.attn_ln(x))
        x = x + block.mlp(block.mlp_ln(x))  # Linear(384, 1536), GELU, Linear(1536, 384)
    return self.ln_post(x)

with Whisper's attention (6 heads of 64, no mask):

    q, k, v = self.query(x), self.key(x), self.value(x)     # key has no bias
    q = q.view(1, n_ctx, n_head, -1).permute(0, 2, 1, 3) * scale
    k = k.view(1, n_ctx, n_head, -1).permute(0, 2, 3, 1) * scale
    v = v.view(1, n_ctx, n_head, -1).permute(0, 2, 1, 3)
    w = F.softmax(q @ k, dim=-1)
    return self.out((w @ v).permute(0, 2, 1, 3).reshape(1, n_ctx, n_state))

exported with opset 17 and the default constant folding. Input `mel`
float32 [1, 80, 3000] (30 s of log-mel frames), output `output` float32
[1, 1500, 384].

Choices, as the exporter then writes them:
- The scale: Whisper's form, q and k each multiplied by head_dim ** -0.25
  (64 ** -0.25 = 0.3536) after their head split, two Mul by a float32
  scalar Constant per layer, instead of one Div of the product by 8.
- The head split and merge use the sizes the module was built for (Python
  ints), so each Reshape reads one Constant shape: [1, n_ctx, n_head, -1]
  to split (as Whisper's view(..., n_head, -1)), [1, n_ctx, n_state] to
  merge. Whisper's own code reads q.shape, for which the exporter would add
  Shape -> Gather -> Unsqueeze -> Concat chains.
- The key is split by one Transpose [0, 2, 3, 1] (Whisper permutes it
  straight to [N, H, hd, T]); q, v and the merge use [0, 2, 1, 3].

What the exporter writes for the layers:
- Conv with every attribute written (dilations [1], group 1, kernel_shape
  [3], pads [1, 1], strides [1] then [2]) and the bias input.
- GELU as Div by sqrt(2), Erf, Add 1, Mul by the input, Mul 0.5.
- Transpose [0, 2, 1], then Add of the buffer "positional_embedding".
- nn.LayerNorm as LayerNormalization(axis=-1, epsilon 1e-5).
- nn.Linear as MatMul by the folded transposed weight "onnx::MatMul_<id>",
  then Add(bias, product); the key's MatMul alone.
- Softmax(axis=-1); the residual sums as Add(x, branch).

Options for small variants: --layers, --positions (input frames are twice
that), --d-model, --heads (MLP 4 * d-model). Deterministic for a given
--seed: PyTorch's uniform Linear initialisation, He-normal convolutions,
norm scales near 1, so activations stay of order 1.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/speech_transformer.py -o speech_transformer.onnx [--seed 0]
"""
import argparse
import collections
import sys

import numpy as np
import onnx
from onnx import TensorProto

import torch_style as ts

FLOAT = TensorProto.FLOAT

Config = collections.namedtuple("Config", "mels positions d_model heads layers")
TINY = Config(mels=80, positions=1500, d_model=384, heads=6, layers=4)


def sinusoids(length, channels, max_timescale=10000.0):
    """Whisper's positional embedding: sin then cos of geometric timescales."""
    increment = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = np.exp(-increment * np.arange(channels // 2))
    scaled = np.arange(length)[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)


def parameters(seed, cfg=TINY):
    """The module's state_dict."""
    rng = np.random.default_rng(seed)
    d, mlp = cfg.d_model, 4 * cfg.d_model
    params = {}

    def linear(name, fan_in, fan_out, bias=True):
        bound = 1.0 / np.sqrt(fan_in)
        params[name + ".weight"] = rng.uniform(-bound, bound, (fan_out, fan_in))
        if bias:
            params[name + ".bias"] = rng.uniform(-bound, bound, fan_out)

    def norm(name):
        params[name + ".weight"] = rng.uniform(0.8, 1.2, d)
        params[name + ".bias"] = rng.normal(0.0, 0.05, d)

    for name, c_in in (("conv1", cfg.mels), ("conv2", d)):
        params[name + ".weight"] = rng.normal(0.0, np.sqrt(2.0 / (3 * c_in)), (d, c_in, 3))
        params[name + ".bias"] = rng.normal(0.0, 0.05, d)
    params["positional_embedding"] = sinusoids(cfg.positions, d)
    for i in range(cfg.layers):
        p = f"blocks.{i}"
        norm(p + ".attn_ln")
        for part in ("query", "key", "value", "out"):
            linear(f"{p}.attn.{part}", d, d, bias=part != "key")
        norm(p + ".mlp_ln")
        linear(p + ".mlp.0", d, mlp)
        linear(p + ".mlp.2", mlp, d)
    norm("ln_post")
    return {name: value.astype(np.float32) for name, value in params.items()}


def attention(g, x, p, prefix, scope, cfg):
    """Whisper's MultiHeadAttention on [1, P, D] without a mask."""
    lin = lambda t, part: ts.linear3d(g, t, p[f"{prefix}.{part}.weight"], p.get(f"{prefix}.{part}.bias"),
                                      f"{scope}/{part}", name=f"{prefix}.{part}")
    q, k, v = lin(x, "query"), lin(x, "key"), lin(x, "value")
    scale = float((cfg.d_model // cfg.heads) ** -0.25)

    def split(t, perm):
        t = g.op("Reshape", [t, g.constant([1, cfg.positions, cfg.heads, -1], scope=scope)], scope, allowzero=0)
        return g.op("Transpose", [t], scope, perm=perm)

    q = g.op("Mul", [split(q, [0, 2, 1, 3]), g.constant(scale, np.float32, scope)], scope)
    k = g.op("Mul", [split(k, [0, 2, 3, 1]), g.constant(scale, np.float32, scope)], scope)
    v = split(v, [0, 2, 1, 3])
    w = g.op("Softmax", [g.op("MatMul", [q, k], scope)], scope, axis=-1)
    out = g.op("Transpose", [g.op("MatMul", [w, v], scope)], scope, perm=[0, 2, 1, 3])
    out = g.op("Reshape", [out, g.constant([1, cfg.positions, cfg.d_model], scope=scope)], scope, allowzero=0)
    return lin(out, "out")


def residual_block(g, x, p, i, cfg):
    """ResidualAttentionBlock: pre-LN attention and MLP, each added to x."""
    prefix, scope = f"blocks.{i}", f"/blocks.{i}"
    norm = lambda t, name: ts.layer_norm(g, t, f"{prefix}.{name}", p[f"{prefix}.{name}.weight"],
                                         p[f"{prefix}.{name}.bias"], f"{scope}/{name}")
    x = g.op("Add", [x, attention(g, norm(x, "attn_ln"), p, prefix + ".attn", scope + "/attn", cfg)], scope)
    h = norm(x, "mlp_ln")
    for k in (0, 2):  # mlp.0 Linear, mlp.1 GELU, mlp.2 Linear
        name = f"{prefix}.mlp.{k}"
        h = ts.linear3d(g, h, p[name + ".weight"], p[name + ".bias"], f"{scope}/mlp/mlp.{k}", name=name)
        if k == 0:
            h = ts.gelu(g, h, f"{scope}/mlp/mlp.1")
    return g.op("Add", [x, h], scope)


def build(seed=0, cfg=TINY):
    """The exported encoder for `cfg`."""
    p = parameters(seed, cfg)
    g = ts.Graph()
    x = g.input("mel", FLOAT, [1, cfg.mels, 2 * cfg.positions])
    for name, stride in (("conv1", 1), ("conv2", 2)):
        weight, bias = (g.param(f"{name}.{k}", p[f"{name}.{k}"]) for k in ("weight", "bias"))
        conv = ts.conv1d(g, x, weight, bias, 3, stride, 1, "/" + name)
        x = ts.gelu(g, conv, "")
    x = g.op("Transpose", [x], perm=[0, 2, 1])
    x = g.op("Add", [x, g.param("positional_embedding", p["positional_embedding"])])
    for i in range(cfg.layers):
        x = residual_block(g, x, p, i, cfg)
    x = ts.layer_norm(g, x, "ln_post", p["ln_post.weight"], p["ln_post.bias"], "/ln_post")
    g.output(ts.rename_output(g, x, "output"), FLOAT, [1, cfg.positions, cfg.d_model])
    doc = (f"Whisper-style audio encoder: {cfg.layers} layers, d_model {cfg.d_model}, {cfg.heads} heads, "
           f"{cfg.positions} positions")
    return ts.make_model(g, producer="tessera-speech_transformer", doc=doc)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument("--layers", type=int, default=TINY.layers, help=f"blocks (default {TINY.layers})")
    parser.add_argument("--positions", type=int, default=TINY.positions,
                        help=f"output frames; the input has twice as many (default {TINY.positions})")
    parser.add_argument("--d-model", dest="d_model", type=int, default=TINY.d_model,
                        help=f"model width (default {TINY.d_model})")
    parser.add_argument("--heads", type=int, default=TINY.heads, help=f"attention heads (default {TINY.heads})")
    parser.add_argument("--mels", type=int, default=TINY.mels, help=f"input mel bands (default {TINY.mels})")
    args = parser.parse_args(argv)
    for flag in ("layers", "positions", "d_model", "heads", "mels"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.d_model % args.heads or args.d_model % 2 or args.d_model < 4:
        parser.error("--d-model must be an even multiple of --heads, at least 4 (sin and cos halves of 2+)")
    cfg = Config(args.mels, args.positions, args.d_model, args.heads, args.layers)
    try:
        onnx.save(build(args.seed, cfg), args.output)
    except OSError as e:
        print(f"speech_transformer.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
