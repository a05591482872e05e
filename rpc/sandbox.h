// Isolated measurement: each job runs in a child process forked before the
// library is loaded, so a kernel that crashes, hangs or scribbles over memory
// takes only the child down. The parent (the worker) watches the child's pipe,
// enforces the timeout with SIGKILL, and classifies how the child ended.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "rpc/tessera.pb.h"
#include "base/status.h"

namespace tessera::rpc {

/// Where and how the child measures.
struct SandboxOptions {
  std::string temp_dir = "/tmp";  ///< each job gets a private directory here for its library file
  int threads = 1;                ///< ThreadPool size for the kernel's parallel loops
  std::vector<int> pin_cpus;      ///< pin the child and its pool to these CPUs (empty: no pinning)
  std::string worker_id;          ///< written into results
};

/// One running child. Owned by the worker's loop; poll `fd()` for input and
/// call `on_readable()`; when it returns true the child is finished and
/// `finish()` gives the classified result.
class Measurement {
 public:
  /// Forks a child that measures `job`. kIOError when fork or pipe fail.
  static Result<Measurement> start(const pb::Job& job, const SandboxOptions& options);

  Measurement(Measurement&& other) noexcept;
  Measurement& operator=(Measurement&&) = delete;
  Measurement(const Measurement&) = delete;
  /// Kills and reaps a child still running (the worker is shutting down).
  ~Measurement();

  int fd() const { return fd_; }
  pid_t pid() const { return pid_; }
  const pb::Job& job() const { return job_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  /// Reads what the child wrote; true once the pipe reached end of file.
  bool on_readable();
  /// Kills the child with SIGKILL (its timeout passed); finish() then reports TIMEOUT.
  void kill_for_timeout();
  /// Reaps the child and classifies: the child's report (OK, RUNTIME_ERROR,
  /// LOAD_ERROR, WRONG_ANSWER), TIMEOUT, or CRASH naming the signal.
  pb::Result finish();

 private:
  Measurement(pb::Job job, pid_t pid, int fd, std::string worker_id);

  pb::Job job_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string worker_id_;
  std::string report_;
  std::string job_dir_;  // private to this job; removed with whatever is left in it
  bool timed_out_ = false;
  std::chrono::steady_clock::time_point started_, deadline_;
};

/// Runs `job` in this process: load, fill inputs, optional reference check,
/// time. What the child does; exposed for tests of the classification.
pb::Result measure_in_process(const pb::Job& job, const SandboxOptions& options);

}  // namespace tessera::rpc
