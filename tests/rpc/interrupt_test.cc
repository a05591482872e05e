// `tessera tune` as a person runs it: at a real terminal (a pty), Ctrl-C
// once finishes the batch, twice drops it; the local workers never see the
// terminal's SIGINT, and nothing the interrupt causes is stored as a
// measurement. Also: a farm that cannot measure is found before anything is
// measured, and a run whose every trial fails says so.
#include <dirent.h>
#include <poll.h>
#include <pty.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "records/store.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT
using Clock = std::chrono::steady_clock;

/// A command on its own pseudo-terminal: the terminal's foreground process
/// group, as when a person types it, so ^C is SIGINT from the line discipline.
class Terminal {
 public:
  explicit Terminal(std::vector<std::string> argv) {
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }
  /// Types ^C (the line discipline turns it into SIGINT to the foreground group).
  void press_ctrl_c() { ASSERT_EQ(::write(master_, "\x03", 1), 1); }
  /// Reads what the command printed for up to `ms`.
  void drain(int ms) {
    pollfd p{master_, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return;
    char buf[4096];
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n > 0) output_.append(buf, static_cast<size_t>(n));
  }
  /// Waits up to `ms` for the exit; its exit code, -1 if still running, 128+N if killed by signal N.
  int wait_exit(int ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < until) {
      drain(50);
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        for (int i = 0; i < 10; ++i) drain(20);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int master_ = -1;
  std::string output_;
};

// The local workers of tuner PID (they carry "--id local-PID-i"), or with
// `children`, their measuring children (named tessera-job; a worker's
// launcher is its child too): the measurements in flight.
std::vector<pid_t> workers_of(pid_t tuner, bool children = false) {
  const std::string needle = "--id local-" + std::to_string(tuner) + "-";
  std::vector<pid_t> workers, forked;
  std::map<pid_t, pid_t> parent;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const pid_t pid = std::atoi(e->d_name);
    std::string cmdline = read_file(std::string("/proc/") + e->d_name + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos && cmdline.find("tessera-worker") != std::string::npos)
      workers.push_back(pid);
    const std::string stat = read_file(std::string("/proc/") + e->d_name + "/stat");
    const size_t paren = stat.rfind(')');  // "pid (comm) state ppid ..."
    if (paren != std::string::npos) parent[pid] = std::atoi(stat.c_str() + paren + 4);
  }
  if (proc) ::closedir(proc);
  // A measurement is forked without exec: it has its worker's command line.
  const std::vector<pid_t> matching = workers;
  workers.clear();
  for (pid_t pid : matching)
    if (std::find(matching.begin(), matching.end(), parent[pid]) == matching.end()) workers.push_back(pid);
  if (!children) return workers;
  for (const auto& [pid, ppid] : parent)
    if (std::find(workers.begin(), workers.end(), ppid) != workers.end() &&
        read_file("/proc/" + std::to_string(pid) + "/comm") == "tessera-job\n")
      forked.push_back(pid);
  return forked;
}

int processes_with(pid_t tuner) {
  return static_cast<int>(workers_of(tuner).size());
}

bool wait_until(const std::function<bool()>& done, int ms, Terminal* terminal = nullptr) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < until) {
    if (done()) return true;
    if (terminal)
      terminal->drain(50);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// The records of `db` by error kind, and the successful trials (sketch
// candidates, not the untuned default "[]").
struct Counts {
  std::map<std::string, int> kinds;
  int ok_trials = 0;
  int infrastructure() const {
    int n = 0;
    for (const char* k : {"no-worker", "no-result", "timeout", "protocol-error"}) n += kinds.count(k) ? kinds.at(k) : 0;
    return n;
  }
};

Counts count_records(const std::string& db) {
  Counts c;
  records::OpenOptions o;
  o.read_only = true;
  auto store = records::Store::open(db, o);
  if (!store.is_ok()) return c;
  auto all = store->list({});
  if (!all.is_ok()) return c;
  for (const records::Record& r : *all) {
    ++c.kinds[r.error_kind];
    if (r.ok() && r.space == records::SpaceKind::kSketch && r.steps_json != "[]") ++c.ok_trials;
  }
  return c;
}

// A tune of one matmul whose batches take a while (each candidate is timed
// for >= 3 × 50 ms), on one local worker.
std::vector<std::string> tune_argv(const std::string& db, int trials, int batch = 4) {
  return {bin_dir() + "/tessera",
          "tune",
          "--op",
          "matmul:M=128,N=128,K=128",
          "--trials",
          std::to_string(trials),
          "--batch",
          std::to_string(batch),
          "--workers",
          "1",
          "--threads",
          "1",
          "--db",
          db};
}

constexpr int kBudget = 24;

TEST(Interrupt, CtrlCAtATerminalFinishesTheBatchAndAResumeMeasuresTheRest) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  Terminal terminal(tune_argv(db, kBudget));
  // Pressed once the first batch is stored, while a measurement of the
  // second is running (the worker has forked it).
  ASSERT_TRUE(wait_until([&] { return count_records(db).ok_trials > 0; }, 240000, &terminal)) << terminal.output();
  ASSERT_TRUE(wait_until([&] { return !workers_of(terminal.pid(), true).empty(); }, 60000, &terminal));
  const int workers = processes_with(terminal.pid());
  EXPECT_EQ(workers, 1);
  terminal.press_ctrl_c();
  terminal.drain(300);
  // The terminal's SIGINT did not reach the worker: it measures the batch to its end.
  EXPECT_EQ(processes_with(terminal.pid()), workers) << terminal.output();
  const pid_t tuner = terminal.pid();
  ASSERT_EQ(terminal.wait_exit(120000), 130) << terminal.output();
  EXPECT_NE(terminal.output().find("stopped by Ctrl-C after the batch"), std::string::npos) << terminal.output();
  EXPECT_TRUE(wait_until([&] { return processes_with(tuner) == 0; }, 5000));

  Counts first = count_records(db);
  EXPECT_EQ(first.infrastructure(), 0) << terminal.output();
  EXPECT_EQ(first.kinds.size(), 1u) << "only ok records: " << terminal.output();
  ASSERT_GT(first.ok_trials, 0);
  ASSERT_LT(first.ok_trials, kBudget);

  // The rest of the budget, measured by a resumed run.
  std::string out;
  std::vector<std::string> argv = tune_argv(db, kBudget - first.ok_trials);
  std::string command;
  for (const auto& a : argv) command += a + " ";
  FILE* pipe = ::popen((command + "2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  Counts second = count_records(db);
  EXPECT_EQ(second.ok_trials, kBudget) << out;
  EXPECT_EQ(second.infrastructure(), 0) << out;
}

TEST(Interrupt, SecondCtrlCStopsAtOnceAndStoresNothingOfTheBatch) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  // Batches of 8 (>= 8 × 150 ms of timing): both presses land in the second.
  Terminal terminal(tune_argv(db, kBudget, 8));
  ASSERT_TRUE(wait_until([&] { return count_records(db).ok_trials > 0; }, 240000, &terminal)) << terminal.output();
  ASSERT_TRUE(wait_until([&] { return !workers_of(terminal.pid(), true).empty(); }, 60000, &terminal));
  const pid_t tuner = terminal.pid();
  terminal.press_ctrl_c();
  // The second press once the first was handled, as a person reads the
  // message: two SIGINTs pending at once are delivered as one.
  ASSERT_TRUE(wait_until([&] { return terminal.output().find("stopping after this batch") != std::string::npos; },
                         10000, &terminal))
      << terminal.output();
  terminal.press_ctrl_c();
  const auto pressed = Clock::now();
  ASSERT_EQ(terminal.wait_exit(20000), 130) << terminal.output();
  EXPECT_LT(Clock::now() - pressed, std::chrono::seconds(8)) << terminal.output();
  EXPECT_NE(terminal.output().find("stopped by Ctrl-C at once (the batch in flight was dropped)"), std::string::npos)
      << terminal.output();
  EXPECT_TRUE(wait_until([&] { return processes_with(tuner) == 0; }, 5000));
  Counts c = count_records(db);
  EXPECT_EQ(c.infrastructure(), 0) << terminal.output();
  EXPECT_EQ(c.kinds.size(), 1u) << "only ok records: " << terminal.output();
  EXPECT_EQ(c.ok_trials, 8) << "the first batch only: " << terminal.output();
}

TEST(Interrupt, WorkersDieWithATerminatedTuner) {
  TempDir dir;
  Terminal terminal(tune_argv(dir.path() + "/t.db", kBudget));
  const pid_t tuner = terminal.pid();
  ASSERT_TRUE(wait_until([&] { return processes_with(tuner) == 1; }, 60000, &terminal)) << terminal.output();
  // The worker's --temp-dir is the runner's private directory.
  const std::vector<pid_t> worker = workers_of(tuner);
  ASSERT_EQ(worker.size(), 1u);
  std::string cmdline = read_file("/proc/" + std::to_string(worker[0]) + "/cmdline");
  const size_t flag = cmdline.find(std::string("--temp-dir") + '\0');
  ASSERT_NE(flag, std::string::npos);
  const std::string private_dir = cmdline.c_str() + flag + std::strlen("--temp-dir") + 1;
  ASSERT_EQ(::access(private_dir.c_str(), F_OK), 0) << private_dir;
  ::kill(tuner, SIGTERM);
  EXPECT_EQ(terminal.wait_exit(10000), 128 + SIGTERM) << terminal.output();
  EXPECT_TRUE(wait_until([&] { return processes_with(tuner) == 0; }, 5000));
  EXPECT_TRUE(wait_until([&] { return ::access(private_dir.c_str(), F_OK) != 0; }, 5000)) << private_dir;
  // The tuner closed its session before it died.
  records::OpenOptions o;
  o.read_only = true;
  auto store = records::Store::open(dir.path() + "/t.db", o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto sessions = store->sessions();
  ASSERT_TRUE(sessions.is_ok()) << sessions.status().to_string();
  ASSERT_EQ(sessions->size(), 1u);
  EXPECT_TRUE(sessions->front().ended.has_value());
}

// Runs a shell command; its exit code, stdout+stderr in `out`, the seconds it took in `seconds`.
int run(const std::string& command, std::string* out, double* seconds = nullptr) {
  const auto start = Clock::now();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  const int status = ::pclose(pipe);
  if (seconds) *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(FailFast, UnreachableTrackerStopsBeforeMeasuring) {
  TempDir dir;
  const std::string tune = bin_dir() + "/tessera tune --op matmul:M=64,N=64,K=64 --trials 8 --db " + dir.path() +
                           "/t.db --insecure --key x86 --tracker ipc://" + dir.path() + "/nobody";
  std::string out;
  double seconds = 0;
  EXPECT_EQ(run(tune, &out, &seconds), 1) << out;
  EXPECT_LT(seconds, 10) << out;
  EXPECT_NE(out.find("no answer from a tracker at ipc://" + dir.path() + "/nobody"), std::string::npos) << out;
  EXPECT_NE(::access((dir.path() + "/t.db").c_str(), F_OK), 0) << "no database made: " << out;
}

TEST(FailFast, UnknownKeyStopsWithTheFarmsKeys) {
  TempDir dir;
  const std::string endpoint = "ipc://" + dir.path() + "/t";
  Process tracker({bin_dir() + "/tessera", "tracker", "--bind", endpoint, "--insecure"});
  auto worker = start_worker(endpoint, "x86-test", "w1");
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 1));
  const std::string tune = bin_dir() + "/tessera tune --op matmul:M=64,N=64,K=64 --trials 8 --db " + dir.path() +
                           "/t.db --insecure --tracker " + endpoint + " --key x86-typo";
  std::string out;
  double seconds = 0;
  EXPECT_EQ(run(tune, &out, &seconds), 1) << out;
  EXPECT_LT(seconds, 10) << out;
  EXPECT_NE(out.find("no worker of key 'x86-typo'"), std::string::npos) << out;
  EXPECT_NE(out.find("the farm's keys: x86-test (1 worker)"), std::string::npos) << out;
  EXPECT_NE(::access((dir.path() + "/t.db").c_str(), F_OK), 0) << "no database made: " << out;
}

TEST(FailFast, EveryTrialFailingIsAnErrorThatSaysWhy) {
  TempDir dir;
  // A millisecond per measurement: the candidates (timed for >= 50 ms) all
  // run past it; the untuned default is timed by one call with a long limit.
  const std::string tune = bin_dir() +
                           "/tessera tune --op matmul:M=128,N=128,K=128 --trials 4 --batch 4 "
                           "--threads 1 --timeout 0.001 --db " +
                           dir.path() + "/t.db";
  std::string out;
  EXPECT_EQ(run(tune, &out), 1) << out;
  EXPECT_NE(out.find("every trial of this run failed"), std::string::npos) << out;
  EXPECT_NE(out.find("  timeout"), std::string::npos) << out;
}

TEST(FailFast, TimeoutIsRangeChecked) {
  for (const char* bad : {"0", "-1", "3601", "soon"}) {
    std::string out;
    EXPECT_EQ(run(bin_dir() + "/tessera tune --op matmul:M=64,N=64,K=64 --timeout " + bad, &out), 2) << bad;
    EXPECT_NE(out.find("--timeout"), std::string::npos) << out;
  }
}

// A worker started at a terminal, as the README starts one: its terminal
// echoes what is typed into it, so a job that typed there (TIOCSTI through
// /dev/tty, the way it would drive the shell that started the worker) shows
// on the terminal's output. First the same library loaded by a process of
// that terminal, which must show: else the probe could not fail.
TEST(WorkerAtATerminal, AJobCannotTypeIntoIt) {
  const std::string probe = TESSERA_TERMINAL_PROBE_TTY_PATH;
  Terminal control({"/usr/bin/python3", "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", probe});
  ASSERT_EQ(control.wait_exit(10000), 0) << control.output();
  if (control.output().find("injected") == std::string::npos)
    GTEST_SKIP() << "this kernel does not let a process type into its terminal: " << control.output();

  TempDir dir;
  const std::string endpoint = "ipc://" + dir.path() + "/t";
  Process tracker({bin_dir() + "/tessera", "tracker", "--bind", endpoint, "--insecure"});
  Terminal worker({bin_dir() + "/tessera-worker", "--tracker", endpoint, "--key", "k", "--id", "w1", "--threads", "1",
                   "--heartbeat-ms", "200", "--insecure"});
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 1)) << worker.output();
  ClientOptions options;
  options.tracker = endpoint;
  options.security = plaintext();
  auto client = RpcClient::connect(options);
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  MeasureInput in = kernel_input("probe_add_one");
  in.library = read_file(probe);
  (*client)->submit(in, "k");
  const auto results = collect(**client, 1, 20000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].second.ok()) << results[0].second.message;
  for (int i = 0; i < 10; ++i) worker.drain(50);
  EXPECT_EQ(worker.output().find("injected"), std::string::npos) << worker.output();
  EXPECT_EQ(worker.wait_exit(100), -1) << "the worker still runs: " << worker.output();
}

}  // namespace
}  // namespace tessera::rpc
