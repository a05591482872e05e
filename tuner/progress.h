// Progress of a tuning job. On a terminal: a block redrawn in place that
// never outgrows the screen — one overall line (trials of the run's budget,
// elapsed, ETA, the model's estimated latency and its ratio to the untuned
// start), a phase line while baselines are measured, and the tasks with the
// largest share of the model's time, as many as the rows allow. Otherwise
// (a pipe, a file): a plain line per measured batch, the overall figures first.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tessera::tuner {

/// What a person wants to know about one task while it tunes.
struct TaskProgress {
  std::string name;    ///< the full operator and shapes
  std::string key;     ///< the workload key (a prefix is shown, to tell tasks apart)
  double weight = 1;   ///< calls of the task per model run
  int64_t trials = 0;  ///< of this task
  int64_t budget = 0;  ///< the run's budget over all tasks (not this task's)
  int64_t errors = 0;
  double best_cost_s = 0;     ///< 0 while nothing succeeded
  double default_cost_s = 0;  ///< the untuned default's time; 0: unknown
  /// The schedule compile takes without a record (the template's fallback,
  /// else the generic schedule): what tuning is measured against. 0: unknown.
  double untuned_compile_s = 0;
  double best_gflops = 0;        ///< 0 while nothing succeeded
  double last_batch_gflops = 0;  ///< best of the latest batch
  double eta_s = -1;             ///< < 0: unknown
};

/// The terminal's size: the display never draws more lines than rows - 1,
/// nor lines longer than columns - 1.
struct TerminalSize {
  int rows = 24;
  int columns = 80;
};

class Progress {
 public:
  /// `interactive`: redraw a block in place (a terminal of `size`); otherwise log.
  Progress(FILE* out, bool interactive, TerminalSize size = {});
  /// A terminal whose size may change: `size` is asked before each redraw.
  Progress(FILE* out, bool interactive, std::function<TerminalSize()> size);

  /// The tasks after a round; `changed_task` is the one just measured (-1: none).
  void update(const std::vector<TaskProgress>& tasks, int changed_task);
  /// A phase before the search, e.g. "untuned defaults": `done` of `total`
  /// tasks measured. Shown until done == total; counted in the ETA.
  void phase(const std::string& name, int64_t done, int64_t total);
  /// A line for the person watching ("waiting for a worker of key X"): on a
  /// terminal it goes above the block, which is redrawn below it, so the
  /// block neither overwrites it nor is pushed into the scrollback.
  void note(const std::string& line);
  void finish();

  /// The lines a terminal shows now (without escape sequences), for tests.
  std::vector<std::string> lines() const;

 private:
  std::string overall_line() const;
  std::string phase_line() const;
  void redraw();

  FILE* out_;
  bool interactive_;
  TerminalSize size_;
  std::function<TerminalSize()> size_source_;  // empty: size_ is fixed
  std::chrono::steady_clock::time_point start_;
  std::vector<TaskProgress> tasks_;
  std::map<std::string, std::pair<int64_t, int64_t>> phases_;  // name -> (done, total)
  std::string current_phase_;
  size_t lines_drawn_ = 0;
};

/// One task's line: share of the model's time, trials, best, errors, the
/// workload key's first characters and the full name.
std::string task_line(const TaskProgress& task, double share);

/// A task's part of a model run: weight x its best time (the default's time
/// where nothing better is known; 0 when neither is).
double time_in_model_s(const TaskProgress& task);

/// The model's estimated latency: the sum of the tasks' time_in_model_s.
double estimated_latency_s(const std::vector<TaskProgress>& tasks);

/// The tasks' indices by share of the model's time (weight x best), largest first.
std::vector<size_t> by_share_of_time(const std::vector<TaskProgress>& tasks);

}  // namespace tessera::tuner
