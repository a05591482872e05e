// After a model's tuning: its records checked in the model itself.
//
// A record wins its task alone: the kernel timed back to back, with its
// caches and the thread pool warm. In the model it runs among the others,
// and a kernel of a microsecond that won by going parallel pays the
// workers' wake-up at every call: a 2-layer LSTM tuned 1,000 trials ran 7%
// slower than its untuned compile on 2 threads, and alike on 1. So once
// the tuning has ended, the model compiled from the records is timed
// against its untuned compile (no records: the template fallbacks and the
// generic schedules) in alternating runs. When it is slower, the records of
// its smallest kernels are dropped first, then of larger ones, until the
// model is no slower than untuned; the records dropped keep their
// fallback in compile (records::ModelCheck, stored by the caller).
//
//   runtime::InProcessPackageTimer timer;
//   ModelRecordsCheck check = check_records_in_model(model, target, records, timer).value();
//   for (const RecordCheck& r : check.records) store r (r.keeps_fallback) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/graph/graph.h"
#include "compiler/model/compile_model.h"
#include "compiler/schedule/schedule_source.h"
#include "runtime/package_timing.h"

namespace tessera::model {

/// A kernel the model took from a record, and what the check made of it.
struct RecordCheck {
  std::string workload_key;     ///< 32 lowercase hex
  std::string label;            ///< "fused_matmul_add [1, 512]"
  int64_t record_id = 0;        ///< the record compile took
  double call_s = 0;            ///< its calls' mean time in the model, from the records
  bool keeps_fallback = false;  ///< dropped: the model was faster on its fallback
  /// The whole model with this record (as it stood when it was dropped, or
  /// at the end) and with its fallback: medians of whole runs.
  double model_with_record_s = 0, model_with_fallback_s = 0;
};

/// What the check found.
struct ModelRecordsCheck {
  std::vector<RecordCheck> records;  ///< each kernel taken from a record, in task order
  double tuned_s = 0;                ///< the model from every record: median of whole runs
  double untuned_s = 0;              ///< the untuned compile, timed in the same rounds
  double chosen_s = 0;               ///< the model as compile now builds it (tuned_s when nothing was dropped)
  double chosen_vs_untuned = 1;      ///< median over rounds of chosen / untuned
  bool chosen_slower = false;        ///< slower than untuned, as kNoSlowerThan says
  int packages_timed = 0;            ///< the candidate models timed after the first
};

/// A model is slower than untuned when the median of its rounds' ratios is
/// above this, and it was slower in all the rounds but at most one: the
/// rounds of a shared machine do not resolve closer, and a tie is slower in
/// 11 or 12 rounds of 12 by chance once in 300 checks.
inline constexpr double kNoSlowerThan = 1.02;
/// Nor is a model slower by less than this a run: a few microseconds are
/// what a call's own overhead varies by between processes.
inline constexpr double kNoSlowerBy_s = 5e-6;

/// Compiles `model` from `source`'s records and untuned, times both in
/// alternating runs through `timer`, and, while the tuned one is slower
/// (kNoSlowerThan), drops the records of the kernels whose
/// calls take under 10 µs, then under 100 µs, then every record. Nothing is
/// stored. Errors: planning's, compiling's, loading's and running's.
Result<ModelRecordsCheck> check_records_in_model(const PreparedModel& model, const Target& target,
                                                 ScheduleSource& source, runtime::PackageTimer& timer,
                                                 const PlanOptions& options = {});

/// A few lines for people: the model tuned and untuned, and the records
/// dropped (each with its kernel), or that every record held.
std::string format_records_check(const ModelRecordsCheck& check);

}  // namespace tessera::model
