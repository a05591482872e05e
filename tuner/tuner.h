// The tuning loop: rounds of propose -> build -> measure -> store -> learn,
// over one or more tasks, until the budget is spent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "records/store.h"
#include "tuner/progress.h"
#include "tuner/search_policy.h"
#include "tuner/task_scheduler.h"

namespace tessera::tuner {

struct TuneOptions {
  int64_t trials = 64;         ///< measurements in this run, over all tasks
  int batch_size = 16;         ///< candidates per round (a task's first round: see warm_up_batch)
  double time_budget_s = 0;    ///< stop after this much wall time; 0: none
  int64_t early_stopping = 0;  ///< stop a task after this many trials without improvement; 0: never
  SchedulerKind scheduler = SchedulerKind::kGradient;
  uint64_t seed = 0;
  bool measure_default = true;  ///< also measure each task's untuned default schedule
  /// How long the run waits for a worker of its device key when a batch failed
  /// for want of one (or for any other infrastructure reason) before it stops
  /// with kUnavailable. Infrastructure failures never count as trials.
  double worker_wait_s = 300;
  /// Told, as whole lines, when the run starts and stops waiting for workers. Null: silent.
  std::function<void(const std::string&)> on_wait;
};

/// Candidates in each task's first (warm-up) round: the batch size, unless
/// the tasks are many for the budget. Then fewer, so that at least half of
/// the budget is left for the rounds the scheduler gives by expected gain
/// (PP-OCR's detector: 70 tasks in 1,000 trials, where full warm-up rounds
/// left its two heaviest convs, 20% of its latency, at 16 trials each); at
/// least 4.
int warm_up_batch(int64_t trials, size_t tasks, int batch_size);

/// Measurements a candidate may lose to the infrastructure before it is
/// given up (TaskSummary::given_up).
inline constexpr int kMaxTimesLost = 3;

/// How one task ended.
struct TaskSummary {
  std::string name;
  std::string workload_key;
  double weight = 1;               ///< calls per model run
  int64_t trials = 0, errors = 0;  ///< measurements (facts about schedules), and of them failures
  /// Infrastructure failures (no worker, no result, protocol errors): stored,
  /// measured again, never counted as trials.
  int64_t infrastructure_errors = 0;
  /// Candidates lost to the infrastructure kMaxTimesLost times in a row
  /// (every worker there is reports an implausible result for them, say):
  /// given up, and counted against the trial budget so that the tune ends.
  int64_t given_up = 0;
  /// The best record's cost (records::best_of: the untuned default included);
  /// infinity when nothing succeeded.
  double best_cost_s = 0;
  std::vector<Step> best_steps;
  double flops = 0;
  std::optional<double> default_cost_s;  ///< the untuned default schedule's time
  /// The time of the schedule compile takes without a record (the template's
  /// fallback, else the generic schedule): tuning's gain is measured
  /// against it.
  std::optional<double> untuned_compile_s;
  double seconds = 0;          ///< wall time spent on the task
  double search_seconds = 0;   ///< of which proposing candidates (search + cost model)
  double build_seconds = 0;    ///< of which building (wall)
  double measure_seconds = 0;  ///< of which measuring, queueing included (wall)
  /// Checking candidates' outputs: references evaluated here, plus the
  /// workers' comparisons (those are also within measure_seconds; the
  /// checked call is the timing's warm-up call, made anyway).
  double check_seconds = 0;
  double store_seconds = 0;  ///< of which writing records
  /// Per round: the tuner's own time (search, cost model, records store; not
  /// building or measuring) divided by the round's trials, in seconds.
  std::vector<double> overhead_per_trial_s;
};

class Tuner {
 public:
  /// One policy per task; `store` may be null (records are then not kept).
  Tuner(std::vector<Task> tasks, std::vector<std::unique_ptr<SearchPolicy>> policies, Measurer& measurer,
        records::Store* store, TuneOptions options);

  /// Feeds every record already stored for the tasks to their policies, so
  /// nothing is measured twice and the cost model starts warm. Returns how
  /// many records were found (infrastructure errors not included: their
  /// candidates are queued to be measured again, see pending_retries()).
  Result<int64_t> resume();
  /// Candidates whose last measurement was an infrastructure error, waiting to be measured again.
  int64_t pending_retries() const;

  /// Tunes until the budget is spent, `stop` becomes true (Ctrl-C), or every
  /// space is exhausted. Every measured batch is stored before the next one.
  Result<std::vector<TaskSummary>> run(Progress* progress, const std::atomic<bool>* stop);
  /// Whether the last run() ended at its time budget, and how many trials it had spent then.
  bool ran_out_of_time() const { return ran_out_of_time_; }
  int64_t trials_at_end() const { return trials_spent(); }

 private:
  Status measure_defaults();
  // Measures each task's baseline schedule once per database (Task::baseline).
  Status measure_baselines();
  // One round of `n` of the task's candidates; the one that improved its best, if any.
  Result<std::optional<Candidate>> round(int task, int n);
  // Measures, stores and learns from a batch of the task's candidates.
  Result<std::optional<Candidate>> measure_batch(int task, std::vector<Candidate> candidates,
                                                 std::chrono::steady_clock::time_point start, double propose_s);
  // Offers a task's new best to the other tasks of its group whose policies
  // adopt it, and measures it for each; returns the tasks measured.
  Result<std::vector<int>> share_best(int task, const Candidate& best);
  // Measures a task's default or baseline alone, waiting for workers while
  // it fails for the infrastructure; the stored record that is a fact.
  Result<std::vector<records::Record>> measure_alone(int task, const Candidate& c, MeasureOverride override,
                                                     const std::atomic<bool>* stop);
  /// Records an infrastructure error's message (and a sandbox error apart).
  void note_infrastructure_error(const records::Record& r);
  // After an infrastructure failure: returns once a worker of the key is there
  // (at once when one is), or stop is set; kUnavailable once the failures
  // have lasted options_.worker_wait_s, and at once after a sandbox error.
  Status wait_for_workers(const std::atomic<bool>* stop);
  // A message while the run is on screen (through the progress display).
  void announce(const std::string& line);
  TaskProgress progress_of(int task) const;
  // Shows a phase before the search (`done` of the tasks measured).
  void show_phase(const char* name, size_t done);
  int64_t trials_spent() const;  // over all tasks

  const std::atomic<bool>* stop_ = nullptr;  // of the current run()
  bool infrastructure_failed_ = false;       // a batch of this round had an infrastructure failure
  std::optional<std::chrono::steady_clock::time_point> failing_since_;  // no fact since then
  std::string last_infrastructure_error_;
  /// A worker's sandbox could not be set up (sandbox-error): every job of
  /// that worker would fail alike, so the run stops at the next wait, the
  /// message said once. Empty: none seen.
  std::string sandbox_error_;
  int max_workers_ = 0;                        // the most workers of the key seen
  std::vector<std::vector<Candidate>> retry_;  // per task: to measure again

  std::vector<Task> tasks_;
  std::vector<std::unique_ptr<SearchPolicy>> policies_;
  Measurer& measurer_;
  records::Store* store_;
  TuneOptions options_;
  std::vector<TaskSummary> summaries_;
  std::vector<int64_t> since_improvement_;
  std::vector<double> last_batch_gflops_;
  std::vector<bool> exhausted_;
  std::vector<int64_t> earlier_trials_;  // per task: trials stored by earlier runs (resume)
  Progress* progress_ = nullptr;         // during run()
  bool ran_out_of_time_ = false;
};

/// Median over rounds of TaskSummary::overhead_per_trial_s (0 when empty).
double median_overhead_per_trial_s(const TaskSummary& summary);

/// The summary table printed at the end of a run: full names and workload
/// key prefixes, the tasks by their share of the model's time. At most
/// `max_rows` tasks (the rest counted in one line, with their share), and
/// each task's time per trial only when `per_trial_times`.
std::string format_summary(const std::vector<TaskSummary>& summaries, size_t max_rows = SIZE_MAX,
                           bool per_trial_times = true);

/// The summary's task rows at defaults (tessera tune, tessera.tune): with
/// the check in the model, the regions and the run's lines, tune's end fits
/// a terminal of 24 rows.
inline constexpr size_t kSummaryRows = 12;

}  // namespace tessera::tuner
