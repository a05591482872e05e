// Packages timed against each other through a tuning job's runner: on a
// worker, in its measuring sandbox, as every kernel candidate is measured
// (runtime/package_timing.h says what is timed). What a tuning uses after
// its search, to check its records in the model and to time the regions an
// external backend can run.
//
//   tuner::RunnerPackageTimer timer(job.runner());
//   model::check_records_in_model(g, target, records, timer);
#pragma once

#include <string>
#include <vector>

#include "rpc/runner.h"
#include "runtime/package_timing.h"

namespace tessera::tuner {

class RunnerPackageTimer final : public runtime::PackageTimer {
 public:
  /// `timeout_ms`: a job's wall time on the worker (loading, a warm run of
  /// each package, the timing).
  explicit RunnerPackageTimer(rpc::Runner& runner, int timeout_ms = 10 * 60 * 1000)
      : runner_(runner), timeout_ms_(timeout_ms) {}

  /// Errors: the packages too large for a frame (kInvalidArgument); a
  /// package or region that does not load (kNotFound, the worker's message
  /// verbatim: it names what failed); a failed run (kRuntimeError); no
  /// worker, no answer, the runner cancelled (kUnavailable).
  Result<std::vector<std::vector<double>>> profile_alternately(
      const std::vector<const runtime::PackageContents*>& packages, int runs) override;
  Result<runtime::AlternatingTimes> time_alternately(const std::vector<const runtime::PackageContents*>& packages,
                                                     const runtime::AlternatingRounds& rounds) override;

 private:
  Result<rpc::MeasureResult> measure(const std::vector<const runtime::PackageContents*>& packages,
                                     rpc::PackageTimingSpec spec);

  rpc::Runner& runner_;
  int timeout_ms_;
};

}  // namespace tessera::tuner
