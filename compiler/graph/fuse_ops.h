// Operator fusion: partitions a graph's nodes into groups that each become
// one kernel (one ComputeDAG).
#pragma once

#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace tessera::graph {

/// A set of nodes computed by one kernel. The group has one output (its last
/// node's); every other value inside it is read only by nodes of the group
/// (one or several: x in x * clip(x + 3, 0, 6) / 6) and is no graph output.
struct FusedGroup {
  std::vector<int> nodes;                       ///< indices into Graph::nodes(), in topological order
  int anchor = 0;                               ///< the first node, whose pattern decides what may join
  OpPattern pattern = OpPattern::kElementwise;  ///< the anchor's pattern
  std::vector<ValueId> inputs;                  ///< values read from outside (graph inputs, constants, other groups)
  ValueId output = -1;
  std::string name;  ///< "fused_conv_add_relu"
};

/// What fuse_ops may fuse beyond its rules.
struct FuseOptions {
  /// An attention chain is fused when its scores take at least this many
  /// bytes: then they would leave a core's L2 (2 MiB on the CPUs this
  /// targets) between the product, the softmax and the context, and one
  /// kernel saves three trips through memory (a speech encoder's 54 MB: 20%
  /// of the model's time). Below, the three kernels stay in cache and the
  /// gemm template's products are the faster ones (77 tokens, 6 heads).
  int64_t attention_min_score_bytes = 4 << 20;
};

/// Greedy fusion in topological order. A node joins the group that produced
/// one of its inputs when that input is the group's output, every reader of
/// it ends up in that group (checked after placement; a value that escapes
/// is pinned as a group output and placement reruns) and it is not a graph
/// output, and:
///   - the group's anchor is kComplex or kReduction and the node is
///     kElementwise or kBroadcast (an epilogue: conv + bias + add + relu), or
///   - the anchor is kElementwise, kBroadcast or kInjective and the node is one
///     of those too (injective chains such as transpose + reshape + add).
/// and every other input of the node comes from an earlier group or from
/// inside this one (so groups form a DAG in creation order and run in that
/// order). A light node that joins a light group also takes in the light
/// groups whose outputs it reads (a * sigmoid(b): one group; they come
/// earlier, so the merged group runs where the joined one does). An
/// epilogue node that joins a kComplex or kReduction group takes in the
/// elementwise groups that compute its other operands at its own shape and
/// that it alone reads (a quantized residual's DequantizeLinear: the int8
/// skip tensor is read in the epilogue, not written out in float); their
/// nodes go just before it, and the anchor stays first. Every
/// other node starts a group. An external region (kExternal)
/// is a group of its own that nothing joins; `output` is then its first
/// output and the node's outputs are all of them. An attention chain
/// (attention_chains) is one group, anchored at its scores' MatMul and
/// placed where its last node is.
std::vector<FusedGroup> fuse_ops(const Graph& g, const FuseOptions& options = {});

/// The attention chains of `g`, each its nodes in graph order: a float32
/// MatMul (the scores, rank 3 or more), light nodes on their first input (a
/// scale, an additive mask), a Softmax over the last axis, and the MatMul
/// that reads the softmax as its first operand (the context). Every value
/// inside a chain is read once, by the chain, and is no graph output
/// (`pinned`): one kernel computes the scores of a block of rows, their
/// softmax and its product with the values, and the scores never reach
/// memory. `readers`: per value, the nodes that read it. Only chains whose
/// scores take at least `min_score_bytes`.
std::vector<std::vector<int>> attention_chains(const Graph& g, const std::vector<std::vector<int>>& readers,
                                               const std::vector<bool>& pinned, int64_t min_score_bytes = 0);

/// One line per group: "fused_conv_add_relu: conv0 add0 relu0 (in %0 %1 %2 %5) -> %9".
std::string groups_to_string(const Graph& g, const std::vector<FusedGroup>& groups);

}  // namespace tessera::graph
