// The tuning loop: rounds of propose -> build -> measure -> store -> learn,
// over one or more tasks, until the budget is spent.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "records/store.h"
#include "tuner/progress.h"
#include "tuner/search_policy.h"
#include "tuner/task_scheduler.h"

namespace tessera::tuner {

struct TuneOptions {
  int64_t trials = 64;            ///< measurements in this run, over all tasks
  int batch_size = 16;            ///< candidates per round (a task's first round: see warm_up_batch)
  double time_budget_s = 0;       ///< stop after this much wall time; 0: none
  int64_t early_stopping = 0;     ///< stop a task after this many trials without improvement; 0: never
  SchedulerKind scheduler = SchedulerKind::kGradient;
  uint64_t seed = 0;
  bool measure_default = true;    ///< also measure each task's untuned default schedule
};

/// Candidates in each task's first (warm-up) round: the batch size, unless
/// the tasks are many for the budget. Then fewer, so that at least half of
/// the budget is left for the rounds the scheduler gives by expected gain
/// (PP-OCR's detector: 70 tasks in 1,000 trials, where full warm-up rounds
/// left its two heaviest convs, 20% of its latency, at 16 trials each); at
/// least 4.
int warm_up_batch(int64_t trials, size_t tasks, int batch_size);

/// How one task ended.
struct TaskSummary {
  std::string name;
  std::string workload_key;
  double weight = 1;               ///< calls per model run
  int64_t trials = 0, errors = 0;
  double best_cost_s = 0;          ///< infinity when nothing succeeded
  std::vector<Step> best_steps;
  double flops = 0;
  std::optional<double> default_cost_s;  ///< the untuned default schedule's time
  double seconds = 0;              ///< wall time spent on the task
  double search_seconds = 0;       ///< of which proposing candidates (search + cost model)
  double build_seconds = 0;        ///< of which building (wall)
  double measure_seconds = 0;      ///< of which measuring, queueing included (wall)
  /// Checking candidates' outputs: references evaluated here, plus the
  /// workers' comparisons (those are also within measure_seconds; the
  /// checked call is the timing's warm-up call, made anyway).
  double check_seconds = 0;
  double store_seconds = 0;        ///< of which writing records
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
  /// many records were found.
  Result<int64_t> resume();

  /// Tunes until the budget is spent, `stop` becomes true (Ctrl-C), or every
  /// space is exhausted. Every measured batch is stored before the next one.
  Result<std::vector<TaskSummary>> run(Progress* progress, const std::atomic<bool>* stop);

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
  TaskProgress progress_of(int task) const;
  // Shows a phase before the search (`done` of the tasks measured).
  void show_phase(const char* name, size_t done);
  int64_t trials_spent() const;  // over all tasks

  std::vector<Task> tasks_;
  std::vector<std::unique_ptr<SearchPolicy>> policies_;
  Measurer& measurer_;
  records::Store* store_;
  TuneOptions options_;
  std::vector<TaskSummary> summaries_;
  std::vector<int64_t> since_improvement_;
  std::vector<double> last_batch_gflops_;
  std::vector<bool> exhausted_;
  Progress* progress_ = nullptr;  // during run()
};

/// Median over rounds of TaskSummary::overhead_per_trial_s (0 when empty).
double median_overhead_per_trial_s(const TaskSummary& summary);

/// The summary table printed at the end of a run: full names and workload
/// key prefixes, the tasks by their share of the model's time.
std::string format_summary(const std::vector<TaskSummary>& summaries);

}  // namespace tessera::tuner
