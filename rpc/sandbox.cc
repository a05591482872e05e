#include "rpc/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>

#include "rpc/launcher.h"
#include "rpc/measure_kernel.h"
#include "rpc/measure_packages.h"
#include "rpc/seccomp_filter.h"
#include "rpc/wire.h"
#include "runtime/cold_arguments.h"
#include "runtime/module.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = sigdescr_np(sig);
  return std::string("SIG") + (abbrev ? abbrev : std::to_string(sig).c_str()) + " (" + (desc ? desc : "?") + ")";
}

}  // namespace

pb::Result measure_in_process(const pb::Job& job, const SandboxOptions& options) {
  const auto none = [] { return Status::ok(); };
  return job.has_package_timing() ? measure_packages(job, options, none) : measure_kernel(job, options, none, none);
}

namespace {

// Removes a job's private directory and whatever a crashed child left in it
// (load_from_bytes unlinks its file, unless dlopen itself killed the child).
void remove_job_dir(const std::string& dir) {
  if (dir.empty()) return;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        ::unlink((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// Open files a job may hold: dlopen's few, with room to spare.
constexpr rlim_t kMaxOpenFiles = 64;
// Address space beyond what the job's buffers need: the runtime, the C
// library, what the worker's image already maps, the allocator's slack.
constexpr uint64_t kAddressSpaceSlack = uint64_t{512} << 20;
// Each pool thread: its stack and the allocator's arena reservation.
constexpr uint64_t kAddressSpacePerThread = uint64_t{72} << 20;

// Report on fd 3, /dev/null on 0-2, nothing else open: the child cannot touch
// the worker's sockets, its log or anything else it inherited.
Status confine_descriptors(int report_fd) {
  if (report_fd != kReportFd && ::dup2(report_fd, kReportFd) < 0)
    return Status(ErrorCode::kIOError, std::string("dup2: ") + std::strerror(errno));
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return Status(ErrorCode::kIOError, std::string("/dev/null: ") + std::strerror(errno));
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  if (::close_range(kReportFd + 1, ~0U, 0) != 0) {
    for (int fd = kReportFd + 1; fd < 65536; ++fd) ::close(fd);
  }
  return Status::ok();
}

uint64_t bytes_mapped_now() {
  unsigned long long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// What the job can need: its library and reference (on the wire and loaded),
// its buffers, the copies of its cold buffers, the pool's threads.
// A package job's: each package on the wire, parsed, its library written
// and loaded, its arena; every executor's pool and a backend's own threads;
// a backend's libraries and scratch.
constexpr uint64_t kPackageJobSlack = uint64_t{1} << 30;
uint64_t address_space_limit(const pb::Job& job, const SandboxOptions& options) {
  const uint64_t threads = static_cast<uint64_t>(std::max(options.threads, 1));
  if (job.has_package_timing()) {
    uint64_t bytes = 0;
    for (const std::string& p : job.package_timing().packages()) bytes += p.size();
    const uint64_t pools = static_cast<uint64_t>(job.package_timing().packages_size()) + 1;
    return bytes_mapped_now() + 4 * bytes + pools * threads * kAddressSpacePerThread + kPackageJobSlack;
  }
  uint64_t args = 0, cold = 0;
  for (const auto& a : job.args()) {
    DType dtype;
    DType::parse(a.dtype(), &dtype);  // validated by the worker's loop
    uint64_t n = static_cast<uint64_t>(dtype.storage_bytes());
    for (int64_t d : a.shape()) n *= static_cast<uint64_t>(d);
    args += n;
    if (a.cold()) cold += n;
  }
  return bytes_mapped_now() + 2 * job.library().size() + 2 * job.reference().expected_output().size() + 2 * args +
         cold + static_cast<uint64_t>(runtime::kColdArgumentBytes) + threads * kAddressSpacePerThread +
         kAddressSpaceSlack;
}

Status set_limit(int resource, rlim_t soft, rlim_t hard, const char* name) {
  const rlimit limit{soft, hard};
  if (::setrlimit(resource, &limit) != 0)
    return Status(ErrorCode::kIOError, std::string("setrlimit(") + name + "): " + std::strerror(errno));
  return Status::ok();
}

// CPU seconds the job may use: its timeout on every thread of the pool, and
// one more; the hard limit a second later. The worker's SIGKILL at the
// deadline usually comes first.
rlim_t cpu_seconds(const pb::Job& job, const SandboxOptions& options) {
  // A package job's pools spin while another package runs, and a backend
  // may run a thread team of its own: twice the threads.
  const int threads = std::max(options.threads, 1) * (job.has_package_timing() ? 2 : 1);
  const double seconds = job.timeout_ms() / 1000.0 * threads;
  return static_cast<rlim_t>(std::ceil(seconds)) + 1;
}

// The threads a package job may have once it loads: every executor's pool,
// a backend's team, the main thread, twice over. RLIMIT_NPROC counts a
// user's tasks, so it bounds a job only under an identity or in a user
// namespace of its own.
rlim_t package_job_threads(const pb::Job& job, const SandboxOptions& options) {
  const auto threads = static_cast<rlim_t>(std::max(options.threads, 1));
  const auto packages = static_cast<rlim_t>(job.package_timing().packages_size());
  return 2 * (packages + 2) * threads + 16;
}

// Everything but the kernel filter, in an order that works: the network
// namespace needs the worker's privileges, the new user drops them, the
// parent-death signal must follow the change of user (which clears it).
Status contain_child(const pb::Job& job, const SandboxOptions& options, const std::string& job_dir, pid_t parent) {
  const bool root = ::geteuid() == 0;
  const bool new_network = options.isolate_network && options.network_namespace < 0;
  // A worker not run as root makes a user namespace with the network one.
  const bool own_user_namespace = !root && new_network;
  if (new_network && ::unshare(root ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET) != 0)
    return Status(ErrorCode::kIOError, std::string("no network namespace: ") + std::strerror(errno));
  const rlim_t cpu = cpu_seconds(job, options);
  TESSERA_RETURN_IF_ERROR(set_limit(RLIMIT_CPU, cpu, cpu + 1, "RLIMIT_CPU"));
  const rlim_t as = address_space_limit(job, options);
  TESSERA_RETURN_IF_ERROR(set_limit(RLIMIT_AS, as, as, "RLIMIT_AS"));
  TESSERA_RETURN_IF_ERROR(set_limit(RLIMIT_NOFILE, kMaxOpenFiles, kMaxOpenFiles, "RLIMIT_NOFILE"));
  if (root) {
    const uid_t uid = options.unprivileged_uid;
    const gid_t gid = options.unprivileged_gid;
    if (::chown(job_dir.c_str(), uid, gid) != 0 || ::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
        ::setresuid(uid, uid, uid) != 0)
      return Status(ErrorCode::kIOError, "cannot run as uid " + std::to_string(uid) + ": " + std::strerror(errno));
    if (::geteuid() == 0 || ::setuid(0) == 0) return Status(ErrorCode::kIOError, "still root after dropping it");
  }
  // A kernel job's load is sealed against new threads by a filter; a package
  // job's backend starts threads as it loads, so they are bounded instead.
  // RLIMIT_NPROC counts the tasks of a user in a user namespace: it bounds
  // the job alone under an identity of its own (a root worker's job ids) or
  // in a user namespace of its own (a worker not run as root).
  const bool counted_alone = root ? options.job_uid_count > 0 : own_user_namespace;
  if (job.has_package_timing() && counted_alone) {
    const rlim_t tasks = package_job_threads(job, options);
    TESSERA_RETURN_IF_ERROR(set_limit(RLIMIT_NPROC, tasks, tasks, "RLIMIT_NPROC"));
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);     // a kernel that loops must not outlive a killed worker
  if (::getppid() != parent) ::_exit(1);  // it died before the line above
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  if (!options.pin_cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu_index : options.pin_cpus) CPU_SET(cpu_index, &set);
    ::sched_setaffinity(0, sizeof set, &set);
  }
  // The AMX tile registers are granted now or never: the filters forbid
  // arch_prctl. A CPU without them answers no, and a module that needs
  // them is then refused at load with that answer.
  (void)runtime::request_tile_registers();
  return options.filter_system_calls ? install_loader_filter() : Status::ok();
}

// The last step, once the library is loaded and the pool runs: no new task
// (the pool's threads exist; RLIMIT_NPROC is checked at clone), and the
// kernel filter.
Status lock_down(bool filter_system_calls) {
  TESSERA_RETURN_IF_ERROR(set_limit(RLIMIT_NPROC, 1, 1, "RLIMIT_NPROC"));
  return filter_system_calls ? install_kernel_filter() : Status::ok();
}

// A child's report: its length, then the serialized result
// (Measurement::complete_report reads it).
void write_report(int fd, const pb::Result& result) {
  std::string bytes;
  result.SerializeToString(&bytes);
  const uint64_t length = bytes.size();
  write_all(fd, std::string(reinterpret_cast<const char*>(&length), sizeof length) + bytes);
}

// The child: contain, measure, report, _exit.
[[noreturn]] void run_child(const pb::Job& job, const SandboxOptions& options, int report_fd, pid_t parent) {
  ::prctl(PR_SET_NAME, "tessera-job");  // as ps shows it, beside its worker and the launcher
  // A session of its own, and so a process group the worker can kill whole
  // and no controlling terminal: a job that could open the worker's terminal
  // could type into the shell that started it.
  Status contained =
      ::setsid() < 0 ? Status(ErrorCode::kIOError, std::string("setsid: ") + std::strerror(errno)) : Status::ok();
  // The worker's network namespace, entered before its descriptor is closed
  // with the others.
  if (contained.is_ok() && options.isolate_network && options.network_namespace >= 0 &&
      ::setns(options.network_namespace, CLONE_NEWNET) != 0)
    contained = Status(ErrorCode::kIOError, std::string("cannot enter the network namespace: ") + std::strerror(errno));
  if (contained.is_ok()) contained = confine_descriptors(report_fd);
  const int out_fd = contained.is_ok() ? kReportFd : report_fd;
  // The job's directory becomes the working directory, its library a name
  // in it: the unprivileged user needs no way through the directories above
  // (a local runner's are private to root).
  SandboxOptions inside = options;
  if (contained.is_ok() && ::chdir(options.temp_dir.c_str()) != 0)
    contained = Status(ErrorCode::kIOError, "cannot enter " + options.temp_dir + ": " + std::strerror(errno));
  inside.temp_dir = ".";
  if (contained.is_ok()) contained = contain_child(job, options, options.temp_dir, parent);
  const auto seal = [&] { return options.filter_system_calls ? install_no_new_threads_filter() : Status::ok(); };
  const auto lock = [&] { return lock_down(options.filter_system_calls); };
  pb::Result result = !contained.is_ok()
                          ? error_result(job, pb::SANDBOX_ERROR,
                                         "the sandbox could not be set up: " + contained.message(), options.worker_id)
                      : job.has_package_timing() ? measure_packages(job, inside, lock)
                                                 : measure_kernel(job, inside, seal, lock);
  write_report(out_fd, result);
  ::_exit(0);
}

// What a launched child must be told: the job and its options, which a
// forked child would have found in the worker's memory.
pb::ChildTask task_of(const pb::Job& job, const SandboxOptions& options, pid_t parent) {
  pb::ChildTask task;
  *task.mutable_job() = job;
  task.set_temp_dir(options.temp_dir);
  task.set_threads(options.threads);
  for (int cpu : options.pin_cpus) task.add_pin_cpus(cpu);
  task.set_worker_id(options.worker_id);
  task.set_isolate_network(options.isolate_network);
  task.set_filter_system_calls(options.filter_system_calls);
  task.set_uid(options.unprivileged_uid);
  task.set_gid(options.unprivileged_gid);
  task.set_job_uid_first(options.job_uid_first);
  task.set_job_uid_count(options.job_uid_count);
  task.set_network_namespace(options.isolate_network && options.network_namespace >= 0);
  task.set_worker_pid(parent);
  return task;
}

SandboxOptions options_of(const pb::ChildTask& task, int network_namespace) {
  SandboxOptions o;
  o.temp_dir = task.temp_dir();
  o.threads = task.threads();
  o.pin_cpus.assign(task.pin_cpus().begin(), task.pin_cpus().end());
  o.worker_id = task.worker_id();
  o.isolate_network = task.isolate_network();
  o.filter_system_calls = task.filter_system_calls();
  o.unprivileged_uid = task.uid();
  o.unprivileged_gid = task.gid();
  o.job_uid_first = task.job_uid_first();
  o.job_uid_count = task.job_uid_count();
  o.network_namespace = network_namespace;
  return o;
}

// A child the launcher forked: its task's memory file, the report's pipe
// and the namespace to enter when there is one. A task it cannot read is
// the worker's failure, reported as such (the worker stamps the job's ids).
[[noreturn]] void run_launched_child(const std::vector<int>& fds) {
  pb::ChildTask task;
  if (fds.size() < 2 || ::lseek(fds[0], 0, SEEK_SET) != 0 || !task.ParseFromFileDescriptor(fds[0])) {
    if (fds.size() >= 2)
      write_report(fds[1], error_result(pb::Job(), pb::SANDBOX_ERROR, "the child could not read its job", ""));
    ::_exit(0);
  }
  ::close(fds[0]);
  const int network_namespace = task.network_namespace() && fds.size() > 2 ? fds[2] : -1;
  run_child(task.job(), options_of(task, network_namespace), fds[1], task.worker_pid());
}

// Has `launcher` fork the child; kUnavailable when it is gone.
Result<pid_t> launch_child(Launcher& launcher, const pb::Job& job, const SandboxOptions& options, int report_fd) {
  const int task = ::memfd_create("tessera-job", MFD_CLOEXEC);
  if (task < 0) return Status(ErrorCode::kIOError, std::string("memfd_create: ") + std::strerror(errno));
  std::vector<int> fds = {task, report_fd};
  if (options.isolate_network && options.network_namespace >= 0) fds.push_back(options.network_namespace);
  Result<pid_t> pid = task_of(job, options, ::getpid()).SerializeToFileDescriptor(task)
                          ? launcher.launch(fds)
                          : Result<pid_t>(Status(ErrorCode::kIOError, "cannot write the job for its child"));
  ::close(task);
  return pid;
}

// A child forked from this process.
Result<pid_t> fork_child(const pb::Job& job, const SandboxOptions& options, int report_fd) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status(ErrorCode::kIOError, std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) run_child(job, options, report_fd, parent);
  return pid;
}

}  // namespace

Result<std::unique_ptr<Launcher>> start_measurement_launcher() {
  prepare_filters();  // in the launcher's memory: its children only install them
  return Launcher::start(&run_launched_child);
}

namespace {

// Reaps a probe's child; one that has not exited within 5 s (an emulator
// can wedge a forked child) is killed and counts as a failed probe.
bool reap_probe(pid_t pid, int* status) {
  for (int waited_ms = 0; waited_ms < 5000; ++waited_ms) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return false;
}

}  // namespace

std::string probe_system_call_filter() {
  prepare_filters();  // before the fork, as for a job: the child only installs them
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("cannot create a pipe: ") + std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::string("cannot fork: ") + std::strerror(errno);
  }
  if (pid == 0) {
    const Status st = install_loader_filter();
    if (!st.is_ok()) write_all(fds[1], st.message());
    ::_exit(st.is_ok() ? 0 : 1);
  }
  ::close(fds[1]);
  int status = 0;
  if (!reap_probe(pid, &status)) {
    ::close(fds[0]);
    return "the probe did not finish";
  }
  std::string why;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) why.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return why.empty() ? "the probe died" : why;
}

std::string probe_network_isolation() {
  const int flags = ::geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET;
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("cannot fork: ") + std::strerror(errno);
  if (pid == 0) ::_exit(::unshare(flags) == 0 ? 0 : errno);
  int status = 0;
  if (!reap_probe(pid, &status)) return "the probe did not finish";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return std::string("unshare(") + (flags & CLONE_NEWUSER ? "CLONE_NEWUSER|" : "") +
         "CLONE_NEWNET): " + (WIFEXITED(status) ? std::strerror(WEXITSTATUS(status)) : "the probe died");
}

std::pair<uint32_t, uint32_t> default_job_uids(const std::string& worker_id) {
  // As many ids as the most jobs a worker runs at once (--max-jobs 256):
  // the default never falls short, whatever --max-jobs says.
  constexpr uint32_t kBase = 1900000000, kRanges = 100000, kPerWorker = 256;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : worker_id) h = (h ^ c) * 1099511628211ull;
  return {kBase + static_cast<uint32_t>(h % kRanges) * kPerWorker, kPerWorker};
}

SandboxOptions options_for_job(const SandboxOptions& options, uint64_t sequence) {
  SandboxOptions o = options;
  if (options.job_uid_count > 0) {
    o.unprivileged_uid = options.job_uid_first + static_cast<uint32_t>(sequence % options.job_uid_count);
    o.unprivileged_gid = o.unprivileged_uid;
  }
  return o;
}

Result<int> make_network_namespace() {
  if (::geteuid() != 0) return Status(ErrorCode::kUnavailable, "entering a network namespace takes root");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status(ErrorCode::kIOError, std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status(ErrorCode::kIOError, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // makes the namespace, says so, and waits to be killed
    const char made = ::unshare(CLONE_NEWNET) == 0 ? 1 : 0;
    (void)!::write(fds[1], &made, 1);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  char made = 0;
  ssize_t n;
  while ((n = ::read(fds[0], &made, 1)) < 0 && errno == EINTR) {
  }
  ::close(fds[0]);
  int ns = -1;
  if (n == 1 && made) ns = ::open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
  const int error = errno;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (ns < 0)
    return Status(ErrorCode::kUnavailable, std::string("cannot make a network namespace: ") +
                                               (n == 1 && made ? std::strerror(error) : "refused"));
  return ns;
}

Result<Measurement> Measurement::start(const pb::Job& job, const SandboxOptions& options, Launcher* launcher) {
  if (options.filter_system_calls) prepare_filters();  // the child only installs them
  std::string job_dir = options.temp_dir + "/tessera-job-XXXXXX";
  if (!::mkdtemp(job_dir.data()))
    return Status(ErrorCode::kIOError,
                  "cannot create a job directory in " + options.temp_dir + ": " + std::strerror(errno));
  SandboxOptions child_options = options;
  child_options.temp_dir = job_dir;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    remove_job_dir(job_dir);
    return Status(ErrorCode::kIOError, std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  // The child makes its own session and group (setsid fails in a group
  // leader, so the parent must not make the group): until it has, the kills
  // below reach it by its pid. A launcher that is gone leaves the forking
  // to this process.
  Result<pid_t> launched = launcher && launcher->alive()
                               ? launch_child(*launcher, job, child_options, fds[1])
                               : Result<pid_t>(Status(ErrorCode::kUnavailable, "no launcher"));
  if (!launched.is_ok() && launched.status().code() == ErrorCode::kUnavailable)
    launched = fork_child(job, child_options, fds[1]);
  ::close(fds[1]);
  if (!launched.is_ok()) {
    ::close(fds[0]);
    remove_job_dir(job_dir);
    return launched.status();
  }
  const pid_t pid = *launched;
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  Measurement m(job, pid, fds[0], options.worker_id);
  m.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 on kernels before 5.3: polled instead
  m.job_dir_ = job_dir;
  m.cpu_limit_s_ = static_cast<long>(cpu_seconds(job, options));
  return m;
}

namespace {

// Whether child `pid` has exited (without reaping it) or does within
// `grace`: woken by its pidfd when there is one (a child exits within a
// millisecond of closing its report), else by polling.
bool exits_within(pid_t pid, int pidfd, std::chrono::milliseconds grace) {
  const auto until = Clock::now() + grace;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0)));
      if (n > 0) return true;
      if (n == 0) return false;
      if (errno != EINTR) break;  // poll refused the pidfd: poll the old way
    }
  }
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      return true;  // no such child to wait for: nothing runs
    }
    if (info.si_pid != 0) return true;
    if (Clock::now() >= until) return false;
    ::usleep(500);
  }
}

// Whether a job that died by `signal` was killed from outside. A fault
// raises SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGTRAP, abort() SIGABRT, the
// CPU limit SIGXCPU, the filter SIGSYS; the filters kill a job that raises
// one of kOutsideSignals on itself, and the worker's own SIGKILL is a
// timeout. So one of those comes from an operator, the OOM killer, the host
// stopping.
bool killed_from_outside(int signal) {
  return std::find(std::begin(kOutsideSignals), std::end(kOutsideSignals), signal) != std::end(kOutsideSignals);
}

}  // namespace

Measurement::Measurement(pb::Job job, pid_t pid, int fd, std::string worker_id)
    : job_(std::move(job)), pid_(pid), fd_(fd), worker_id_(std::move(worker_id)) {
  started_ = Clock::now();
  deadline_ = started_ + std::chrono::milliseconds(job_.timeout_ms());
}

Measurement::Measurement(Measurement&& other) noexcept
    : job_(std::move(other.job_)),
      pid_(other.pid_),
      fd_(other.fd_),
      pidfd_(other.pidfd_),
      worker_id_(std::move(other.worker_id_)),
      report_(std::move(other.report_)),
      job_dir_(std::move(other.job_dir_)),
      timed_out_(other.timed_out_),
      cpu_limit_s_(other.cpu_limit_s_),
      started_(other.started_),
      deadline_(other.deadline_) {
  other.pid_ = -1;
  other.fd_ = -1;
  other.pidfd_ = -1;
  other.job_dir_.clear();
}

Measurement::~Measurement() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);  // the whole group: whatever the child started dies with it
    ::kill(pid_, SIGKILL);   // in case it had not yet made its group
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (fd_ >= 0) ::close(fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
  remove_job_dir(job_dir_);
}

namespace {

// The longest report a child may write: a result with its costs.
constexpr uint64_t kMaxReportBytes = uint64_t{1} << 26;

}  // namespace

std::optional<std::string_view> Measurement::complete_report() const {
  uint64_t length = 0;
  if (report_.size() < sizeof length) return std::nullopt;
  std::memcpy(&length, report_.data(), sizeof length);
  if (length > kMaxReportBytes || report_.size() - sizeof length != length) return std::nullopt;
  return std::string_view(report_).substr(sizeof length);
}

bool Measurement::on_readable() {
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      if (report_.size() <= kMaxReportBytes) report_.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // EOF: the child exited or closed its end. EAGAIN: more to come, unless
    // the report is whole (the child's exit, which takes a while, need not
    // be waited for).
    return n == 0 || complete_report().has_value();
  }
}

void Measurement::kill_for_timeout() {
  timed_out_ = true;
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

pb::Result Measurement::finish() {
  const std::optional<std::string_view> report = timed_out_ ? std::nullopt : complete_report();
  pb::Result reported;
  if (report && !report->empty() && reported.ParseFromArray(report->data(), static_cast<int>(report->size()))) {
    // A whole report is the job's result: the child is exiting, and is killed
    // and reaped with the Measurement, once the result is on its way.
    return stamped(std::move(reported));
  }
  int status = 0;
  bool killed_here = false;
  if (pid_ > 0) {
    // A child still running once its report ended (it closed the pipe) is
    // killed here: its own doing, not the machine's. A dying process closes
    // its files before it can be waited for, so it gets a moment to finish.
    killed_here = !exits_within(pid_, pidfd_, std::chrono::milliseconds(200));
    // The group dies with the job, before the reap: until then the child's
    // pid (the group's id) cannot be reused.
    ::kill(-pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  // The job's directory goes with the Measurement, after its result is sent.
  pb::Result result;
  if (timed_out_) {
    result = error_result(job_, pb::TIMEOUT,
                          "killed after the job's timeout of " + std::to_string(job_.timeout_ms()) + " ms", worker_id_);
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
    result = error_result(job_, pb::TIMEOUT,
                          "killed after its CPU time limit of " + std::to_string(cpu_limit_s_) + " s", worker_id_);
  } else if (WIFSIGNALED(status) && !killed_here && killed_from_outside(WTERMSIG(status))) {
    result = error_result(job_, pb::KILLED,
                          "the measuring process was killed from outside the job by " + signal_text(WTERMSIG(status)) +
                              ": not the schedule's doing, measured again",
                          worker_id_);
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
    result =
        error_result(job_, pb::CRASH, "the sandbox killed the measuring process: a forbidden system call", worker_id_);
  } else if (WIFSIGNALED(status)) {
    result =
        error_result(job_, pb::CRASH, "the measuring process died by " + signal_text(WTERMSIG(status)), worker_id_);
  } else {
    // No whole report (an empty one would parse as an empty OK result: a
    // kernel that exits early, _exit(0), must not pass for a measurement).
    result = error_result(
        job_, pb::CRASH,
        "the measuring process exited with status " + std::to_string(WEXITSTATUS(status)) + " without a report",
        worker_id_);
  }
  return stamped(std::move(result));
}

pb::Result Measurement::stamped(pb::Result result) const {
  // The child's report names the job it measured; keep the ids authoritative.
  result.set_job_id(job_.job_id());
  result.set_session_id(job_.session_id());
  result.set_attempt(job_.attempt());
  result.set_worker_id(worker_id_);
  result.set_run_seconds(std::chrono::duration<double>(Clock::now() - started_).count());
  return result;
}

}  // namespace tessera::rpc
