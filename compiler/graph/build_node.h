// Tensor expressions of graph nodes, built with compiler/ops where an operator
// exists there and with te::compute for the rest (bias epilogues, reshape,
// transpose, concat, gather, cast, erf, hard_sigmoid, batch_norm).
#pragma once

#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"
#include "compiler/te/tensor.h"

namespace tessera::graph {

/// The output tensor of `n` given tensors for its inputs (in n.inputs order).
/// The result's shape equals n's output value's shape; a mismatch or an
/// operator that has no kernel (Shape) is kInvalidArgument naming the node.
Result<Tensor> build_node(const Graph& g, const Node& n, const std::vector<Tensor>& inputs);

/// build_node for the indexing and contraction kinds (kGatherND,
/// kScatterElements, kScatterND, kEinsum; build_index_node.cc).
Result<Tensor> build_index_node(const Graph& g, const Node& n, const std::vector<Tensor>& inputs);

}  // namespace tessera::graph
