// ScheduleSource: where compile time gets a kernel's schedule from, without
// knowing the tuner (DESIGN.md, "The compiler does not know the tuner").
//
// A source answers (workload key, target string) with candidate step lists in
// order of preference. records/ answers from the best measured records
// (records/records_schedule_source.h); tests answer from a fixed table
// (FixedScheduleSource below). A source hands out data only: whether a step
// list still replays and lowers on today's compiler is checked by the caller
// (compiler/space/apply_best.h), which skips the candidates that do not.
//
// Header-only and strings-only, so that records/ can implement it without
// linking anything of compiler/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tessera {

/// How a candidate's target relates to the target asked for.
enum class TargetMatch {
  kExact,       ///< measured on the very target string asked for
  kCompatible,  ///< same triple and vector width, another CPU model or core count
};

/// One schedule a source proposes for a (workload, target).
struct ScheduleCandidate {
  std::string steps_json;  ///< a JSON step list (compiler/schedule/step.h, steps_to_json)
  double cost_s = 0;       ///< measured mean seconds per run; 0 when unknown (a fixed table)
  std::string target;      ///< the target the cost was measured on
  TargetMatch match = TargetMatch::kExact;
  std::string why;         ///< for people: "best of 37 records on this target"
  int64_t record_id = 0;   ///< the record it came from; 0 when none
  std::string device_key;  ///< the device that measured it; may be empty
  int64_t considered = 0;  ///< successful records it was chosen among (0 when not counted)
};

/// A region of a model that an external backend can run, timed both ways
/// (compiler/model/choose_byoc.h): the backend's call against Tessera's
/// kernels for the same operators, as the schedules of `tessera_basis` ran.
struct RegionMeasurement {
  double backend_s = 0;
  double tessera_s = 0;
  std::string tessera_basis;  ///< a digest of the schedules Tessera's side ran
  bool on_backend = false;    ///< where it runs, as decided then (the whole model's time may overrule its own)
  int64_t session_id = 0;     ///< the tuning session that measured it; 0 when unknown
  double timestamp = 0;       ///< Unix seconds
};

/// Answers (workload key, target) with schedules, best first. Implementations
/// must be deterministic: the same data gives the same list in the same order.
class ScheduleSource {
 public:
  virtual ~ScheduleSource() = default;

  /// Candidates for `workload_key` (32 lowercase hex) on `target` (the target's
  /// canonical string, Target::to_string()), in order of preference: the best
  /// records measured on exactly `target`; when there are none, the best on
  /// compatible targets (match kCompatible, `why` saying which); else empty.
  /// An error means the source itself failed (e.g. an unreadable database),
  /// not that it has nothing.
  virtual Result<std::vector<ScheduleCandidate>> candidates(const std::string& workload_key,
                                                            const std::string& target) = 0;

  /// Why `candidates` proposes nothing for `workload_key` on `target` although
  /// it holds records of it, for people ("the model ran 0.131 ms with
  /// record 812, 0.104 ms with the fallback"); empty when it proposes them
  /// or has none.
  /// The default source passes nothing over.
  virtual Result<std::string> passed_over(const std::string& workload_key, const std::string& target) {
    (void)workload_key, (void)target;
    return std::string();
  }

  /// The newest measurement of region `region_key` (32 lowercase hex) on
  /// `target` through `backend`, or nullopt. A source that stores none (the
  /// default) answers nullopt, and `--byoc auto` measures the region itself.
  virtual Result<std::optional<RegionMeasurement>> region_measurement(const std::string& region_key,
                                                                      const std::string& target,
                                                                      const std::string& backend) {
    (void)region_key, (void)target, (void)backend;
    return std::optional<RegionMeasurement>();
  }
};

/// A source backed by a table, for tests and for pinning schedules by hand:
/// (workload key, target string) → candidates, returned exactly as added.
/// No search of its own: only the (key, target) pairs added answer.
class FixedScheduleSource final : public ScheduleSource {
 public:
  /// Appends `candidate` to the answer for (workload_key, target). An empty
  /// candidate.target becomes `target`, an empty `why` "fixed table entry N";
  /// `match` is kept, so a test can hand out compatible-target candidates.
  void add(const std::string& workload_key, const std::string& target, ScheduleCandidate candidate) {
    auto& list = table_[{workload_key, target}];
    if (candidate.target.empty()) candidate.target = target;
    if (candidate.why.empty()) candidate.why = "fixed table entry " + std::to_string(list.size() + 1);
    list.push_back(std::move(candidate));
  }

  /// The entries added for exactly (workload_key, target), in insertion order.
  Result<std::vector<ScheduleCandidate>> candidates(const std::string& workload_key,
                                                    const std::string& target) override {
    auto it = table_.find({workload_key, target});
    if (it == table_.end()) return std::vector<ScheduleCandidate>{};
    return it->second;
  }

 private:
  std::map<std::pair<std::string, std::string>, std::vector<ScheduleCandidate>> table_;
};

}  // namespace tessera
