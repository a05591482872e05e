// Partitioning for external backends (bring your own codegen): the nodes a
// backend supports are grouped into regions, and each region becomes one
// kExternal node whose body is the region as a graph of its own.
//
//   PartitionRules rules = backend.partition_rules();   // compiler/external
//   Graph p = partition_graph(g, rules).value();         // regions -> kExternal nodes
//   Graph back = inline_external_nodes(p, [](const Node&) { return true; }).value();
//
// The rules are data (predicates and patterns), so this pass knows no
// backend; compiler/external states them for each backend.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"

namespace tessera::graph {

/// A composite a backend takes as one operation: an anchor followed by a
/// chain of epilogue nodes, each the only reader of the chain's value so far
/// (dense + bias, matmul + bias + relu).
struct CompositePattern {
  std::string name;                                       ///< "dense_bias"
  std::function<bool(const Graph&, const Node&)> anchor;  ///< whether a node may start the chain
  /// Whether `n` may extend the chain whose current value is `v` (one of n's inputs).
  std::function<bool(const Graph&, const Node& n, ValueId v)> epilogue;
  int max_epilogue = 4;  ///< longest chain after the anchor
};

/// What one backend takes: operators alone (`supports`: a predicate on the
/// node's attributes, dtypes and shapes) and composite patterns, tried in
/// order at every node not yet claimed.
struct PartitionRules {
  std::string backend;                                      ///< "cblas": names regions and external nodes
  std::function<bool(const Graph&, const Node&)> supports;  ///< may be empty: patterns only
  std::vector<CompositePattern> patterns;
  int min_nodes = 1;  ///< smaller regions stay Tessera's
};

/// A set of nodes the backend takes as one function.
struct Region {
  std::string name;              ///< "<backend>_region<k>", k counting kept regions from 0
  std::vector<int> nodes;        ///< indices into the nodes of the graph it was found in, ascending
  std::vector<ValueId> inputs;   ///< values read from outside (inputs, constants, other nodes), first use first
  std::vector<ValueId> outputs;  ///< values produced inside and read outside or graph outputs, in node order
};

/// Annotates the nodes `rules` supports (composites first, claimed whole),
/// groups them, in topological order, into regions joined along data edges
/// when the union stays convex (no path leaves the region and re-enters it,
/// so contracting it cannot make a cycle), and drops regions of fewer than
/// `rules.min_nodes` nodes.
std::vector<Region> find_regions(const Graph& g, const PartitionRules& rules);

/// The region's nodes as a graph of its own: one input per region input
/// (constants too, named as in `g`), its nodes, its outputs.
Graph region_body(const Graph& g, const Region& region);

/// Replaces every region of find_regions by one kExternal node named after
/// the region (ExternalAttrs{rules.backend, body}); the other nodes stay, and
/// the nodes are put back in topological order. Value ids are kept. `regions`
/// (optional) receives what was found. Errors: the result's validate().
Result<Graph> partition_graph(const Graph& g, const PartitionRules& rules, std::vector<Region>* regions = nullptr);

/// Puts the body of every kExternal node that `which` selects back in its
/// place (the fallback when a backend cannot generate a region): the body's
/// values inside get new ids, its inputs and outputs are the node's.
/// Errors: a malformed external node (kInternal), validate()'s.
Result<Graph> inline_external_nodes(const Graph& g, const std::function<bool(const Node&)>& which);

}  // namespace tessera::graph
