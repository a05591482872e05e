// The Measurer joins the builder pool to a runner: candidates in, records out.
// Every candidate becomes a record, good or bad (DESIGN: a failed measurement
// is data).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "records/record.h"
#include "rpc/runner.h"
#include "tuner/measure/builder.h"
#include "tuner/task.h"

namespace tessera::tuner {

struct MeasureOptions {
  runtime::TimingOptions timing{.number = 1, .repeat = 3, .min_repeat_ms = 50};
  int timeout_ms = 10000;
  /// Compare each candidate's output, at sampled points, with values
  /// evaluated from the computation's definition (tuner/measure/reference.h)
  /// before timing it: a mismatch is a "wrong-answer" record. On by default;
  /// `tessera tune --no-check` turns it off.
  bool check_correctness = true;
  /// The floor of the float tolerance; reductions of many terms get more
  /// (check_tolerance).
  double tolerance = 1e-3;
  int64_t session_id = 0;
  /// Time each task's constant_args cold (rpc::ArgSpec::cold): every call
  /// reads them from beyond the private caches, as in the model.
  bool cold_constants = false;
};

/// Per-call changes to the measure options.
struct MeasureOverride {
  /// A timeout of at least two minutes (the untuned default: scalar, one
  /// thread). It is timed like every candidate, so that its cost compares.
  bool long_timeout = false;
  /// Candidates timed above this many seconds a call after one repeat are
  /// not repeated (TimingOptions::stop_above_s). 0: every repeat.
  double stop_above_s = 0;
};

class Measurer {
 public:
  Measurer(const BuilderPool& builder, rpc::Runner& runner, MeasureOptions options = {});

  /// Builds every candidate (from the state and loop nest it carries, when it
  /// does), measures those that built, and returns one record per candidate
  /// in order. The Status is for the runner failing as a whole.
  Result<std::vector<records::Record>> measure(const Task& task, const std::vector<Candidate>& candidates,
                                               MeasureOverride override = {});

  /// Wall time of the last measure() call spent building, and running.
  double last_build_seconds() const { return last_build_seconds_; }
  double last_run_seconds() const { return last_run_seconds_; }
  /// Time of the last measure() call spent checking: evaluating references
  /// here (once per task and packed layout) plus the workers' comparisons
  /// (the checked call is the timing's warm-up call, which is made anyway).
  double last_check_seconds() const { return last_check_seconds_; }
  /// Why the candidates of the task of `workload_key` are measured without a
  /// check (the evaluator does not model its types), or empty.
  std::string unchecked_reason(const std::string& workload_key) const;
  /// The runner measurements go to (the tuner asks it for workers when one is lost).
  rpc::Runner& runner() const { return runner_; }

 private:
  /// The expected values for a candidate at the task's check points: the
  /// workers' random bytes read unpacked for each argument its steps pack
  /// (one reference per layout set). Empty when not checking.
  std::optional<rpc::ReferenceCheck> reference_for(const Task& task, const Candidate& candidate);

  const BuilderPool& builder_;
  rpc::Runner& runner_;
  MeasureOptions options_;
  /// One task's references, evaluated once each (tasks take turns in a job).
  struct TaskReferences {
    std::vector<int64_t> points;                           ///< of the task's output
    std::string unchecked_reason;                          ///< when it cannot be checked
    std::map<std::string, rpc::ReferenceCheck> by_layout;  ///< by the candidates' packed layouts
  };
  std::map<std::string, TaskReferences> references_;  // by workload key
  double last_build_seconds_ = 0, last_run_seconds_ = 0, last_check_seconds_ = 0;
};

}  // namespace tessera::tuner
