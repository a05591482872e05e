// A tuning job: the tasks (operators given by spec, or a model's kernels),
// their baselines, search spaces and strategies, the runner (local workers
// or a farm's tracker), the session in the records store, and the tuning
// loop, built from a typed configuration the tuner parses itself.
//
//   auto config = parse_tune_config({{"op", {"matmul:M=64,N=64,K=64"}}, {"trials", {"16"}}},
//                                   /*with_model=*/false).value();
//   auto job = TuneJob::open(std::move(config), {}, stdout).value();
//   std::atomic<bool> stop{false};           // set by the caller (Ctrl-C): no globals here
//   JobSummary summary = job->run(nullptr, &stop).value();
//
// `tessera tune`, `bench_tune` and the demo (through `tessera tune`) run their
// tuning through it.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/target.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "costmodel/cost_model.h"
#include "costmodel/xgb_model.h"
#include "records/store.h"
#include "rpc/runner.h"
#include "tuner/knob_policy.h"
#include "tuner/sketch_policy.h"
#include "tuner/tuner.h"

namespace tessera::tuner {

/// The search spaces a job's tasks are tuned in (--space).
enum class SpaceChoice : uint8_t {
  kSketch,  ///< template-free, every task (the default for --op)
  kKnob,    ///< the operator's template, every task
  kAuto,    ///< the template's knob space where one fits, the sketch space elsewhere (the default for a model)
};

/// How candidates are timed (--cache).
enum class CacheMode : uint8_t {
  kModel,  ///< calls back to back; a model's weights timed cold when they outgrow a core's own caches
  kWarm,   ///< calls back to back, everything cached
  kCold,   ///< one call per repeat, the caches swept before each
};

/// Everything a tuning job is made from. parse_tune_config fills it from
/// `tessera tune`'s options; benchmarks and tests also set it directly.
struct TuneConfig {
  std::vector<ops::OpInstance> ops;  ///< the operators to tune (--op), in order
  SpaceChoice space = SpaceChoice::kSketch;
  KnobStrategy knob_strategy = KnobStrategy::kXgb;  ///< with kKnob (kAuto: always xgb)
  bool sketch_guided = true;  ///< with kSketch: evolutionary (true) or random (kAuto: evolutionary)
  Target target = host_target();
  int64_t trials = 64;  ///< measurements in this run over all tasks
  int batch = 16;       ///< candidates per round
  uint64_t seed = 0;    ///< task i searches with seed + i
  int workers = 1;      ///< local workers (without a tracker)
  /// The local workers' program; empty: tessera-worker beside this executable
  /// (a program that is not in Tessera's bin/, such as Python, names it).
  std::string worker_binary;
  /// Threads per measurement on the local workers (parse_tune_config's default: the target's cores).
  int threads = 1;
  CacheMode cache = CacheMode::kModel;
  int number = 1;             ///< calls per timed repeat (grown up to min_repeat_ms)
  int repeat = 3;             ///< timed repeats per candidate
  double min_repeat_ms = 50;  ///< shortest timed repeat (ignored with kCold)
  int timeout_ms = 10000;     ///< longest one measurement may run (--timeout, in seconds)
  /// How long to wait for a worker of the key when every one is lost mid-run
  /// (--worker-wait, seconds); past it the run stops with the reason.
  double worker_wait_s = 300;
  double time_budget_s = 0;    ///< 0: none
  int64_t early_stopping = 0;  ///< 0: never
  SchedulerKind scheduler = SchedulerKind::kGradient;
  /// Check every candidate's output against the computation's definition
  /// before timing it (MeasureOptions::check_correctness); --no-check: off.
  bool check = true;
  std::string db_path = "tessera.db";            ///< the records store
  std::string device_key = "local";              ///< the tasks' device key (the farm's with a tracker)
  std::optional<rpc::RpcRunnerOptions> tracker;  ///< measure on a farm; empty: start local workers
  std::string command_line;                      ///< recorded with the session
  // Not on the command line: benchmarks set them.
  bool measure_default = true;     ///< measure each task's untuned default schedule first
  bool measure_baselines = true;   ///< measure each task's fallback (template's or generic) first
  EvolutionOptions evolution{};    ///< of the sketch space's evolutionary search
  bool keep_pretrain_data = true;  ///< costmodel::XGBOptions::keep_pretrain_data
  /// Records every new cost model is pre-trained on (a warm start); empty: cold.
  std::vector<costmodel::TrainingRecord> pretrain;
  /// --prior-db: another records store whose records of the tasks'
  /// workloads, measured on other targets, pre-train each task's cost model
  /// (prior_records.h); empty: none.
  std::string prior_db;
};

/// Option values by name (without "--"), each in the order given, as the
/// command line split them; a flag maps to one empty string.
using OptionValues = std::map<std::string, std::vector<std::string>>;

/// Parses `tessera tune`'s options into a config: defaults filled in, every
/// value range-checked, the operator specs parsed, the farm's keys loaded.
/// `with_model`: the tasks come from a model (the space defaults to auto).
/// Errors: kInvalidArgument whose message says what is wrong with which
/// option ("--trials must be positive"); nothing has been written.
Result<TuneConfig> parse_tune_config(const OptionValues& options, bool with_model);

/// Sets `task`'s baseline to the schedule compile takes for it without
/// records (choose_schedule with no source; op: its knob template's
/// operator), and in a knob space the fallback's configuration beside it.
/// Left empty where only the unscheduled loops remain.
void set_untuned_baseline(const Target& target, const std::string& op, bool knob_space, Task* task);

/// One kernel of a model to tune. The model compiler plans them (its
/// tuning_plans); the caller extracts them, since the tuner does not link the
/// model compiler.
struct ModelKernel {
  std::string label;  ///< "fused_conv_add_relu [1, 64, 56, 56]"
  std::shared_ptr<const ComputeDAG> dag;
  std::string op;                  ///< the anchor's operator ("conv2d"), "" for none
  double weight = 1;               ///< calls per model run
  std::vector<int> constant_args;  ///< arguments that are the model's weights, ascending
};

/// The distinct kernels of a model (by workload key) and how many bytes of
/// weights they read.
struct ModelKernels {
  std::vector<ModelKernel> kernels;
  int64_t constant_bytes = 0;
};

/// How a job ended.
struct JobSummary {
  std::vector<TaskSummary> tasks;  ///< per tuned task, in order (empty when cancelled)
  int64_t resumed = 0;             ///< records of earlier runs found in the store (not measured again)
  /// Candidates of earlier runs lost to the infrastructure, queued to be measured again.
  int64_t retried = 0;
  bool stopped = false;               ///< the stop flag was set when the run ended
  bool cancelled = false;             ///< the cancel flag dropped the batch in flight (nothing of it stored)
  bool out_of_time = false;           ///< the run ended at its time budget (--time), before its trials
  int64_t trials_run = 0;             ///< trials this run spent (out_of_time: when the time ran out)
  int64_t stored = 0;                 ///< records this run stored (its session's)
  int64_t stored_ok = 0;              ///< of them, successful measurements
  int64_t stored_infrastructure = 0;  ///< of them, infrastructure errors (not measurements)
  /// Every trial of the run failed (or, with no trial run, every record it
  /// stored): the run learned nothing, and the caller should say why.
  bool all_failed = false;
  /// The first distinct errors of the run's records ("timeout: ..."), at most three.
  std::vector<std::string> errors;
};

/// A tuning job, ready to measure: its tasks and policies are made, the
/// records store is open with a session begun, and the runner is up.
class TuneJob {
 public:
  /// Makes the tasks (config.ops, then `model`'s kernels), their baselines
  /// and policies, opens the store, starts the runner and begins the
  /// session. A model's kernel that no space can express is left to its
  /// fallback; an operator given in config.ops must be tunable. What a
  /// person should know (kernels not tuned, how weights are timed) is
  /// written to `log` (null: nothing). Errors: a Status whose message is a
  /// whole line for the user (the cause's code included).
  static Result<std::unique_ptr<TuneJob>> open(TuneConfig config, ModelKernels model, FILE* log);

  TuneJob(const TuneJob&) = delete;
  TuneJob& operator=(const TuneJob&) = delete;
  ~TuneJob();

  /// Resumes from the store, then tunes until the budget is spent, `*stop`
  /// becomes true (checked between batches; every measured batch is stored),
  /// or every space is exhausted. `*cancel` true stops at once: the runner
  /// cancels the batch in flight and nothing of it is stored (the summary
  /// says cancelled; its tasks are empty). Ends the session. `progress`,
  /// `stop` and `cancel` may be null; the flags may be set by a signal
  /// handler. Errors as open()'s.
  Result<JobSummary> run(Progress* progress, const std::atomic<bool>* stop, const std::atomic<bool>* cancel = nullptr);

  /// The tasks being tuned (those a space could express).
  const std::vector<Task>& tasks() const { return tasks_; }
  /// The records store (every measurement of the job is in it).
  records::Store& store() { return *store_; }
  const TuneConfig& config() const { return config_; }
  /// The session this job's records belong to.
  int64_t session_id() const { return session_id_; }
  /// Where the job measures (its local workers or the farm): still up after
  /// run(), for what a tuning times after its search (RunnerPackageTimer).
  rpc::Runner& runner() { return *runner_; }

 private:
  TuneJob(TuneConfig config, FILE* log);
  /// Fills summary's stored counts, all_failed and errors from this session's records.
  Status summarize_records(JobSummary* summary);

  TuneConfig config_;
  FILE* log_;
  std::vector<Task> tasks_;
  // Declared in the order they are made; the tuner refers to all of them.
  std::unique_ptr<records::Store> store_;
  std::unique_ptr<rpc::Runner> runner_;
  std::unique_ptr<BuilderPool> builder_;
  std::unique_ptr<Measurer> measurer_;
  std::unique_ptr<Tuner> tuner_;
  int64_t session_id_ = 0;
  bool session_open_ = false;
};

/// "sketch space, evolutionary search", or auto's description: what
/// `tessera tune` says it searches.
std::string describe_search(const TuneConfig& config);

}  // namespace tessera::tuner
