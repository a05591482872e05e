// Search policies: where a task's candidates come from. One policy per task;
// it proposes schedules never measured for the task and learns from each
// measured batch.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "records/record.h"
#include "tuner/candidate.h"
#include "tuner/measure/measurer.h"

namespace tessera::tuner {

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  /// "evolutionary", "random", "xgb", "grid", "ga".
  virtual std::string name() const = 0;
  /// Up to `n` candidates whose step lists were never measured for this task
  /// (fewer, possibly none, when the space is exhausted).
  virtual Result<std::vector<Candidate>> propose(int n) = 0;
  /// The records of a measured batch (or of an earlier run, when resuming),
  /// in the order of `candidates`.
  virtual Status observe(const std::vector<Candidate>& candidates, const std::vector<records::Record>& records) = 0;
  /// This task's version of another task's schedule, when the two share a
  /// search space (the same knob space: one template, the same shapes) and it
  /// was never proposed here; nothing otherwise (the default).
  virtual std::optional<Candidate> adopt(const Candidate& /*other*/) { return std::nullopt; }
};

/// Step lists already measured (or taken), compared by structure, so nothing
/// is measured twice.
class SeenSet {
 public:
  bool contains(const std::vector<Step>& steps) const { return seen_.count(steps) > 0; }
  /// True when newly inserted.
  bool insert(const std::vector<Step>& steps) { return seen_.insert(steps).second; }
  size_t size() const { return seen_.size(); }

 private:
  std::unordered_set<std::vector<Step>, StepListHash> seen_;
};

/// Normalized throughput of a record for the cost model: best cost of the
/// workload / this cost, in (0, 1]; 0 for a failed measurement.
inline double normalized_throughput(const records::Record& r, double best_cost) {
  if (!r.ok()) return 0;
  double c = r.mean_cost();
  return c > 0 && std::isfinite(c) ? best_cost / c : 0;
}

}  // namespace tessera::tuner
