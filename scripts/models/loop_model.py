#!/usr/bin/python3
"""Writes an ONNX model with a Loop (a scripted for-loop as torch.onnx.export
writes it) or with a Scan (a cumulative sum over time), with random weights.

--kind loop (default): the scripted module

    def forward(self, x):                       # x [T, 1, 16]
        h = torch.zeros(x.size(1), 32)
        ys = []
        for t in range(x.size(0)):
            h = torch.tanh(self.cell_x(x[t]) + self.cell_h(h))
            ys.append(self.proj(h))
        return torch.stack(ys), h               # output [T, 1, 8], hidden [1, 32]

(--hidden-only: the same loop returning h alone, so no scan output.)

exported as torch writes it: the zeros from Shape/Gather/Unsqueeze/Concat/
ConstantOfShape; Loop(M, cond, h0) with cond a Constant true; the trip count
M from the input's shape (Shape -> Gather(0), as x.size(0)), or with
--trip-count constant a Constant T (a literal range(T)), or with
--trip-count input the int64 scalar input `steps`. The body takes (i int64,
cond bool, h) and returns (cond, h, y): x[t] as Gather(input, i) of the
enclosing graph's input, the Linears as Gemm(transB=1) on the main graph's
initializers, and the condition as Identity of the outer Constant (torch's
fix-up: a block output may not be a value of the enclosing scope). The list
becomes a scan output, the form torch writes up to opset 12 (its pass turns
the appended sequence into a scan output and drops the SplitToSequence /
ConcatFromSequence pair). With --sequence, the form torch writes at opset
13 and later: SequenceEmpty, the list as a loop-carried sequence with
SequenceInsert in the body, and ConcatFromSequence(axis=0, new_axis=1).

--kind scan: input [1, T, 8] -> Scan over axis 1 (scan_input_axes and
scan_output_axes 1, --reverse for directions 1) with a running-sum state
[1, 8] starting from a Constant of zeros; the body returns the new sum and
two scan outputs, the sum (Identity) and the sum times the main graph's
"scale" initializer. Outputs `total` [1, 8], `output` [1, T, 8] (the
cumulative sum) and `scaled` [1, T, 8]. torch never writes Scan; this is
the ONNX specification's own cumulative-sum form.

Deterministic for a given --seed. --shuffle-nodes writes the top-level
nodes in a seeded non-topological order.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/loop_model.py -o loop.onnx [--kind loop|scan] [--steps 10]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_builder
import torch_style as ts

FEATURES, HIDDEN, PROJ, SCAN_WIDTH = 16, 32, 8, 8
FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def parameters(seed):
    rng = np.random.default_rng(seed)
    params = {}
    for name, (cout, cin) in (("cell_x", (HIDDEN, FEATURES)), ("cell_h", (HIDDEN, HIDDEN)), ("proj", (PROJ, HIDDEN))):
        bound = 1.0 / np.sqrt(cin)
        params[f"{name}.weight"] = rng.uniform(-bound, bound, (cout, cin)).astype(np.float32)
        params[f"{name}.bias"] = rng.uniform(-bound, bound, cout).astype(np.float32)
    params["scale"] = rng.uniform(0.5, 2.0, (1, SCAN_WIDTH)).astype(np.float32)
    return params


def build_loop(seed=0, steps=10, trip_count="shape", sequence=False, hidden_only=False):
    params = parameters(seed)
    g = ts.Graph()
    x = g.input("input", FLOAT, [steps, 1, FEATURES])
    if trip_count == "input":
        g.input("steps", INT64, [])
    for name, value in params.items():
        if name != "scale":
            g.param(name, value)
    batch = g.op("Gather", [g.op("Shape", [x]), g.constant(1)], axis=0)
    h0 = g.op("ConstantOfShape", [g.op("Concat", [ts.unsqueeze(g, batch, [0]), g.constant([HIDDEN])], axis=0)],
              value=numpy_helper.from_array(np.zeros(1, np.float32)))
    if trip_count == "shape":
        trips = g.op("Gather", [g.op("Shape", [x]), g.constant(0)], axis=0)
    elif trip_count == "constant":
        trips = g.constant(steps)
    else:
        trips = "steps"
    true = g.constant(True, np.bool_)
    carried = [h0]
    if sequence:
        carried.append(g.op("SequenceEmpty", [], dtype=FLOAT))

    body = g.subgraph()
    body.input("i", INT64, [])
    body.input("cond", BOOL, [])
    body.input("h.1", FLOAT, [1, HIDDEN])
    if sequence:
        body.inputs.append(helper.make_tensor_sequence_value_info("ys.1", FLOAT, None))
    xt = body.op("Gather", [x, "i"], axis=0)
    pre = body.op("Add", [ts.gemm(body, xt, "cell_x.weight", "cell_x.bias", "/cell_x"),
                          ts.gemm(body, "h.1", "cell_h.weight", "cell_h.bias", "/cell_h")])
    h = body.op("Tanh", [pre])
    body.output(body.op("Identity", [true]), BOOL, [])
    body.output(h, FLOAT, [1, HIDDEN])
    if hidden_only:
        # forward returns h alone: the exporter writes no scan output.
        outs = g.op("Loop", [trips, true] + carried, outputs=1, body=body.proto())
        g.output(ts.rename_output(g, outs, "hidden"), FLOAT, [1, HIDDEN])
        return ts.make_model(g, producer="tessera-loop_model", doc="scripted for-loop RNN, torch.onnx.export style")
    y = ts.gemm(body, h, "proj.weight", "proj.bias", "/proj")
    if sequence:
        ys = body.op("SequenceInsert", ["ys.1", y])
        body.outputs.append(helper.make_tensor_sequence_value_info(ys, FLOAT, None))
    else:
        body.output(y, FLOAT, [1, PROJ])

    outs = g.op("Loop", [trips, true] + carried, outputs=2, body=body.proto())
    hidden, stacked = outs
    if sequence:
        stacked = g.op("ConcatFromSequence", [stacked], axis=0, new_axis=1)
    trips_dim = "steps" if trip_count == "input" else steps  # as many rows as iterations
    g.output(ts.rename_output(g, stacked, "output"), FLOAT, [trips_dim, 1, PROJ])
    g.output(ts.rename_output(g, hidden, "hidden"), FLOAT, [1, HIDDEN])
    return ts.make_model(g, producer="tessera-loop_model", doc="scripted for-loop RNN, torch.onnx.export style")


def build_scan(seed=0, steps=10, reverse=False):
    params = parameters(seed)
    g = ts.Graph()
    x = g.input("input", FLOAT, [1, steps, SCAN_WIDTH])
    scale = g.param("scale", params["scale"])
    init = g.constant(np.zeros((1, SCAN_WIDTH)), np.float32)
    body = g.subgraph()
    body.input("sum_in", FLOAT, [1, SCAN_WIDTH])
    body.input("x_t", FLOAT, [1, SCAN_WIDTH])
    total = body.op("Add", ["sum_in", "x_t"])
    body.output(total, FLOAT, [1, SCAN_WIDTH])
    body.output(body.op("Identity", [total]), FLOAT, [1, SCAN_WIDTH])
    body.output(body.op("Mul", [total, scale]), FLOAT, [1, SCAN_WIDTH])
    d = [1 if reverse else 0]
    outs = g.op("Scan", [init, x], outputs=3, body=body.proto(), num_scan_inputs=1, scan_input_axes=[1],
                scan_input_directions=d, scan_output_axes=[1, 1], scan_output_directions=d * 2)
    g.output(ts.rename_output(g, outs[0], "total"), FLOAT, [1, SCAN_WIDTH])
    g.output(ts.rename_output(g, outs[1], "output"), FLOAT, [1, steps, SCAN_WIDTH])
    g.output(ts.rename_output(g, outs[2], "scaled"), FLOAT, [1, steps, SCAN_WIDTH])
    return ts.make_model(g, producer="tessera-loop_model", doc="cumulative sum over time with Scan")


def build(kind="loop", seed=0, steps=10, trip_count="shape", sequence=False, reverse=False, hidden_only=False):
    if kind == "scan":
        return build_scan(seed, steps, reverse)
    return build_loop(seed, steps, trip_count, sequence, hidden_only)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--kind", choices=["loop", "scan"], default="loop", help="the model (default loop)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and shuffle (default 0)")
    parser.add_argument("--steps", type=int, default=10, help="time steps T of the input (default 10)")
    parser.add_argument("--trip-count", choices=["shape", "constant", "input"], default="shape",
                        help="loop: where M comes from (default shape: x.size(0))")
    parser.add_argument("--sequence", action="store_true",
                        help="loop: the list as a loop-carried sequence (torch at opset 13+)")
    parser.add_argument("--hidden-only", action="store_true",
                        help="loop: forward returns h alone (no scan output); with --trip-count input the loop "
                             "runs as long as its input says")
    parser.add_argument("--reverse", action="store_true", help="scan: scan from the last step")
    parser.add_argument("--shuffle-nodes", action="store_true",
                        help="write the top-level nodes in a seeded non-topological order")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    model = build(args.kind, args.seed, args.steps, args.trip_count, args.sequence, args.reverse, args.hidden_only)
    if args.shuffle_nodes:
        model = onnx_builder.shuffle_nodes(model, args.seed)
    try:
        onnx.save(model, args.output)
    except OSError as e:
        print(f"loop_model.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
