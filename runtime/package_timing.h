// Timing whole packages against each other on this machine: per call (where
// a model's time goes) or per run (which of them is faster). The packages
// are timed in alternating rounds, so that a burst of load on a shared
// machine falls on each of them alike. These are the measurements that
// decide, after a tuning, which regions an external backend runs and which
// records a model keeps (compiler/model/choose_byoc.h, check_records.h).
//
// PackageTimer is where they are made: InProcessPackageTimer here, in the
// calling process; a tuning job's runner can make them on a worker, in its
// measuring sandbox, through the same interface.
//
//   InProcessPackageTimer timer;
//   auto calls = timer.profile_alternately({&a, &b}, 10).value();   // calls[p][c]
//   auto whole = timer.time_alternately({&a, &b}, {}).value();      // whole.ratio_to_first[1]
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "runtime/graph_executor.h"
#include "runtime/package.h"

namespace tessera::runtime {

/// Whole runs of each package, in alternating rounds of a few runs each
/// (enough for about `round_s` seconds, the same count for every package):
/// per package, the median over the rounds of its round's median, and the
/// median over the rounds of its round's median divided by packages[0]'s in
/// the same round (1 for packages[0]).
struct AlternatingTimes {
  std::vector<double> median_s;
  std::vector<double> ratio_to_first;
  /// Per package: the rounds in which it was slower than packages[0].
  std::vector<int> rounds_slower;
  int rounds = 0;
};

/// How many alternating rounds of whole runs, and about how long each is.
struct AlternatingRounds {
  int rounds = 12;
  double round_s = 0.04;
};

/// Executors for `packages`, the inputs of each filled by
/// NDArray::fill_random(seed), fill_random(seed + 1), ... in input order.
Result<std::vector<std::unique_ptr<GraphExecutor>>> load_with_random_inputs(
    const std::vector<const PackageContents*>& packages, const ExecutorOptions& options = {}, uint64_t seed = 1);

/// Per executor, per call: its median seconds over about `runs` runs, the
/// executors profiled in alternating rounds.
Result<std::vector<std::vector<double>>> profile_alternately(const std::vector<GraphExecutor*>& executors, int runs);

/// Whole runs of each executor in alternating rounds (AlternatingTimes).
Result<AlternatingTimes> time_alternately(const std::vector<GraphExecutor*>& executors,
                                          const AlternatingRounds& rounds);

/// Where packages are timed against each other.
class PackageTimer {
 public:
  virtual ~PackageTimer() = default;
  /// Per package, per call: its median seconds over about `runs` runs on
  /// random inputs (profile_alternately).
  virtual Result<std::vector<std::vector<double>>> profile_alternately(
      const std::vector<const PackageContents*>& packages, int runs) = 0;
  /// Whole runs of each package on random inputs (time_alternately).
  virtual Result<AlternatingTimes> time_alternately(const std::vector<const PackageContents*>& packages,
                                                    const AlternatingRounds& rounds) = 0;
};

/// Packages loaded and timed in this process.
class InProcessPackageTimer final : public PackageTimer {
 public:
  explicit InProcessPackageTimer(ExecutorOptions options = {}) : options_(std::move(options)) {}
  Result<std::vector<std::vector<double>>> profile_alternately(const std::vector<const PackageContents*>& packages,
                                                               int runs) override;
  Result<AlternatingTimes> time_alternately(const std::vector<const PackageContents*>& packages,
                                            const AlternatingRounds& rounds) override;

 private:
  ExecutorOptions options_;
};

}  // namespace tessera::runtime
