// The fused graph in Graphviz's dot language, for people: one box per kernel
// call, labelled as Netron labels a node.
#pragma once

#include <string>
#include <vector>

#include "compiler/graph/fuse_ops.h"
#include "compiler/graph/graph.h"

namespace tessera::graph {

/// A dot digraph of `groups` (fuse_ops' result on `g`): one box per group
/// labelled with its operator kinds ("conv + add + relu"), the names of its
/// nodes (the model's, e.g. ONNX's "/layer1/layer1.0/conv1/Conv"), the
/// constants it reads (weights, folded into the label with their shapes, not
/// drawn) and its output shape; an ellipse per graph input and output; edges
/// from producer to reader labelled with the tensor's shape. Renders with
/// `dot -Tsvg`.
std::string fused_graph_dot(const Graph& g, const std::vector<FusedGroup>& groups);

}  // namespace tessera::graph
