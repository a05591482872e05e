// A tuning task: one computation (a ComputeDAG) on one target.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/schedule/layout.h"
#include "compiler/schedule/step.h"
#include "compiler/te/compute_dag.h"
#include "rpc/measure_types.h"

namespace tessera::tuner {

struct Task {
  std::string name;  ///< what a person reads: "matmul:M=1024,N=1024,K=1024"
  std::shared_ptr<const ComputeDAG> dag;
  Target target;
  std::string device_key;  ///< the workers that measure it (farm key)
  double weight = 1;       ///< how often it runs in the model
  /// The operator kind ("conv2d_nhwc", "matmul"): the task scheduler bounds a
  /// task's expected gain by the best throughput of its group. Empty: a
  /// group of its own (a transpose's or a pool's throughput says nothing of
  /// a conv's).
  std::string group;
  /// A known good schedule measured before the search (the knob template's
  /// fallback or the generic schedule, what compile time uses without
  /// records): its record competes
  /// with the search's, so the best record is never worse than it. Empty: none.
  std::vector<Step> baseline;
  /// The baseline's knob configuration (JSON) when the task is tuned in its
  /// template's knob space, so the knob policy learns from it; else empty.
  std::string baseline_knob_config;
  /// Inputs that are constants of the model (its weights) in every call,
  /// ascending: with MeasureOptions::cold_constants they are timed cold, as
  /// the model reads them.
  std::vector<int> constant_args;

  const std::string& workload_key() const { return dag->workload_key(); }
  /// The kernel's arguments as the runner describes them; the `packed` ones
  /// (argument index, layout) with their stored shapes.
  std::vector<rpc::ArgSpec> arg_specs(const std::vector<std::pair<int, PackedLayout>>& packed = {}) const;
};

}  // namespace tessera::tuner
