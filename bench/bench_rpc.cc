// Measurement through the farm's machinery: what a round trip costs beyond the
// kernel, and how throughput scales with workers.
//
//   BM_Rpc_RoundTrip  a trivial kernel through tracker + worker on loopback TCP;
//                     overhead_ms = median round trip - the kernel's own time
//                     (goal <= 2 ms); worker_ms is the isolated run on the
//                     worker (fork, load, time), transport_ms the rest.
//   BM_Rpc_Scaling/N  N workers measuring sleep-bound kernels (100 ms a job);
//                     efficiency = throughput / (N x one-worker throughput)
//                     (goal >= 0.9 at 8 workers).
//
// The kernels come from libtessera_rpc_kernels.so (tests/rpc/testdata), built
// beside the test binaries; worker processes are bin/tessera-worker.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/bench_main.h"
#include "rpc/client.h"
#include "rpc/runner.h"
#include "rpc/tracker.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

std::string kernels_library() {
  std::ifstream in(executable_dir() + "/../lib/libtessera_rpc_kernels.so", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A tracker thread on loopback TCP and N tessera-worker processes, all stopped
// at the end of the benchmark.
class Farm {
 public:
  explicit Farm(int workers) {
    TrackerOptions o;
    o.bind = "tcp://127.0.0.1:*";
    o.security.insecure = true;
    tracker_ = std::make_unique<Tracker>(o);
    status_ = tracker_->bind();
    if (!status_.is_ok()) return;
    thread_ = std::thread([this] { (void)tracker_->run(stop_); });
    const std::string worker = executable_dir() + "/tessera-worker";
    for (int i = 0; i < workers; ++i) {
      std::vector<std::string> args = {
          worker, "--tracker", tracker_->endpoint(),        "--key", "bench", "--insecure", "--threads",
          "1",    "--id",      "bench-" + std::to_string(i)};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      pid_t pid = ::fork();
      if (pid == 0) {
        ::execv(argv[0], argv.data());
        ::_exit(127);
      }
      pids_.push_back(pid);
    }
    SecurityOptions plain;
    plain.insecure = true;
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < until) {
      auto st = query_farm_status(tracker_->endpoint(), plain, 500);
      if (st.is_ok() && st->keys_size() == 1 && st->keys(0).workers() == static_cast<uint32_t>(workers)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    status_ = Status(ErrorCode::kUnavailable, "workers did not register (" + worker + ")");
  }
  ~Farm() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const Status& status() const { return status_; }

  std::unique_ptr<RpcRunner> runner() {
    RpcRunnerOptions o;
    o.tracker = tracker_->endpoint();
    o.security.insecure = true;
    o.device_key = "bench";
    return std::move(RpcRunner::connect(o)).value();
  }

 private:
  std::unique_ptr<Tracker> tracker_;
  Status status_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<pid_t> pids_;
};

MeasureInput job(const std::string& library, const std::string& symbol) {
  MeasureInput in;
  in.library = library;
  in.symbol = symbol;
  in.args = {{{256}, DType::f32()}, {{256}, DType::f32()}};
  in.timing.number = 1;
  in.timing.repeat = 1;
  in.timeout_ms = 10000;
  return in;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void BM_Rpc_RoundTrip(benchmark::State& state) {
  const std::string library = kernels_library();
  if (library.empty()) return state.SkipWithError("libtessera_rpc_kernels.so not built (build test_rpc)");
  Farm farm(1);
  if (!farm.status().is_ok()) return state.SkipWithError(farm.status().to_string().c_str());
  auto runner = farm.runner();
  const MeasureInput in = job(library, "trivial");
  std::vector<double> overhead, worker, transport;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto results = runner->run({in});
    const double rt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!results.is_ok() || !(*results)[0].ok()) return state.SkipWithError("measurement failed");
    const MeasureResult& r = (*results)[0];
    const double kernel = 2 * r.mean_cost();  // warm-up + number x repeat calls
    state.SetIterationTime(rt);
    overhead.push_back((rt - kernel) * 1e3);
    worker.push_back(r.run_seconds * 1e3);
    transport.push_back((rt - r.run_seconds) * 1e3);
  }
  state.counters["overhead_ms"] = median(overhead);
  state.counters["worker_ms"] = median(worker);
  state.counters["transport_ms"] = median(transport);
}
BENCHMARK(BM_Rpc_RoundTrip)->UseManualTime()->Iterations(300)->Unit(benchmark::kMillisecond);

// Jobs per second of one worker, measured by the /1 case and used by the others.
double g_one_worker_throughput = 0;

void BM_Rpc_Scaling(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const std::string library = kernels_library();
  if (library.empty()) return state.SkipWithError("libtessera_rpc_kernels.so not built (build test_rpc)");
  Farm farm(workers);
  if (!farm.status().is_ok()) return state.SkipWithError(farm.status().to_string().c_str());
  auto runner = farm.runner();
  const std::vector<MeasureInput> batch(4 * workers, job(library, "sleep_50ms"));  // 2 calls: 100 ms a job
  double jobs = 0, seconds = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto results = runner->run(batch);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!results.is_ok()) return state.SkipWithError(results.status().to_string().c_str());
    for (const auto& r : *results)
      if (!r.ok()) return state.SkipWithError(r.message.c_str());
    state.SetIterationTime(dt);
    jobs += static_cast<double>(batch.size());
    seconds += dt;
  }
  const double throughput = jobs / seconds;
  if (workers == 1) g_one_worker_throughput = throughput;
  state.counters["jobs_per_s"] = throughput;
  if (g_one_worker_throughput > 0) state.counters["efficiency"] = throughput / (workers * g_one_worker_throughput);
}
BENCHMARK(BM_Rpc_Scaling)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::rpc

TESSERA_BENCHMARK_MAIN()
