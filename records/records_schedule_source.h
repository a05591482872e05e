// RecordsScheduleSource: the compiler's ScheduleSource answered from a records
// database — the best measured schedules of a workload on the target asked
// for, or, when that target has none, on a compatible one.
//
// Targets are read with base/target.h's LLVM-free parser; a target string it
// rejects (an unknown CPU, another architecture) is compatible with nothing.
// A compatible target's schedule that runs products on AMX tiles (a
// tensorize step) is offered only to a target with AMX. The compiler side (compiler/space/apply_best.h) checks each
// proposed step list still replays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/schedule/schedule_source.h"
#include "records/store.h"

namespace tessera::records {

/// A ScheduleSource over a Store: for (key, target) the best `k` successful
/// records on exactly that target string, best first (ties to the earlier
/// record); when there are none, the best `k` over every compatible target
/// (lowest mean cost first, then target string, then record id). None when
/// the newest model check of (key, target) kept the fallback over the
/// record that is still the best (records::ModelCheck). The store is
/// borrowed and must outlive the source; use it from one thread.
class RecordsScheduleSource final : public ScheduleSource {
 public:
  /// `k` >= 1: how many candidates to propose, so that a record that no longer
  /// replays leaves others to try.
  explicit RecordsScheduleSource(Store& store, int64_t k = 5) : store_(store), k_(k < 1 ? 1 : k) {}

  /// See ScheduleSource::candidates. kInvalidArgument for a malformed
  /// workload key; database errors as the store reports them.
  Result<std::vector<ScheduleCandidate>> candidates(const std::string& workload_key,
                                                    const std::string& target) override;

  /// The model check that keeps the fallback, in words (see candidates).
  Result<std::string> passed_over(const std::string& workload_key, const std::string& target) override;

  /// The store's newest region time (Store::latest_region_time).
  Result<std::optional<RegionMeasurement>> region_measurement(const std::string& region_key, const std::string& target,
                                                              const std::string& backend) override;

 private:
  Result<std::vector<ScheduleCandidate>> compatible_candidates(const std::string& workload_key,
                                                               const std::string& target);
  /// The newest check of (key, target) when it keeps the fallback over
  /// `best_id`, the workload's best record now.
  Result<std::optional<ModelCheck>> check_keeping_fallback(const std::string& workload_key, const std::string& target,
                                                           int64_t best_id);

  Store& store_;
  int64_t k_;
};

}  // namespace tessera::records
