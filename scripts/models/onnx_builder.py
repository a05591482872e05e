"""What the model generators share: a node and initializer collector, and the
opset-13 model around a finished graph."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


class Builder:
    """Collects nodes and initializers; names are unique by construction."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []

    def const(self, name, array, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(array).astype(dtype), name))
        return name

    def node(self, op, inputs, name, **attrs):
        """Appends one node whose single output is named like the node."""
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def model(self, graph_name, input_shape, output_shape, producer):
        """The checked opset-13 model of the collected graph: float32 `input`
        of `input_shape` to `output` of `output_shape`, made by `producer`."""
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)],
            initializer=self.inits)
        model = helper.make_model(graph, producer_name=producer,
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 7  # opset 13's IR version; older runtimes read it too
        onnx.checker.check_model(model)
        return model
