// Compiling a model plan into a package in memory, and timing packages
// against each other on this machine: the measurements that decide, after
// a tuning, which regions an external backend runs (choose_byoc.h) and
// which records a model keeps (check_records.h).
//
// Packages are timed in alternating rounds, so that a burst of load on a
// shared machine falls on each of them alike.
#pragma once

#include <cstddef>
#include <vector>

#include "base/target.h"
#include "compiler/model/compile_model.h"
#include "compiler/schedule/schedule_source.h"
#include "runtime/package.h"

namespace tessera::model {

/// `plan` compiled with schedules from `source` (null: fallbacks), as a
/// package in memory; `group_calls` (optional) gets each group's call.
Result<runtime::PackageContents> compile_package(const ModelPlan& plan, const Target& target, ScheduleSource* source,
                                                 std::vector<size_t>* group_calls = nullptr);

/// Per package, per call: its median seconds over about `runs` runs on
/// random inputs, the packages profiled in alternating rounds.
Result<std::vector<std::vector<double>>> profile_alternately(
    const std::vector<const runtime::PackageContents*>& packages, int runs);

/// Whole runs of each package on random inputs, in `rounds` alternating
/// rounds of a few runs each (enough for about `round_s` seconds): per
/// package, the median over the rounds of its round's median, and the
/// median over the rounds of its round's median divided by packages[0]'s
/// in the same round (1 for packages[0]).
struct AlternatingTimes {
  std::vector<double> median_s;
  std::vector<double> ratio_to_first;
  /// Per package: the rounds in which it was slower than packages[0].
  std::vector<int> rounds_slower;
  int rounds = 0;
};
Result<AlternatingTimes> time_alternately(const std::vector<const runtime::PackageContents*>& packages, int rounds = 12,
                                          double round_s = 0.04);

}  // namespace tessera::model
