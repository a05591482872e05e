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
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/model_cases.h"
#include "bench/ort_peer.h"
#include "compiler/model/compile_model.h"
#include "driver/compile.h"
#include "runtime/graph_executor.h"
#include "runtime/ndarray.h"

extern char** environ;

namespace tessera {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;

constexpr int kThreads = 2;
constexpr int kRuns = 20;  // timed runs per round, Tessera and ONNX Runtime alike
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
  std::vector<std::string> argv_s = {binary,
                                     "tune",
                                     model,
                                     "--trials",
                                     std::to_string(trials),
                                     "--db",
                                     db,
                                     "--input-shape",
                                     mc.input_name + ":" + shape_text(mc.input_shape),
                                     "--precision",
                                     mc.precision};
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
  driver::ModelCompileArgs args;
  args.model = model_path;
  args.input_shapes = {mc.input_name + ":" + shape_text(mc.input_shape)};
  args.db = db;
  args.use_records = !db.empty();
  args.byoc = byoc.empty() ? "none" : byoc;
  args.precision = mc.precision;
  TESSERA_ASSIGN_OR_RETURN(driver::ModelCompile result, driver::compile_model_file(args));
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
        if (std::isnan(excess) || excess > worst_excess)
          worst_excess = std::isnan(excess) ? INFINITY : excess, worst = i;
      }
    }
    if (bad) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "output %s differs from ONNX Runtime's at %lld of %lld elements: max abs error %g "
                    "(element %lld: %g vs %g)",
                    name.c_str(), static_cast<long long>(bad), static_cast<long long>(ours.numel()), *max_err,
                    static_cast<long long>(worst), a[worst], b[worst]);
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

// The records a run compiles with: none (0 trials), TESSERA_BENCH_DB's, or
// those of `tessera tune` run here (and of the float32 model it is compared
// with, tuned as long, for a reduced precision).
struct Tuning {
  std::string db;
  double tune_s = 0;
  std::string label = "untuned";
};

Result<Tuning> tune_for(const std::string& model_path, const ModelCase& mc, const BenchEnv& env, int64_t trials,
                        const std::string& tmp) {
  Tuning tuning;
  if (trials == 0) return tuning;
  if (!env.reuse_db.empty()) {
    if (!fs::exists(env.reuse_db))
      return Status(ErrorCode::kNotFound, "TESSERA_BENCH_DB=" + env.reuse_db + ": no such file");
    tuning.db = env.reuse_db;
    tuning.label = "records from TESSERA_BENCH_DB=" + tuning.db + " (not tuned here)";
    return tuning;
  }
  tuning.db = tmp + "/tune.db";
  TESSERA_RETURN_IF_ERROR(run_tune(model_path, mc, trials, tuning.db, tmp + "/tune.log", &tuning.tune_s));
  if (mc.precision != "fp32") {
    ModelCase full = mc;
    full.precision = "fp32";
    double full_s = 0;
    TESSERA_RETURN_IF_ERROR(run_tune(model_path, full, trials, tuning.db, tmp + "/tune_fp32.log", &full_s));
  }
  tuning.label = "tuned here: " + std::to_string(trials) + " trials";
  return tuning;
}

// A compiled package loaded to run on the benchmark's threads; `what`
// names it in errors.
Result<std::unique_ptr<runtime::GraphExecutor>> load_package(const model::CompiledModel& compiled,
                                                             const std::string& what) {
  runtime::ExecutorOptions eo;
  eo.num_threads = kThreads;
  auto exec = runtime::GraphExecutor::load(compiled.package, eo);
  if (!exec.is_ok()) return exec.status().with_context("load " + what);
  return std::move(exec).value();
}

// The same, with the benchmark's input set.
Result<std::unique_ptr<runtime::GraphExecutor>> load_with_input(const model::CompiledModel& compiled,
                                                                const ModelCase& mc, const NDArray& input,
                                                                const std::string& what) {
  TESSERA_ASSIGN_OR_RETURN(auto exec, load_package(compiled, what));
  TESSERA_RETURN_IF_ERROR(exec->set_input(mc.input_name, input).with_context(what));
  return exec;
}

// The packages raced against ONNX Runtime: Tessera's, and where the case
// asks, through the backend ([0] --byoc mc.byoc, [1] --byoc auto) and
// Tessera's float32 package of the same model.
struct Contestants {
  std::unique_ptr<runtime::GraphExecutor> tessera, byoc[2], float32;
  size_t byoc_regions[2] = {0, 0};
};

// The backend's packages, each run once and checked against ONNX Runtime's
// outputs in `ort_dir` (the largest error into `max_err`), and the float32 one.
Status add_other_packages(Contestants& c, const std::string& model_path, const ModelCase& mc, const std::string& db,
                          const NDArray& input, const std::string& ort_dir, double* max_err) {
  for (int k = 0; k < 2 && !mc.byoc.empty(); ++k) {
    const std::string which = k == 0 ? mc.byoc : "auto";
    auto with_backend = compile(model_path, mc, db, which);
    if (!with_backend.is_ok()) return with_backend.status().with_context("compile --byoc " + which);
    c.byoc_regions[k] = with_backend->externals.size();
    TESSERA_ASSIGN_OR_RETURN(c.byoc[k], load_with_input(*with_backend, mc, input, "--byoc " + which));
    double byoc_err = 0;
    Status st = c.byoc[k]->run();
    if (st.is_ok()) st = compare_outputs(*c.byoc[k], ort_dir, mc.scale_tol, &byoc_err);
    TESSERA_RETURN_IF_ERROR(st.with_context("--byoc " + which));
    *max_err = std::max(*max_err, byoc_err);
  }
  if (mc.precision != "fp32") {
    ModelCase full = mc;
    full.precision = "fp32";
    auto compiled32 = compile(model_path, full, db);
    if (!compiled32.is_ok()) return compiled32.status().with_context("compile fp32");
    TESSERA_ASSIGN_OR_RETURN(c.float32, load_with_input(*compiled32, mc, input, "fp32"));
  }
  return Status::ok();
}

// Medians of the race: ORT's in ms, the packages' in seconds.
struct RaceTimes {
  double ort_ms = 0, tessera_s = 0, byoc_s[2] = {0, 0}, float32_s = 0;
};

// ORT, Tessera, ORT, Tessera, ORT: the load of a shared machine shifts.
// With a backend, its packages run right after Tessera's in each round;
// with a reduced precision, the float32 package.
Result<RaceTimes> race(Contestants& c, const std::string& model_path, const bench::NpyInputs& ort_inputs,
                       const bench::InputShapes& ort_shapes) {
  std::vector<double> ort_ms, ours_s, byoc_s[2], float32_s;
  auto time_package = [](runtime::GraphExecutor& exec, std::vector<double>& into, const char* what) -> Status {
    auto t = exec.benchmark(kWarmup, kRuns);
    if (!t.is_ok()) return t.status().with_context(std::string("benchmark") + what);
    into.insert(into.end(), t->costs_s.begin(), t->costs_s.end());
    return Status::ok();
  };
  for (int round = 0; round < 5; ++round) {
    if (round % 2 == 0) {
      auto ms = bench::ort_median_ms(model_path, ort_inputs, ort_shapes, kThreads, kRuns, kWarmup);
      if (!ms.is_ok()) return ms.status().with_context("ONNX Runtime");
      ort_ms.push_back(*ms);
      continue;
    }
    TESSERA_RETURN_IF_ERROR(time_package(*c.tessera, ours_s, ""));
    for (int k = 0; k < 2 && c.byoc[k]; ++k) TESSERA_RETURN_IF_ERROR(time_package(*c.byoc[k], byoc_s[k], " --byoc"));
    if (c.float32) TESSERA_RETURN_IF_ERROR(time_package(*c.float32, float32_s, " fp32"));
  }
  RaceTimes t;
  t.ort_ms = median(ort_ms);
  t.tessera_s = median(ours_s);
  for (int k = 0; k < 2 && c.byoc[k]; ++k) t.byoc_s[k] = median(byoc_s[k]);
  if (c.float32) t.float32_s = median(float32_s);
  return t;
}

void report_race(benchmark::State& state, const Contestants& c, const RaceTimes& t) {
  // With a backend, the case's latency is the backend's package.
  const double latency_s = c.byoc[0] ? t.byoc_s[0] : t.tessera_s;
  if (c.byoc[0]) {
    state.counters["byoc_ms"] = latency_s * 1e3;
    state.counters["auto_ms"] = t.byoc_s[1] * 1e3;
    state.counters["tessera_ms"] = t.tessera_s * 1e3;
    state.counters["auto_vs_peer"] = t.ort_ms / (t.byoc_s[1] * 1e3);
    state.counters["byoc_regions"] = static_cast<double>(c.byoc_regions[0]);
    state.counters["auto_regions"] = static_cast<double>(c.byoc_regions[1]);
  }
  if (c.float32) {
    state.counters["float32_ms"] = t.float32_s * 1e3;
    state.counters["vs_float32"] = t.float32_s / latency_s;
  }
  state.SetIterationTime(latency_s);
  state.counters["latency_ms"] = latency_s * 1e3;
  state.counters["ort_ms"] = t.ort_ms;
  state.counters["vs_peer"] = t.ort_ms / (latency_s * 1e3);
  state.counters["peak_mb"] = c.tessera->peak_memory_bytes() / 1048576.0;
  state.counters["intermediates_mb"] = c.tessera->intermediate_bytes_total() / 1048576.0;
}

// The case's model: generated into `tmp`, or one of the downloaded OCR models.
Result<std::string> model_file(const ModelCase& mc, const std::string& tmp) {
  if (mc.generator.empty()) {
    const std::string path = bench::ocr_models_dir() + "/" + mc.file;
    if (!fs::exists(path)) return Status(ErrorCode::kNotFound, path + " missing: run scripts/install-deps.sh");
    return path;
  }
  const std::string path = tmp + "/model.onnx";
  TESSERA_RETURN_IF_ERROR(bench::write_generated_model(mc.generator, path, /*seed=*/7, mc.generator_options)
                              .with_context("cannot write the model"));
  return path;
}

// One case: tune (or not), compile in-process, run on a fixed random input
// checked against ONNX Runtime, then race the packages against it.
Status run_case(benchmark::State& state, const ModelCase& mc, const BenchEnv& env, const std::string& tmp) {
  TESSERA_ASSIGN_OR_RETURN(const std::string model_path, model_file(mc, tmp));
  TESSERA_ASSIGN_OR_RETURN(const Tuning tuning, tune_for(model_path, mc, env, state.range(0), tmp));
  auto start = std::chrono::steady_clock::now();
  auto compiled = compile(model_path, mc, tuning.db);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!compiled.is_ok()) return compiled.status().with_context("compile");

  Contestants c;
  TESSERA_ASSIGN_OR_RETURN(c.tessera, load_package(*compiled, "Tessera's package"));
  // The input: float16 for a float16 model.
  DType input_type = DType::f32();
  for (const auto& info : c.tessera->input_info()) input_type = info.name == mc.input_name ? info.dtype : input_type;
  TESSERA_ASSIGN_OR_RETURN(NDArray input, NDArray::create(mc.input_shape, input_type));
  input.fill_random(1);
  const std::string input_npy = tmp + "/input.npy";
  TESSERA_RETURN_IF_ERROR(runtime::save_npy(input, input_npy));
  TESSERA_RETURN_IF_ERROR(c.tessera->set_input(mc.input_name, input));
  TESSERA_RETURN_IF_ERROR(c.tessera->run().with_context("run"));
  const bench::NpyInputs ort_inputs = {{mc.input_name, input_npy}};
  const bench::InputShapes ort_shapes = {{mc.input_name, mc.input_shape}};
  const std::string ort_dir = tmp + "/ort";
  TESSERA_RETURN_IF_ERROR(
      bench::ort_run_outputs(model_path, ort_inputs, ort_dir, kThreads, ort_shapes).with_context("ONNX Runtime"));
  double max_err = 0;
  TESSERA_RETURN_IF_ERROR(compare_outputs(*c.tessera, ort_dir, mc.scale_tol, &max_err));
  TESSERA_RETURN_IF_ERROR(add_other_packages(c, model_path, mc, tuning.db, input, ort_dir, &max_err));

  TESSERA_ASSIGN_OR_RETURN(const RaceTimes times, race(c, model_path, ort_inputs, ort_shapes));
  report_race(state, c, times);
  state.counters["compile_s"] = compile_s;
  state.counters["tune_s"] = tuning.tune_s;
  state.counters["kernels"] = compiled->report.kernels;
  state.counters["from_records"] = compiled->report.from_records;
  state.counters["max_abs_err"] = max_err;
  state.SetLabel(tuning.label + (mc.byoc.empty() ? "" : ", --byoc " + mc.byoc) +
                 (mc.precision == "fp32" ? "" : ", --precision " + mc.precision) + ", input " + mc.input_name + ":" +
                 shape_text(mc.input_shape));
  return Status::ok();
}

void run_model(benchmark::State& state, const ModelCase& mc, const BenchEnv& env) {
  std::string why;
  if (!bench::ort_available(&why)) return state.SkipWithError(("ONNX Runtime unavailable: " + why).c_str());
  TempDir tmp;
  if (tmp.path().empty()) return state.SkipWithError("cannot create a temp dir under /tmp");
  for (auto _ : state) {
    if (Status st = run_case(state, mc, env, tmp.path()); !st.is_ok())
      return state.SkipWithError(st.to_string().c_str());
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
  tessera::bench::add_machine_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
