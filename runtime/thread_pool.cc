#include "runtime/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace tessera::runtime {
namespace {

// The pool tessera_parallel_launch uses on this thread (set by ParallelScope),
// and whether this thread is inside a task, where launches run serially.
thread_local ThreadPool* tls_pool = nullptr;
thread_local bool tls_in_task = false;

constexpr uint64_t kNoError = UINT64_MAX;

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex needs a plain 32-bit word");
static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t) && std::atomic<int32_t>::is_always_lock_free,
              "futex needs a plain 32-bit word");

template <typename T>
void futex_wait(std::atomic<T>* word, T expected) {
  // Returns at once when *word != expected, so a wake between our check and
  // the sleep is never lost.
  syscall(SYS_futex, reinterpret_cast<T*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

template <typename T>
void futex_wake(std::atomic<T>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<T*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

// Spins until done() or `spin_us` microseconds have passed; true when done().
// After a short burst of pauses it yields between checks: when there are more
// runnable threads than cores (a shared machine, an oversubscribed pool) a pure
// spin would hold the core the awaited thread needs.
template <typename Done>
bool spin_until(Done done, int spin_us) {
  constexpr uint32_t kPauseBurst = 128;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    if (i < kPauseBurst) {
      cpu_relax();
      continue;
    }
    sched_yield();
    // Reading the clock costs about as much as a check; look at it now and then.
    if ((i & 7) == 0 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

class InTaskGuard {
 public:
  InTaskGuard() : previous_(tls_in_task) { tls_in_task = true; }
  ~InTaskGuard() { tls_in_task = previous_; }

 private:
  bool previous_;
};

int32_t run_serially(TesseraParallelBody body, void* closure, int32_t n) {
  InTaskGuard in_task;
  int32_t first = 0;
  for (int32_t t = 0; t < n; ++t) {
    const int32_t st = body(t, n, closure);
    if (st != 0 && first == 0) first = st;
  }
  return first;
}

// Pins the calling thread: sched_setaffinity of pid 0, the caller itself,
// which a sandboxed job's filter allows where it refuses another thread's
// id (a filter cannot tell the pool's threads from another process's).
Status pin_self(int cpu, int participant) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return Status(ErrorCode::kInvalidArgument, "cannot pin worker " + std::to_string(participant) + " to CPU " +
                                                   std::to_string(cpu) + ": no such CPU");
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof(set), &set) != 0) {
    return Status(ErrorCode::kIOError, "cannot pin worker " + std::to_string(participant) + " to CPU " +
                                           std::to_string(cpu) + ": " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < (n > 0 ? n : 1); ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

ThreadPool::ThreadPool(int num_threads, PoolOptions options) : options_(std::move(options)) {
  const std::vector<int> cpus = options_.cpus.empty() ? allowed_cpus() : options_.cpus;
  if (num_threads <= 0) num_threads = static_cast<int>(allowed_cpus().size());
  workers_.reserve(num_threads > 1 ? num_threads - 1 : 0);
  open_ = std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(std::max(1, num_threads)));
  for (int p = 1; p < num_threads; ++p) {
    // Each worker pins itself first and says how that went.
    auto pinned = std::make_shared<std::promise<Status>>();
    std::future<Status> pin_status = pinned->get_future();
    std::optional<int> cpu;
    if (options_.pin_threads && status_.is_ok()) cpu = cpus[p % cpus.size()];
    try {
      workers_.emplace_back([this, p, cpu, pinned] {
        pinned->set_value(cpu ? pin_self(*cpu, p) : Status::ok());
        worker_loop(p);
      });
    } catch (const std::system_error& e) {
      status_ = Status(ErrorCode::kIOError, "cannot start worker " + std::to_string(p) + " of " +
                                                std::to_string(num_threads) + ": " + e.what());
      break;
    }
    Status st = pin_status.get();
    if (status_.is_ok() && !st.is_ok()) status_ = std::move(st);
  }
  // Workers read num_threads_ only after the first launch publishes it.
  num_threads_ = static_cast<int>(workers_.size()) + 1;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(&generation_, INT_MAX);
  }
  for (std::thread& worker : workers_) worker.join();
}

int32_t ThreadPool::run(TesseraParallelBody body, void* closure, int32_t num_tasks) {
  if (tls_in_task) return run_serially(body, closure, num_tasks > 0 ? num_tasks : 1);
  const int32_t n = num_tasks > 0 ? num_tasks : num_threads_;
  // One task needs no worker: waking them would cost a system call.
  if (workers_.empty() || n == 1) return run_serially(body, closure, n);

  std::lock_guard<std::mutex> lock(launch_mutex_);
  body_ = body;
  closure_ = closure;
  num_tasks_ = n;
  first_error_.store(kNoError, std::memory_order_relaxed);
  pending_.store(static_cast<int32_t>(workers_.size()), std::memory_order_relaxed);
  // Every share of the last launch was claimed: open them all for this one.
  // A claim (acquire) sees the job written above.
  for (int p = 1; p < num_threads_; ++p) open_[p].store(1, std::memory_order_release);
  // Publishes the job. seq_cst pairs with the workers' sleeping_workers_
  // increment so that either we see a sleeper and wake it, or it sees the bump.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) futex_wake(&generation_, INT_MAX);
  {
    InTaskGuard in_task;
    run_share(0, 0);
    if (options_.steal_late_shares) run_late_shares();
  }
  wait_for_workers();
  const uint64_t error = first_error_.load(std::memory_order_relaxed);
  return error == kNoError ? 0 : static_cast<int32_t>(static_cast<uint32_t>(error));
}

bool ThreadPool::claim(int share) {
  return open_[share].exchange(0, std::memory_order_acq_rel) == 1;
}

void ThreadPool::run_late_shares() {
  for (int p = 1; p < num_threads_; ++p) {
    if (!claim(p)) continue;  // its worker has it
    run_share(p, 0);
    finish_share();
  }
}

void ThreadPool::finish_share() {
  // seq_cst pairs with the launcher's launcher_sleeping_ store (see wait_for_workers).
  if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      launcher_sleeping_.load(std::memory_order_seq_cst) != 0) {
    futex_wake(&pending_, 1);
  }
}

void ThreadPool::run_share(int share, int runner) {
  PoolTimeline* const timeline = timeline_;
  const auto start = timeline ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  run_tasks(share);
  if (timeline) {
    const auto ns = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    timeline->shares[static_cast<size_t>(runner)].push_back({ns(start), ns(std::chrono::steady_clock::now())});
    timeline->thread_ids[static_cast<size_t>(runner)] = static_cast<int64_t>(syscall(SYS_gettid));
  }
}

void ThreadPool::run_tasks(int share) {
  const int32_t n = num_tasks_;
  for (int32_t t = share; t < n; t += num_threads_) {
    const int32_t st = body_(t, n, closure_);
    if (st == 0) continue;
    // The lowest task id wins, so the result does not depend on timing.
    const uint64_t key = (static_cast<uint64_t>(t) << 32) | static_cast<uint32_t>(st);
    uint64_t current = first_error_.load(std::memory_order_relaxed);
    while (key < current && !first_error_.compare_exchange_weak(current, key, std::memory_order_relaxed)) {
    }
  }
}

void ThreadPool::worker_loop(int participant) {
  tls_in_task = true;  // everything a worker runs is inside a task
  uint32_t seen = 0;   // no launch can precede the constructor's return
  for (;;) {
    seen = wait_for_generation_change(seen);
    if (stop_) return;
    // A worker late enough may claim its share of a newer launch than the
    // one it woke for: it reads that launch's job, which cannot end before
    // this share does. A share the launcher took is not run again.
    if (!claim(participant)) continue;
    run_share(participant, participant);
    finish_share();
  }
}

uint32_t ThreadPool::wait_for_generation_change(uint32_t seen) {
  uint32_t g = seen;
  auto changed = [&] { return (g = generation_.load(std::memory_order_acquire)) != seen; };
  if (spin_until(changed, options_.spin_us)) return g;
  sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
  while ((g = generation_.load(std::memory_order_seq_cst)) == seen) {
    futex_wait(&generation_, seen);
  }
  sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
  return g;
}

void ThreadPool::wait_for_workers() {
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done, options_.spin_us)) return;
  launcher_sleeping_.store(1, std::memory_order_seq_cst);
  for (int32_t left; (left = pending_.load(std::memory_order_seq_cst)) != 0;) {
    futex_wait(&pending_, left);
  }
  launcher_sleeping_.store(0, std::memory_order_relaxed);
}

ParallelScope::ParallelScope(ThreadPool* pool) : previous_(tls_pool) {
  tls_pool = pool;
}

ParallelScope::~ParallelScope() {
  tls_pool = previous_;
}

ThreadPool* ParallelScope::current() {
  return tls_pool;
}

}  // namespace tessera::runtime

extern "C" int32_t tessera_parallel_launch(TesseraParallelBody body, void* closure, int32_t num_tasks) {
  using tessera::runtime::tls_pool;
  if (tls_pool != nullptr) return tls_pool->run(body, closure, num_tasks);
  return tessera::runtime::run_serially(body, closure, num_tasks > 0 ? num_tasks : 1);
}
