// The thread pool that runs the parallel loops of compiled kernels.
//
// There is no global pool ("nothing global", DESIGN.md): a caller creates a
// ThreadPool and installs it for its thread with a ParallelScope; the C entry
// point tessera_parallel_launch (c_abi.h) uses the pool installed for the
// calling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "runtime/c_abi.h"

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
  /// When the launching thread has run its own share, it also runs the shares
  /// no worker has started yet, instead of waiting for their workers: a
  /// worker whose core is busy with another process may not run for a
  /// scheduler tick (milliseconds, for a kernel of microseconds). Off, every
  /// share runs on its own participant (placement tests, traces that must
  /// show each worker).
  bool steal_late_shares = true;
};

/// When each participant of a ThreadPool ran its shares of each launch, for
/// traces (ThreadPool::set_timeline): a share the launching thread took over
/// from a late worker is recorded as its own (participant 0). Participant p
/// appends only to shares[p] and writes only thread_ids[p], so recording
/// takes no lock; read it after the launches it records have returned.
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
/// Task t of n belongs to share t % N, which participant t % N runs, so a
/// repeated launch touches the same data from the same thread (and core, when
/// pinned) — unless that worker has not started it by the time the launching
/// thread is done with its own (PoolOptions::steal_late_shares).
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
  // Takes share `share` of the current launch if nobody has: true once.
  bool claim(int share);
  // Runs share `share` on participant `runner` (the timeline's row).
  void run_share(int share, int runner);
  void run_tasks(int share);
  // The launcher's part after its own share: the shares no worker started.
  void run_late_shares();
  void finish_share();
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

  // Dispatch: workers wait for generation_ to change, claim their share
  // (open_[p] 1 -> 0; the launcher opens them before publishing a launch)
  // and count it done in pending_, the workers' shares not yet finished.
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<int32_t> sleeping_workers_{0};
  alignas(64) std::atomic<int32_t> pending_{0};
  std::atomic<int32_t> launcher_sleeping_{0};
  std::unique_ptr<std::atomic<uint32_t>[]> open_;  // per participant (0 unused)
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
