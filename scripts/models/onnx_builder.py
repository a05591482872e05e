"""What the model generators share: a node and initializer collector, the
opset-13 model around a finished graph, and a writer of a model's top-level
nodes in a shuffled, non-topological order (with its sortedness check)."""
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


def _subgraph_reads(node):
    """Names the subgraphs of `node` read from the enclosing scopes."""
    reads = set()
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for g in graphs:
            local = {i.name for i in g.input} | {i.name for i in g.initializer}
            for n in g.node:
                reads |= {name for name in n.input if name} | _subgraph_reads(n)
                local |= set(n.output)
            reads |= {o.name for o in g.output}
            reads -= local
    return reads


def is_topologically_sorted(graph):
    """Whether every node of `graph` comes after the producers of what it
    reads, its subgraphs' reads from the enclosing scope included."""
    produced = {out for n in graph.node for out in n.output}
    seen = set()
    for node in graph.node:
        needs = ({name for name in node.input if name} | _subgraph_reads(node)) & produced
        if not needs <= seen:
            return False
        seen.update(node.output)
    return True


def shuffle_nodes(model, seed):
    """A copy of `model` with its top-level nodes in a seeded random order
    that is not topologically sorted, as some converters write graphs (ONNX
    allows it; onnx.checker does not). Subgraphs keep their order."""
    shuffled = onnx.ModelProto()
    shuffled.CopyFrom(model)
    nodes = list(model.graph.node)
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        order = rng.permutation(len(nodes))
        del shuffled.graph.node[:]
        shuffled.graph.node.extend(nodes[i] for i in order)
        if not is_topologically_sorted(shuffled.graph):
            return shuffled
    raise ValueError("the graph has no unsorted order (too few dependent nodes)")
