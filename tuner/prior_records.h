// Transfer: records of the tasks' workloads measured on other targets, read
// from another records store, warm each task's cost model before its first
// batch. They are a prior, never measurements: nothing of them is stored in
// the tuning's own database, and no schedule is chosen from them.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/te/compute_dag.h"
#include "costmodel/xgb_model.h"

namespace tessera::tuner {

/// What a prior store holds for the tasks.
struct PriorRecords {
  /// Per task (in the order given): its workload's records of every other
  /// target, each program's features and its throughput normalized by the
  /// best of its target (0 for a failed measurement), one group per target.
  std::vector<std::vector<costmodel::TrainingRecord>> per_task;
  std::set<std::string> targets;  ///< the targets they were measured on
  int64_t same_target = 0;        ///< records of `target` itself, left out (measurements: import them)

  /// Training records in all.
  int64_t records() const;
  /// Tasks that got at least one.
  int64_t workloads() const;
};

/// Reads the prior for `dags` from the store at `path` (opened read-only):
/// for each workload, its newest `per_workload_limit` records measured on a
/// target other than `target` (infrastructure errors left out), replayed on
/// the DAG. A record whose steps no longer replay is skipped. Errors: the
/// store's (kNotFound for a missing file, kDatabaseError for one that is not
/// a records database), with the path in the message.
Result<PriorRecords> read_prior_records(const std::string& path,
                                        const std::vector<std::shared_ptr<const ComputeDAG>>& dags,
                                        const std::string& target, int64_t per_workload_limit = 512);

/// "prior: 412 records of 3 of these 4 workloads from other.db, measured on
/// x86_64 znver4 (2 cores); they warm the cost model and are not stored here".
std::string describe_prior(const PriorRecords& prior, size_t tasks, const std::string& path);

}  // namespace tessera::tuner
