// Isolated measurement: each job runs in a child process forked before the
// library is loaded, so a kernel that crashes, hangs or scribbles over memory
// takes only the child down. The parent (the worker) watches the child's pipe,
// enforces the timeout with SIGKILL to the child's process group, and
// classifies how the child ended.
//
// The child is contained before it loads anything: its own process group,
// resource limits sized from the job, an unprivileged user when the worker is
// root, a network namespace of its own where the kernel allows one, and two
// seccomp filters (seccomp_filter.h). docs/protocol.md says what this
// guarantees and what it does not.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "rpc/tessera.pb.h"

namespace tessera::rpc {

/// Where and how the child measures.
struct SandboxOptions {
  std::string temp_dir = "/tmp";  ///< each job gets a private directory here for its library file
  int threads = 1;                ///< ThreadPool size for the kernel's parallel loops
  std::vector<int> pin_cpus;      ///< pin the child and its pool to these CPUs (empty: no pinning)
  std::string worker_id;          ///< written into results
  bool isolate_network = true;    ///< each job in a new network namespace (probe_network_isolation says whether it can)
  bool filter_system_calls = true;    ///< the seccomp filters (probe_system_call_filter says whether it can)
  uint32_t unprivileged_uid = 65534;  ///< who a root worker's jobs run as (nobody)
  uint32_t unprivileged_gid = 65534;  ///< and their group (nogroup)
  /// One identity per job: a root worker's jobs run in turn as uids (and
  /// gids of the same number) job_uid_first .. job_uid_first +
  /// job_uid_count - 1, ids of no user, so that no job can signal, limit,
  /// trace or read the files of another job or worker (options_for_job).
  /// 0 ids: every job as unprivileged_uid/gid.
  uint32_t job_uid_first = 0;
  uint32_t job_uid_count = 0;
  /// A network namespace (an open /proc/PID/ns/net) that every job of a root
  /// worker enters instead of making its own: make_network_namespace, once.
  /// -1: each job makes one (unshare), which cost 0.7 ms a job on a Sapphire
  /// Rapids guest and about 10 ms on a Zen 5 guest's newer kernel.
  int network_namespace = -1;
};

/// The ids a root worker's jobs run as unless told (`tessera worker
/// --job-uids`): 256 of them (the most jobs a worker runs at once), a range
/// chosen from `worker_id` among 100,000 ranges above 1,900,000,000, far
/// from any user's (two workers of one host share a range once in about
/// 100,000 pairs). {first, count}.
std::pair<uint32_t, uint32_t> default_job_uids(const std::string& worker_id);

/// `options` for the worker's job number `sequence`: its uid and gid the
/// range's next (as unprivileged_uid/gid), or `options` as they are
/// without a range.
SandboxOptions options_for_job(const SandboxOptions& options, uint64_t sequence);

/// A new network namespace with nothing in it but a loopback device that is
/// down, kept open for the jobs to enter (SandboxOptions::network_namespace;
/// close it when done). Root only: entering one takes CAP_SYS_ADMIN.
/// kUnavailable when this process is not root or the kernel refuses.
Result<int> make_network_namespace();

/// Whether this machine lets a job's child enter a network namespace of its
/// own (a new one as root, a user namespace with one otherwise): tried once
/// in a throwaway child. Empty when it can; otherwise why not.
std::string probe_network_isolation();

/// Whether this kernel takes the jobs' seccomp filters (an emulator such as
/// qemu-user does not): tried once in a throwaway child. Empty when it does;
/// otherwise why not.
std::string probe_system_call_filter();

class Launcher;

/// A launcher (launcher.h) whose children measure jobs: started once by a
/// worker, early, and given to Measurement::start. The filters are compiled
/// first, so that its children only install them.
Result<std::unique_ptr<Launcher>> start_measurement_launcher();

/// One running child. Owned by the worker's loop; poll `fd()` for input and
/// call `on_readable()`; when it returns true the child is finished and
/// `finish()` gives the classified result.
class Measurement {
 public:
  /// Forks a child that measures `job`: through `launcher` when there is
  /// one still alive, else from this process. kIOError when the fork, the
  /// pipe or the job's directory fail.
  static Result<Measurement> start(const pb::Job& job, const SandboxOptions& options, Launcher* launcher = nullptr);

  Measurement(Measurement&& other) noexcept;
  Measurement& operator=(Measurement&&) = delete;
  Measurement(const Measurement&) = delete;
  /// Kills and reaps a child still running (the worker is shutting down).
  ~Measurement();

  int fd() const { return fd_; }
  pid_t pid() const { return pid_; }
  const pb::Job& job() const { return job_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  /// Reads what the child wrote; true once its report is whole or the pipe
  /// reached end of file.
  bool on_readable();
  /// Kills the child's process group with SIGKILL (its timeout passed);
  /// finish() then reports TIMEOUT.
  void kill_for_timeout();
  /// The child's whole report when there is one (the child is killed and
  /// reaped with the Measurement, after the result is on its way);
  /// otherwise kills what is left of the child's process group, reaps the
  /// child and classifies: the child's report (OK, RUNTIME_ERROR, LOAD_ERROR,
  /// WRONG_ANSWER), TIMEOUT (also past its CPU time limit), or CRASH naming
  /// the signal (a forbidden system call included) or an exit without a report.
  pb::Result finish();

 private:
  Measurement(pb::Job job, pid_t pid, int fd, std::string worker_id);
  /// The report's payload once all of it has arrived (the child writes its
  /// length, then the serialized result).
  std::optional<std::string_view> complete_report() const;
  /// `result` with the job's ids, this worker and the run's time.
  pb::Result stamped(pb::Result result) const;

  pb::Job job_;
  pid_t pid_ = -1;
  int fd_ = -1;
  int pidfd_ = -1;  // the child's pidfd: woken by its exit
  std::string worker_id_;
  std::string report_;
  std::string job_dir_;  // private to this job; removed with whatever is left in it
  bool timed_out_ = false;
  long cpu_limit_s_ = 0;  // the child's RLIMIT_CPU, for the message when it hits it
  std::chrono::steady_clock::time_point started_, deadline_;
};

/// Runs `job` in this process: load, fill inputs, optional reference check,
/// time. What the child does; exposed for tests of the classification.
pb::Result measure_in_process(const pb::Job& job, const SandboxOptions& options);

}  // namespace tessera::rpc
