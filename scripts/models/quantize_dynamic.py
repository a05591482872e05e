#!/usr/bin/python3
"""Writes a dynamically quantized ONNX model the way ONNX Runtime's
quantization tool writes it: quantize_dynamic with every argument at its
default (weight_type QInt8, per_channel False, reduce_range False, extra
option MatMulConstBOnly True), on the float model as it is (no
pre-processing).

What it does, in ONNX Runtime's words (onnx_quantizer.py, operators/conv.py,
operators/matmul.py, onnx_model.py):
- a Gemm with alpha = beta = 1 and transA = 0 first becomes MatMul (the
  weight transposed in place when transB = 1) + Add of the bias;
- a Conv becomes DynamicQuantizeLinear (uint8, one per activation however
  many nodes read it) -> ConvInteger -> Cast -> Mul by the product of the
  two scales (its own Mul) and, with a bias, Reshape of the float bias to
  [1, -1, 1, ...] -> Add;
- a MatMul whose B is an initializer becomes DynamicQuantizeLinear ->
  MatMulInteger -> Cast -> Mul (scales) -> Mul; a MatMul of two activations
  stays float;
- weights become int8 per tensor, symmetric (zero point 0, range -127..127);
- unused float weights are dropped, the nodes are sorted as the tool saves them.

Run with Debian's interpreter, which sees python3-onnx and python3-numpy:
    /usr/bin/python3 scripts/models/quantize_dynamic.py --model convnet|transformer -o OUT.onnx [--seed 0]
        [--batch 1] [--size 64] [--seq 128] [--layers 2] [--d-model 256] [--heads 4] [--ff 1024] [--pad 8]
--model is convnet or transformer (generated here; --size is the conv net's
image size, --seq to --pad are transformer.py's options), resnet18, or the
path of a float .onnx model.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import float_models  # noqa: E402
import quant_common as qc  # noqa: E402

# quantize_dynamic's default op_types_to_quantize: the IntegerOps registry.
OP_TYPES_TO_QUANTIZE = {"Conv", "MatMul", "Attention", "LSTM", "Gather", "Transpose", "EmbedLayerNormalization"}
NOT_REIMPLEMENTED = {"Attention", "LSTM", "Gather", "EmbedLayerNormalization"}


def replace_gemm_with_matmul(graph):
    """Gemm(alpha=1, beta=1, transA=0) -> MatMul [+ Add], B transposed in place if transB=1."""
    new_nodes = []
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type != "Gemm" or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 \
                or attrs.get("transA", 0) != 0:
            new_nodes.append(node)
            continue
        b_name = node.input[1]
        if attrs.get("transB", 0) == 1:
            init = qc.find_initializer(graph, b_name)
            if init is not None:
                transposed = numpy_helper.from_array(numpy_helper.to_array(init).T, b_name)
                graph.initializer.remove(init)
                graph.initializer.append(transposed)
            else:
                b_name += "_Transposed"
                new_nodes.append(helper.make_node("Transpose", [node.input[1]], [b_name],
                                                  name=node.name + "_Transpose" if node.name else ""))
        has_bias = len(node.input) > 2
        new_nodes.append(helper.make_node(
            "MatMul", [node.input[0], b_name], [node.output[0] + ("_MatMul" if has_bias else "")],
            name=node.name + "_MatMul" if node.name else ""))
        if has_bias:
            new_nodes.append(helper.make_node("Add", [node.output[0] + "_MatMul", node.input[2]], list(node.output),
                                              name=node.name + "_Add" if node.name else ""))
    del graph.node[:]
    graph.node.extend(new_nodes)


class IntegerQuantizer:
    """ONNXQuantizer.quantize_model in IntegerOps mode, dynamic, uint8 activations."""

    def __init__(self, model):
        model = qc.load_with_shape_infer(model)
        replace_gemm_with_matmul(model.graph)
        self.model = qc.load_with_shape_infer(model)  # the tool saves and reloads it with shape inference
        self.graph = self.model.graph
        self.types = qc.tensor_types(self.model)
        inits = {i.name for i in self.graph.initializer}
        self.known = set(self.types) | {out for node in self.graph.node for out in node.output}
        self.generated = {i.name for i in self.graph.input if i.name not in inits}
        self.quantized = {}  # float name -> (quantized name, scale name, zero point name)
        self.new_nodes = []

    def is_float(self, name):
        init = qc.find_initializer(self.graph, name)
        elem = init.data_type if init is not None else self.types.get(name)
        return elem in (TensorProto.FLOAT, TensorProto.FLOAT16)

    def quantize_activation(self, name):
        """The uint8 tensor, scale and zero point of an activation: one DynamicQuantizeLinear per tensor."""
        if name in self.quantized:
            return self.quantized[name]
        if qc.find_initializer(self.graph, name) is not None:
            return self.quantize_weight(name, TensorProto.UINT8, symmetric=False)
        if name not in self.known:
            raise ValueError(f"invalid tensor name to quantize: {name!r}")
        outs = [name + "_quantized", name + "_scale", name + "_zero_point"]
        self.new_nodes.append(helper.make_node("DynamicQuantizeLinear", [name], outs, qc.q_suffix(name)))
        self.quantized[name] = tuple(outs)
        return self.quantized[name]

    def quantize_weight(self, name, qtype=TensorProto.INT8, symmetric=True):
        """Per-tensor weight: <w>_scale, <w>_zero_point, then <w>_quantized initializers."""
        if name in self.quantized:
            return self.quantized[name]
        init = qc.find_initializer(self.graph, name)
        if init is None:
            return self.quantize_activation(name)
        data = numpy_helper.to_array(init)
        zp, scale = qc.data_scale_zp(data, qtype, symmetric)
        self.graph.initializer.append(helper.make_tensor(name + "_scale", init.data_type, [], [float(scale)]))
        self.graph.initializer.append(helper.make_tensor(name + "_zero_point", qtype, [], [int(zp)]))
        q = qc.quantize_array(data, scale, zp, qtype).reshape(data.shape)
        self.graph.initializer.append(numpy_helper.from_array(q, name + "_quantized"))
        self.quantized[name] = (name + "_quantized", name + "_scale", name + "_zero_point")
        return self.quantized[name]

    def integer_op(self, node, op_type, **attrs):
        """Q(A), W -> <op>Integer -> Cast -> Mul(scales) -> Mul; returns the scaled output name."""
        a_q, a_scale, a_zp = self.quantize_activation(node.input[0])
        w_q, w_scale, w_zp = self.quantize_weight(node.input[1])
        name = node.name + "_quant" if node.name else ""
        out = node.output[0]
        has_bias = op_type == "ConvInteger" and len(node.input) == 3
        integer_out = out + "_output_quantized"
        self.new_nodes.append(helper.make_node(op_type, [a_q, w_q, a_zp, w_zp], [integer_out], name, **attrs))
        self.new_nodes.append(helper.make_node("Cast", [integer_out], [integer_out + "_cast_output"],
                                               integer_out + "_cast", to=self.types.get(out, TensorProto.FLOAT)))
        scales_mul = name + "_scales_mul" if name else a_scale + "_" + w_scale + "_mul"
        if not any(n.name == scales_mul for n in self.new_nodes):
            self.new_nodes.append(helper.make_node("Mul", [a_scale, w_scale], [scales_mul + ":0"], scales_mul))
        scaled = out + "quant_scaled_output" if has_bias else out
        self.new_nodes.append(helper.make_node("Mul", [integer_out + "_cast_output", scales_mul + ":0"], [scaled],
                                               name + "_output_scale_mul" if name else ""))
        if has_bias:
            rank = len(qc.find_initializer(self.graph, node.input[1]).dims)
            shape = np.ones(rank, dtype=np.int64)
            shape[1] = -1
            qc.add_initializer(self.graph, helper.make_tensor(out + "_bias_reshape_shape", TensorProto.INT64,
                                                              [rank], shape))
            self.new_nodes.append(helper.make_node("Reshape", [node.input[2], out + "_bias_reshape_shape"],
                                                   [out + "_bias_reshape_output"]))
            self.new_nodes.append(helper.make_node("Add", [scaled, out + "_bias_reshape_output"], [out],
                                                   out + "_bias_add"))

    def should_quantize(self, node):
        if node.op_type not in OP_TYPES_TO_QUANTIZE or not self.is_float(node.input[0]):
            return False
        if node.op_type == "MatMul":  # MatMulConstBOnly: B must be an initializer
            return qc.find_initializer(self.graph, node.input[1]) is not None
        return True

    def keep(self, node):
        """An unquantized node, after DequantizeLinear of any input left quantized."""
        for name in node.input:
            if name in self.quantized and name not in self.generated:
                self.dequantize(name)
        self.new_nodes.append(node)

    def dequantize(self, name):
        """DequantizeLinear back to `name`, once."""
        if not any(n.name == qc.dq_suffix(name) for n in list(self.graph.node) + self.new_nodes):
            q, scale, zp = self.quantized[name]
            self.new_nodes.append(helper.make_node("DequantizeLinear", [q, scale, zp], [name], qc.dq_suffix(name)))

    def quantize_model(self):
        for node in list(self.graph.node):
            count = len(self.new_nodes)
            if not self.should_quantize(node):
                self.keep(node)
            elif node.op_type in NOT_REIMPLEMENTED:
                raise NotImplementedError(f"dynamic quantization of {node.op_type} is not reimplemented here")
            elif node.op_type == "Conv":
                self.integer_op(node, "ConvInteger", **{a.name: helper.get_attribute_value(a) for a in node.attribute})
            elif node.op_type == "MatMul":
                self.integer_op(node, "MatMulInteger")
            elif node.op_type == "Transpose":  # Direct8BitOp: transposes the uint8 tensor if there is one
                if node.input[0] not in self.quantized:
                    self.new_nodes.append(node)
                else:
                    _, scale, zp = self.quantized[node.input[0]]
                    self.quantized[node.output[0]] = (node.output[0] + "_quantized", scale, zp)
                    node.input[0] = self.quantized[node.input[0]][0]
                    node.output[0] = node.output[0] + "_quantized"
                    self.new_nodes.append(node)
            for new in self.new_nodes[count:]:
                self.generated.update(new.output)
        for out in self.graph.output:
            if out.name in self.quantized and out.name not in self.generated:
                self.dequantize(out.name)
        del self.graph.node[:]
        self.graph.node.extend(self.new_nodes)
        missing = qc.clean_initializers(self.graph)
        if missing:
            raise RuntimeError(f"invalid model with unknown initializers/tensors: {sorted(missing)}")
        return qc.finish(self.model)


def quantize_dynamic(float_model):
    """The dynamically quantized model of `float_model` (a ModelProto)."""
    return IntegerQuantizer(float_model).quantize_model()


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    float_models.add_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    args = parser.parse_args(argv)
    float_models.check_arguments(parser, args)
    try:
        source = float_models.load(args)
    except OSError as e:
        print(f"quantize_dynamic.py: cannot read {args.model}: {e.strerror}", file=sys.stderr)
        return 1
    return qc.save(quantize_dynamic(source), args.output, "quantize_dynamic.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
