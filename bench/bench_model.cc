// Whole models end to end (issue 7): tune with a stated budget through the
// real CLI, compile in-process from the records, run on the graph executor
// (2 threads) and compare with ONNX Runtime (2 threads) in the same run.
//
//   build-bench/bin/bench_model --benchmark_filter='BM_Model_.*/0' --benchmark_counters_tabular=true
//   build-bench/bin/bench_model --benchmark_filter='BM_Model_PPOCRCls/16'
//   build-bench/bin/bench_model --benchmark_filter='BM_Model_Transformer/0'
//   TESSERA_BENCH_DB=tuned.db build-bench/bin/bench_model --benchmark_filter='BM_Model_ResNet18/1000'
//
// The argument is the total trial budget of `tessera tune MODEL.onnx`: 0 is
// the untuned model (every kernel from its fallback). With TESSERA_BENCH_DB
// set, a tuned argument compiles from that database instead of tuning (the
// label says which). Counters: latency_ms (Tessera, median; also the manual
// time), ort_ms (ONNX Runtime, median of the medians of three rounds
// interleaved with Tessera's two), vs_peer = ort_ms / latency_ms, compile_s
// (import + plan + compile_model), tune_s, kernels, from_records, peak_mb (the
// planned intermediate arena, MiB) and intermediates_mb (the sum of every
// intermediate, MiB), max_abs_err against ONNX Runtime's output.
//
// The *_Dnnl variants (issue 20) also compile the model with --byoc dnnl
// and with --byoc auto (docs/byoc.md) and time the three packages in the
// same rounds: byoc_ms (all dnnl, also latency_ms and the manual time),
// auto_ms (each region the faster way: as `tessera tune` timed it when the
// database holds its times for these records, else timed at compile),
// tessera_ms (all Tessera's),
// vs_peer = ort_ms / byoc_ms, auto_vs_peer = ort_ms / auto_ms, byoc_regions
// and auto_regions; every package is checked against ONNX Runtime.
//   build-bench/bin/bench_model --benchmark_filter='BM_Model_ResNet18_Dnnl/0'
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/model_cases.h"
#include "bench/ort_peer.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "runtime/ndarray.h"
#include "tools/compile_flow.h"

extern char** environ;

namespace tessera {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;

constexpr int kThreads = 2;
constexpr int kRuns = 20;       // timed runs per round, Tessera and ONNX Runtime alike
constexpr int kWarmup = 3;
constexpr double kAbsTol = 1e-3;
constexpr double kRelTol = 1e-3;
/// What main() read from the environment.
struct BenchEnv {
  std::string reuse_db;  ///< TESSERA_BENCH_DB: compile tuned runs from it, no tuning
};


/// A private temp dir, removed when done.
class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/tessera-bench-model-XXXXXX";
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

std::string file_safe(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s;
}

// The last lines of a log, for an error message.
std::string log_tail(const std::string& path, size_t lines = 6) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

// Runs `tessera tune MODEL --trials N --db DB --input-shape NAME:SHAPE` with
// its output in `log`; the wall time goes to `seconds`.
Status run_tune(const std::string& model, const ModelCase& mc, int64_t trials, const std::string& db,
                const std::string& log, double* seconds) {
  const std::string binary = TESSERA_BINARY;
  if (::access(binary.c_str(), X_OK) != 0)
    return Status(ErrorCode::kUnavailable, "no tessera binary at " + binary + " (build the target `tessera`)");
  std::vector<std::string> argv_s = {binary,    "tune", model, "--trials", std::to_string(trials), "--db", db,
                                     "--input-shape", mc.input_name + ":" + shape_text(mc.input_shape),
                                     "--precision", mc.precision};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status(ErrorCode::kRuntimeError, "cannot start " + binary + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status(ErrorCode::kRuntimeError, std::string("waitpid: ") + std::strerror(errno));
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                        : "was killed by signal " + std::to_string(WTERMSIG(status));
    return Status(ErrorCode::kRuntimeError, "tessera tune " + how + "; the end of its log:\n" + log_tail(log));
  }
  return Status::ok();
}

// Import, plan and compile from `db` (none: fallbacks only), with the
// external backend `byoc` ("": none), as `tessera compile` does.
Result<model::CompiledModel> compile(const std::string& model_path, const ModelCase& mc, const std::string& db,
                                     const std::string& byoc = "") {
  cli::ModelCompileArgs args;
  args.model = model_path;
  args.input_shapes = {mc.input_name + ":" + shape_text(mc.input_shape)};
  args.db = db;
  args.use_records = !db.empty();
  args.byoc = byoc.empty() ? "none" : byoc;
  args.precision = mc.precision;
  TESSERA_ASSIGN_OR_RETURN(cli::ModelCompile result, cli::compile_model_file(args));
  return std::move(result.compiled);
}

// Largest |tessera - ort| over every output, and whether all are within
// kAbsTol + kRelTol * |ort|; `what` names the worst output or the problem.
Status compare_outputs(runtime::GraphExecutor& exec, const std::string& ort_dir, double scale_tol, double* max_err) {
  *max_err = 0;
  for (const std::string& name : exec.output_names()) {
    TESSERA_ASSIGN_OR_RETURN(NDArray ours, exec.get_output(name));
    TESSERA_ASSIGN_OR_RETURN(NDArray theirs, runtime::load_npy(ort_dir + "/" + file_safe(name) + ".npy"));
    const std::vector<float> our_values = ours.to_float32(), their_values = theirs.to_float32();
    if (ours.shape() != theirs.shape() || ours.dtype() != theirs.dtype() || our_values.empty())
      return Status(ErrorCode::kInvalidArgument, "output " + name + ": shape or dtype differs from ONNX Runtime's");
    const float* a = our_values.data();
    const float* b = their_values.data();
    int64_t bad = 0, worst = 0;
    double worst_excess = 0, scale = 0;
    for (int64_t i = 0; i < theirs.numel(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
    for (int64_t i = 0; i < ours.numel(); ++i) {
      double err = std::fabs(static_cast<double>(a[i]) - b[i]);
      if (!(err <= *max_err)) *max_err = std::isnan(err) ? INFINITY : std::max(*max_err, err);
      double excess = err - (scale_tol > 0 ? scale_tol * scale : kAbsTol + kRelTol * std::fabs(b[i]));
      if (!(excess <= 0)) {
        ++bad;
        if (std::isnan(excess) || excess > worst_excess) worst_excess = std::isnan(excess) ? INFINITY : excess, worst = i;
      }
    }
    if (bad) {
      char msg[256];
      std::snprintf(msg, sizeof msg, "output %s differs from ONNX Runtime's at %lld of %lld elements: max abs error %g "
                    "(element %lld: %g vs %g)", name.c_str(), static_cast<long long>(bad),
                    static_cast<long long>(ours.numel()), *max_err, static_cast<long long>(worst), a[worst], b[worst]);
      return Status(ErrorCode::kRuntimeError, msg);
    }
  }
  return Status::ok();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void run_model(benchmark::State& state, const ModelCase& mc, const BenchEnv& env) {
  const int64_t trials = state.range(0);
  std::string why;
  if (!bench::ort_available(&why)) return state.SkipWithError(("ONNX Runtime unavailable: " + why).c_str());
  TempDir tmp;
  if (tmp.path().empty()) return state.SkipWithError("cannot create a temp dir under /tmp");
  std::string model_path;
  if (!mc.generator.empty()) {
    model_path = tmp.path() + "/model.onnx";
    if (Status st = bench::write_generated_model(mc.generator, model_path, /*seed=*/7, mc.generator_options);
        !st.is_ok())
      return state.SkipWithError(("cannot write the model: " + st.to_string()).c_str());
  } else {
    model_path = bench::ocr_models_dir() + "/" + mc.file;
    if (!fs::exists(model_path))
      return state.SkipWithError((model_path + " missing: run scripts/install-deps.sh").c_str());
  }

  for (auto _ : state) {
    // 1. Tuning: none (0), a reused database, or `tessera tune` here.
    std::string db;
    double tune_s = 0;
    std::string label = "untuned";
    if (trials > 0 && !env.reuse_db.empty()) {
      if (!fs::exists(env.reuse_db))
        return state.SkipWithError(("TESSERA_BENCH_DB=" + env.reuse_db + ": no such file").c_str());
      db = env.reuse_db;
      label = "records from TESSERA_BENCH_DB=" + db + " (not tuned here)";
    } else if (trials > 0) {
      db = tmp.path() + "/tune.db";
      if (Status st = run_tune(model_path, mc, trials, db, tmp.path() + "/tune.log", &tune_s); !st.is_ok())
        return state.SkipWithError(st.to_string().c_str());
      if (mc.precision != "fp32") {
        // The float32 package it is compared with, tuned as long.
        ModelCase full = mc;
        full.precision = "fp32";
        double full_s = 0;
        if (Status st = run_tune(model_path, full, trials, db, tmp.path() + "/tune_fp32.log", &full_s); !st.is_ok())
          return state.SkipWithError(st.to_string().c_str());
      }
      label = "tuned here: " + std::to_string(trials) + " trials";
    }

    // 2. Compile in-process.
    auto start = std::chrono::steady_clock::now();
    auto compiled = compile(model_path, mc, db);
    const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!compiled.is_ok()) return state.SkipWithError(("compile: " + compiled.status().to_string()).c_str());

    // 3. Run on a fixed random input, check against ONNX Runtime, time both interleaved.
    runtime::ExecutorOptions eo;
    eo.num_threads = kThreads;
    auto exec = runtime::GraphExecutor::load(compiled->package, eo);
    if (!exec.is_ok()) return state.SkipWithError(("load: " + exec.status().to_string()).c_str());
    DType input_type = DType::f32();  // float16 for a float16 model
    for (const auto& info : (*exec)->input_info()) input_type = info.name == mc.input_name ? info.dtype : input_type;
    auto input = NDArray::create(mc.input_shape, input_type);
    if (!input.is_ok()) return state.SkipWithError(input.status().to_string().c_str());
    input->fill_random(1);
    const std::string input_npy = tmp.path() + "/input.npy";
    if (Status st = runtime::save_npy(*input, input_npy); !st.is_ok())
      return state.SkipWithError(st.to_string().c_str());
    if (Status st = (*exec)->set_input(mc.input_name, *input); !st.is_ok())
      return state.SkipWithError(st.to_string().c_str());
    if (Status st = (*exec)->run(); !st.is_ok()) return state.SkipWithError(("run: " + st.to_string()).c_str());
    const bench::NpyInputs ort_inputs = {{mc.input_name, input_npy}};
    const bench::InputShapes ort_shapes = {{mc.input_name, mc.input_shape}};
    const std::string ort_dir = tmp.path() + "/ort";
    if (Status st = bench::ort_run_outputs(model_path, ort_inputs, ort_dir, kThreads, ort_shapes); !st.is_ok())
      return state.SkipWithError(("ONNX Runtime: " + st.to_string()).c_str());
    double max_err = 0;
    if (Status st = compare_outputs(**exec, ort_dir, mc.scale_tol, &max_err); !st.is_ok())
      return state.SkipWithError(st.message().c_str());
    // The same model through the external backend, checked the same way.
    // [0]: --byoc <mc.byoc>, [1]: --byoc auto.
    std::unique_ptr<runtime::GraphExecutor> byoc_exec[2];
    size_t byoc_regions[2] = {0, 0};
    for (int k = 0; k < 2 && !mc.byoc.empty(); ++k) {
      const std::string which = k == 0 ? mc.byoc : "auto";
      auto with_backend = compile(model_path, mc, db, which);
      if (!with_backend.is_ok())
        return state.SkipWithError(("compile --byoc " + which + ": " + with_backend.status().to_string()).c_str());
      byoc_regions[k] = with_backend->externals.size();
      auto loaded = runtime::GraphExecutor::load(with_backend->package, eo);
      if (!loaded.is_ok()) return state.SkipWithError(("load --byoc " + which + ": " + loaded.status().to_string()).c_str());
      byoc_exec[k] = std::move(loaded).value();
      double byoc_err = 0;
      Status st = byoc_exec[k]->set_input(mc.input_name, *input);
      if (st.is_ok()) st = byoc_exec[k]->run();
      if (st.is_ok()) st = compare_outputs(*byoc_exec[k], ort_dir, mc.scale_tol, &byoc_err);
      if (!st.is_ok()) return state.SkipWithError(("--byoc " + which + ": " + st.message()).c_str());
      max_err = std::max(max_err, byoc_err);
    }

    // With a reduced precision, Tessera's float32 package of the same model.
    std::unique_ptr<runtime::GraphExecutor> float32_exec;
    if (mc.precision != "fp32") {
      ModelCase full = mc;
      full.precision = "fp32";
      auto compiled32 = compile(model_path, full, db);
      if (!compiled32.is_ok()) return state.SkipWithError(("compile fp32: " + compiled32.status().to_string()).c_str());
      auto loaded = runtime::GraphExecutor::load(compiled32->package, eo);
      if (!loaded.is_ok()) return state.SkipWithError(("load fp32: " + loaded.status().to_string()).c_str());
      float32_exec = std::move(loaded).value();
      if (Status st = float32_exec->set_input(mc.input_name, *input); !st.is_ok())
        return state.SkipWithError(st.to_string().c_str());
    }
    // ORT, Tessera, ORT, Tessera, ORT: the load of a shared machine shifts.
    // With a backend, its package runs right after Tessera's in each round;
    // with a reduced precision, the float32 package.
    std::vector<double> ort_ms, ours_s, byoc_s[2], float32_s;
    for (int round = 0; round < 5; ++round) {
      if (round % 2 == 0) {
        auto ms = bench::ort_median_ms(model_path, ort_inputs, ort_shapes, kThreads, kRuns, kWarmup);
        if (!ms.is_ok()) return state.SkipWithError(("ONNX Runtime: " + ms.status().to_string()).c_str());
        ort_ms.push_back(*ms);
        continue;
      }
      auto t = (*exec)->benchmark(kWarmup, kRuns);
      if (!t.is_ok()) return state.SkipWithError(("benchmark: " + t.status().to_string()).c_str());
      ours_s.insert(ours_s.end(), t->costs_s.begin(), t->costs_s.end());
      for (int k = 0; k < 2 && byoc_exec[k]; ++k) {
        auto b = byoc_exec[k]->benchmark(kWarmup, kRuns);
        if (!b.is_ok()) return state.SkipWithError(("benchmark --byoc: " + b.status().to_string()).c_str());
        byoc_s[k].insert(byoc_s[k].end(), b->costs_s.begin(), b->costs_s.end());
      }
      if (float32_exec) {
        auto f = float32_exec->benchmark(kWarmup, kRuns);
        if (!f.is_ok()) return state.SkipWithError(("benchmark fp32: " + f.status().to_string()).c_str());
        float32_s.insert(float32_s.end(), f->costs_s.begin(), f->costs_s.end());
      }
    }
    const double tessera_s = median(ours_s);
    const double latency_s = byoc_exec[0] ? median(byoc_s[0]) : tessera_s;
    const double ort = median(ort_ms);
    if (byoc_exec[0]) {
      const double auto_s = median(byoc_s[1]);
      state.counters["byoc_ms"] = latency_s * 1e3;
      state.counters["auto_ms"] = auto_s * 1e3;
      state.counters["tessera_ms"] = tessera_s * 1e3;
      state.counters["auto_vs_peer"] = ort / (auto_s * 1e3);
      state.counters["byoc_regions"] = static_cast<double>(byoc_regions[0]);
      state.counters["auto_regions"] = static_cast<double>(byoc_regions[1]);
    }

    if (float32_exec) {
      state.counters["float32_ms"] = median(float32_s) * 1e3;
      state.counters["vs_float32"] = median(float32_s) / latency_s;
    }
    state.SetIterationTime(latency_s);
    state.counters["latency_ms"] = latency_s * 1e3;
    state.counters["ort_ms"] = ort;
    state.counters["vs_peer"] = ort / (latency_s * 1e3);
    state.counters["compile_s"] = compile_s;
    state.counters["tune_s"] = tune_s;
    state.counters["kernels"] = compiled->report.kernels;
    state.counters["from_records"] = compiled->report.from_records;
    state.counters["peak_mb"] = (*exec)->peak_memory_bytes() / 1048576.0;
    state.counters["intermediates_mb"] = (*exec)->intermediate_bytes_total() / 1048576.0;
    state.counters["max_abs_err"] = max_err;
    state.SetLabel(label + (mc.byoc.empty() ? "" : ", --byoc " + mc.byoc) +
                   (mc.precision == "fp32" ? "" : ", --precision " + mc.precision) + ", input " + mc.input_name + ":" +
                   shape_text(mc.input_shape));
  }
}

void register_model(const std::string& name, ModelCase mc, const BenchEnv& env, std::vector<int64_t> args) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [mc, env](benchmark::State& s) { run_model(s, mc, env); });
  for (int64_t a : args) b->Arg(a);
  b->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::BenchEnv env;
  if (const char* db = std::getenv("TESSERA_BENCH_DB")) env.reuse_db = db;
  const std::vector<int64_t> args = {0, tessera::kTunedTrials};
  for (const tessera::BenchmarkedModel& m : tessera::benchmarked_models())
    tessera::register_model(m.name, m.model, env, m.trials.empty() ? args : m.trials);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
