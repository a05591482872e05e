#include "compiler/graph/extract_tasks.h"

#include <map>

#include "compiler/graph/build_node.h"

namespace tessera::graph {

Result<ComputeDAG> build_group_dag(const Graph& g, const FusedGroup& group) {
  std::map<ValueId, Tensor> tensors;
  std::vector<Tensor> args;
  for (ValueId v : group.inputs) {
    const Value& val = g.value(v);
    // "arg1.fc.bias": stage names come from node names ("fc", "fc.bias"), and
    // templates find stages by name, so an input must not share one.
    Tensor t = placeholder(
        val.shape, val.dtype,
        "arg" + std::to_string(args.size()) + "." + (val.name.empty() ? "v" + std::to_string(v) : val.name));
    tensors[v] = t;
    args.push_back(t);
  }
  Tensor last;
  for (int i : group.nodes) {
    const Node& n = g.nodes()[static_cast<size_t>(i)];
    std::vector<Tensor> in;
    for (ValueId v : n.inputs) in.push_back(tensors.at(v));
    TESSERA_ASSIGN_OR_RETURN(last, build_node(g, n, in));
    tensors[n.outputs[0]] = last;
  }
  args.push_back(last);
  auto dag = ComputeDAG::make(std::move(args));
  if (!dag.is_ok()) return dag.status().with_context("group " + group.name);
  return dag;
}

Result<TaskExtraction> extract_tasks(const Graph& g, const std::vector<FusedGroup>& groups) {
  TaskExtraction out;
  std::map<std::string, int> by_key;
  for (const FusedGroup& group : groups) {
    TESSERA_ASSIGN_OR_RETURN(ComputeDAG dag, build_group_dag(g, group));
    auto [it, inserted] = by_key.emplace(dag.workload_key(), static_cast<int>(out.tasks.size()));
    if (inserted) {
      const double flops = dag.flop_count();
      out.tasks.push_back(GraphTask{group.name, std::make_shared<const ComputeDAG>(std::move(dag)), 0, flops});
    }
    ++out.tasks[static_cast<size_t>(it->second)].weight;
    out.task_of_group.push_back(it->second);
  }
  return out;
}

}  // namespace tessera::graph
