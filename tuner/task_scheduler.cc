#include "tuner/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::tuner {
namespace {
constexpr double kAlpha = 0.2;   // weight of the observed improvement rate
constexpr double kBeta = 2.0;    // a task may reach 1/beta of its group's best throughput
constexpr int kWindow = 3;       // rounds looked back for the improvement rate
}  // namespace

TaskScheduler::TaskScheduler(std::vector<TaskWeight> tasks, SchedulerKind kind, uint64_t seed, double epsilon)
    : tasks_(std::move(tasks)), kind_(kind), rng_(seed), epsilon_(epsilon), history_(tasks_.size()) {}

double TaskScheduler::gradient(int i) const {
  const auto& h = history_[i];
  if (h.empty() || !std::isfinite(h.back().second)) return -std::numeric_limits<double>::infinity();
  const double w = tasks_[i].weight;
  const double best = h.back().second;
  const double t = static_cast<double>(h.back().first);
  // Observed: how much the best cost fell over the last few rounds, per trial.
  double backward = 0;
  if (h.size() > 1) {
    const auto& old = h[h.size() - 1 - std::min<size_t>(kWindow, h.size() - 1)];
    double dt = t - static_cast<double>(old.first);
    if (dt > 0 && std::isfinite(old.second)) backward = (best - old.second) / dt;
  }
  // Expected: the next round gains best/t (returns diminish with trials),
  // unless the task is more than beta times slower than the best throughput
  // of its group, when it could reach that throughput over beta (Ansor's
  // g_next = min(best - best/t, beta * flops / best_rate)). The bound is a
  // pessimistic one: read as flops / (beta * best_rate), every task would
  // always expect to halve its cost, and the tasks of the largest weighted
  // cost took every round (a ResNet-18's 56x56 convs got 570 of 1,000
  // trials, most 28x28 and 14x14 convs their warm-up round alone).
  double best_rate = 0;
  for (size_t j = 0; j < tasks_.size(); ++j) {
    if (tasks_[j].group != tasks_[i].group) continue;
    if (history_[j].empty() || !std::isfinite(history_[j].back().second) || tasks_[j].flops <= 0) continue;
    best_rate = std::max(best_rate, tasks_[j].flops / history_[j].back().second);
  }
  double next = best - best / std::max(t, 1.0);
  if (best_rate > 0 && tasks_[i].flops > 0) next = std::min(next, kBeta * tasks_[i].flops / best_rate);
  const double forward = next - best;
  return w * (kAlpha * backward + (1 - kAlpha) * forward);
}

int TaskScheduler::next() {
  const int n = static_cast<int>(tasks_.size());
  for (int i = 0; i < n; ++i)
    if (history_[i].empty()) return i;  // warm-up round
  if (kind_ == SchedulerKind::kRoundRobin || n == 1) return round_robin_++ % n;
  if (std::uniform_real_distribution<double>(0, 1)(rng_) < epsilon_)
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng_));
  int best = 0;
  double best_gradient = std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    double g = gradient(i);
    if (g < best_gradient) {
      best_gradient = g;
      best = i;
    }
  }
  return best;
}

void TaskScheduler::update(int task, int64_t trials, double best_cost_s) {
  history_[task].emplace_back(trials, best_cost_s);
}

}  // namespace tessera::tuner
