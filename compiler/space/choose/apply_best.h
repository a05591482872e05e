// ApplyBest: the schedule compile time uses for a kernel, and why.
//
//   RecordsScheduleSource source(store);                 // or a FixedScheduleSource
//   ScheduleChoice c = choose_schedule(inst.dag, inst.op, target, &source).value();
//   lower(c.state);  report.add(inst.spec, *inst.dag, c);
//
// In order: the source's candidates (records on this target, else on a
// compatible one), the first whose step list parses, replays on the DAG and
// lowers; else the operator's knob-template fallback; else the generic
// schedule (inlined producers, parallel outer loops, vectorized inner axis);
// else the DAG's unscheduled loops. A candidate that fails is named in a warning and skipped, never a
// failed build: records outlive the compiler that measured them. The choice
// depends only on the DAG, the target and the source's answer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/target.h"
#include "compiler/schedule/schedule_source.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// The schedule picked for one kernel, with the reasons a person can read.
struct ScheduleChoice {
  /// Where the schedule came from, best first.
  enum class Source {
    kRecord,            ///< a record measured on this very target
    kCompatibleRecord,  ///< a record of a compatible target (a warning says so)
    kTemplateFallback,  ///< no usable record: the knob template's fallback configuration
    kGenericFallback,   ///< no usable record and no template: the generic schedule (generic_schedule.h)
    kDefault,           ///< not even the generic schedule lowered: the unscheduled loops
  };

  /// A choice of `state` from kDefault, to be filled in.
  explicit ScheduleChoice(State chosen) : state(std::move(chosen)) {}

  State state;  ///< replays on the DAG and lowers
  Source source = Source::kDefault;
  std::string explanation;                  ///< one line: what was picked and why
  std::vector<std::string> warnings;        ///< candidates skipped, compatible-target use, source errors
  std::optional<ScheduleCandidate> record;  ///< the candidate used (kRecord, kCompatibleRecord)
  int candidates_seen = 0;                  ///< how many the source proposed
  int candidates_skipped = 0;               ///< of those, how many failed to parse, replay or lower
  /// Non-empty: the source passed its records over (a check in the model
  /// kept the fallback; ScheduleSource::passed_over), in its words.
  std::string passed_over;
};

/// "record", "compatible-record", "template-fallback", "generic-fallback" or "default".
const char* schedule_source_name(ScheduleChoice::Source source);

/// Picks the schedule of `dag` (an instance of operator `op_name`, a spec name
/// such as "matmul", used to find its template) on `target`. `source` may be
/// null (no records). Errors only when not even the default schedule exists;
/// a failing source or candidate becomes a warning.
Result<ScheduleChoice> choose_schedule(std::shared_ptr<const ComputeDAG> dag, const std::string& op_name,
                                       const Target& target, ScheduleSource* source);

/// What a compilation reports about its schedules: every workload compiled
/// without a record, and every warning. Add each kernel's choice as it is made.
struct CompileReport {
  std::vector<std::string> without_record;   ///< "name (workload 1a2b3c4d): template-fallback", once per workload
  std::vector<std::string> compatible_only;  ///< workloads scheduled from a compatible target's record
  /// Of without_record, the workloads that have records the source passed
  /// over (ScheduleChoice::passed_over): a check in the model kept their fallback.
  std::vector<std::string> kept_fallback;
  std::vector<std::string> warnings;  ///< "name: warning", in the order the choices were added
  int kernels = 0;                    ///< choices added
  int from_records = 0;               ///< of those, scheduled from a record (exact or compatible)

  /// Accounts for the choice made for kernel `name` of workload `workload_key`.
  void add(const std::string& name, const std::string& workload_key, const ScheduleChoice& choice);
  /// A few lines for a terminal: counts, the workloads without a record, warnings.
  std::string to_string() const;

 private:
  std::set<std::string> listed_;  // workload keys already in without_record / compatible_only
};

}  // namespace tessera
