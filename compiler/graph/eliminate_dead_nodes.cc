#include <vector>

#include "compiler/graph/passes.h"

namespace tessera::graph {

Graph eliminate_dead_nodes(const Graph& g) {
  std::vector<bool> live(g.values().size(), false);
  for (ValueId v : g.outputs()) live[static_cast<size_t>(v)] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  // Nodes are topologically ordered, so one backward sweep finds every live node.
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    for (ValueId v : n.outputs) keep[i] = keep[i] || live[static_cast<size_t>(v)];
    if (keep[i])
      for (ValueId v : n.inputs) live[static_cast<size_t>(v)] = true;
  }
  Graph out = g;
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (keep[i]) nodes.push_back(g.nodes()[i]);
  out.mutable_nodes() = std::move(nodes);
  for (const auto& [id, c] : g.constants())
    if (!live[static_cast<size_t>(id)]) out.erase_constant(id);
  return out;
}

}  // namespace tessera::graph
