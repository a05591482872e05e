// The measuring worker: connects to a tracker, registers under a device key,
// heartbeats from its own thread, and runs every job it is sent in an isolated
// child process (sandbox.h), one at a time unless told otherwise.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "rpc/log.h"
#include "rpc/sandbox.h"
#include "rpc/wire.h"

namespace tessera::rpc {

/// Everything a worker needs; the CLI (`tessera worker`, `tessera-worker`) fills it.
struct WorkerOptions {
  std::string tracker;                    ///< endpoint, e.g. tcp://10.0.0.2:9190 or ipc:///dir/tracker
  std::string device_key;                 ///< the queue this worker serves
  std::string target;                     ///< the target string its kernels are built for
  std::string worker_id;                  ///< unique in the farm; empty: hostname-pid
  std::vector<std::string> capabilities;  ///< reported in registration and farm status
  int max_jobs = 1;                       ///< concurrent jobs; 1 keeps measurements quiet
  int heartbeat_ms = 1000;
  SandboxOptions sandbox;
  SecurityOptions security;
  WireLimits limits;
  Log* log = nullptr;  ///< where the worker says what happens (not owned); null: silent
};

/// Counters a worker keeps (for tests and its log line at exit).
struct WorkerStats {
  uint64_t jobs_done = 0;
  uint64_t malformed_frames = 0;
  uint64_t registrations = 0;
};

/// A worker. run() blocks until `stop` becomes true; the jobs it still holds
/// are abandoned (children killed) and the tracker requeues them when the
/// worker's heartbeats stop.
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  /// Connects and serves. Errors: kInvalidArgument (bad options, plaintext on
  /// a non-loopback endpoint), kIOError (ZeroMQ refused to connect).
  Status run(const std::atomic<bool>& stop);
  WorkerStats stats() const;
  const WorkerOptions& options() const { return options_; }

 private:
  /// run() once its private directory exists.
  Status serve(const std::atomic<bool>& stop);

  WorkerOptions options_;
  std::atomic<uint64_t> jobs_done_{0}, malformed_{0}, registrations_{0};
};

}  // namespace tessera::rpc
