// What the tuning report shows, gathered from a records store in one pass
// over its records (insertion order, which is the order they were measured
// and stored in): per (workload, target) task every measurement with its
// trial number, the best-so-far record, the errors by kind; per session and
// per worker what was measured and how long it took.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/record.h"
#include "records/store.h"

namespace tessera::report {

/// One successful measurement of a task.
struct Measurement {
  int64_t trial = 0;      ///< 1-based: the task's n-th trial (TaskRecords::trials); 0: a baseline
  double cost_s = 0;      ///< mean seconds per run
  bool improved = false;  ///< a new best-so-far (strictly faster than every earlier one)
};

/// One failed measurement of a task.
struct Failure {
  int64_t trial = 0;  ///< as Measurement::trial; infrastructure errors share the trial after them
  std::string kind;   ///< the record's error kind
  bool infrastructure = false;
};

/// Everything recorded of one workload on one target.
struct TaskRecords {
  std::string key, target;
  std::string op_name, shapes;  ///< from the workloads table; may be empty
  double flop_count = 0;        ///< 0: unknown
  /// Measurements of the search, as tune counts them: records that are
  /// neither infrastructure errors nor baselines.
  int64_t trials = 0;
  /// Baselines, counted apart: the unscheduled default (no steps) and the
  /// schedule compile takes without records (space "manual").
  int64_t baselines = 0;
  std::vector<Measurement> ok;  ///< in trial order
  std::vector<Failure> failures;
  std::map<std::string, int64_t> errors_by_kind;       ///< every error kind, infrastructure included
  std::map<std::string, std::string> example_message;  ///< per kind: the first message seen
  std::optional<records::Record> best;                 ///< records::best_of's rule
  /// The lowest ok times of the two baselines: the schedule compile takes
  /// without records (space "manual"), and the unscheduled default.
  std::optional<double> manual_s, default_s;
  /// What an untuned compile runs: the manual baseline, else the default.
  std::optional<double> untuned_s() const { return manual_s ? manual_s : default_s; }
};

/// What one tuning session stored, with the times the records carry.
struct SessionRecords {
  records::SessionInfo info;
  int64_t records = 0, ok = 0;
  double build_s = 0;          ///< Σ build_seconds of its records
  double measure_s = 0;        ///< Σ run_seconds of its records
  double first = 0, last = 0;  ///< timestamps of its first and last record
  /// The tuner's clocks summed over the session's tasks (schema 7 on);
  /// empty for sessions from before, or that no tuner wrote.
  std::optional<records::PhaseTimes> phases;
};

/// What one worker measured.
struct WorkerRecords {
  int64_t records = 0, ok = 0, errors = 0, infrastructure = 0;
};

/// One stored measurement in store order, for the model's latency curve.
struct Event {
  int32_t task = 0;      ///< index in ReportData::tasks
  double cost_s = 0;     ///< +infinity for an error
  double timestamp = 0;  ///< Unix seconds
  bool infrastructure = false;
  bool baseline = false;  ///< a baseline (TaskRecords::baselines), not a trial
};

/// Whether `r` is a baseline the tuner measures before its search (the
/// unscheduled default, the schedule compile takes without records), not
/// one of its trials.
bool is_baseline(const records::Record& r);

/// The whole store as the report needs it.
struct ReportData {
  std::vector<TaskRecords> tasks;                ///< ordered by key, then target
  std::vector<SessionRecords> sessions;          ///< by id; records of no session are in `orphans`
  SessionRecords orphans;                        ///< records without a session
  std::map<std::string, WorkerRecords> workers;  ///< by worker id; "" for records no worker measured
  std::vector<Event> events;                     ///< every record, in store order
  int64_t total_records = 0;
};

/// Reads every record of `store` (of `target` only when not empty).
/// Errors: the store's.
Result<ReportData> collect(records::Store& store, const std::string& target);

/// Index of the task (key, target) in `data`, or -1.
int find_task(const ReportData& data, const std::string& key, const std::string& target);

}  // namespace tessera::report
