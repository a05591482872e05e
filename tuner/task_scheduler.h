// Which task to tune next when a job has several: Ansor's gradient-based
// allocation of trials by expected end-to-end gain, or plain round-robin.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tessera::tuner {

enum class SchedulerKind : uint8_t { kGradient, kRoundRobin };

/// What the scheduler knows of a task up front.
struct TaskWeight {
  double weight = 1;  ///< how many times it runs per model inference
  double flops = 0;   ///< floating-point operations per run
  int group = 0;      ///< tasks of one group (same operator kind) should reach similar throughput
  /// Its best known time per run before any round (the baselines', or an
  /// earlier run's); 0: unknown. The warm-up rounds go by weight × cost.
  double cost_s = 0;
};

/// Picks the next task to give a round of trials. The objective is the
/// weighted end-to-end latency sum(w_i * best_i); a task's priority is its
/// estimated gradient: a blend of its recent improvement rate and an
/// optimistic bound from its FLOPs at the best throughput its group reached
/// (held only while the task keeps improving). Every task first gets one
/// warm-up round, the largest share of the model's time first (weight ×
/// cost, then weight × flops): a budget that cannot reach every task goes to
/// those that matter. A task that update() was told of before its first
/// round (an earlier run's trials) is warmed up already. With probability
/// epsilon a random task is chosen; retired tasks are never chosen.
class TaskScheduler {
 public:
  TaskScheduler(std::vector<TaskWeight> tasks, SchedulerKind kind, uint64_t seed, double epsilon = 0.05);

  /// The task to tune next; -1 when every task is retired.
  int next();
  /// The task gets no more rounds (its space is exhausted, or it stopped early).
  void retire(int task);
  /// After a round of task `task`: its total trials so far and its best cost
  /// in seconds (infinity while nothing succeeded).
  void update(int task, int64_t trials, double best_cost_s);

  /// The estimated gradient of the objective in the task's trials (negative:
  /// more trials lower the latency); exposed for tests and progress output.
  double gradient(int task) const;
  int64_t trials(int task) const { return history_[task].empty() ? 0 : history_[task].back().first; }
  /// Whether the task has had its warm-up round.
  bool warmed_up(int task) const { return !history_[task].empty(); }

 private:
  std::vector<TaskWeight> tasks_;
  SchedulerKind kind_;
  std::mt19937_64 rng_;
  double epsilon_;
  int round_robin_ = 0;
  std::vector<std::vector<std::pair<int64_t, double>>> history_;  // (trials, best cost) per round
  std::vector<bool> retired_;
};

}  // namespace tessera::tuner
