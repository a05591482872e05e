#include "tuner/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace tessera::tuner {
namespace {
constexpr double kAlpha = 0.2;         // weight of the observed improvement rate
constexpr double kBeta = 2.0;          // a task may reach 1/beta of its group's best throughput
constexpr int kWindow = 3;             // rounds looked back for the improvement rate
constexpr double kKeptPromise = 0.05;  // the cut over kWindow rounds that keeps the group bound
}  // namespace

TaskScheduler::TaskScheduler(std::vector<TaskWeight> tasks, SchedulerKind kind, uint64_t seed, double epsilon)
    : tasks_(std::move(tasks)),
      kind_(kind),
      rng_(seed),
      epsilon_(epsilon),
      history_(tasks_.size()),
      retired_(tasks_.size(), false) {}

void TaskScheduler::retire(int task) {
  retired_[task] = true;
}

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
  // The bound is a promise the search has to keep: past its first kWindow
  // rounds after the warm-up, a task is held to it only while the last
  // kWindow rounds cut its cost by kKeptPromise or more. (Held to its
  // group's throughput, a memory-bound depthwise conv of PP-OCR's detector
  // took 407 of 1,000 trials at 12 GFLOP/s, creeping down, while its two
  // heaviest convs got 24 each; 71 with this rule.)
  bool stalled = false;
  if (h.size() > static_cast<size_t>(kWindow) + 1) {
    const auto& old = h[h.size() - 1 - kWindow];
    stalled = std::isfinite(old.second) && best > old.second * (1 - kKeptPromise);
  }
  double next = best - best / std::max(t, 1.0);
  if (best_rate > 0 && tasks_[i].flops > 0 && !stalled) next = std::min(next, kBeta * tasks_[i].flops / best_rate);
  const double forward = next - best;
  return w * (kAlpha * backward + (1 - kAlpha) * forward);
}

int TaskScheduler::next() {
  const int n = static_cast<int>(tasks_.size());
  std::vector<int> live;
  for (int i = 0; i < n; ++i)
    if (!retired_[i]) live.push_back(i);
  if (live.empty()) return -1;
  // Warm-up rounds, the largest share first (ties to the earlier task).
  int cold = -1;
  auto share = [&](int i) {
    return std::make_pair(tasks_[i].weight * tasks_[i].cost_s, tasks_[i].weight * tasks_[i].flops);
  };
  for (int i : live)
    if (history_[i].empty() && (cold < 0 || share(i) > share(cold))) cold = i;
  if (cold >= 0) return cold;
  const int m = static_cast<int>(live.size());
  if (kind_ == SchedulerKind::kRoundRobin || m == 1) return live[round_robin_++ % m];
  if (std::uniform_real_distribution<double>(0, 1)(rng_) < epsilon_)
    return live[std::uniform_int_distribution<int>(0, m - 1)(rng_)];
  int best = live.front();
  double best_gradient = std::numeric_limits<double>::infinity();
  for (int i : live) {
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
