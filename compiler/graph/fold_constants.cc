#include "compiler/graph/passes.h"

namespace tessera::graph {

Result<Graph> fold_constants(const Graph& g) {
  Graph out = g;
  std::vector<Node> kept;
  for (const Node& n : g.nodes()) {
    std::vector<const Constant*> inputs;
    bool all_constant = true;
    for (ValueId v : n.inputs) {
      inputs.push_back(out.is_constant(v) ? &out.constant(v) : nullptr);
      all_constant &= out.is_constant(v);
    }
    // Shape needs only its input's static shape, never its data.
    const bool fold = n.kind == OpKind::kShape || (all_constant && is_foldable(n.kind) && n.outputs.size() == 1);
    if (!fold) {
      kept.push_back(n);
      continue;
    }
    auto value = evaluate_node(out, n, inputs);
    if (!value.is_ok()) return value.status();
    out.make_constant(n.outputs[0], std::move(value).value());
  }
  out.mutable_nodes() = std::move(kept);
  return eliminate_dead_nodes(out);
}

Result<Graph> optimize_graph(const Graph& g) {
  TESSERA_RETURN_IF_ERROR(g.validate());
  TESSERA_ASSIGN_OR_RETURN(Graph folded, fold_constants(g));
  TESSERA_ASSIGN_OR_RETURN(Graph bn, fold_batch_norm(folded));
  TESSERA_ASSIGN_OR_RETURN(Graph refolded, fold_constants(bn));
  TESSERA_ASSIGN_OR_RETURN(Graph merged, merge_duplicate_views(refolded));
  TESSERA_ASSIGN_OR_RETURN(Graph normed, recognize_layer_norm(merged));
  TESSERA_ASSIGN_OR_RETURN(Graph viewed, fold_matmul_views(normed));
  TESSERA_ASSIGN_OR_RETURN(Graph moved, move_quantized_values(viewed));
  TESSERA_ASSIGN_OR_RETURN(Graph powers, reduce_powers(moved));
  return eliminate_dead_nodes(powers);
}

}  // namespace tessera::graph
