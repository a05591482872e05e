#include "tuner/task_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tuner/tuner.h"

namespace tessera::tuner {
namespace {

// Simulates tuning: a task's best cost falls toward its floor as trials grow.
double simulated_cost(double start, double floor, int64_t trials) {
  return floor + (start - floor) * std::exp(-static_cast<double>(trials) / 64.0);
}

TEST(TaskScheduler, EveryTaskGetsAWarmUpRoundFirst) {
  TaskScheduler s({{1, 1e9}, {1, 1e9}, {1, 1e9}}, SchedulerKind::kGradient, 1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(s.warmed_up(i));
    EXPECT_EQ(s.next(), i);
    s.update(i, 16, 1.0);
    EXPECT_TRUE(s.warmed_up(i));
  }
}

TEST(TaskScheduler, WarmUpRoundsGoToTheLargestShareOfTheModelFirst) {
  // weight x cost: 0.2, 3.0, 0.5 ms; the fourth's cost is unknown (its
  // baseline failed), so its weight x flops ranks it after the others.
  TaskScheduler s({{1, 1e9, 0, 0.2e-3}, {3, 1e6, 1, 1e-3}, {5, 1e6, 2, 0.1e-3}, {1, 1e12, 3, 0}},
                  SchedulerKind::kGradient, 1);
  for (int want : {1, 2, 0, 3}) {
    EXPECT_EQ(s.next(), want);
    s.update(want, 4, 1e-3);
  }
}

TEST(TaskScheduler, ATaskWithEarlierTrialsIsNotWarmedUpAgain) {
  // A resumed run: task 0 (the largest share) had 40 trials before.
  TaskScheduler s({{1, 1e9, 0, 2e-3}, {1, 1e9, 0, 1e-3}}, SchedulerKind::kGradient, 1);
  s.update(0, 40, 2e-3);
  EXPECT_TRUE(s.warmed_up(0));
  EXPECT_EQ(s.next(), 1);
}

TEST(TaskScheduler, TheTaskWithTheLargerExpectedGainGetsMoreTrials) {
  // Two tasks that improve alike, but task 0 runs ten times per inference.
  TaskScheduler s({{10, 2e9}, {1, 2e9}}, SchedulerKind::kGradient, 7);
  int64_t trials[2] = {0, 0};
  const double start[2] = {1.0, 1.0}, floor[2] = {0.1, 0.1};
  for (int round = 0; round < 40; ++round) {
    int t = s.next();
    trials[t] += 16;
    s.update(t, trials[t], simulated_cost(start[t], floor[t], trials[t]));
  }
  EXPECT_GT(trials[0], 2 * trials[1]) << trials[0] << " vs " << trials[1];
}

// A task that has reached its floor gets fewer rounds as its returns
// diminish, though it runs twice per inference; the task still improving,
// or slower than its group's best throughput by more than beta, gets them.
TEST(TaskScheduler, ATaskAtItsFloorYieldsRoundsToTheOthers) {
  TaskScheduler s({{2, 2e8, 0}, {1, 2e8, 0}, {1, 2e8, 0}}, SchedulerKind::kGradient, 11, /*epsilon=*/0);
  int64_t trials[3] = {0, 0, 0};
  auto cost = [&](int t) {
    if (t == 0) return 0.6;                                  // at its floor
    if (t == 1) return simulated_cost(1.0, 0.5, trials[1]);  // improving
    return simulated_cost(3.0, 0.5, trials[2]);              // 5x slower at first
  };
  for (int round = 0; round < 60; ++round) {
    int t = s.next();
    trials[t] += 16;
    s.update(t, trials[t], cost(t));
  }
  EXPECT_LE(trials[0], trials[1] + trials[2]) << trials[0] << " " << trials[1] << " " << trials[2];
  EXPECT_GE(trials[1], 10 * 16) << trials[0] << " " << trials[1] << " " << trials[2];
  EXPECT_GE(trials[2], 10 * 16) << trials[0] << " " << trials[1] << " " << trials[2];
}

// A memory-bound pool will never reach a conv's throughput: in a group of
// its own it is not expected to, and does not take the rounds from the conv.
// In the conv's group it looks 40x too slow, but once a few rounds bring it
// nothing it stops being promised that throughput and yields too.
TEST(TaskScheduler, ATaskOfAnotherKindIsNotHeldToTheGroupsThroughput) {
  for (int pool_group : {0, 1}) {
    TaskScheduler s({{1, 2e8, 0}, {1, 2e6, pool_group}}, SchedulerKind::kGradient, 5, /*epsilon=*/0);
    int64_t trials[2] = {0, 0};
    for (int round = 0; round < 30; ++round) {
      int t = s.next();
      trials[t] += 16;
      s.update(t, trials[t], t == 0 ? simulated_cost(1.0, 0.5, trials[0]) : 0.08);
    }
    if (pool_group == 0)
      EXPECT_GT(trials[0], 2 * trials[1]) << trials[0] << " vs " << trials[1];
    else
      EXPECT_GT(trials[0], 3 * trials[1]) << trials[0] << " vs " << trials[1];
  }
}

// A retired task (its space exhausted) is never picked, even when its
// gradient is the steepest; with every task retired there is nothing to do.
TEST(TaskScheduler, ARetiredTaskIsNeverPicked) {
  TaskScheduler s({{100, 1e9}, {1, 1e9}, {1, 1e9}}, SchedulerKind::kGradient, 9, /*epsilon=*/0.5);
  for (int i = 0; i < 3; ++i) s.update(s.next(), 16, 1.0);
  s.retire(0);
  for (int round = 0; round < 50; ++round) {
    const int t = s.next();
    ASSERT_NE(t, 0);
    s.update(t, 16 * (round + 2), 1.0);
  }
  s.retire(1);
  s.retire(2);
  EXPECT_EQ(s.next(), -1);
}

TEST(TaskScheduler, RoundRobinAlternates) {
  TaskScheduler s({{10, 1e9}, {1, 1e9}}, SchedulerKind::kRoundRobin, 1);
  int64_t trials[2] = {0, 0};
  for (int round = 0; round < 10; ++round) {
    int t = s.next();
    trials[t] += 1;
    s.update(t, trials[t], 1.0);
  }
  EXPECT_EQ(trials[0], trials[1]);
}

TEST(TaskScheduler, ATaskWithNoSuccessYetIsTriedAgain) {
  TaskScheduler s({{1, 1e9}, {1, 1e9}}, SchedulerKind::kGradient, 3, /*epsilon=*/0);
  s.update(s.next(), 16, 0.5);
  s.update(s.next(), 16, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.next(), 1);
}

// Warm-up rounds leave at least half of the budget to the scheduler, with
// at least 4 candidates each and never more than a batch.
TEST(WarmUpBatch, ShrinksWhenTheTasksAreManyForTheBudget) {
  EXPECT_EQ(warm_up_batch(1000, 24, 16), 16);  // a ResNet-18: full rounds
  EXPECT_EQ(warm_up_batch(1000, 70, 16), 7);   // PP-OCR's detector
  EXPECT_EQ(warm_up_batch(64, 70, 16), 4);
  EXPECT_EQ(warm_up_batch(64, 70, 2), 2);
  EXPECT_EQ(warm_up_batch(100, 0, 16), 16);
}

}  // namespace
}  // namespace tessera::tuner
