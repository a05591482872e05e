"""Numpy references, in float64, for the speech, audio and segmentation model
generators (mel_frontend.py, audio_encoder.py, speech_transformer.py,
segmentation_block.py): the layers they use and each model's forward pass,
computed from the PyTorch state_dict the generator draws, independently of
the ONNX graph it writes.

    mel = log_mel(audio, n_fft, hop, mel_filters)          # [1, n_mels, frames]
    y = feature_encoder(params, audio, kernels, strides)    # [1, frames, hidden]
    y = whisper_encoder(params, mel, heads, layers)         # [1, positions, d_model]
    y = rsu_block(params, image)                            # [1, out, H, W]

The layers follow PyTorch's definitions: convolutions are cross-correlations
with symmetric zero padding; GroupNorm, LayerNorm and BatchNorm (eval) use
the biased variance; GELU is the exact erf form; max pooling with
ceil_mode=True lets the last window hang over the edge but not start in it;
bilinear resizing without align_corners maps output pixel i to input
coordinate (i + 0.5) * in / out - 0.5, clamped to the input.
"""
import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f64(x):
    return np.asarray(x, dtype=np.float64)


# ---- layers ----

def gelu(x):
    """x * Phi(x), Phi the standard normal CDF."""
    x = _f64(x)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def conv1d(x, w, b=None, stride=1, pad=0, dilation=1):
    """nn.Conv1d (one group): x [N, C, L], w [M, C, K] -> [N, M, L']."""
    x = np.pad(_f64(x), ((0, 0), (0, 0), (pad, pad)))
    w = _f64(w)
    m, c, k = w.shape
    out = (x.shape[2] - dilation * (k - 1) - 1) // stride + 1
    taps = np.arange(out)[:, None] * stride + np.arange(k)[None, :] * dilation  # [L', K]
    cols = x[:, :, taps].transpose(0, 2, 1, 3).reshape(x.shape[0], out, c * k)   # [N, L', C*K]
    y = (cols @ w.reshape(m, c * k).T).transpose(0, 2, 1)
    return y if b is None else y + _f64(b)[None, :, None]


def conv2d(x, w, b=None, pad=0, dilation=1):
    """nn.Conv2d (stride 1, one group): x [N, C, H, W], w [M, C, K, K]."""
    x = np.pad(_f64(x), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    w = _f64(w)
    m, c, kh, kw = w.shape
    n, _, h, wd = x.shape
    oh, ow = h - dilation * (kh - 1), wd - dilation * (kw - 1)
    rows = np.arange(oh)[:, None] + np.arange(kh)[None, :] * dilation  # [oh, kh]
    cols = np.arange(ow)[:, None] + np.arange(kw)[None, :] * dilation  # [ow, kw]
    patches = x[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # [N, C, oh, ow, kh, kw]
    patches = patches.transpose(0, 2, 3, 1, 4, 5).reshape(n, oh * ow, c * kh * kw)
    y = (patches @ w.reshape(m, -1).T).transpose(0, 2, 1).reshape(n, m, oh, ow)
    return y if b is None else y + _f64(b)[None, :, None, None]


def group_norm(x, groups, gamma, beta, eps=1e-5):
    """nn.GroupNorm on [N, C, ...]: statistics over each group's channels and positions."""
    x = _f64(x)
    g = x.reshape(x.shape[0], groups, -1)
    g = (g - g.mean(axis=-1, keepdims=True)) / np.sqrt(g.var(axis=-1, keepdims=True) + eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return g.reshape(x.shape) * _f64(gamma).reshape(shape) + _f64(beta).reshape(shape)


def layer_norm(x, gamma, beta, eps=1e-5):
    """nn.LayerNorm over the last dimension."""
    x = _f64(x)
    y = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    return y * _f64(gamma) + _f64(beta)


def batch_norm(x, gamma, beta, mean, var, eps=1e-5):
    """nn.BatchNorm2d in eval mode: the running statistics, per channel."""
    shape = (1, -1, 1, 1)
    scale = _f64(gamma) / np.sqrt(_f64(var) + eps)
    return (_f64(x) - _f64(mean).reshape(shape)) * scale.reshape(shape) + _f64(beta).reshape(shape)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def pooled_size(size, kernel=2, stride=2):
    """Output length of max pooling with ceil_mode=True and no padding: a
    window may run past the end but must start inside the input."""
    out = -(-(size - kernel) // stride) + 1
    return out - 1 if (out - 1) * stride >= size else out


def max_pool2d_ceil(x, kernel=2, stride=2):
    """nn.MaxPool2d(kernel, stride, ceil_mode=True) on [N, C, H, W]."""
    x = _f64(x)
    oh, ow = pooled_size(x.shape[2], kernel, stride), pooled_size(x.shape[3], kernel, stride)
    need_h, need_w = (oh - 1) * stride + kernel, (ow - 1) * stride + kernel
    x = np.pad(x, ((0, 0), (0, 0), (0, max(need_h - x.shape[2], 0)), (0, max(need_w - x.shape[3], 0))),
               constant_values=-np.inf)
    out = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i in range(kernel):
        for j in range(kernel):
            out = np.maximum(out, x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride])
    return out


def _linear_taps(out_size, in_size):
    """Source indices and weights of bilinear resizing along one axis, half-pixel centres."""
    src = (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5
    src = np.clip(src, 0.0, in_size - 1)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, in_size - 1)
    return lo, hi, src - lo


def resize_bilinear(x, out_h, out_w):
    """F.interpolate(x, size=(out_h, out_w), mode="bilinear", align_corners=False)."""
    x = _f64(x)
    lo, hi, t = _linear_taps(out_h, x.shape[2])
    x = x[:, :, lo, :] * (1 - t)[:, None] + x[:, :, hi, :] * t[:, None]
    lo, hi, t = _linear_taps(out_w, x.shape[3])
    return x[:, :, :, lo] * (1 - t) + x[:, :, :, hi] * t


# ---- models ----

def log_mel(audio, n_fft, hop, mel_filters):
    """Whisper's log-mel features of audio [1, 1, T] by a real FFT of
    Hann-windowed frames of the reflect-padded signal (torch.stft with
    center=True), power spectrum, mel_filters [n_fft/2+1, n_mels], log10 of
    at least 1e-10, floored at 8 below the maximum, then (x + 4) / 4:
    [1, n_mels, frames]."""
    x = np.pad(_f64(audio).reshape(-1), n_fft // 2, mode="reflect")
    frames = 1 + (x.size - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n_fft) / n_fft)
    spec = np.fft.rfft(x[np.arange(frames)[:, None] * hop + np.arange(n_fft)] * window, axis=-1)
    mel = (spec.real ** 2 + spec.imag ** 2) @ _f64(mel_filters)  # [frames, n_mels]
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).T[None]


def feature_encoder(params, audio, kernels, strides):
    """wav2vec2's feature encoder on audio [1, T]: bias-free Conv1d layers,
    GroupNorm (one group per channel) after the first only, GELU after
    each; then LayerNorm and the projection Linear: [1, frames, hidden]."""
    h = _f64(audio)[:, None, :]
    for i, (k, s) in enumerate(zip(kernels, strides)):
        h = conv1d(h, params[f"conv_layers.{i}.conv.weight"], stride=s)
        if i == 0:
            h = group_norm(h, h.shape[1], params["conv_layers.0.layer_norm.weight"],
                           params["conv_layers.0.layer_norm.bias"])
        h = gelu(h)
    h = layer_norm(h.transpose(0, 2, 1), params["feature_projection.layer_norm.weight"],
                   params["feature_projection.layer_norm.bias"])
    return h @ _f64(params["feature_projection.projection.weight"]).T + params["feature_projection.projection.bias"]


def _linear(x, params, prefix):
    y = x @ _f64(params[prefix + ".weight"]).T
    return y + params[prefix + ".bias"] if prefix + ".bias" in params else y


def _whisper_attention(x, params, prefix, heads):
    """Whisper's MultiHeadAttention without a mask: q and k each scaled by
    head_dim ** -0.25 before their product."""
    n, t, d = x.shape
    scale = (d // heads) ** -0.25
    split = lambda y: y.reshape(n, t, heads, d // heads).transpose(0, 2, 1, 3)  # [N, H, T, hd]
    q = split(_linear(x, params, prefix + ".query")) * scale
    k = split(_linear(x, params, prefix + ".key")) * scale
    v = split(_linear(x, params, prefix + ".value"))
    w = softmax(q @ k.transpose(0, 1, 3, 2), axis=-1)
    out = (w @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
    return _linear(out, params, prefix + ".out")


def whisper_encoder(params, mel, heads, layers):
    """Whisper's AudioEncoder on mel [1, n_mels, 2P]: two Conv1d + GELU (the
    second with stride 2), the positional embedding, pre-LN residual
    attention and MLP blocks, final LayerNorm: [1, P, d_model]."""
    x = gelu(conv1d(mel, params["conv1.weight"], params["conv1.bias"], stride=1, pad=1))
    x = gelu(conv1d(x, params["conv2.weight"], params["conv2.bias"], stride=2, pad=1))
    x = x.transpose(0, 2, 1) + _f64(params["positional_embedding"])
    for i in range(layers):
        p = f"blocks.{i}"
        h = layer_norm(x, params[p + ".attn_ln.weight"], params[p + ".attn_ln.bias"])
        x = x + _whisper_attention(h, params, p + ".attn", heads)
        h = layer_norm(x, params[p + ".mlp_ln.weight"], params[p + ".mlp_ln.bias"])
        x = x + _linear(gelu(_linear(h, params, p + ".mlp.0")), params, p + ".mlp.2")
    return layer_norm(x, params["ln_post.weight"], params["ln_post.bias"])


def _rebnconv(x, params, name, dilation):
    """U^2-Net's REBNCONV: 3x3 Conv (dilation d, padding d), BatchNorm, ReLU."""
    p = name + "."
    y = conv2d(x, params[p + "conv_s1.weight"], params[p + "conv_s1.bias"], pad=dilation, dilation=dilation)
    y = batch_norm(y, params[p + "bn_s1.weight"], params[p + "bn_s1.bias"], params[p + "bn_s1.running_mean"],
                   params[p + "bn_s1.running_var"])
    return np.maximum(y, 0.0)


def rsu_block(params, x):
    """The RSU block segmentation_block.py writes, on x [1, C, H, W]: three
    ceil-mode poolings, dilations 1/2/4/8 at the bottom, bilinear
    upsampling to the skip's size, channel concatenations, and the block
    input's residual."""
    up = lambda src, tar: resize_bilinear(src, tar.shape[2], tar.shape[3])
    cat = lambda a, b: np.concatenate([a, b], axis=1)
    hxin = _rebnconv(x, params, "rebnconvin", 1)
    hx1 = _rebnconv(hxin, params, "rebnconv1", 1)
    hx2 = _rebnconv(max_pool2d_ceil(hx1), params, "rebnconv2", 1)
    hx3 = _rebnconv(max_pool2d_ceil(hx2), params, "rebnconv3", 1)
    hx4 = _rebnconv(max_pool2d_ceil(hx3), params, "rebnconv4", 1)
    hx5 = _rebnconv(hx4, params, "rebnconv5", 2)
    hx6 = _rebnconv(hx5, params, "rebnconv6", 4)
    hx7 = _rebnconv(hx6, params, "rebnconv7", 8)
    hx6d = _rebnconv(cat(hx7, hx6), params, "rebnconv6d", 4)
    hx5d = _rebnconv(cat(hx6d, hx5), params, "rebnconv5d", 2)
    hx4d = _rebnconv(cat(hx5d, hx4), params, "rebnconv4d", 1)
    hx3d = _rebnconv(cat(up(hx4d, hx3), hx3), params, "rebnconv3d", 1)
    hx2d = _rebnconv(cat(up(hx3d, hx2), hx2), params, "rebnconv2d", 1)
    hx1d = _rebnconv(cat(up(hx2d, hx1), hx1), params, "rebnconv1d", 1)
    return hx1d + hxin
