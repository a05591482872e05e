#!/usr/bin/python3
"""Writes a 2-layer GRU speech model as torch.onnx.export writes it, with random weights.

The PyTorch model is nn.GRU(64, 128, num_layers=2, batch_first=True) called
without an initial state, then nn.Linear(128 or 256, 32) on every frame;
exported with opset 17 and the default constant folding. The graph is the
one of lstm_speech.py with GRU nodes, as symbolic_opset9._generic_rnn
writes them:

    input [1,T,64] -> Transpose(1,0,2) -> GRU -> Squeeze(axis 1) -> GRU
      -> Squeeze(axis 1) -> Transpose(1,0,2) -> MatMul -> Add -> output [1,T,32]

- GRU nodes with linear_before_reset=1 (PyTorch applies the reset gate
  after the recurrent product, bias included), hidden_size 128, two outputs
  (Y, Y_h), sequence_lens empty;
- W, R, B initializers "onnx::GRU_<id>" in ONNX gate order z,r,h (PyTorch
  stacks r,z,n): W [1,384,64] then [1,384,128], R [1,384,128], B [1,768] =
  [W_bias, R_bias];
- one zero initial state per layer, folded into a Constant node [1,1,128];
- --bidirectional and --unfolded as in lstm_speech.py.

Deterministic for a given --seed (PyTorch's uniform initialisation).
--shuffle-nodes writes the top-level nodes in a seeded non-topological order.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/gru_speech.py -o gru_speech.onnx [--seed 0] [--steps 100]
"""
import sys

import lstm_speech

parameters = lstm_speech.parameters  # parameters(seed, "GRU", bidirectional)


def build(seed=0, steps=100, bidirectional=False, unfolded=False):
    return lstm_speech.build_speech_rnn("GRU", seed, steps, bidirectional, unfolded)


def main(argv):
    return lstm_speech.speech_main(argv, "GRU", __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
