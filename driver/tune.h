// A tuning, as `tessera tune` and tessera.tune run it: the options checked
// before any work, the model imported once (its kernels tuned, then the
// same graph's records checked and its backend regions timed), the job run
// with a stop and a cancel flag that each caller ties to its own Ctrl-C.
//
//   auto tuning = driver::Tuning::check(request);          // usage errors
//   auto warnings = (*tuning)->import();                   // the model's errors
//   auto summary = (*tuning)->run(stdout, &progress, &stop, &cancel);
//   if (tuning is complete) (*tuning)->after_tuning(stdout, verbose);
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"
#include "compiler/model/compile_model.h"
#include "tuner/job.h"
#include "tuner/progress.h"

namespace tessera::driver {

/// A tuning as the command line or Python asked for it.
struct TuneRequest {
  std::string model;            ///< an .onnx file; empty: the operators of options["op"]
  tuner::OptionValues options;  ///< `tessera tune`'s options by name (no "--"), every value of each
  std::string command_line;     ///< recorded with the session
  std::string worker_binary;    ///< empty: tessera-worker beside the running program
};

/// One tuning: checked, then imported, run, and finished, in that order.
class Tuning {
 public:
  /// Checks everything a user can get wrong in the request before any work
  /// starts: the tuner's options, --byoc, --precision, and the options that
  /// apply to a model only. Errors: kInvalidArgument, in the command line's
  /// words.
  static Result<std::unique_ptr<Tuning>> check(TuneRequest request);

  /// Imports the model (the only time this tuning reads it) and lists the
  /// kernels to tune; a kernel too large for a worker keeps its fallback,
  /// with one warning each, returned. Nothing to do for operators. Errors:
  /// the importer's and the planner's, naming the model.
  Result<std::vector<std::string>> import();

  /// Opens the job (the records store, its session, the local workers or
  /// the farm) and runs it; `log` (null: silent) gets the job's lines and
  /// `progress` (null: none) its progress. `stop` set: the job ends after
  /// the batch in flight, everything measured stored; `cancel` set: the
  /// batch in flight is dropped. Errors: the job's.
  Result<tuner::JobSummary> run(FILE* log, tuner::Progress* progress, const std::atomic<bool>* stop,
                                const std::atomic<bool>* cancel);

  /// After a complete run of a model on this machine: its records checked
  /// in the model and its backend's regions timed both ways, both stored
  /// with the session, a report written to `out` (null: none; `verbose`:
  /// every region). A failure is a warning on stderr: the records are
  /// stored either way. `interrupt` set (a Ctrl-C; null: never) stops the
  /// timing at once and the rest is skipped, said on `out`. Nothing for
  /// operators or before run().
  void after_tuning(FILE* out, bool verbose, const std::atomic<bool>* interrupt = nullptr);

  /// Ends the job: the local workers stop here (also on destruction).
  void close() { job_.reset(); }

  /// The records database the job writes.
  const std::string& db() const { return config_.db_path; }

  Tuning(const Tuning&) = delete;
  Tuning& operator=(const Tuning&) = delete;
  ~Tuning();

 private:
  Tuning() = default;

  std::string model_;
  std::vector<std::string> input_shapes_, input_values_;
  tuner::TuneConfig config_;
  model::PlanOptions plan_options_;
  std::string backend_;                           // the regions' backend for after_tuning ("none": not timed)
  std::optional<model::PreparedModel> prepared_;  // the model imported and prepared, once
  tuner::ModelKernels kernels_;
  std::unique_ptr<tuner::TuneJob> job_;
};

/// "stopped by Ctrl-C after the batch: this run stored N record(s), M
/// measured ok, in DB" (or "at once (the batch in flight was dropped)").
std::string format_stopped(const tuner::JobSummary& summary, const std::string& db);

/// "every trial of this run failed; the first errors:" and one indented line
/// per error, for a run whose summary says all_failed.
std::string format_all_failed(const tuner::JobSummary& summary);

}  // namespace tessera::driver
