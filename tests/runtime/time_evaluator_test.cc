#include "runtime/time_evaluator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/module.h"

namespace tessera::runtime {
namespace {

const std::string kKernels = TESSERA_TEST_KERNELS_PATH;

// A kernel that counts its calls in *args[0] and spins for *args[1] microseconds.
int32_t counting_kernel(void** args) {
  ++*static_cast<int64_t*>(args[0]);
  const int64_t busy_us = *static_cast<int64_t*>(args[1]);
  if (busy_us > 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(busy_us);
    while (std::chrono::steady_clock::now() < end) {
    }
  }
  return 0;
}

struct Counter {
  int64_t calls = 0;
  int64_t busy_us = 0;
  void* args[2] = {&calls, &busy_us};
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(TimeEvaluator, OneWarmUpThenNumberCallsPerRepeat) {
  Counter counter;
  TimingOptions options;
  options.number = 4;
  options.repeat = 5;
  auto result = time_kernel(&counting_kernel, counter.args, options, nullptr);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(counter.calls, 1 + 4 * 5);
  EXPECT_EQ(result->costs_s.size(), 5u);
}

// A first repeat above stop_above_s ends the timing: a candidate clearly
// worse than the best known is ranked by one repeat; below it, every repeat.
TEST(TimeEvaluator, AClearlyWorseCandidateStopsAfterOneRepeat) {
  Counter slow;
  slow.busy_us = 2000;
  TimingOptions options;
  options.repeat = 5;
  options.stop_above_s = 0.001;  // 1 ms; the kernel takes 2
  auto result = time_kernel(&counting_kernel, slow.args, options, nullptr);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->costs_s.size(), 1u);
  EXPECT_EQ(slow.calls, 1 + 1);
  Counter fast;
  options.stop_above_s = 1.0;
  result = time_kernel(&counting_kernel, fast.args, options, nullptr);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->costs_s.size(), 5u);
}

// A caller that has just called the kernel (a correctness check) skips it.
TEST(TimeEvaluator, NoWarmUpWhenTheCallerHasWarmedUp) {
  Counter counter;
  TimingOptions options;
  options.number = 4;
  options.repeat = 5;
  options.warm_up = false;
  auto result = time_kernel(&counting_kernel, counter.args, options, nullptr);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(counter.calls, 4 * 5);
}

TEST(TimeEvaluator, StatisticsSummarizeTheCosts) {
  Counter counter;
  counter.busy_us = 200;
  TimingOptions options;
  options.repeat = 4;
  auto result = time_kernel(&counting_kernel, counter.args, options, nullptr);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  double sum = 0, low = 1e9;
  for (double c : result->costs_s) {
    EXPECT_GE(c, 200e-6) << "a call spins for 200 us";
    EXPECT_LT(c, 0.5);
    sum += c;
    low = std::min(low, c);
  }
  EXPECT_DOUBLE_EQ(result->mean_s, sum / 4);
  EXPECT_DOUBLE_EQ(result->min_s, low);
  EXPECT_GE(result->median_s, result->min_s);
  EXPECT_LE(result->median_s, *std::max_element(result->costs_s.begin(), result->costs_s.end()));
}

TEST(TimeEvaluator, ShortRepeatsGrowNumberUntilMinRepeatMs) {
  Counter counter;
  counter.busy_us = 100;
  TimingOptions options;
  options.repeat = 3;
  options.min_repeat_ms = 20;
  const auto start = std::chrono::steady_clock::now();
  auto result = time_kernel(&counting_kernel, counter.args, options, nullptr);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  // 20 ms of 100 us calls: about 200 calls in each counted repeat.
  EXPECT_GE(counter.calls, 3 * 150);
  EXPECT_GE(seconds_since(start), 3 * 20e-3);
  for (double c : result->costs_s) EXPECT_GE(c, 100e-6) << "a cost is per call, not per repeat";
}

TEST(TimeEvaluator, CooldownSleepsBetweenRepeats) {
  Counter counter;
  TimingOptions options;
  options.repeat = 3;
  options.cooldown_ms = 30;
  const auto start = std::chrono::steady_clock::now();
  auto result = time_kernel(&counting_kernel, counter.args, options, nullptr);
  ASSERT_TRUE(result.is_ok());
  EXPECT_GE(seconds_since(start), 2 * 30e-3);
  for (double c : result->costs_s) EXPECT_LT(c, 10e-3) << "the sleep is not counted";
}

TEST(TimeEvaluator, CacheFlushIsNotCounted) {
  Counter counter;
  TimingOptions options;
  options.repeat = 3;
  options.flush_cache = true;
  ThreadPool pool(2);
  const auto start = std::chrono::steady_clock::now();
  auto result = time_kernel(&counting_kernel, counter.args, options, &pool);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const double elapsed = seconds_since(start);
  double counted = 0;
  for (double c : result->costs_s) counted += c;
  // Sweeping twice the last-level cache three times costs far more than three empty calls.
  EXPECT_LT(counted, elapsed / 10) << "counted " << counted << " s of " << elapsed << " s";
  EXPECT_EQ(counter.calls, 1 + 3);
}

TEST(TimeEvaluator, NonZeroKernelStatusIsRuntimeErrorNamingIt) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok()) << module.status().to_string();
  auto fail = module->get_kernel("fail_with_7");
  ASSERT_TRUE(fail.is_ok());
  auto result = time_kernel(*fail, nullptr, TimingOptions{}, nullptr);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kRuntimeError);
  EXPECT_NE(result.status().message().find("status 7"), std::string::npos) << result.status().message();
}

TEST(TimeEvaluator, KernelFailingAfterWarmUpIsRuntimeError) {
  // Fails on its third call, inside the first repeat.
  static int calls;
  calls = 0;
  auto flaky = [](void**) -> int32_t { return ++calls >= 3 ? 11 : 0; };
  TimingOptions options;
  options.number = 5;
  auto result = time_kernel(flaky, nullptr, options, nullptr);
  EXPECT_EQ(result.status().code(), ErrorCode::kRuntimeError);
  EXPECT_NE(result.status().message().find("status 11"), std::string::npos) << result.status().message();
}

TEST(TimeEvaluator, ParallelKernelRunsOnTheGivenPool) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok()) << module.status().to_string();
  auto record = module->get_kernel("record_num_tasks");
  ASSERT_TRUE(record.is_ok());
  std::vector<int32_t> seen(4, -1);
  void* args[] = {seen.data()};
  ThreadPool pool(2);
  ASSERT_TRUE(time_kernel(*record, args, TimingOptions{}, &pool).is_ok());
  EXPECT_EQ(seen, (std::vector<int32_t>{2, 2, -1, -1}));
  EXPECT_EQ(ParallelScope::current(), nullptr) << "the pool is installed only while timing";
  std::fill(seen.begin(), seen.end(), -1);
  ASSERT_TRUE(time_kernel(*record, args, TimingOptions{}, nullptr).is_ok());
  EXPECT_EQ(seen, (std::vector<int32_t>{1, -1, -1, -1})) << "no pool: serial, one task";
}

TEST(TimeEvaluator, InvalidOptionsAreInvalidArgument) {
  Counter counter;
  TimingOptions zero_number;
  zero_number.number = 0;
  TimingOptions zero_repeat;
  zero_repeat.repeat = 0;
  TimingOptions negative_cooldown;
  negative_cooldown.cooldown_ms = -1;
  TimingOptions negative_stop;
  negative_stop.stop_above_s = -1;
  for (const TimingOptions& options : {zero_number, zero_repeat, negative_cooldown, negative_stop}) {
    EXPECT_EQ(time_kernel(&counting_kernel, counter.args, options, nullptr).status().code(),
              ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(time_kernel(nullptr, nullptr, TimingOptions{}, nullptr).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(counter.calls, 0);
}

TEST(TimeEvaluator, LastLevelCacheSizeIsPositive) {
  EXPECT_GT(last_level_cache_bytes(), 0);
  EXPECT_EQ(last_level_cache_bytes(123) > 0, true);
}

TEST(TimeEvaluator, APrivateCacheIsNoLargerThanTheLastLevel) {
  EXPECT_GT(private_cache_bytes(), 0);
  EXPECT_LE(private_cache_bytes(), last_level_cache_bytes());
}

}  // namespace
}  // namespace tessera::runtime
