#!/usr/bin/python3
"""Writes a log-mel spectrogram front end as torch.onnx.export writes it.

The PyTorch module computes Whisper's log-mel features with a convolutional
STFT (n_fft 512, hop 160, Hann window, 80 mel bands at 16 kHz):

    x = F.pad(audio, (256, 256), mode="reflect")       # what torch.stft(center=True) pads
    real, imag = self.conv_real(x), self.conv_imag(x)  # Conv1d(1, 257, 512, stride=160, bias=False)
    power = real ** 2 + imag ** 2                      # power spectrum, no sqrt
    mel = torch.matmul(power.transpose(1, 2), self.mel_filters).transpose(1, 2)
    log_spec = torch.clamp(mel, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0

exported with opset 17 and the default constant folding. Input `audio`
float32 [1, 1, 16000] (one second), output `mel` float32 [1, 80, 101]
(frames = 1 + samples // 160): mel bands first, as Whisper's encoder reads
them; the MatMul runs on [1, frames, 257] and its result is transposed back,
as torchaudio's MelScale does.

What the exporter writes:
- Centering: a reflect Pad, not Conv padding: torch.stft(center=True)
  reflect-pads the signal before its transform, so a convolutional STFT that
  matches it pads the same way and its Conv nodes have pads [0, 0]. The pads
  are computed by the exporter's run-time chain, of which constant folding
  leaves Constant [4] -> ConstantOfShape -> Concat(Constant [256, 256], .)
  -> Reshape [-1, 2] -> Slice (step -1) -> Transpose -> Reshape [-1] -> Cast
  -> Pad(mode=reflect): folding does not evaluate ConstantOfShape nor a
  Slice whose step is not 1.
- Two Conv nodes (/conv_real/Conv, /conv_imag/Conv) with every attribute
  written: dilations [1], group 1, kernel_shape [512], pads [0, 0], strides
  [160], no bias; weights "conv_real.weight" and "conv_imag.weight"
  [257, 1, 512], the Hann-windowed cos and -sin rows of the DFT.
- Pow(x, 2.0) twice (the integer exponent cast to float, folded into a
  float32 Constant), Add, Transpose [0, 2, 1], MatMul by the buffer
  "mel_filters" [257, 80], Transpose [0, 2, 1].
- clamp(min=1e-10) as Clip(x, 1e-10, "") (the max input left empty);
  log10 as Log then Div by a Constant [ln 10] of shape [1].
- The dynamic-range floor: ReduceMax over all axes with keepdims=0, Sub of a
  scalar 8.0, Max; then Add 4.0 and Div 4.0 (scalar float32 Constants).

Mel bank: Slaney's (librosa's default, the one Whisper ships), not HTK:
mel = f / (200/3) below 1 kHz and 15 + 27 ln(f / 1000) / ln 6.4 above; 82
points equally spaced in mel from 0 Hz to 8 kHz bound 80 triangles, each
scaled by 2 / (its bandwidth in Hz) so that it has unit area.

The front end has no learned weights: --seed is accepted like the other
generators' and changes nothing.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/mel_frontend.py -o mel_frontend.onnx [--samples 16000]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto

import torch_style as ts

SAMPLE_RATE, N_FFT, HOP, N_MELS, SAMPLES = 16000, 512, 160, 80, 16000
LN10 = 2.302585092994046
FLOAT = TensorProto.FLOAT


def frames(samples, n_fft=N_FFT, hop=HOP):
    """STFT frames of `samples` padded by n_fft // 2 on each side."""
    return 1 + (samples + 2 * (n_fft // 2) - n_fft) // hop


def hann_window(n):
    """torch.hann_window(n): the periodic Hann window."""
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)


def dft_basis(n_fft=N_FFT):
    """The Conv1d weights of the real and imaginary parts of the one-sided
    DFT, windowed: two [n_fft/2 + 1, 1, n_fft] arrays."""
    k = np.arange(n_fft // 2 + 1)[:, None]
    angle = 2.0 * np.pi * ((k * np.arange(n_fft)) % n_fft) / n_fft  # reduced first: exact phases
    window = hann_window(n_fft)
    real = (np.cos(angle) * window)[:, None, :]
    imag = (-np.sin(angle) * window)[:, None, :]
    return real.astype(np.float32), imag.astype(np.float32)


def hz_to_mel(hz):
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    log_part = 15.0 + np.log(np.maximum(hz, 1000.0) / 1000.0) * 27.0 / np.log(6.4)
    return np.where(hz >= 1000.0, log_part, hz * 3.0 / 200.0)


def mel_to_hz(mel):
    mel = np.asarray(mel, dtype=np.float64)
    return np.where(mel >= 15.0, 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0), mel * 200.0 / 3.0)


def mel_filters(sample_rate=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS):
    """The [n_fft/2 + 1, n_mels] triangular filter bank, Slaney-normalised."""
    freqs = np.arange(n_fft // 2 + 1) * sample_rate / n_fft
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2.0), n_mels + 2))
    rising = (freqs[None, :] - edges[:-2, None]) / (edges[1:-1] - edges[:-2])[:, None]
    falling = (edges[2:, None] - freqs[None, :]) / (edges[2:] - edges[1:-1])[:, None]
    bank = np.maximum(0.0, np.minimum(rising, falling)) * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return bank.T.astype(np.float32)


def parameters():
    """The module's state_dict: the two convolution weights and the mel buffer."""
    real, imag = dft_basis()
    return {"conv_real.weight": real, "conv_imag.weight": imag, "mel_filters": mel_filters()}


def build(samples=SAMPLES):
    """The exported front end for `samples` samples of 16 kHz audio."""
    p = parameters()
    g = ts.Graph()
    audio = g.input("audio", FLOAT, [1, 1, samples])
    x = ts.reflect_pad(g, audio, [N_FFT // 2, N_FFT // 2], 3, "", folded=True)
    parts = [ts.conv1d(g, x, g.param(f"{name}.weight", p[f"{name}.weight"]), None, N_FFT, HOP, 0, "/" + name)
             for name in ("conv_real", "conv_imag")]
    squares = [g.op("Pow", [part, g.constant(2.0, np.float32)]) for part in parts]
    power = g.op("Add", squares)
    spec = g.op("Transpose", [power], perm=[0, 2, 1])
    mel = g.op("Transpose", [g.op("MatMul", [spec, g.param("mel_filters", p["mel_filters"])])], perm=[0, 2, 1])
    clipped = g.op("Clip", [mel, g.constant(1e-10, np.float32), ""])
    log_spec = g.op("Div", [g.op("Log", [clipped]), g.constant([LN10], np.float32)])
    floor = g.op("Sub", [g.op("ReduceMax", [log_spec], keepdims=0), g.constant(8.0, np.float32)])
    log_spec = g.op("Max", [log_spec, floor])
    out = g.op("Div", [g.op("Add", [log_spec, g.constant(4.0, np.float32)]), g.constant(4.0, np.float32)])
    g.output(ts.rename_output(g, out, "mel"), FLOAT, [1, N_MELS, frames(samples)])
    doc = f"log-mel front end: conv STFT (n_fft {N_FFT}, hop {HOP}), {N_MELS} Slaney mel bands, Whisper scaling"
    return ts.make_model(g, producer="tessera-mel_frontend", doc=doc)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="accepted for a common interface; no random weights")
    parser.add_argument("--samples", type=int, default=SAMPLES, help=f"audio samples (default {SAMPLES})")
    args = parser.parse_args(argv)
    if args.samples <= N_FFT // 2:
        parser.error(f"--samples must exceed the reflect padding, {N_FFT // 2}")
    try:
        onnx.save(build(args.samples), args.output)
    except OSError as e:
        print(f"mel_frontend.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
