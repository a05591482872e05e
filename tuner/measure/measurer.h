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
  /// Compare each candidate's output with the default schedule's (host
  /// targets only: the reference is computed here).
  bool check_correctness = false;
  double tolerance = 1e-3;
  int64_t session_id = 0;
  /// Time each task's constant_args cold (rpc::ArgSpec::cold): every call
  /// reads them from beyond the private caches, as in the model.
  bool cold_constants = false;
};

/// Per-call changes to the measure options.
struct MeasureOverride {
  bool single_call = false;  ///< one timed call, no minimum repeat time, a long timeout (untuned defaults)
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

 private:
  /// The expected output for a candidate: the workers' random bytes read
  /// unpacked for each argument its steps pack (one per layout set).
  Result<std::optional<rpc::ReferenceCheck>> reference_for(const Task& task, const Candidate& candidate);

  const BuilderPool& builder_;
  rpc::Runner& runner_;
  MeasureOptions options_;
  std::string reference_key_;                                  // the task the references are for
  std::map<std::string, rpc::ReferenceCheck> references_;      // by the candidates' packed layouts
  double last_build_seconds_ = 0, last_run_seconds_ = 0;
};

}  // namespace tessera::tuner
