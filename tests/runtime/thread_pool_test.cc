#include "runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/c_abi.h"

namespace tessera::runtime {
namespace {

// 1,000,000 iterations; each task takes its contiguous share and counts visits.
struct SplitLoop {
  static constexpr int64_t kIterations = 1000000;
  std::vector<std::atomic<uint8_t>> visits = std::vector<std::atomic<uint8_t>>(kIterations);

  static int32_t body(int32_t task, int32_t num_tasks, void* closure) {
    auto* self = static_cast<SplitLoop*>(closure);
    const int64_t begin = kIterations * task / num_tasks;
    const int64_t end = kIterations * (task + 1) / num_tasks;
    for (int64_t i = begin; i < end; ++i) self->visits[i].fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  bool each_ran_once() const {
    for (const auto& v : visits) {
      if (v.load() != 1) return false;
    }
    return true;
  }
};

// Which (task, num_tasks) pairs ran, and on which threads.
struct TaskLog {
  std::mutex mutex;
  std::vector<int32_t> tasks;
  std::vector<int32_t> num_tasks;
  std::set<std::thread::id> threads;

  static int32_t body(int32_t task, int32_t num_tasks, void* closure) {
    auto* self = static_cast<TaskLog*>(closure);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->tasks.push_back(task);
    self->num_tasks.push_back(num_tasks);
    self->threads.insert(std::this_thread::get_id());
    return 0;
  }
  std::multiset<int32_t> task_set() const { return {tasks.begin(), tasks.end()}; }
};

std::multiset<int32_t> range(int32_t n) {
  std::multiset<int32_t> s;
  for (int32_t i = 0; i < n; ++i) s.insert(i);
  return s;
}

TEST(ThreadPool, EveryIterationRunsExactlyOnce) {
  ThreadPool pool(4);
  ASSERT_TRUE(pool.status().is_ok()) << pool.status().to_string();
  SplitLoop loop;
  ParallelScope scope(&pool);
  EXPECT_EQ(tessera_parallel_launch(&SplitLoop::body, &loop, 0), 0);
  EXPECT_TRUE(loop.each_ran_once());
}

TEST(ThreadPool, MoreTasksThanThreadsEachRunOnce) {
  ThreadPool pool(3);
  SplitLoop loop;
  TaskLog log;
  ParallelScope scope(&pool);
  EXPECT_EQ(tessera_parallel_launch(&SplitLoop::body, &loop, 37), 0);
  EXPECT_TRUE(loop.each_ran_once());
  EXPECT_EQ(tessera_parallel_launch(&TaskLog::body, &log, 37), 0);
  EXPECT_EQ(log.task_set(), range(37));
}

TEST(ThreadPool, ZeroTasksMeansOneTaskPerThread) {
  ThreadPool pool(3);
  TaskLog log;
  EXPECT_EQ(pool.run(&TaskLog::body, &log, 0), 0);
  EXPECT_EQ(log.task_set(), range(3));
  EXPECT_EQ(log.num_tasks, std::vector<int32_t>(3, 3));
}

TEST(ThreadPool, TasksRunOnDistinctThreads) {
  PoolOptions options;
  options.steal_late_shares = false;  // the worker's share waits for the worker
  ThreadPool pool(2, options);
  TaskLog log;
  EXPECT_EQ(pool.run(&TaskLog::body, &log, 2), 0);
  EXPECT_EQ(log.threads.size(), 2u);
  EXPECT_EQ(log.threads.count(std::this_thread::get_id()), 1u) << "the caller runs task 0";
}

TEST(ThreadPool, RepeatedLaunchesNeitherLoseNorRepeatTasks) {
  // Back-to-back launches exercise the spin path; a zero spin budget the
  // futex path; 3 threads on 2 cores make late workers whose shares the
  // launcher takes, and workers that wake for a launch already over.
  for (bool steal : {true, false})
    for (int spin_us : {200, 0}) {
      PoolOptions options;
      options.spin_us = spin_us;
      options.steal_late_shares = steal;
      ThreadPool pool(3, options);
      std::array<std::atomic<int64_t>, 5> runs{};
      auto body = [](int32_t task, int32_t, void* closure) -> int32_t {
        (*static_cast<std::array<std::atomic<int64_t>, 5>*>(closure))[static_cast<size_t>(task)].fetch_add(1);
        return 0;
      };
      constexpr int kLaunches = 2000;  // enough to catch a lost wake-up
      for (int i = 0; i < kLaunches; ++i) ASSERT_EQ(pool.run(body, &runs, 5), 0);
      for (size_t t = 0; t < runs.size(); ++t)
        EXPECT_EQ(runs[t].load(), kLaunches) << "task " << t << ", spin_us=" << spin_us << ", steal=" << steal;
    }
}

// Pins the calling thread to `cpu` until the guard ends.
class PinCallerTo {
 public:
  explicit PinCallerTo(int cpu) {
    sched_getaffinity(0, sizeof(saved_), &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  ~PinCallerTo() { sched_setaffinity(0, sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

// A worker whose CPU a real-time thread holds cannot start its share for as
// long as it spins (the kernel lets it run 5% of each second at most); the
// launcher runs that share itself instead of waiting.
TEST(ThreadPool, TheLauncherRunsTheShareOfAWorkerThatCannotStart) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  PinCallerTo pin(cpus[0]);
  PoolOptions options;
  options.pin_threads = true;
  options.cpus = {cpus[0], cpus[1]};  // worker 1 on cpus[1]
  ThreadPool pool(2, options);
  ASSERT_TRUE(pool.status().is_ok()) << pool.status().to_string();
  std::atomic<int> hog{0};  // 1 spinning, -1 refused real-time priority
  std::atomic<bool> stop{false};
  std::thread holder([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[1], &one);
    sched_param fifo{};
    fifo.sched_priority = 1;
    if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0 ||
        pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0) {
      hog = -1;
      return;
    }
    hog = 1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!stop && std::chrono::steady_clock::now() < deadline) {
    }
  });
  while (hog == 0) std::this_thread::yield();
  if (hog < 0) {
    holder.join();
    GTEST_SKIP() << "no real-time priority here (needs CAP_SYS_NICE)";
  }
  TaskLog log;
  const auto start = std::chrono::steady_clock::now();
  const int32_t status = pool.run(&TaskLog::body, &log, 2);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  stop = true;
  holder.join();
  EXPECT_EQ(status, 0);
  EXPECT_EQ(log.task_set(), range(2));
  EXPECT_EQ(log.threads, std::set<std::thread::id>{std::this_thread::get_id()}) << "both shares on the launcher";
  EXPECT_LT(elapsed, std::chrono::milliseconds(100));
}

TEST(ThreadPool, ErrorStatusPropagates) {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  auto body = [](int32_t task, int32_t, void* closure) -> int32_t {
    static_cast<std::atomic<int>*>(closure)->fetch_add(1);
    return task == 2 ? 5 : 0;
  };
  ParallelScope scope(&pool);
  EXPECT_EQ(tessera_parallel_launch(body, &ran, 8), 5);
  EXPECT_EQ(ran.load(), 8) << "every task runs even when one fails";
}

TEST(ThreadPool, LowestFailingTaskDecidesTheStatus) {
  ThreadPool pool(4);
  auto body = [](int32_t task, int32_t, void*) -> int32_t { return task >= 3 ? 100 + task : 0; };
  for (int i = 0; i < 100; ++i) ASSERT_EQ(pool.run(body, nullptr, 16), 103);
}

// A task that launches 4 inner tasks and checks they run on its own thread.
struct NestedLaunch {
  std::atomic<int> inner_runs{0};
  std::atomic<int> inner_on_other_thread{0};
  std::atomic<int> inner_status{0};

  struct Inner {
    NestedLaunch* outer;
    std::thread::id thread;
  };
  static int32_t inner_body(int32_t, int32_t, void* closure) {
    auto* inner = static_cast<Inner*>(closure);
    inner->outer->inner_runs.fetch_add(1);
    if (std::this_thread::get_id() != inner->thread) inner->outer->inner_on_other_thread.fetch_add(1);
    return 0;
  }
  static int32_t outer_body(int32_t, int32_t, void* closure) {
    auto* self = static_cast<NestedLaunch*>(closure);
    Inner inner{self, std::this_thread::get_id()};
    self->inner_status.fetch_add(tessera_parallel_launch(&inner_body, &inner, 4));
    return 0;
  }
};

TEST(ThreadPool, NestedLaunchRunsSeriallyInsideTheTask) {
  ThreadPool pool(3);
  NestedLaunch nested;
  ParallelScope scope(&pool);
  EXPECT_EQ(tessera_parallel_launch(&NestedLaunch::outer_body, &nested, 3), 0);
  EXPECT_EQ(nested.inner_runs.load(), 12);
  EXPECT_EQ(nested.inner_on_other_thread.load(), 0);
  EXPECT_EQ(nested.inner_status.load(), 0);
}

TEST(ThreadPool, LaunchWithoutPoolRunsSeriallyInTheCaller) {
  ASSERT_EQ(ParallelScope::current(), nullptr);
  TaskLog log;
  EXPECT_EQ(tessera_parallel_launch(&TaskLog::body, &log, 5), 0);
  EXPECT_EQ(log.tasks, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(log.threads, std::set<std::thread::id>{std::this_thread::get_id()});
  TaskLog single;
  EXPECT_EQ(tessera_parallel_launch(&TaskLog::body, &single, 0), 0);
  EXPECT_EQ(single.num_tasks, std::vector<int32_t>{1});
}

TEST(ThreadPool, LaunchWithoutPoolPropagatesErrors) {
  auto body = [](int32_t task, int32_t, void*) -> int32_t { return task == 1 ? 9 : 0; };
  EXPECT_EQ(tessera_parallel_launch(body, nullptr, 3), 9);
}

TEST(ThreadPool, ScopeRestoresThePreviousPool) {
  ThreadPool outer_pool(2), inner_pool(2);
  {
    ParallelScope outer(&outer_pool);
    EXPECT_EQ(ParallelScope::current(), &outer_pool);
    {
      ParallelScope inner(&inner_pool);
      EXPECT_EQ(ParallelScope::current(), &inner_pool);
    }
    EXPECT_EQ(ParallelScope::current(), &outer_pool);
  }
  EXPECT_EQ(ParallelScope::current(), nullptr);
}

TEST(ThreadPool, ScopeIsPerThread) {
  ThreadPool pool(2);
  ParallelScope scope(&pool);
  ThreadPool* seen_elsewhere = &pool;
  std::thread([&] { seen_elsewhere = ParallelScope::current(); }).join();
  EXPECT_EQ(seen_elsewhere, nullptr);
}

TEST(ThreadPool, SingleThreadPoolRunsInTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1);
  TaskLog log;
  EXPECT_EQ(pool.run(&TaskLog::body, &log, 4), 0);
  EXPECT_EQ(log.task_set(), range(4));
  EXPECT_EQ(log.threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ThreadPool, NonPositiveSizeMeansOneThreadPerAllowedCpu) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.num_threads(), static_cast<int>(allowed_cpus().size()));
}

TEST(ThreadPool, PinsWorkersToAllowedCpus) {
  PoolOptions options;
  options.pin_threads = true;
  ThreadPool pool(3, options);
  EXPECT_TRUE(pool.status().is_ok()) << pool.status().to_string();
  SplitLoop loop;
  EXPECT_EQ(pool.run(&SplitLoop::body, &loop, 0), 0);
  EXPECT_TRUE(loop.each_ran_once());
}

TEST(ThreadPool, PinningToANonexistentCpuIsAnError) {
  PoolOptions options;
  options.pin_threads = true;
  options.cpus = {-1};
  ThreadPool pool(2, options);
  EXPECT_EQ(pool.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(pool.num_threads(), 2) << "the worker still runs, unpinned";
}

TEST(ThreadPool, ConcurrentLaunchersShareOnePool) {
  ThreadPool pool(2);
  std::atomic<int64_t> runs{0};
  auto body = [](int32_t, int32_t, void* closure) -> int32_t {
    static_cast<std::atomic<int64_t>*>(closure)->fetch_add(1);
    return 0;
  };
  auto launcher = [&] {
    ParallelScope scope(&pool);
    for (int i = 0; i < 2000; ++i) tessera_parallel_launch(body, &runs, 3);
  };
  std::thread a(launcher), b(launcher);
  a.join();
  b.join();
  EXPECT_EQ(runs.load(), 2 * 2000 * 3);
}

TEST(Workspace, AllocationsAreAlignedAndWritable) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{4096}, int64_t{1} << 22}) {
    auto* p = static_cast<uint8_t*>(tessera_workspace_alloc(n));
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i);
    tessera_workspace_free(p);
  }
  tessera_workspace_free(nullptr);
}

TEST(Workspace, NegativeSizeGivesNull) {
  EXPECT_EQ(tessera_workspace_alloc(-1), nullptr);
}

// A kernel called in a loop gets its scratch back without new pages: a freed
// block is handed out again to a request of the same size on that thread.
TEST(Workspace, AFreedBlockIsReusedBySameSizedRequests) {
  const int64_t n = int64_t{8} << 20;
  void* first = tessera_workspace_alloc(n);
  ASSERT_NE(first, nullptr);
  tessera_workspace_free(first);
  void* again = tessera_workspace_alloc(n);
  EXPECT_EQ(again, first);
  void* other = tessera_workspace_alloc(n);  // the cached block is taken: a new one
  EXPECT_NE(other, again);
  tessera_workspace_free(other);
  tessera_workspace_free(again);
  // A much smaller request does not take a big block.
  void* small = tessera_workspace_alloc(4096);
  EXPECT_NE(small, first);
  EXPECT_NE(small, other);
  tessera_workspace_free(small);
}

// Blocks may be freed on another thread than the one that allocated them.
TEST(Workspace, FreeingOnAnotherThreadIsSafe) {
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(tessera_workspace_alloc(1 << 16));
  std::thread t([&] {
    for (void* p : blocks) tessera_workspace_free(p);
  });
  t.join();
  void* p = tessera_workspace_alloc(1 << 16);
  ASSERT_NE(p, nullptr);
  static_cast<uint8_t*>(p)[0] = 1;
  tessera_workspace_free(p);
}

}  // namespace
}  // namespace tessera::runtime
