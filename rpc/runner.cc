#include "rpc/runner.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "rpc/temp_dirs.h"
#include "rpc/tracker.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// ---- SIGINT cleanup: the only global state of rpc/.
//
// A signal handler cannot reach a LocalRunner through any argument, so the
// live runners publish what the handler must undo (worker pids, the socket
// file, the private directory) in a fixed table of slots. Slots are claimed
// and released with atomics; the handler only reads them and calls
// async-signal-safe functions (kill, unlink, rmdir, sigaction, raise).
constexpr int kSlots = 8, kMaxPids = 256;
struct CleanupSlot {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  pid_t pids[kMaxPids];
  std::atomic<int> npids{0};
  char socket_path[512];
  char dir[512];
};
CleanupSlot g_cleanup[kSlots];
struct sigaction g_previous_sigint;
std::atomic<bool> g_sigint_installed{false};

// Asks the workers to stop, gives them up to 3 s to remove their own
// directories (inside slot.dir), kills what is left, and removes the rest.
// Async-signal-safe only: kill, waitpid, nanosleep, unlink, rmdir.
void stop_all_slots() {
  for (auto& slot : g_cleanup) {
    if (!slot.ready.load()) continue;
    for (int i = 0; i < slot.npids.load(); ++i)
      if (slot.pids[i] > 0) ::kill(slot.pids[i], SIGTERM);  // -1: reaped by an earlier call
  }
  const struct timespec tick = {0, 10 * 1000 * 1000};
  for (int t = 0; t < 300; ++t) {
    bool alive = false;
    for (auto& slot : g_cleanup) {
      if (!slot.ready.load()) continue;
      for (int i = 0; i < slot.npids.load(); ++i) {
        if (slot.pids[i] <= 0) continue;
        const pid_t r = ::waitpid(slot.pids[i], nullptr, WNOHANG);
        if (r == slot.pids[i] || (r < 0 && errno == ECHILD))
          slot.pids[i] = -1;
        else
          alive = true;
      }
    }
    if (!alive) break;
    ::nanosleep(&tick, nullptr);
  }
  for (auto& slot : g_cleanup) {
    if (!slot.ready.load()) continue;
    for (int i = 0; i < slot.npids.load(); ++i)
      if (slot.pids[i] > 0) ::kill(slot.pids[i], SIGKILL);  // its directory goes at the next start
    ::unlink(slot.socket_path);
    ::rmdir(slot.dir);
  }
}

void on_sigint(int sig) {
  stop_all_slots();
  ::sigaction(SIGINT, &g_previous_sigint, nullptr);
  ::raise(sig);
}

// Installs on_sigint unless the program handles SIGINT itself (then it is
// the program's to stop the workers: stop_local_workers_from_signal).
void install_sigint_cleanup() {
  if (g_sigint_installed.exchange(true)) return;
  struct sigaction current {};
  ::sigaction(SIGINT, nullptr, &current);
  if (current.sa_handler != SIG_DFL) return;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &g_previous_sigint);
}

int claim_cleanup_slot(const std::string& dir, const std::string& socket_path) {
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_cleanup[i].used.compare_exchange_strong(expected, true)) continue;
    std::snprintf(g_cleanup[i].dir, sizeof g_cleanup[i].dir, "%s", dir.c_str());
    std::snprintf(g_cleanup[i].socket_path, sizeof g_cleanup[i].socket_path, "%s", socket_path.c_str());
    g_cleanup[i].npids = 0;
    g_cleanup[i].ready = true;
    install_sigint_cleanup();
    return i;
  }
  return -1;  // more live LocalRunners than slots: they still stop on destruction
}

void release_cleanup_slot(int slot) {
  if (slot < 0) return;
  g_cleanup[slot].ready = false;
  g_cleanup[slot].npids = 0;
  g_cleanup[slot].used = false;
}

Result<pid_t> spawn_worker(const std::string& binary, const std::vector<std::string>& args) {
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status(ErrorCode::kIOError, std::string("cannot fork a worker: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls until exec. A session of its own: the
    // terminal's Ctrl-C and hangup are the tuner's to handle, not the
    // worker's (killed mid-batch, the rest of the batch failed no-worker).
    // It still dies with us.
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

void stop_local_workers_from_signal() {
  stop_all_slots();
}

std::string executable_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// ---------------------------------------------------------------- RpcRunner

Result<std::unique_ptr<RpcRunner>> RpcRunner::connect(RpcRunnerOptions options) {
  if (!is_valid_name(options.device_key))
    return Status(ErrorCode::kInvalidArgument, "bad device key " + quoted(options.device_key));
  ClientOptions client;
  client.tracker = options.tracker;
  client.security = options.security;
  client.session_id = options.session_id;
  TESSERA_ASSIGN_OR_RETURN(auto c, RpcClient::connect(std::move(client)));
  return std::unique_ptr<RpcRunner>(new RpcRunner(std::move(options), std::move(c)));
}

Result<std::vector<MeasureResult>> RpcRunner::run(const std::vector<MeasureInput>& inputs) {
  return run(inputs, nullptr);
}

Result<std::vector<MeasureResult>> RpcRunner::run(const std::vector<MeasureInput>& inputs,
                                                  const std::function<void(size_t, const MeasureResult&)>& on_result) {
  if (cancelled()) return Status(ErrorCode::kUnavailable, "cancelled before the batch was submitted");
  std::vector<MeasureResult> results(inputs.size());
  const auto submitted = Clock::now();
  std::map<uint64_t, size_t> index;                 // job id -> input
  std::map<uint64_t, Clock::time_point> deadlines;  // job id -> give up after
  for (size_t i = 0; i < inputs.size(); ++i) {
    const uint64_t id = client_->submit(inputs[i], options_.device_key);
    index[id] = i;
    const int ms = options_.deadline_ms > 0 ? options_.deadline_ms : 2 * inputs[i].timeout_ms + 60000;
    deadlines[id] = Clock::now() + std::chrono::milliseconds(ms);
  }
  bool any_result = false;
  while (!index.empty()) {
    if (cancelled()) {
      std::vector<uint64_t> ids;
      for (const auto& [id, i] : index) ids.push_back(id);
      client_->cancel(ids);
      return Status(ErrorCode::kUnavailable,
                    "cancelled with " + std::to_string(ids.size()) + " measurement(s) of the batch in flight");
    }
    for (auto& [id, result] : client_->poll(100)) {
      auto it = index.find(id);
      if (it == index.end()) continue;
      results[it->second] = std::move(result);
      if (on_result) on_result(it->second, results[it->second]);
      index.erase(it);
      deadlines.erase(id);
      any_result = true;
    }
    if (!any_result && !client_->auth_status().is_ok()) {
      std::vector<uint64_t> ids;
      for (const auto& [id, i] : index) ids.push_back(id);
      client_->cancel(ids);
      return client_->auth_status();
    }
    std::vector<uint64_t> expired;
    const auto now = Clock::now();
    // A tracker that answers no sync has stopped or become unreachable: the
    // batch is given up now, not at its deadlines (minutes away).
    const auto heard = std::max(client_->last_heard(), submitted);
    const bool silent = now - heard >= std::chrono::milliseconds(options_.tracker_silence_ms);
    for (const auto& [id, when] : deadlines)
      if (now >= when || silent) expired.push_back(id);
    char silence[32];
    std::snprintf(silence, sizeof silence, "%.0f", std::chrono::duration<double>(now - heard).count());
    for (uint64_t id : expired) {
      MeasureResult& r = results[index[id]];
      r.error = MeasureErrorKind::kNoResult;
      r.message = silent ? "the tracker " + options_.tracker + " has not answered for " + silence + " s"
                         : "no result from the farm within the job's deadline (queue wait included); tracker " +
                               options_.tracker + ", key '" + options_.device_key + "'";
      if (on_result) on_result(index[id], r);
      index.erase(id);
      deadlines.erase(id);
    }
    client_->cancel(expired);
  }
  return results;
}

double RpcRunner::seconds_since_tracker_heard() const {
  return std::chrono::duration<double>(Clock::now() - client_->last_heard()).count();
}

Status RpcRunner::check_workers(int timeout_ms) const {
  auto status = query_farm_status(options_.tracker, options_.security, timeout_ms);
  if (!status.is_ok()) return Status(ErrorCode::kUnavailable, status.status().message());
  std::string keys;
  for (const auto& k : status->keys()) {
    if (k.key() == options_.device_key && k.workers() > 0) return Status::ok();
    keys += (keys.empty() ? "" : ", ") + k.key() + " (" + std::to_string(k.workers()) + " worker" +
            (k.workers() == 1 ? "" : "s") + ")";
  }
  return Status(ErrorCode::kUnavailable, "no worker of key '" + options_.device_key + "' at the tracker " +
                                             options_.tracker + "; " +
                                             (keys.empty() ? "the farm has no workers" : "the farm's keys: " + keys));
}

Result<int> RpcRunner::count_workers() const {
  auto status = query_farm_status(options_.tracker, options_.security, 3000);
  if (!status.is_ok()) return Status(ErrorCode::kUnavailable, status.status().message());
  for (const auto& k : status->keys())
    if (k.key() == options_.device_key) return static_cast<int>(k.workers());
  return 0;
}

// ---------------------------------------------------------------- LocalRunner

Result<std::unique_ptr<LocalRunner>> LocalRunner::start(LocalRunnerOptions options) {
  if (options.num_workers < 1 || options.num_workers > kMaxPids)
    return Status(ErrorCode::kInvalidArgument, "num_workers must be 1-" + std::to_string(kMaxPids));
  std::string binary = options.worker_binary.empty() ? executable_dir() + "/tessera-worker" : options.worker_binary;
  if (::access(binary.c_str(), X_OK) != 0)
    return Status(ErrorCode::kNotFound, "worker binary " + binary + " not found or not executable");

  std::unique_ptr<LocalRunner> runner(new LocalRunner());
  runner->options_ = options;
  // Directories of runners killed with -9 go first (temp_dirs.h).
  (void)remove_stale_dirs(options.temp_base, "tessera-local");
  TESSERA_ASSIGN_OR_RETURN(runner->dir_, make_owned_dir(options.temp_base, "tessera-local"));
  const std::string socket_path = runner->dir_ + "/tracker";
  runner->endpoint_ = "ipc://" + socket_path;
  runner->cleanup_slot_ = claim_cleanup_slot(runner->dir_, socket_path);

  TrackerOptions tracker;
  tracker.bind = runner->endpoint_;
  tracker.security.insecure = true;  // ipc in a 0700 directory: only this user can connect
  tracker.heartbeat_ms = options.heartbeat_ms;
  tracker.dead_after_ms = options.dead_after_ms;
  runner->tracker_ = std::make_unique<Tracker>(tracker);
  TESSERA_RETURN_IF_ERROR(runner->tracker_->bind());
  LocalRunner* self = runner.get();
  runner->tracker_thread_ = std::thread([self] { (void)self->tracker_->run(self->stop_tracker_); });

  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  for (int i = 0; i < options.num_workers; ++i) {
    std::vector<std::string> args = {"--tracker",
                                     runner->endpoint_,
                                     "--key",
                                     options.device_key,
                                     "--insecure",
                                     "--id",
                                     "local-" + std::to_string(::getpid()) + "-" + std::to_string(i),
                                     "--threads",
                                     std::to_string(options.threads_per_worker),
                                     "--temp-dir",
                                     runner->dir_,
                                     "--heartbeat-ms",
                                     std::to_string(options.heartbeat_ms)};
    if (options.pin_workers) {
      args.push_back("--pin-cpus");
      args.push_back(std::to_string(i % cpus));
    }
    TESSERA_ASSIGN_OR_RETURN(pid_t pid, spawn_worker(binary, args));
    runner->pids_.push_back(pid);
    if (runner->cleanup_slot_ >= 0) {
      CleanupSlot& slot = g_cleanup[runner->cleanup_slot_];
      slot.pids[slot.npids.load()] = pid;
      slot.npids.fetch_add(1);
    }
  }

  // Wait for every worker to register, so the first batch finds them.
  const auto until = Clock::now() + std::chrono::milliseconds(options.start_timeout_ms);
  SecurityOptions insecure;
  insecure.insecure = true;
  uint32_t registered = 0;
  while (Clock::now() < until) {
    auto st = query_farm_status(runner->endpoint_, insecure, 1000);
    registered = 0;
    if (st.is_ok())
      for (const auto& k : st->keys()) registered += k.workers();
    if (registered >= static_cast<uint32_t>(options.num_workers)) break;
    ::usleep(20000);
  }
  if (registered < static_cast<uint32_t>(options.num_workers))
    return Status(ErrorCode::kUnavailable, std::to_string(registered) + " of " + std::to_string(options.num_workers) +
                                               " local workers registered within " +
                                               std::to_string(options.start_timeout_ms) + " ms (" + binary + ")");
  RpcRunnerOptions rpc;
  rpc.tracker = runner->endpoint_;
  rpc.security = insecure;
  rpc.device_key = options.device_key;
  rpc.deadline_ms = options.deadline_ms;
  TESSERA_ASSIGN_OR_RETURN(runner->rpc_, RpcRunner::connect(rpc));
  return runner;
}

Result<std::vector<MeasureResult>> LocalRunner::run(const std::vector<MeasureInput>& inputs) {
  rpc_->set_cancel(cancel_);
  return rpc_->run(inputs);
}

LocalRunner::~LocalRunner() {
  shutdown();
}

void LocalRunner::shutdown() {
  rpc_.reset();
  for (pid_t pid : pids_) ::kill(pid, SIGTERM);
  const auto until = Clock::now() + std::chrono::seconds(3);
  for (pid_t pid : pids_) {
    while (true) {
      const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) break;
      if (Clock::now() >= until) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        break;
      }
      ::usleep(5000);
    }
  }
  pids_.clear();
  release_cleanup_slot(cleanup_slot_);
  cleanup_slot_ = -1;
  stop_tracker_ = true;
  if (tracker_thread_.joinable()) tracker_thread_.join();
  tracker_.reset();
  if (!dir_.empty()) remove_tree(dir_);
}

}  // namespace tessera::rpc
