// The runners the tuner measures with. Both go through a tracker and workers:
// RpcRunner talks to a farm's tracker; LocalRunner starts a private tracker and
// N worker processes on this machine over ipc:// sockets, so local
// measurement is the same code path as the farm.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "rpc/client.h"
#include "rpc/measure_types.h"

namespace tessera::rpc {

/// Measures built kernels. The interface the tuner's Measurer uses.
class Runner {
 public:
  virtual ~Runner() = default;
  /// One result per input, in the same order; a failed measurement is a
  /// result with its error kind, not an error. The Status is for the runner
  /// itself failing (e.g. the tracker refused our key).
  virtual Result<std::vector<MeasureResult>> run(const std::vector<MeasureInput>& inputs) = 0;

  /// While `*cancel` is true (checked every 100 ms and before submitting),
  /// run() cancels the jobs it has in flight and returns kUnavailable
  /// ("cancelled") instead of results, so nothing of the batch is stored.
  /// The flag may be set by a signal handler; it must outlive the runs. Null: never.
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  /// How many workers serve this runner's device key now (asked of the
  /// tracker, as `tessera farm status` does). kUnavailable when the tracker
  /// does not answer; kNotFound for a runner that cannot tell.
  virtual Result<int> count_workers() const {
    return Status(ErrorCode::kNotFound, "this runner cannot count its workers");
  }
  /// The device key this runner measures on, for messages ("" when it has none).
  virtual std::string device_key() const { return ""; }
  /// Seconds since the farm's tracker last answered, for a runner that
  /// talks to one (0 for a runner that does not): how long a farm had been
  /// silent when the measurements that failed for it gave up.
  virtual double seconds_since_tracker_heard() const { return 0; }

 protected:
  /// True once the caller has asked to cancel (see set_cancel).
  bool cancelled() const { return cancel_ != nullptr && cancel_->load(); }
  const std::atomic<bool>* cancel_ = nullptr;  ///< see set_cancel
};

/// Where a farm's tracker is and which workers to use.
struct RpcRunnerOptions {
  std::string tracker;  ///< e.g. tcp://farm:9190
  SecurityOptions security;
  std::string device_key;  ///< the workers to measure on
  std::string session_id;  ///< empty: random (fair share between sessions)
  /// Longest a job may take from submission to result (queue wait included);
  /// past it the job is cancelled and reported as kTimeout. 0: 2 × its
  /// timeout_ms + 60 s.
  int deadline_ms = 0;
  /// A batch whose tracker has not answered for this long (it answers every
  /// sync while jobs are outstanding) is given up: its jobs are kNoResult
  /// at once rather than at their deadlines.
  int tracker_silence_ms = 10000;
};

/// Submits a batch to a tracker and collects the results as they complete.
class RpcRunner final : public Runner {
 public:
  /// Connects (ZeroMQ connects in the background; a tracker that is not up
  /// yet is waited for until the jobs' deadlines).
  static Result<std::unique_ptr<RpcRunner>> connect(RpcRunnerOptions options);
  /// Submits every input and waits for each result or its deadline (see RpcRunnerOptions).
  Result<std::vector<MeasureResult>> run(const std::vector<MeasureInput>& inputs) override;
  /// As run(), and calls `on_result(index, result)` for each input as its
  /// result arrives (completion order), before returning them all.
  Result<std::vector<MeasureResult>> run(const std::vector<MeasureInput>& inputs,
                                         const std::function<void(size_t, const MeasureResult&)>& on_result);
  /// Asks the tracker, as `tessera farm status` does, whether it answers and
  /// has a worker of this runner's device key. Errors: kUnavailable whose
  /// message gives the reason and the farm's keys with their workers.
  Status check_workers(int timeout_ms = 3000) const;
  /// The tracker's count of workers of this runner's device key.
  Result<int> count_workers() const override;
  std::string device_key() const override { return options_.device_key; }
  double seconds_since_tracker_heard() const override;
  /// This runner's session (fair share is per session).
  const std::string& session_id() const { return client_->session_id(); }

 private:
  RpcRunner(RpcRunnerOptions options, std::unique_ptr<RpcClient> client)
      : options_(std::move(options)), client_(std::move(client)) {}
  RpcRunnerOptions options_;
  std::unique_ptr<RpcClient> client_;
};

class Tracker;

/// A private measurement farm on this machine.
struct LocalRunnerOptions {
  int num_workers = 1;
  std::string worker_binary;  ///< empty: tessera-worker beside this executable
  std::string device_key = "local";
  int threads_per_worker = 1;  ///< ThreadPool size of each measurement
  bool pin_workers = false;    ///< pin worker i (and its kernels) to CPU i mod #CPUs
  int heartbeat_ms = 1000;
  int dead_after_ms = 3000;
  int deadline_ms = 0;             ///< as RpcRunnerOptions::deadline_ms
  int start_timeout_ms = 10000;    ///< for every worker to register
  std::string temp_base = "/tmp";  ///< where the private directory is made
};

/// Starts a tracker (a thread of this process) and N worker processes over
/// ipc:// sockets in a private directory (mkdtemp, mode 0700; plaintext is
/// safe there because only this user can enter it). Each worker runs in a
/// session of its own, so a terminal's Ctrl-C (SIGINT to the foreground
/// process group) reaches this process only; a worker still dies with this
/// process (PR_SET_PDEATHSIG), whatever kills it. Everything stops on
/// destruction. A program that leaves SIGINT at its default disposition gets
/// a handler that stops the workers, removes the directory and re-raises; a
/// program with its own SIGINT handler (installed before the first start())
/// keeps it, and calls stop_local_workers_from_signal() when it gives up.
class LocalRunner final : public Runner {
 public:
  /// Starts everything and waits until every worker has registered. Errors:
  /// kNotFound (no worker binary), kIOError, kUnavailable (workers did not come up).
  static Result<std::unique_ptr<LocalRunner>> start(LocalRunnerOptions options);
  /// Stops the workers (SIGTERM, then SIGKILL after 3 s), the tracker, and removes the directory.
  ~LocalRunner() override;
  /// Measures on the local workers, exactly as RpcRunner::run on a farm.
  Result<std::vector<MeasureResult>> run(const std::vector<MeasureInput>& inputs) override;
  /// The private tracker's count of live local workers.
  Result<int> count_workers() const override { return rpc_->count_workers(); }
  std::string device_key() const override { return options_.device_key; }
  double seconds_since_tracker_heard() const override { return rpc_->seconds_since_tracker_heard(); }

  /// The tracker's endpoint (ipc://DIR/tracker).
  const std::string& endpoint() const { return endpoint_; }
  /// The private directory.
  const std::string& directory() const { return dir_; }
  /// Process ids of the workers.
  const std::vector<pid_t>& worker_pids() const { return pids_; }

 private:
  LocalRunner() = default;
  void shutdown();

  LocalRunnerOptions options_;
  std::string dir_, endpoint_;
  std::unique_ptr<Tracker> tracker_;
  std::atomic<bool> stop_tracker_{false};
  std::thread tracker_thread_;
  std::vector<pid_t> pids_;
  int cleanup_slot_ = -1;
  std::unique_ptr<RpcRunner> rpc_;
};

/// Async-signal-safe: sends SIGTERM to the workers of every live LocalRunner
/// and removes their sockets and directories, for a signal handler that is
/// about to _exit(). The runners' destructors do this on an orderly exit.
void stop_local_workers_from_signal();

/// The directory of the running executable (/proc/self/exe), for finding
/// tessera-worker beside it.
std::string executable_dir();

}  // namespace tessera::rpc
