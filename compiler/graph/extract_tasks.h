// Task extraction: each fused group becomes a ComputeDAG; identical DAGs (by
// workload key) become one tuning task weighted by how often they occur.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/fuse_ops.h"
#include "compiler/te/compute_dag.h"

namespace tessera::graph {

/// One distinct kernel of a model, for the task scheduler.
struct GraphTask {
  std::string name;                       ///< the first group's name, e.g. "fused_conv_relu"
  std::shared_ptr<const ComputeDAG> dag;  ///< args: the group's inputs (constants too), then its output
  int weight = 0;                         ///< how many groups share this workload key
  double flops = 0;                       ///< of one run of the kernel
};

/// The tasks and, for each group, the index of its task (for the executor).
struct TaskExtraction {
  std::vector<GraphTask> tasks;
  std::vector<int> task_of_group;
};

/// The DAG of one group: a placeholder per group input (named after the
/// value) and the group's nodes built with build_node.
Result<ComputeDAG> build_group_dag(const Graph& g, const FusedGroup& group);

/// DAGs of all groups, de-duplicated by workload key in order of first
/// occurrence.
Result<TaskExtraction> extract_tasks(const Graph& g, const std::vector<FusedGroup>& groups);

}  // namespace tessera::graph
