// The thread pool that runs the parallel loops of compiled kernels.
//
// There is no global pool ("nothing global", DESIGN.md): a caller creates a
// ThreadPool and installs it for its thread with a ParallelScope; the C entry
// point tessera_parallel_launch (c_abi.h) uses the pool installed for the
// calling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/c_abi.h"
#include "base/status.h"

namespace tessera::runtime {

/// How a ThreadPool places and parks its workers.
struct PoolOptions {
  /// Pin each worker to one CPU with pthread_setaffinity_np.
  bool pin_threads = false;
  /// CPUs to pin to: worker i (1-based; 0 is the caller) goes to
  /// cpus[i % cpus.size()]. Empty means the CPUs this process may run on, in order.
  std::vector<int> cpus;
  /// How long an idle participant spins on the dispatch counter before it
  /// blocks in the kernel (futex). Spinning keeps back-to-back launches cheap.
  int spin_us = 200;
};

/// When each participant of a ThreadPool ran its share of each launch, for
/// traces (ThreadPool::set_timeline). Participant p appends only to
/// shares[p] and writes only thread_ids[p], so recording takes no lock; read
/// it after the launches it records have returned.
struct PoolTimeline {
  struct Share {
    int64_t start_ns = 0;  ///< steady_clock, since its epoch
    int64_t end_ns = 0;
  };
  explicit PoolTimeline(int participants)
      : shares(static_cast<size_t>(participants)), thread_ids(static_cast<size_t>(participants), 0) {}
  std::vector<std::vector<Share>> shares;  ///< per participant (0: the launching thread), in time order
  std::vector<int64_t> thread_ids;         ///< per participant: its OS thread id once it ran a share
};

/// A fixed set of N-1 persistent worker threads; the launching thread is the
/// N-th participant and runs task 0. Launches are serialized: one runs at a time.
/// Task t of n runs on participant t % N, so a repeated launch touches the same
/// data from the same thread (and core, when pinned).
class ThreadPool {
 public:
  /// A pool of `num_threads` participants (the caller included); <= 0 means one
  /// per CPU this process may run on. If a worker cannot be started, the pool
  /// keeps the ones that did (see num_threads() and status()).
  explicit ThreadPool(int num_threads, PoolOptions options = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Participants in a launch: the workers plus the caller.
  int num_threads() const { return num_threads_; }
  /// Ok, or what failed while starting or pinning the workers.
  const Status& status() const { return status_; }

  /// Runs body(t, n, closure) for t in [0, n), n = num_tasks if > 0 else
  /// num_threads(), and waits for all. Inside a task (a nested launch) the tasks
  /// run serially in the calling thread, with n = 1 when num_tasks <= 0. Every
  /// task runs; returns the status of the lowest-numbered failing task, else 0.
  int32_t run(TesseraParallelBody body, void* closure, int32_t num_tasks);

  /// Records every later launch's shares in `timeline` (num_threads()
  /// participants); nullptr stops. Call it from the launching thread, never
  /// during a launch. Off (the default), a share costs one pointer test more.
  void set_timeline(PoolTimeline* timeline) { timeline_ = timeline; }

 private:
  void worker_loop(int participant);
  void run_share(int participant);
  void run_tasks(int participant);
  uint32_t wait_for_generation_change(uint32_t seen);
  void wait_for_workers();

  PoolOptions options_;
  Status status_;
  int num_threads_ = 1;  // fixed once the constructor returns
  std::vector<std::thread> workers_;
  std::mutex launch_mutex_;  // one launch at a time

  // The job being run; written by the launcher before it bumps generation_.
  TesseraParallelBody body_ = nullptr;
  void* closure_ = nullptr;
  int32_t num_tasks_ = 0;
  std::atomic<uint64_t> first_error_{0};  // (task_id << 32 | status), min wins
  bool stop_ = false;
  PoolTimeline* timeline_ = nullptr;  // published to the workers with the job

  // Dispatch: workers wait for generation_ to change and ack through pending_.
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<int32_t> sleeping_workers_{0};
  alignas(64) std::atomic<int32_t> pending_{0};
  std::atomic<int32_t> launcher_sleeping_{0};
};

/// Installs `pool` as the calling thread's pool for tessera_parallel_launch
/// until the scope ends, then restores the previous one. nullptr installs none.
class ParallelScope {
 public:
  explicit ParallelScope(ThreadPool* pool);
  ~ParallelScope();
  ParallelScope(const ParallelScope&) = delete;
  ParallelScope& operator=(const ParallelScope&) = delete;

  /// The pool installed for the calling thread, or nullptr.
  static ThreadPool* current();

 private:
  ThreadPool* previous_;
};

/// The CPUs this process may run on (sched_getaffinity), in increasing order.
std::vector<int> allowed_cpus();

}  // namespace tessera::runtime
