// The sandbox a measured kernel runs in (rpc/sandbox.h): probe kernels
// (testdata/sandbox_probes.c) that try to reach outside their job, each
// classified, none with an effect outside the job, the worker alive after all.
#include "rpc/sandbox.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>

#include <cstdlib>
#include <map>
#include <tuple>
#include <vector>

#include "rpc/wire.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

// What the probes touch (sandbox_probes.c).
constexpr int kProbePort = 47311;
constexpr const char* kForkedMarker = "/tmp/tessera-sandbox-probe-forked";
constexpr const char* kWrittenMarker = "/tmp/tessera-sandbox-probe-written";

const std::string& probe_library() {
  static const std::string bytes = read_file(TESSERA_SANDBOX_PROBES_PATH);
  return bytes;
}

MeasureInput probe_input(const std::string& symbol, int timeout_ms = 5000) {
  MeasureInput in = kernel_input(symbol, timeout_ms);
  in.library = probe_library();
  return in;
}

bool exists(const char* path) {
  return ::access(path, F_OK) == 0;
}

bool forbidden_call(const pb::Result& r) {
  return r.error() == pb::CRASH && r.message().find("forbidden system call") != std::string::npos;
}

TEST(Sandbox, AWellBehavedKernelIsMeasuredInsideIt) {
  MeasureInput in = probe_input("probe_add_one");
  in.reference = add_one_reference();
  pb::Result r = run_sandboxed(in);
  EXPECT_EQ(r.error(), pb::OK) << r.message();
  EXPECT_EQ(r.costs_s_size(), 2);
}

// Cold timing sizes its sweep from the last-level cache, which sysfs
// reports: read before the lock-down, since the kernel filter opens no file.
// A whole report is the result at once, before the child has finished
// exiting; the child is killed and reaped with the Measurement, and its
// directory removed.
TEST(Sandbox, AWholeReportIsTheResultAndTheChildGoesWithTheMeasurement) {
  TempDir dir;
  SandboxOptions options;
  options.temp_dir = dir.path();
  options.isolate_network = probe_network_isolation().empty();
  pb::Job job = to_wire_job(probe_input("probe_add_one"));
  job.set_session_id("s");
  job.set_job_id(1);
  pid_t pid = -1;
  {
    auto m = Measurement::start(job, options);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    pid = m->pid();
    bool done = false;
    while (!done) {
      pollfd p{m->fd(), POLLIN, 0};
      ASSERT_GT(::poll(&p, 1, 5000), 0) << "no report within 5 s";
      done = m->on_readable();
    }
    const pb::Result r = m->finish();
    EXPECT_EQ(r.error(), pb::OK) << r.message();
    EXPECT_EQ(r.job_id(), 1u);
    EXPECT_GT(r.costs_s_size(), 0);
  }
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1) << "the child was not reaped";
  EXPECT_EQ(errno, ESRCH);
  DIR* d = ::opendir(dir.path().c_str());
  ASSERT_NE(d, nullptr);
  std::vector<std::string> left;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') left.push_back(e->d_name);
  ::closedir(d);
  EXPECT_TRUE(left.empty()) << left.front();
}

TEST(Sandbox, ColdCacheTimingWithACooldownRunsInsideIt) {
  MeasureInput in = probe_input("probe_add_one");
  in.timing.flush_cache = true;
  in.timing.cooldown_ms = 1;
  pb::Result r = run_sandboxed(in);
  EXPECT_EQ(r.error(), pb::OK) << r.message();
  EXPECT_EQ(r.costs_s_size(), 2);
}

// The jobs above run as a worker's do, forked by its launcher; without one
// (a launcher that could not start, or died) the worker forks them itself.
TEST(Sandbox, AJobForkedWithoutALauncherIsMeasured) {
  pb::Job job = to_wire_job(probe_input("probe_add_one"));
  job.set_session_id("s");
  job.set_job_id(1);
  SandboxOptions options;
  options.isolate_network = probe_network_isolation().empty();
  auto r = measure_job(job, options);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->error(), pb::OK) << r->message();
}

// A pool of every CPU (threads 0, the worker's default) is the same whether
// the launcher forks the child or the worker does.
TEST(Sandbox, ALaunchedJobGetsThePoolAForkedOneGets) {
  pb::Job job = to_wire_job(probe_input("probe_add_one"));
  job.set_session_id("s");
  job.set_job_id(1);
  SandboxOptions options;
  options.threads = 0;
  options.isolate_network = probe_network_isolation().empty();
  auto forked = measure_job(job, options);
  ASSERT_TRUE(forked.is_ok()) << forked.status().to_string();
  ASSERT_NE(test_launcher(), nullptr);
  auto launched = measure_job(job, options, test_launcher());
  ASSERT_TRUE(launched.is_ok()) << launched.status().to_string();
  EXPECT_EQ(launched->error(), pb::OK) << launched->message();
  EXPECT_EQ(launched->threads(), forked->threads());
  EXPECT_GT(launched->threads(), 0u);
}

TEST(Sandbox, AJobOutlivesItsLaunchersDeath) {
  auto launcher = start_measurement_launcher();
  ASSERT_TRUE(launcher.is_ok()) << launcher.status().to_string();
  ASSERT_EQ(::kill((*launcher)->pid(), SIGKILL), 0);
  pb::Job job = to_wire_job(probe_input("probe_add_one"));
  job.set_session_id("s");
  job.set_job_id(1);
  SandboxOptions options;
  options.isolate_network = probe_network_isolation().empty();
  auto r = measure_job(job, options, launcher->get());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->error(), pb::OK) << r->message();
  EXPECT_FALSE((*launcher)->alive());
}

TEST(Sandbox, ReadingEtcPasswdKillsTheJob) {
  pb::Result r = run_sandboxed(probe_input("probe_read_passwd"));
  EXPECT_TRUE(forbidden_call(r)) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
}

TEST(Sandbox, WritingAFileKillsTheJobAndNothingIsWritten) {
  ::unlink(kWrittenMarker);
  pb::Result r = run_sandboxed(probe_input("probe_write_file"));
  EXPECT_TRUE(forbidden_call(r)) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
  EXPECT_FALSE(exists(kWrittenMarker));
}

// A non-blocking socket listening on the probes' loopback port, or -1.
int listen_on_probe_port() {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kProbePort);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(listener, 4) == 0)
    return listener;
  ::close(listener);
  return -1;
}

TEST(Sandbox, OpeningASocketKillsTheJobAndNothingConnects) {
  const int listener = listen_on_probe_port();
  const bool listening = listener >= 0;
  pb::Result r = run_sandboxed(probe_input("probe_open_socket"));
  EXPECT_TRUE(forbidden_call(r)) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
  if (listening) EXPECT_LT(::accept(listener, nullptr, nullptr), 0) << "the probe reached the test's port";
  ::close(listener);
}

// The real uid of process `pid` (its /proc status), once it is no longer
// root (the child drops it as it starts): 0 if it never was within 3 s.
uint32_t uid_once_dropped(pid_t pid) {
  for (int i = 0; i < 300; ++i) {
    const std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
    const size_t at = status.find("\nUid:");
    if (at != std::string::npos) {
      const auto uid = static_cast<uint32_t>(std::strtoul(status.c_str() + at + 5, nullptr, 10));
      if (uid != 0) return uid;
    }
    ::usleep(10000);
  }
  return 0;
}

// One identity per job: a root worker's jobs run in turn as ids of their
// own from its range, so no job can signal, limit or read another's.
TEST(Sandbox, EachJobRunsAsAnIdOfItsOwn) {
  if (::geteuid() != 0) GTEST_SKIP() << "ids are a root worker's to give";
  SandboxOptions base;
  std::tie(base.job_uid_first, base.job_uid_count) = default_job_uids("host-1234");
  EXPECT_EQ(default_job_uids("host-1234"), std::make_pair(base.job_uid_first, base.job_uid_count));
  EXPECT_NE(default_job_uids("host-1235").first, base.job_uid_first);
  EXPECT_GE(base.job_uid_first, 1900000000u);
  EXPECT_EQ(base.job_uid_count, 256u);  // --max-jobs' most: a default range never falls short
  std::vector<uint32_t> uids;
  for (uint64_t sequence : {0, 1}) {
    pb::Job job = to_wire_job(probe_input("probe_loop_forever", 20000));
    job.set_session_id("s");
    job.set_job_id(sequence + 1);
    auto m = Measurement::start(job, options_for_job(base, sequence));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    uids.push_back(uid_once_dropped(m->pid()));
    m->kill_for_timeout();
    EXPECT_EQ(m->finish().error(), pb::TIMEOUT);
  }
  EXPECT_EQ(uids, (std::vector<uint32_t>{base.job_uid_first, base.job_uid_first + 1}));
  EXPECT_EQ(options_for_job(base, base.job_uid_count).unprivileged_uid, base.job_uid_first);  // in turn
  EXPECT_EQ(options_for_job(SandboxOptions(), 7).unprivileged_uid, 65534u);                   // no range: nobody
}

// A root worker's jobs share one network namespace, made once: a job in it
// (its filters off, so that the namespace alone is tested) reaches nothing.
TEST(Sandbox, TheSharedNetworkNamespaceReachesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "a shared namespace is a root worker's";
  Result<int> ns = make_network_namespace();
  ASSERT_TRUE(ns.is_ok()) << ns.status().to_string();
  const int listener = listen_on_probe_port();
  ASSERT_GE(listener, 0);
  SandboxOptions options;
  options.filter_system_calls = false;
  options.network_namespace = *ns;
  for (int job = 0; job < 2; ++job) {  // the namespace outlives a job
    pb::Result r = run_sandboxed(probe_input("probe_open_socket"), options);
    EXPECT_EQ(r.error(), pb::RUNTIME_ERROR) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
    EXPECT_NE(r.message().find("status 4"), std::string::npos) << r.message();  // its connect failed
  }
  EXPECT_LT(::accept(listener, nullptr, nullptr), 0) << "the probe reached the test's port";
  ::close(listener);
  ::close(*ns);
}

TEST(Sandbox, AKernelThatForksIsKilledAndLeavesNoProcess) {
  ::unlink(kForkedMarker);
  pb::Result r = run_sandboxed(probe_input("probe_fork"));
  EXPECT_TRUE(forbidden_call(r)) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a grandchild would have written by now
  EXPECT_FALSE(exists(kForkedMarker));
  ::unlink(kForkedMarker);
}

TEST(Sandbox, AllocatingPastTheAddressSpaceLimitFails) {
  pb::Result r = run_sandboxed(probe_input("probe_allocate_past_limit"));
  EXPECT_EQ(r.error(), pb::RUNTIME_ERROR) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
  EXPECT_NE(r.message().find("status 12"), std::string::npos) << r.message();
}

TEST(Sandbox, ExitingWithoutAResultIsACrashNotOk) {
  pb::Result r = run_sandboxed(probe_input("probe_exit_without_result"));
  EXPECT_EQ(r.error(), pb::CRASH) << r.message();
  EXPECT_NE(r.message().find("without a report"), std::string::npos) << r.message();
  EXPECT_EQ(r.costs_s_size(), 0);
}

TEST(Sandbox, SignallingTheWorkerKillsTheJobAndTheWorkerLives) {
  pb::Result r = run_sandboxed(probe_input("probe_kill_parent"));  // this test process is the parent
  EXPECT_TRUE(forbidden_call(r)) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
}

TEST(Sandbox, AnEndlessLoopIsATimeout) {
  const auto start = std::chrono::steady_clock::now();
  pb::Result r = run_sandboxed(probe_input("probe_loop_forever", 500));
  EXPECT_EQ(r.error(), pb::TIMEOUT) << r.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

// A job asleep uses no CPU time, so its CPU limit never comes: the
// worker's deadline kills it.
TEST(Sandbox, ASleepingKernelIsATimeout) {
  const auto start = std::chrono::steady_clock::now();
  pb::Result r = run_sandboxed(probe_input("probe_sleep_forever", 500));
  EXPECT_EQ(r.error(), pb::TIMEOUT) << r.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(Sandbox, NetworkIsolationIsAvailableOrSaysWhyNot) {
  const std::string why = probe_network_isolation();
  if (::geteuid() == 0) EXPECT_EQ(why, "");  // root can always make a network namespace
  if (!why.empty()) EXPECT_NE(why.find("CLONE_NEWNET"), std::string::npos) << why;
}

TEST(Sandbox, TheSystemCallFilterIsAvailableWhereTheKernelHasSeccomp) {
  if (read_file("/proc/self/status").find("\nSeccomp:") == std::string::npos)
    GTEST_SKIP() << "this kernel has no seccomp";
  EXPECT_EQ(probe_system_call_filter(), "");
}

// What a job typed into the terminal of the process that measured it, and
// how the job ended.
struct TerminalRun {
  pb::Result result;
  std::string typed;
};

// Measures `library`'s probe_add_one the way a worker started from an
// interactive shell would: in a process whose controlling terminal is a new
// pseudo-terminal in raw mode, which is then read for anything the job typed.
TerminalRun measure_on_a_terminal(const std::string& library) {
  TerminalRun run;
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    ADD_FAILURE() << "no pseudo-terminal: " << std::strerror(errno);
    return run;
  }
  const std::string terminal = ::ptsname(master);
  int report[2];
  EXPECT_EQ(::pipe(report), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {  // the worker's stand-in: no gtest assertions past here
    ::close(report[0]);
    ::setsid();
    const int tty = ::open(terminal.c_str(), O_RDWR);  // a session leader's first terminal is its controlling one
    termios mode{};
    ::tcgetattr(tty, &mode);
    ::cfmakeraw(&mode);
    ::tcsetattr(tty, TCSANOW, &mode);
    MeasureInput in = probe_input("probe_add_one");
    in.library = library;
    const pb::Result result = run_sandboxed(in);
    ::fcntl(tty, F_SETFL, O_NONBLOCK);
    std::string typed(256, '\0');
    const ssize_t n = ::read(tty, typed.data(), typed.size());
    typed.resize(n > 0 ? static_cast<size_t>(n) : 0);
    const uint32_t length = static_cast<uint32_t>(typed.size());
    std::string bytes(reinterpret_cast<const char*>(&length), sizeof length);
    bytes += typed + result.SerializeAsString();
    const bool written = ::write(report[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(report[1]);
  std::string bytes;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(report[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) bytes.append(buf, static_cast<size_t>(n));
  ::close(report[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  uint32_t length = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.size() < sizeof length) {
    ADD_FAILURE() << "the stand-in worker ended without a report (status " << status << ")";
    return run;
  }
  std::memcpy(&length, bytes.data(), sizeof length);
  run.typed = bytes.substr(sizeof length, length);
  run.result.ParseFromString(bytes.substr(sizeof length + length));
  return run;
}

// A worker started from a root shell: a job that reached that shell's
// terminal could stop the worker (^Z) and type the shell's next command.
// The job has no controlling terminal, so /dev/tty does not open.
// A sandbox the worker cannot set up is the machine's failure, not the
// schedule's: a worker that may not raise its CPU-time limit (not root, a
// hard limit of 3 s under the 5 s job's 6) gets SANDBOX_ERROR naming the
// limit, an infrastructure error the tuner stores as such and measures
// again. Run in a child process, which drops root for good.
TEST(Sandbox, ALimitTheWorkerCannotRaiseIsASandboxError) {
  const MeasureInput in = probe_input("probe_add_one");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit low{3, 3};
    if (::setrlimit(RLIMIT_CPU, &low) != 0) ::_exit(10);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(11);
    pb::Job job = to_wire_job(in);
    job.set_session_id("s");
    job.set_job_id(1);
    SandboxOptions options;
    options.isolate_network = false;
    const Result<pb::Result> r = measure_job(job, options);
    if (!r.is_ok()) ::_exit(12);
    const bool named = r->message().find("setrlimit(RLIMIT_CPU)") != std::string::npos;
    ::_exit(r->error() == pb::SANDBOX_ERROR && named ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: dropping root, 12: start, 13: not a sandbox error";
  EXPECT_TRUE(is_infrastructure_error(MeasureErrorKind::kSandboxError));
  EXPECT_STREQ(measure_error_kind_name(MeasureErrorKind::kSandboxError), "sandbox-error");
}

TEST(Sandbox, AJobCannotTypeIntoTheWorkersTerminal) {
  TerminalRun run = measure_on_a_terminal(read_file(TESSERA_TERMINAL_PROBE_TTY_PATH));
  EXPECT_EQ(run.typed, "");
  EXPECT_EQ(run.result.error(), pb::OK) << run.result.message();
}

// Typing into any descriptor the job holds is a forbidden call, classified
// as such; no terminal receives a byte.
TEST(Sandbox, TypingIntoATerminalKillsTheJob) {
  TerminalRun run = measure_on_a_terminal(read_file(TESSERA_TERMINAL_PROBE_STDIN_PATH));
  EXPECT_EQ(run.typed, "");
  if (probe_system_call_filter().empty())
    EXPECT_TRUE(forbidden_call(run.result)) << pb::ErrorKind_Name(run.result.error()) << ": " << run.result.message();
}

class LoaderProbe : public ::testing::TestWithParam<const char*> {};

// A library's constructor that signals another process, changes or reads
// its limits, or clears its own death signal is killed while it loads,
// and classified as a forbidden call.
TEST_P(LoaderProbe, IsKilledAsAForbiddenCall) {
  if (!probe_system_call_filter().empty()) GTEST_SKIP() << "no seccomp filter here";
  MeasureInput in = probe_input("probe_add_one");
  in.library = read_file(std::string(TESSERA_LOADER_PROBE_DIR) + "/libtessera_loader_probe_" + GetParam() + ".so");
  ASSERT_FALSE(in.library.empty());
  pb::Result r = run_sandboxed(in);
  EXPECT_TRUE(forbidden_call(r)) << GetParam() << ": " << pb::ErrorKind_Name(r.error()) << ": " << r.message();
}

INSTANTIATE_TEST_SUITE_P(Probes, LoaderProbe,
                         ::testing::Values("prlimit", "sigqueue", "pdeathsig", "ptracer", "threads", "selfkill",
                                           "selfterm"));

// Where jobs share a uid (a worker not run as root, or every job as
// nobody), a job must still not slow another: a process of the job's uid
// (a neighbour's job) cannot have its CPUs, niceness or scheduling changed
// by a library's constructor; the calls fail and the job runs.
TEST(Sandbox, AJobCannotChangeANeighboursSchedulingOrPriority) {
  if (!probe_system_call_filter().empty()) GTEST_SKIP() << "no seccomp filter here";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a neighbour as the jobs' uid";
  const SandboxOptions options;
  const pid_t neighbour = ::fork();
  ASSERT_GE(neighbour, 0);
  if (neighbour == 0) {
    if (::setgid(options.unprivileged_gid) != 0 || ::setuid(options.unprivileged_uid) != 0) ::_exit(1);
    for (;;) ::pause();
  }
  // As they were: the test itself may run niced (the neighbour inherits it).
  const int nice_before = ::getpriority(PRIO_PROCESS, static_cast<id_t>(neighbour));
  const int policy_before = ::sched_getscheduler(neighbour);
  ::setenv("TESSERA_PROBE_NEIGHBOUR", std::to_string(neighbour).c_str(), 1);
  MeasureInput in = probe_input("probe_add_one");
  in.library = read_file(std::string(TESSERA_LOADER_PROBE_DIR) + "/libtessera_loader_probe_neighbour.so");
  pb::Result r = run_sandboxed(in, options);
  ::unsetenv("TESSERA_PROBE_NEIGHBOUR");
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(neighbour));
  const int policy = ::sched_getscheduler(neighbour);
  ::kill(neighbour, SIGKILL);
  ::waitpid(neighbour, nullptr, 0);
  EXPECT_EQ(r.error(), pb::OK) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
  EXPECT_EQ(nice, nice_before);
  EXPECT_EQ(policy, policy_before);
}

// A running kernel that raises SIGKILL on itself is a forbidden call, not
// a job killed from outside.
TEST(Sandbox, AKernelKillingItselfIsAForbiddenCall) {
  if (!probe_system_call_filter().empty()) GTEST_SKIP() << "no seccomp filter here";
  pb::Result r = run_sandboxed(probe_input("probe_kill_self"));
  EXPECT_TRUE(forbidden_call(r)) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
}

// abort() raises SIGABRT on the job's own pid, which the kernel filter
// allows: the filters, compiled once in the worker, carry each job's pid.
TEST(Sandbox, AKernelThatAbortsDiesBySigabrtNotByTheFilter) {
  pb::Result r = run_sandboxed(probe_input("probe_abort"));
  EXPECT_EQ(r.error(), pb::CRASH);
  EXPECT_NE(r.message().find("SIGABRT"), std::string::npos) << r.message();
}

// A job killed from outside (an operator's SIGTERM to its group, the OOM
// killer's SIGKILL) is the machine's failure: KILLED, an infrastructure
// error that is measured again, never a CRASH of its schedule.
TEST(Sandbox, AJobKilledFromOutsideIsInfrastructureNotACrash) {
  for (int signal : {SIGTERM, SIGKILL}) {
    pb::Job job = to_wire_job(probe_input("probe_loop_forever", 20000));
    job.set_session_id("s");
    job.set_job_id(1);
    auto m = Measurement::start(job, SandboxOptions());
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    ::usleep(300 * 1000);  // loaded and spinning
    ASSERT_EQ(::kill(m->pid(), signal), 0);
    while (true) {
      pollfd p{m->fd(), POLLIN, 0};
      if (::poll(&p, 1, 5000) > 0 && m->on_readable()) break;
    }
    const pb::Result r = m->finish();
    EXPECT_EQ(r.error(), pb::KILLED) << strsignal(signal) << ": " << r.message();
    EXPECT_NE(r.message().find("killed from outside the job"), std::string::npos) << r.message();
    EXPECT_TRUE(is_infrastructure_error(static_cast<MeasureErrorKind>(r.error())));
  }
  EXPECT_STREQ(measure_error_kind_name(MeasureErrorKind::kKilled), "killed");
}

// Every probe through a real worker process: each classified, the worker
// serving a good kernel after all of them.
TEST(Sandbox, TheWorkerSurvivesEveryProbe) {
  ::unlink(kForkedMarker);
  ::unlink(kWrittenMarker);
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  ClientOptions o;
  o.tracker = tracker.endpoint();
  o.security = plaintext();
  o.sync_ms = 200;
  auto client = RpcClient::connect(o);
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  const std::map<std::string, MeasureErrorKind> expected = {
      {"probe_read_passwd", MeasureErrorKind::kCrash},
      {"probe_write_file", MeasureErrorKind::kCrash},
      {"probe_open_socket", MeasureErrorKind::kCrash},
      {"probe_fork", MeasureErrorKind::kCrash},
      {"probe_kill_parent", MeasureErrorKind::kCrash},
      {"probe_exit_without_result", MeasureErrorKind::kCrash},
      {"probe_loop_forever", MeasureErrorKind::kTimeout},
      {"probe_allocate_past_limit", MeasureErrorKind::kRuntimeError},
  };
  std::map<uint64_t, std::string> name;
  for (const auto& [symbol, kind] : expected) name[(*client)->submit(probe_input(symbol, 1000), "k")] = symbol;
  auto results = collect(**client, name.size(), 30000);
  ASSERT_EQ(results.size(), name.size());
  for (const auto& [id, r] : results) EXPECT_EQ(r.error, expected.at(name[id])) << name[id] << ": " << r.message;
  EXPECT_TRUE(worker->alive());
  EXPECT_FALSE(exists(kForkedMarker));
  EXPECT_FALSE(exists(kWrittenMarker));
  MeasureInput good = probe_input("probe_add_one");
  good.reference = add_one_reference();
  const uint64_t id = (*client)->submit(good, "k");
  auto after = collect(**client, 1, 10000);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].first, id);
  EXPECT_TRUE(after[0].second.ok()) << after[0].second.message;
}

}  // namespace
}  // namespace tessera::rpc
