// Progress of a tuning job: one updating line per task on a terminal, a plain
// log line per round otherwise.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace tessera::tuner {

/// What a person wants to know about one task while it tunes.
struct TaskProgress {
  std::string name;
  int64_t trials = 0, budget = 0;
  int64_t errors = 0;
  double best_gflops = 0;        ///< 0 while nothing succeeded
  double last_batch_gflops = 0;  ///< best of the latest batch
  double eta_s = -1;             ///< < 0: unknown
};

class Progress {
 public:
  /// `interactive`: rewrite the lines in place (a terminal); otherwise log.
  Progress(FILE* out, bool interactive) : out_(out), interactive_(interactive) {}
  void update(const std::vector<TaskProgress>& tasks, int changed_task);
  void finish();

 private:
  static std::string line(const TaskProgress& p);
  FILE* out_;
  bool interactive_;
  size_t lines_drawn_ = 0;
};

}  // namespace tessera::tuner
