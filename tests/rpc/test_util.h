// Shared by the rpc tests: real processes (tessera, tessera-worker) that are
// always stopped, an in-process tracker thread, and measurement inputs over
// the misbehaving kernels of testdata/rpc_kernels.c.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rpc/client.h"
#include "rpc/launcher.h"
#include "rpc/runner.h"
#include "rpc/sandbox.h"
#include "rpc/tracker.h"
#include "rpc/wire.h"
#include "runtime/ndarray.h"

namespace tessera::rpc::testing {

inline std::string bin_dir() {
  return TESSERA_RPC_BIN_DIR;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline const std::string& kernel_library() {
  static const std::string bytes = read_file(TESSERA_RPC_KERNELS_PATH);
  return bytes;
}

/// A child process running `argv`, killed (SIGKILL) and reaped when destroyed.
class Process {
 public:
  explicit Process(std::vector<std::string> argv) {
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
  }
  /// SIGTERM (a worker then cleans up), SIGKILL if it is still there after 3 s.
  ~Process() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) ::usleep(10000);
    kill(SIGKILL);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  pid_t pid() const { return pid_; }
  /// True while the process runs; reaps it (and forgets its pid) once it has exited.
  bool alive() {
    if (pid_ <= 0) return false;
    if (::waitpid(pid_, nullptr, WNOHANG) == 0) return true;
    pid_ = -1;
    return false;
  }
  /// Sends `sig` and reaps the process.
  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);  // ECHILD if already reaped: fine
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

/// `tessera-worker` for `key`, plaintext (ipc or loopback), fast heartbeats.
inline std::unique_ptr<Process> start_worker(const std::string& endpoint, const std::string& key, const std::string& id,
                                             std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {bin_dir() + "/tessera-worker",
                                   "--tracker",
                                   endpoint,
                                   "--key",
                                   key,
                                   "--id",
                                   id,
                                   "--threads",
                                   "1",
                                   "--heartbeat-ms",
                                   "200"};
  if (std::find(extra.begin(), extra.end(), "--keyfile") == extra.end()) argv.push_back("--insecure");
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Process>(argv);
}

/// A tracker serving on its own thread until destroyed.
class TrackerThread {
 public:
  explicit TrackerThread(TrackerOptions options) : tracker_(std::move(options)) {
    status_ = tracker_.bind();
    if (status_.is_ok()) thread_ = std::thread([this] { (void)tracker_.run(stop_); });
  }
  ~TrackerThread() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const Status& status() const { return status_; }
  std::string endpoint() const { return tracker_.endpoint(); }

 private:
  Tracker tracker_;
  Status status_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Plaintext tracker options on a fresh ipc endpoint, with fast failure detection.
inline TrackerOptions fast_tracker(const std::string& dir) {
  TrackerOptions o;
  o.bind = "ipc://" + dir + "/tracker";
  o.security.insecure = true;
  o.heartbeat_ms = 200;
  o.dead_after_ms = 800;
  o.no_worker_grace_ms = 500;
  return o;
}

/// A private temporary directory, removed (with its files) at the end.
class TempDir {
 public:
  TempDir() {
    char templ[] = "/tmp/tessera-rpc-test-XXXXXX";
    path_ = ::mkdtemp(templ);
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline SecurityOptions plaintext() {
  SecurityOptions s;
  s.insecure = true;
  return s;
}

/// A measurement of `symbol` over two float32[256] buffers.
inline MeasureInput kernel_input(const std::string& symbol, int timeout_ms = 5000) {
  MeasureInput in;
  in.library = kernel_library();
  in.symbol = symbol;
  in.args = {{{256}, DType::f32()}, {{256}, DType::f32()}};
  in.timing.number = 1;
  in.timing.repeat = 2;
  in.timeout_ms = timeout_ms;
  in.input_seed = 42;
  return in;
}

/// add_one's expected output for kernel_input's seed.
inline ReferenceCheck add_one_reference(uint64_t seed = 42) {
  auto in = runtime::NDArray::create({256}, DType::f32()).value();
  in.fill_random(seed);
  std::string bytes(256 * sizeof(float), '\0');
  float* out = reinterpret_cast<float*>(bytes.data());
  for (int i = 0; i < 256; ++i) out[i] = in.data<float>()[i] + 1.0f;
  return ReferenceCheck{bytes, 1e-6};
}

/// Waits until the farm has `workers` workers registered (all keys), or fails.
inline bool wait_for_workers(const std::string& endpoint, const SecurityOptions& security, uint32_t workers,
                             int timeout_ms = 10000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    auto st = query_farm_status(endpoint, security, 500);
    uint32_t n = 0;
    if (st.is_ok())
      for (const auto& k : st->keys()) n += k.workers();
    if (n >= workers) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

/// Polls `client` until `count` results arrived or `timeout_ms` passed.
inline std::vector<std::pair<uint64_t, MeasureResult>> collect(RpcClient& client, size_t count, int timeout_ms) {
  std::vector<std::pair<uint64_t, MeasureResult>> all;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (all.size() < count && std::chrono::steady_clock::now() < until) {
    for (auto& r : client.poll(100)) all.push_back(std::move(r));
  }
  return all;
}

// One job through Measurement as the worker's loop runs it: poll the pipe
// until the report or the deadline. No gtest assertion: a test's child
// process (one that dropped root, say) may call it. Without a launcher the
// child is forked from this process.
inline Result<pb::Result> measure_job(const pb::Job& job, const SandboxOptions& options, Launcher* launcher = nullptr) {
  auto m = Measurement::start(job, options, launcher);
  if (!m.is_ok()) return m.status();
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(m->deadline() - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      m->kill_for_timeout();
      break;
    }
    pollfd p{m->fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0 && m->on_readable()) break;
  }
  return m->finish();
}

// The launcher of this test process's jobs, started at the first use (as a
// worker starts one): null where it cannot start (then jobs are forked here).
inline Launcher* test_launcher() {
  static const std::unique_ptr<Launcher> launcher = [] {
    auto started = start_measurement_launcher();
    return started.is_ok() ? std::move(started).value() : nullptr;
  }();
  return launcher.get();
}

// measure_job of `in` as a worker runs it: its child forked by the
// launcher, with network isolation where this machine has it.
inline pb::Result run_sandboxed(const MeasureInput& in, SandboxOptions options = {}) {
  pb::Job job = to_wire_job(in);
  job.set_session_id("s");
  job.set_job_id(1);
  options.isolate_network = options.isolate_network && probe_network_isolation().empty();
  auto r = measure_job(job, options, test_launcher());
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : pb::Result();
}

}  // namespace tessera::rpc::testing
