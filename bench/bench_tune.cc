// Tuning end to end: the sketch space searched by the cost-model-guided
// evolutionary search, measured on local workers (1 worker, 2 threads), then
// the best kernels re-measured here against the peers in the same run.
//
//   build/bin/bench_tune --benchmark_filter=BM_Tune_Matmul1024   (argument = trials)
//   build/bin/bench_tune --benchmark_filter=BM_Tuner_Overhead    (matmul 512^3, 128 trials)
//   build/bin/bench_tune --benchmark_filter='BM_Tune_OddShapes(/.*/trials:200/.*|Geomean)'   (eight shapes, the depthwise ones in NCHW and NHWC, an STFT conv, x two spaces)
//   build/bin/bench_tune --benchmark_filter=BM_Fallback_RandomMatmuls   (24 untuned matmuls of random shapes;
//       TESSERA_BENCH_MATMULS="77x384x384 512x512x512" for those shapes instead)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>

#include "compiler/codegen/llvm_target.h"
#include "bench/peers.h"
#include "bench/workloads.h"
#include "compiler/codegen/build.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/choose/apply_best.h"
#include "compiler/space/space_rng.h"
#include "costmodel/features.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "tuner/job.h"

namespace tessera {
namespace {

constexpr int kThreads = 2;

struct TuneRun {
  tuner::TaskSummary summary;
  std::vector<records::Record> history;  // in measurement order
  double wall_s = 0;
};

// How one tuning run is set up.
struct TuneConfig {
  int64_t trials = 64;
  bool guided = true;  // XGBoost-guided evolution, or random sampling
  uint64_t seed = 1;
  tuner::EvolutionOptions evolution{};
  // Pre-training records for the cost model (a warm start); empty: cold.
  std::vector<costmodel::TrainingRecord> pretrain;
  bool keep_pretrain_data = true;  // XGBOptions::keep_pretrain_data
  // The operator's knob template space (XGBoost + simulated annealing, or
  // random when not guided) instead of the sketch space.
  bool knob = false;
  // Measure the task's fallback first, as `tessera tune` does (the search
  // then starts from it); off: the search alone.
  bool baselines = false;
};

// Tunes `op` with TVM's measurement settings (repeat 1, min_repeat_ms 100)
// as a tuning job on one local worker.
Result<TuneRun> tune(const ops::OpInstance& op, const TuneConfig& config) {
  tuner::TuneConfig job_config;
  job_config.ops = {op};
  job_config.space = config.knob ? tuner::SpaceChoice::kKnob : tuner::SpaceChoice::kSketch;
  job_config.knob_strategy = config.guided ? tuner::KnobStrategy::kXgb : tuner::KnobStrategy::kRandom;
  job_config.sketch_guided = config.guided;
  job_config.trials = config.trials;
  job_config.seed = config.seed;
  job_config.threads = kThreads;
  job_config.number = 1;
  job_config.repeat = 1;
  job_config.min_repeat_ms = 100;
  job_config.measure_default = false;
  job_config.measure_baselines = config.baselines;
  job_config.evolution = config.evolution;
  job_config.keep_pretrain_data = config.keep_pretrain_data;
  job_config.pretrain = config.pretrain;
  job_config.command_line = "bench_tune";
  // The records go to a private database so the history can be read back.
  job_config.db_path = "/tmp/tessera-bench-tune-" + std::to_string(::getpid()) + ".db";
  // Removes the database and its WAL files at the end, after the job (and
  // its store) has closed (it is declared later, so it is destroyed first).
  struct RemoveFiles {
    std::string path;
    void operator()() const {
      for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    }
    ~RemoveFiles() { (*this)(); }
  } cleanup{job_config.db_path};
  cleanup();
  auto job = tuner::TuneJob::open(std::move(job_config), {}, nullptr);
  if (!job.is_ok()) return Status(job.status().code(), job.status().message());
  auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(tuner::JobSummary summary, (*job)->run(nullptr, nullptr));
  TuneRun run;
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.summary = summary.tasks[0];
  const tuner::Task& task = (*job)->tasks()[0];
  TESSERA_ASSIGN_OR_RETURN(run.history, (*job)->store().records_of(task.workload_key(), task.target.to_string()));
  return run;
}

Result<TuneRun> tune(const ops::OpInstance& op, int64_t trials, bool guided, uint64_t seed, bool knob = false) {
  return tune(op, TuneConfig{.trials = trials, .guided = guided, .seed = seed, .knob = knob});
}

// "sketch" or "knob", for the benchmark's label.
const char* space_label(bool knob) { return knob ? "knob space (xgb)" : "sketch space (evolutionary)"; }

// The best record among the first `n` of the history.
const records::Record* best_of_first(const std::vector<records::Record>& history, size_t n) {
  const records::Record* best = nullptr;
  for (size_t i = 0; i < history.size() && i < n; ++i)
    if (history[i].ok() && (!best || history[i].mean_cost() < best->mean_cost())) best = &history[i];
  return best;
}

// A kernel built for the host, with the module that keeps it loaded.
struct BuiltKernel {
  runtime::Module module;
  TesseraKernelFn fn;
};

Result<BuiltKernel> build_state(const State& st) {
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, build(st, host_target(), "kernel"));
  TESSERA_ASSIGN_OR_RETURN(runtime::Module mod, runtime::Module::load_from_bytes(lib.bytes, "/tmp"));
  TESSERA_ASSIGN_OR_RETURN(TesseraKernelFn fn, mod.get_kernel("kernel"));
  return BuiltKernel{std::move(mod), fn};
}

Result<BuiltKernel> build_steps(const ops::OpInstance& op, const std::string& steps_json) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Step> steps, steps_from_json(steps_json));
  TESSERA_ASSIGN_OR_RETURN(State st, replay(op.dag, steps));
  return build_state(st);
}

// A schedule built and timed here with the benchmark's median.
Result<double> time_steps(const ops::OpInstance& op, const std::string& steps_json, std::vector<runtime::NDArray>& args) {
  TESSERA_ASSIGN_OR_RETURN(BuiltKernel kernel, build_steps(op, steps_json));
  const TesseraKernelFn fn = kernel.fn;
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.raw_data());
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  return bench::median_seconds([&] { fn(ptrs.data()); });
}

void report_checkpoints(benchmark::State& state, const ops::OpInstance& op, const TuneRun& run, double peer_s,
                        std::vector<runtime::NDArray>& args, double* final_ratio) {
  for (size_t checkpoint : {size_t{64}, size_t{200}, run.history.size()}) {
    if (checkpoint > run.history.size()) continue;
    const records::Record* best = best_of_first(run.history, checkpoint);
    if (!best) continue;
    auto t = time_steps(op, best->steps_json, args);
    if (!t.is_ok()) continue;
    double ratio = peer_s / *t;
    if (checkpoint == run.history.size()) {
      *final_ratio = ratio;
      state.counters["gflops"] = op.flops / *t / 1e9;
    } else {
      state.counters["vs_peer_" + std::to_string(checkpoint)] = ratio;
    }
  }
  double n = static_cast<double>(std::max<int64_t>(1, run.summary.trials));
  state.counters["s_per_trial"] = run.wall_s / n;
  state.counters["overhead_ms"] = tuner::median_overhead_per_trial_s(run.summary) * 1e3;
  state.counters["overhead_ms_mean"] = (run.summary.search_seconds + run.summary.store_seconds) / n * 1e3;
  state.counters["trials"] = n;
}

// Arguments: trials, space (0 sketch, 1 knob).
void BM_Tune_Matmul1024(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=1024,N=1024,K=1024").value();
  const bool knob = state.range(1) != 0;
  state.SetLabel(space_label(knob));
  for (auto _ : state) {
    auto run = tune(op, state.range(0), /*guided=*/true, 1, knob);
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    auto args = bench::make_args(op);
    runtime::NDArray ref = runtime::NDArray::create({1024, 1024}, DType::f32()).value();
    double peer = bench::median_seconds([&] {
      bench::openblas_sgemm(1024, 1024, 1024, args[0].data<float>(), args[1].data<float>(), ref.data<float>(), kThreads);
    });
    double ratio = 0;
    report_checkpoints(state, op, *run, peer, args, &ratio);
    state.counters["vs_peer"] = ratio;
    state.counters["peer_gflops"] = op.flops / peer / 1e9;
    state.counters["fma_peak_gflops"] = bench::measure_fma_peak_gflops(kThreads);
    // Checking each candidate's output, per trial: the reference (evaluated
    // once for the task) amortised, plus the worker's comparison (the
    // checked call is the timing's warm-up call, made anyway).
    state.counters["check_ms"] = run->summary.check_seconds / std::max<double>(1, run->summary.trials) * 1e3;
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Tune_Matmul1024)
    ->ArgNames({"trials", "knob"})
    ->Args({200, 0})
    ->Args({1000, 0})
    ->Args({64, 1})
    ->Args({1000, 1})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

#ifdef TESSERA_HAVE_DNNL
// The tuned `run` of `op` against oneDNN's `peer` and the dot-product peak
// (`peak_probe`, run before and after the rounds: the higher). The best schedule and the peer are timed in
// turn, five rounds each (the guest's clock moves between benchmarks; each
// round's medians then meet the same moment), oneDNN's OpenMP threads let
// idle before each of Tessera's rounds: vs_peer, gflops, of_peak, and the
// peer's and the peak's rates under their names. The checkpoints'
// vs_peer_64 and vs_peer_200 are timed after the peer's rounds.
void report_against_dnnl(benchmark::State& state, const ops::OpInstance& op, const TuneRun& run,
                         std::vector<runtime::NDArray>& args, const std::function<void()>& peer_call,
                         const std::function<double()>& peak_probe, const char* peak_counter, const char* peer_counter) {
  double peak = peak_probe();
  const records::Record* best = best_of_first(run.history, run.history.size());
  if (!best) return state.SkipWithError("no schedule measured");
  auto kernel = build_steps(op, best->steps_json);
  if (!kernel.is_ok()) return state.SkipWithError(kernel.status().to_string().c_str());
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.raw_data());
  std::vector<double> ours, peers;
  for (int round = 0; round < 5; ++round) {
    peers.push_back(bench::median_seconds(peer_call));
    bench::let_peer_threads_idle();
    runtime::ThreadPool pool(kThreads);
    runtime::ParallelScope scope(&pool);
    ours.push_back(bench::median_seconds([&] { kernel->fn(ptrs.data()); }));
  }
  std::sort(ours.begin(), ours.end());
  std::sort(peers.begin(), peers.end());
  const double ours_s = ours[2], peer_s = peers[2];
  peak = std::max(peak, peak_probe());
  double sequential_ratio = 0;
  report_checkpoints(state, op, run, peer_s, args, &sequential_ratio);
  state.counters["vs_peer"] = peer_s / ours_s;
  state.counters["gflops"] = op.flops / ours_s / 1e9;
  state.counters[peer_counter] = op.flops / peer_s / 1e9;
  state.counters[peak_counter] = peak;
  if (peak > 0) state.counters["of_peak"] = state.counters["gflops"] / peak;
}

// The int8 product u8 x s8 -> int32 at 1024^3 (ops::matmul_u8s8: K's bytes
// packed four to a word), tuned, against oneDNN's int8 matmul (its weights
// reordered once, untimed) and the machine's vpdpbusd peak, both measured in
// the same run. gops counts a multiply-add as 2. Arguments: trials, space.
void BM_Int8_Matmul(benchmark::State& state) {
  constexpr int64_t kN = 1024;
  auto op = ops::parse_op_spec("matmul_u8s8:M=1024,N=1024,K=1024").value();
  const bool knob = state.range(1) != 0;
  state.SetLabel(space_label(knob));
  for (auto _ : state) {
    auto run = tune(op, state.range(0), /*guided=*/true, 1, knob);
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    auto args = bench::make_args(op);
    // The same bytes for oneDNN: A as it is, B unpacked to K x N.
    const auto* a = static_cast<const uint8_t*>(args[0].raw_data());
    const auto* packed = static_cast<const int8_t*>(args[1].raw_data());
    std::vector<int8_t> b(static_cast<size_t>(kN * kN));
    for (int64_t q = 0; q < kN / 4; ++q)
      for (int64_t j = 0; j < kN; ++j)
        for (int64_t r = 0; r < 4; ++r) b[static_cast<size_t>((4 * q + r) * kN + j)] = packed[(q * kN + j) * 4 + r];
    bench::set_dnnl_threads(kThreads);
    bench::DnnlMatmulU8S8 dnnl(kN, kN, kN);
    dnnl.prepare(a, b.data());
    report_against_dnnl(
        state, op, *run, args, [&] { dnnl.run(); }, [] { return bench::measure_vnni_peak_gops(kThreads); },
        "vnni_peak_gops", "peer_gops");
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Int8_Matmul)
    ->ArgNames({"trials", "knob"})
    ->Args({200, 0})
    ->Args({200, 1})
    ->Args({1000, 1})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// The bfloat16 product accumulated in float32 at 1024^3 (ops::matmul_bf16:
// B packed in pairs along K), tuned, against oneDNN's bf16 matmul (its
// weights reordered once, untimed) and the machine's vdpbf16ps peak, both
// measured in the same run. A multiply-add counts 2. Arguments: trials, space.
void BM_Bf16_Matmul(benchmark::State& state) {
  constexpr int64_t kN = 1024;
  auto op = ops::parse_op_spec("matmul_bf16:M=1024,N=1024,K=1024").value();
  const bool knob = state.range(1) != 0;
  state.SetLabel(space_label(knob));
  for (auto _ : state) {
    auto run = tune(op, state.range(0), /*guided=*/true, 1, knob);
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    auto args = bench::make_args(op);
    // The same values for oneDNN: A as it is, B unpacked to K x N.
    const auto* a = static_cast<const uint16_t*>(args[0].raw_data());
    const auto* packed = static_cast<const uint16_t*>(args[1].raw_data());
    std::vector<uint16_t> b(static_cast<size_t>(kN * kN));
    for (int64_t q = 0; q < kN / 2; ++q)
      for (int64_t j = 0; j < kN; ++j)
        for (int64_t r = 0; r < 2; ++r) b[static_cast<size_t>((2 * q + r) * kN + j)] = packed[(q * kN + j) * 2 + r];
    bench::set_dnnl_threads(kThreads);
    bench::DnnlMatmulBf16 dnnl(kN, kN, kN);
    dnnl.prepare(a, b.data());
    report_against_dnnl(
        state, op, *run, args, [&] { dnnl.run(); }, [] { return bench::measure_bf16_peak_gflops(kThreads); },
        "bf16_peak_gflops", "peer_gflops");
    state.counters["fma_peak_gflops"] = bench::measure_fma_peak_gflops(kThreads);
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Bf16_Matmul)
    ->ArgNames({"trials", "knob"})
    ->Args({200, 0})
    ->Args({200, 1})
    ->Args({1000, 1})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
#endif

// Arguments: trials per layer, space (0 sketch, 1 knob), layers (the first n
// of the four). Tessera's convs are NHWC (the layout the model compiler
// gives conv-heavy graphs); oneDNN picks its own blocked format, reorders
// excluded.
void BM_Tune_ResNetConvs(benchmark::State& state) {
  const bool knob = state.range(1) != 0;
  std::vector<bench::ConvLayer> layers = bench::resnet50_conv_layers();
  layers.resize(std::clamp<int64_t>(state.range(2), 1, static_cast<int64_t>(layers.size())));
  state.SetLabel(space_label(knob));
  bench::set_dnnl_threads(kThreads);
  double log_sum = 0, log_sum_64 = 0, log_sum_200 = 0, wall = 0;
  int n = 0, n64 = 0, n200 = 0;
  for (auto _ : state) {
    for (const bench::ConvLayer& l : layers) {
      auto op = ops::parse_op_spec(bench::conv2d_nhwc_spec(l)).value();
      auto run = tune(op, state.range(0), true, 1, knob);
      if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
      wall += run->wall_s;
      auto args = bench::make_args(op);
      bench::DnnlConv dnnl(l.c, l.h, l.w, l.k, l.r, l.s, l.stride, l.pad);
      dnnl.prepare(args[0].data<float>(), args[1].data<float>());
      double peer = bench::median_seconds([&] { dnnl.run(); });
      const records::Record* best = best_of_first(run->history, run->history.size());
      const records::Record* best64 = best_of_first(run->history, 64);
      const records::Record* best200 = best_of_first(run->history, 200);
      if (best) {
        auto t = time_steps(op, best->steps_json, args);
        if (t.is_ok()) {
          log_sum += std::log(peer / *t);
          ++n;
          state.counters["layer" + std::to_string(n) + "_vs_peer"] = peer / *t;
          state.counters["layer" + std::to_string(n) + "_gflops"] = op.flops / *t / 1e9;
        }
      }
      if (best64 && run->history.size() > 64) {
        auto t = time_steps(op, best64->steps_json, args);
        if (t.is_ok()) {
          log_sum_64 += std::log(peer / *t);
          ++n64;
        }
      }
      if (best200 && run->history.size() > 200) {
        auto t = time_steps(op, best200->steps_json, args);
        if (t.is_ok()) {
          log_sum_200 += std::log(peer / *t);
          ++n200;
        }
      }
    }
    state.SetIterationTime(wall);
  }
  if (n) state.counters["vs_peer"] = std::exp(log_sum / n);
  if (n64) state.counters["vs_peer_64"] = std::exp(log_sum_64 / n64);
  if (n200) state.counters["vs_peer_200"] = std::exp(log_sum_200 / n200);
  state.counters["fma_peak_gflops"] = bench::measure_fma_peak_gflops(kThreads);
}
BENCHMARK(BM_Tune_ResNetConvs)
    ->ArgNames({"trials", "knob", "layers"})
    ->Args({64, 0, 4})
    ->Args({1000, 0, 4})
    ->Args({64, 1, 1})
    ->Args({1000, 1, 4})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// Trials until a run's history holds a kernel within 90% of `best_cost`'s
// throughput; the budget + 1 when it never does.
double trials_to_90pct(const std::vector<records::Record>& history, double best_cost) {
  for (size_t i = 0; i < history.size(); ++i)
    if (history[i].ok() && best_cost / history[i].mean_cost() >= 0.9) return static_cast<double>(i + 1);
  return static_cast<double>(history.size() + 1);
}

double best_cost_of(std::initializer_list<const std::vector<records::Record>*> histories) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto* h : histories)
    for (const auto& r : *h)
      if (r.ok()) best = std::min(best, r.mean_cost());
  return best;
}

// Trials to reach 90% of the best kernel either search of a seed found:
// guided by XGBoost vs random sampling of the same space (matmul 512^3),
// means over seeds 1..range(1); range(2) = 1: the knob space (XGBoost +
// simulated annealing vs random configurations), else the sketch space.
// Each seed's pair runs in alternating order, so a drift in the machine's
// load does not always favour the same side.
void BM_Tune_Efficiency(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=512,N=512,K=512").value();
  const int seeds = static_cast<int>(state.range(1));
  const bool knob = state.range(2) != 0;
  state.SetLabel(space_label(knob));
  for (auto _ : state) {
    double guided_sum = 0, random_sum = 0, wall = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      const uint64_t s = static_cast<uint64_t>(seed);
      Result<TuneRun> guided = Status(ErrorCode::kInternal, "not run"), random = guided;
      if (seed % 2) {
        guided = tune(op, state.range(0), true, s, knob);
        random = tune(op, state.range(0), false, s, knob);
      } else {
        random = tune(op, state.range(0), false, s, knob);
        guided = tune(op, state.range(0), true, s, knob);
      }
      if (!guided.is_ok() || !random.is_ok()) return state.SkipWithError("tuning failed");
      const double best = best_cost_of({&guided->history, &random->history});
      const double g = trials_to_90pct(guided->history, best), r = trials_to_90pct(random->history, best);
      guided_sum += g;
      random_sum += r;
      wall += guided->wall_s + random->wall_s;
      std::fprintf(stderr, "efficiency seed %d: trials to 90%% xgb %.0f random %.0f, best GFLOP/s %.1f / %.1f\n", seed,
                   g, r, op.flops / guided->summary.best_cost_s / 1e9, op.flops / random->summary.best_cost_s / 1e9);
    }
    state.counters["trials_to_90pct_xgb"] = guided_sum / seeds;
    state.counters["trials_to_90pct_random"] = random_sum / seeds;
    state.SetIterationTime(wall);
  }
}
BENCHMARK(BM_Tune_Efficiency)
    ->ArgNames({"trials", "seeds", "knob"})
    ->Args({128, 3, 0})
    ->Args({128, 3, 1})
    ->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// The tuner's own time per trial (search, cost model, records store; not
// building or measuring): the median over rounds, matmul 512^3.
void BM_Tuner_Overhead(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=512,N=512,K=512").value();
  for (auto _ : state) {
    auto run = tune(op, state.range(0), /*guided=*/true, 1);
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    const tuner::TaskSummary& s = run->summary;
    const double n = static_cast<double>(std::max<int64_t>(1, s.trials));
    state.counters["overhead_ms"] = tuner::median_overhead_per_trial_s(s) * 1e3;
    state.counters["overhead_ms_mean"] = (s.search_seconds + s.store_seconds) / n * 1e3;
    std::vector<double> rounds = s.overhead_per_trial_s;
    std::sort(rounds.begin(), rounds.end());
    if (!rounds.empty()) state.counters["overhead_ms_max"] = rounds.back() * 1e3;
    state.counters["search_ms"] = s.search_seconds / n * 1e3;
    state.counters["store_ms"] = s.store_seconds / n * 1e3;
    state.counters["build_ms"] = s.build_seconds / n * 1e3;
    state.counters["measure_ms"] = s.measure_seconds / n * 1e3;
    state.counters["s_per_trial"] = run->wall_s / n;
    state.counters["best_gflops"] = op.flops / s.best_cost_s / 1e9;
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Tuner_Overhead)->Arg(128)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// Batch-1 dense (a GEMV, memory-bound: 8 MB of weights) tuned in the sketch
// space against OpenBLAS cblas_sgemv. The three fastest records of the run
// (one 100 ms timing each while tuning, on a noisy machine) are rebuilt and
// timed here alternately with the peer, 11 rounds; each round gives a ratio
// (peer / ours, measured back to back), and the kernel with the best median
// ratio is reported.
void BM_Tune_Dense1x1000x2048(benchmark::State& state) {
  auto op = ops::parse_op_spec("dense:M=1,N=1000,K=2048").value();
  constexpr int64_t kN = 1000, kK = 2048;
  constexpr int kRounds = 11;
  const double weight_bytes = static_cast<double>(kN * kK * sizeof(float));
  for (auto _ : state) {
    auto run = tune(op, state.range(0), /*guided=*/true, 1);
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    std::vector<const records::Record*> top;
    for (const auto& r : run->history)
      if (r.ok()) top.push_back(&r);
    std::sort(top.begin(), top.end(), [](const auto* a, const auto* b) { return a->mean_cost() < b->mean_cost(); });
    if (top.size() > 3) top.resize(3);
    if (top.empty()) return state.SkipWithError("no kernel was measured");
    std::vector<BuiltKernel> kernels;
    for (const auto* r : top) {
      auto k = build_steps(op, r->steps_json);
      if (!k.is_ok()) return state.SkipWithError(k.status().to_string().c_str());
      kernels.push_back(std::move(*k));
    }
    auto args = bench::make_args(op);  // X, W, Y
    std::vector<void*> ptrs;
    for (auto& a : args) ptrs.push_back(a.raw_data());
    std::vector<float> ref(kN);
    runtime::ThreadPool pool(kThreads);
    runtime::ParallelScope scope(&pool);
    auto peer = [&] { bench::openblas_sgemv(kN, kK, args[1].data<float>(), args[0].data<float>(), ref.data(), kThreads); };
    std::vector<std::vector<double>> ratios(kernels.size()), times(kernels.size());
    std::vector<double> peer_times;
    for (int r = 0; r < kRounds; ++r) {
      for (size_t k = 0; k < kernels.size(); ++k) {
        bench::let_peer_threads_idle();
        const double p = bench::median_seconds(peer, 3, 10);
        bench::let_peer_threads_idle();
        const double t = bench::median_seconds([&] { kernels[k].fn(ptrs.data()); }, 3, 10);
        ratios[k].push_back(p / t);
        times[k].push_back(t);
        peer_times.push_back(p);
      }
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    size_t best = 0;
    for (size_t k = 1; k < kernels.size(); ++k)
      if (median(ratios[k]) > median(ratios[best])) best = k;
    kernels[best].fn(ptrs.data());
    peer();
    double max_err = 0;
    for (int64_t i = 0; i < kN; ++i)
      max_err = std::max(max_err, std::fabs(static_cast<double>(args[2].data<float>()[i] - ref[i])));
    const double ours_s = median(times[best]), peer_s = median(peer_times);
    state.counters["vs_peer"] = median(ratios[best]);
    state.counters["gbps"] = weight_bytes / ours_s / 1e9;
    state.counters["peer_gbps"] = weight_bytes / peer_s / 1e9;
    state.counters["us"] = ours_s * 1e6;
    state.counters["peer_us"] = peer_s * 1e6;
    state.counters["max_abs_err"] = max_err;
    state.counters["best_trial"] = static_cast<double>(top[best] - run->history.data() + 1);
    state.counters["s_per_trial"] = run->wall_s / static_cast<double>(std::max<int64_t>(1, run->summary.trials));
    std::fprintf(stderr, "best dense steps: %s\n", top[best]->steps_json.c_str());
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Tune_Dense1x1000x2048)->Arg(128)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// ---------------------------------------------------------------------------
// Shapes that do not divide into friendly tiles: primes, an odd class count,
// a GEMV, depthwise convs. Each is tuned as `tessera tune` does (the
// fallback measured first, then the search), then its best kernel and its
// untuned fallback (what compile time uses without records) are timed here
// against the peer, alternately, in the same run.

struct OddShape {
  const char* spec;
  const char* peer;  // what the peer is, for the label
};

const OddShape kOddShapes[] = {
    {"matmul:M=997,N=1009,K=499", "cblas_sgemm"},
    {"dense:M=40,N=6625,K=120,bias=1", "cblas_sgemm + bias"},
    {"dense:M=1,N=1000,K=2048", "cblas_sgemv"},
    {"depthwise_conv2d:N=1,C=144,H=56,W=56,R=3,S=3,stride=1,pad=1", "oneDNN"},
    {"depthwise_conv2d:N=1,C=144,H=56,W=56,R=3,S=3,stride=2,pad=1", "oneDNN"},
    // The same layers in NHWC, as a model runs them (oneDNN in its own
    // blocked layout either way, its reorders untimed).
    {"depthwise_conv2d_nhwc:N=1,C=144,H=56,W=56,R=3,S=3,stride=1,pad=1", "oneDNN"},
    {"depthwise_conv2d_nhwc:N=1,C=144,H=56,W=56,R=3,S=3,stride=2,pad=1", "oneDNN"},
    // A mel front end's STFT (one input channel, 512 taps, 257 channels,
    // stride 160), as a model compiles it: the product of its windows.
    {"conv1d:W=16512,K=257,S=512,stride=160", "oneDNN"},
};

bool is_nhwc_shape(int index) { return index >= 5; }

// `from` (d0 x d1 x d2 x d3) transposed by `perm` (out dim i is in dim perm[i]).
std::vector<float> transposed(const float* from, const std::vector<int64_t>& shape, const std::vector<int>& perm) {
  std::vector<int64_t> out_shape(4), strides(4, 1);
  for (int d = 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  for (int d = 0; d < 4; ++d) out_shape[d] = shape[perm[d]];
  std::vector<float> out;
  out.reserve(static_cast<size_t>(out_shape[0] * out_shape[1] * out_shape[2] * out_shape[3]));
  for (int64_t a = 0; a < out_shape[0]; ++a)
    for (int64_t b = 0; b < out_shape[1]; ++b)
      for (int64_t c = 0; c < out_shape[2]; ++c)
        for (int64_t d = 0; d < out_shape[3]; ++d) {
          const int64_t idx[4] = {a, b, c, d};
          int64_t i = 0;
          for (int k = 0; k < 4; ++k) i += idx[k] * strides[perm[k]];
          out.push_back(from[i]);
        }
  return out;
}

// The peer of shape `index` on `args` (the operator's arguments, output last).
std::function<void()> odd_shape_peer(int index, std::vector<runtime::NDArray>& args,
                                     std::unique_ptr<bench::DnnlConv>& dnnl) {
  float* out = args.back().data<float>();
  switch (index) {
    case 0: return [&args, out] { bench::openblas_sgemm(997, 1009, 499, args[0].data<float>(), args[1].data<float>(), out, kThreads); };
    case 1:
      return [&args, out] {
        bench::openblas_dense(40, 6625, 120, args[0].data<float>(), args[1].data<float>(), args[2].data<float>(), out, kThreads);
      };
    case 2: return [&args, out] { bench::openblas_sgemv(1000, 2048, args[1].data<float>(), args[0].data<float>(), out, kThreads); };
    case 7: {
      // X is N x 1 x W x 1, the same bytes as NCHW; the S x K weights as OIHW.
      dnnl = std::make_unique<bench::DnnlConv>(1, 1, 16512, 257, 1, 512, 160, 0);
      const std::vector<float> w = transposed(args[1].data<float>(), {1, 1, 512, 257}, {3, 0, 1, 2});
      dnnl->prepare(args[0].data<float>(), w.data());
      return [&dnnl] { dnnl->run(); };
    }
    default: {
      const int64_t stride = index == 3 || index == 5 ? 1 : 2;
      dnnl = std::make_unique<bench::DnnlConv>(144, 56, 56, 144, 3, 3, stride, 1, 144);
      if (is_nhwc_shape(index)) {
        // NHWC input and R x S x 1 x K weights, given to oneDNN as NCHW / OIHW.
        const std::vector<float> x = transposed(args[0].data<float>(), args[0].shape(), {0, 3, 1, 2});
        const std::vector<float> w = transposed(args[1].data<float>(), args[1].shape(), {3, 2, 0, 1});
        dnnl->prepare(x.data(), w.data());
      } else {
        dnnl->prepare(args[0].data<float>(), args[1].data<float>());
      }
      return [&dnnl] { dnnl->run(); };
    }
  }
}

// Peer time / kernel time, the median of 7 rounds, each timing after the
// other side's threads have gone idle (bench::let_peer_threads_idle).
double ratio_to_peer(const std::function<void()>& kernel, const std::function<void()>& peer) {
  std::vector<double> ratios;
  for (int r = 0; r < 7; ++r) {
    bench::let_peer_threads_idle();
    const double peer_s = bench::median_seconds(peer, 3, 20);
    bench::let_peer_threads_idle();
    ratios.push_back(peer_s / bench::median_seconds(kernel, 3, 20));
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios[ratios.size() / 2];
}

// Runs `kernel` and the peer on the same arguments and compares the outputs;
// an error message when the kernel fails or differs.
std::string check_against_peer(TesseraKernelFn kernel, std::vector<void*> ptrs, const std::function<void()>& peer,
                               runtime::NDArray& out, std::unique_ptr<bench::DnnlConv>& dnnl, bool nhwc) {
  if (const int32_t status = kernel(ptrs.data()); status != 0) return "kernel returned status " + std::to_string(status);
  std::vector<float> ours(out.data<float>(), out.data<float>() + out.numel());
  peer();
  if (dnnl && nhwc) {
    const std::vector<int64_t>& s = out.shape();  // N x P x Q x K
    std::vector<float> nchw(static_cast<size_t>(out.numel()));
    dnnl->output(nchw.data());
    const std::vector<float> back = transposed(nchw.data(), {s[0], s[3], s[1], s[2]}, {0, 2, 3, 1});
    std::copy(back.begin(), back.end(), out.data<float>());
  } else if (dnnl) {
    dnnl->output(out.data<float>());
  }
  double worst = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double want = out.data<float>()[i];
    worst = std::max(worst, std::fabs(ours[i] - want) / (1.0 + std::fabs(want)));
  }
  return worst > 1e-3 ? "output differs from the peer's (relative error " + std::to_string(worst) + ")" : "";
}

// A kernel's argument pointers: `args`, except the ones its schedule packs
// (pack_layout), which point to packed copies kept in `packed`.
std::vector<void*> kernel_args(const State& state, std::vector<runtime::NDArray>& args,
                               std::vector<runtime::NDArray>& packed) {
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.raw_data());
  for (const auto& [index, layout] : packed_arguments(state)) {
    runtime::NDArray& a = args[static_cast<size_t>(index)];
    packed.push_back(runtime::NDArray::create(packed_shape(a.shape(), layout), a.dtype()).value());
    pack_elements(a.raw_data(), packed.back().raw_data(), a.shape(), a.dtype().storage_bytes(), layout);
    ptrs[static_cast<size_t>(index)] = packed.back().raw_data();
  }
  return ptrs;
}

std::vector<double> odd_shape_ratios;  // vs_peer of every shape run in this process

// Arguments: shape (index into kOddShapes), trials, space (0 sketch, 1 knob).
void BM_Tune_OddShapes(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const bool knob = state.range(2) != 0;
  const OddShape& shape = kOddShapes[index];
  auto op = ops::parse_op_spec(shape.spec).value();
  state.SetLabel(std::string(shape.spec) + " vs " + shape.peer + ", " + space_label(knob));
  bench::set_dnnl_threads(kThreads);
  for (auto _ : state) {
    auto run = tune(op, TuneConfig{.trials = state.range(1), .seed = 1, .knob = knob, .baselines = true});
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    const records::Record* best = best_of_first(run->history, run->history.size());
    if (!best) return state.SkipWithError("no kernel was measured");
    auto tuned = build_steps(op, best->steps_json);
    if (!tuned.is_ok()) return state.SkipWithError(tuned.status().to_string().c_str());
    auto choice = choose_schedule(op.dag, op.op, host_target(), nullptr);
    if (!choice.is_ok()) return state.SkipWithError(choice.status().to_string().c_str());
    auto fallback_kernel = build_state(choice->state);
    if (!fallback_kernel.is_ok()) return state.SkipWithError(fallback_kernel.status().to_string().c_str());
    TesseraKernelFn fallback = fallback_kernel->fn;

    auto args = bench::make_args(op);
    std::vector<runtime::NDArray> packed;
    packed.reserve(2 * args.size());  // ptrs point into it
    auto tuned_state = replay(op.dag, steps_from_json(best->steps_json).value());
    if (!tuned_state.is_ok()) return state.SkipWithError(tuned_state.status().to_string().c_str());
    std::vector<void*> ptrs = kernel_args(*tuned_state, args, packed);
    std::vector<void*> fallback_ptrs = kernel_args(choice->state, args, packed);
    std::unique_ptr<bench::DnnlConv> dnnl;
    auto peer = odd_shape_peer(index, args, dnnl);
    runtime::ThreadPool pool(kThreads);
    runtime::ParallelScope scope(&pool);
    for (bool is_fallback : {false, true}) {
      const std::string wrong = check_against_peer(is_fallback ? fallback : tuned->fn, is_fallback ? fallback_ptrs : ptrs,
                                                   peer, args.back(), dnnl, is_nhwc_shape(index));
      if (!wrong.empty()) return state.SkipWithError(((is_fallback ? "fallback: " : "tuned: ") + wrong).c_str());
    }
    const double vs_peer = ratio_to_peer([&] { tuned->fn(ptrs.data()); }, peer);
    odd_shape_ratios.push_back(vs_peer);
    state.counters["vs_peer"] = vs_peer;
    state.counters["fallback_vs_peer"] = ratio_to_peer([&] { fallback(fallback_ptrs.data()); }, peer);
    state.counters["gflops"] = op.flops / bench::median_seconds([&] { tuned->fn(ptrs.data()); }) / 1e9;
    state.counters["check_ms"] = run->summary.check_seconds / std::max<double>(1, run->summary.trials) * 1e3;
    state.counters["s_per_trial"] = run->wall_s / std::max<double>(1, run->summary.trials);
    std::fprintf(stderr, "%s best steps: %s\n", shape.spec, best->steps_json.c_str());
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Tune_OddShapes)
    ->ArgNames({"shape", "trials", "knob"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {16, 200}, {0, 1}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// One schedule of an odd shape against its peer, to study a record without
// tuning: TESSERA_BENCH_STEPS is the schedule's steps JSON (as the records
// keep it) or a file holding it. Argument: shape (index into kOddShapes).
void BM_OddShapeSchedule(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const char* given = std::getenv("TESSERA_BENCH_STEPS");
  if (!given || !*given) return state.SkipWithError("set TESSERA_BENCH_STEPS to a steps JSON or a file holding one");
  std::string steps_json = given;
  if (steps_json.front() != '[') {
    std::ifstream in(given);
    if (!in) return state.SkipWithError(("cannot read " + steps_json).c_str());
    steps_json.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto op = ops::parse_op_spec(kOddShapes[index].spec).value();
  state.SetLabel(std::string(kOddShapes[index].spec) + " vs " + kOddShapes[index].peer);
  bench::set_dnnl_threads(kThreads);
  auto steps = steps_from_json(steps_json);
  if (!steps.is_ok()) return state.SkipWithError(steps.status().to_string().c_str());
  auto replayed = replay(op.dag, *steps);
  if (!replayed.is_ok()) return state.SkipWithError(replayed.status().to_string().c_str());
  auto kernel = build_state(*replayed);
  if (!kernel.is_ok()) return state.SkipWithError(kernel.status().to_string().c_str());
  TesseraKernelFn fn = kernel->fn;
  auto args = bench::make_args(op);
  std::vector<runtime::NDArray> packed;
  std::vector<void*> ptrs = kernel_args(*replayed, args, packed);
  std::unique_ptr<bench::DnnlConv> dnnl;
  auto peer = odd_shape_peer(index, args, dnnl);
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  const std::string wrong = check_against_peer(fn, ptrs, peer, args.back(), dnnl, is_nhwc_shape(index));
  if (!wrong.empty()) return state.SkipWithError(wrong.c_str());
  for (auto _ : state) {
    state.counters["vs_peer"] = ratio_to_peer([&] { fn(ptrs.data()); }, peer);
    state.counters["gflops"] = op.flops / bench::median_seconds([&] { fn(ptrs.data()); }) / 1e9;
  }
}
BENCHMARK(BM_OddShapeSchedule)->ArgName("shape")->DenseRange(0, 6)->Iterations(1);

// The M x N x K of BM_Fallback_RandomMatmuls: `count` drawn log-uniformly
// from 1..2048 (seed 7), or those TESSERA_BENCH_MATMULS lists ("77x384x384
// 512x512x512", separated by spaces or commas).
std::vector<std::array<int64_t, 3>> fallback_matmul_shapes(int64_t count) {
  std::vector<std::array<int64_t, 3>> shapes;
  if (const char* listed = std::getenv("TESSERA_BENCH_MATMULS")) {
    std::string text = listed;
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream in(text);
    for (std::string word; in >> word;) {
      std::array<int64_t, 3> mnk{};
      char x1 = 0, x2 = 0;
      std::istringstream w(word);
      if (!(w >> mnk[0] >> x1 >> mnk[1] >> x2 >> mnk[2]) || x1 != 'x' || x2 != 'x' || mnk[0] < 1 || mnk[1] < 1 || mnk[2] < 1)
        return {};
      shapes.push_back(mnk);
    }
    return shapes;
  }
  SpaceRng rng(7);
  auto dim = [&rng] { return std::max<int64_t>(1, static_cast<int64_t>(std::exp(std::log(2048.0) * rng.real()))); };
  for (int64_t s = 0; s < count; ++s) {
    const int64_t m = dim(), n = dim(), k = dim();
    shapes.push_back({m, n, k});
  }
  return shapes;
}

// Untuned matmuls of shapes nobody picked (fallback_matmul_shapes), each the
// fallback schedule (choose_schedule, no records) against cblas_sgemm on the
// same arguments. Counters: the geometric mean and the worst
// fallback_vs_peer; each shape's ratio goes to stderr. Argument: how many
// random shapes.
void BM_Fallback_RandomMatmuls(benchmark::State& state) {
  const std::vector<std::array<int64_t, 3>> shapes = fallback_matmul_shapes(state.range(0));
  if (shapes.empty()) return state.SkipWithError("TESSERA_BENCH_MATMULS: expected shapes like 77x384x384");
  std::vector<double> ratios;
  std::string worst_shape;
  for (auto _ : state) {
    for (const auto& [m, n, k] : shapes) {
      const std::string spec =
          "matmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
      auto op = ops::parse_op_spec(spec).value();
      auto choice = choose_schedule(op.dag, op.op, host_target(), nullptr);
      if (!choice.is_ok()) return state.SkipWithError((spec + ": " + choice.status().to_string()).c_str());
      auto kernel = build_state(choice->state);
      if (!kernel.is_ok()) return state.SkipWithError((spec + ": " + kernel.status().to_string()).c_str());
      TesseraKernelFn fn = kernel->fn;
      auto args = bench::make_args(op);
      std::vector<runtime::NDArray> packed;
      std::vector<void*> ptrs = kernel_args(choice->state, args, packed);
      float* out = args.back().data<float>();
      auto peer = [&] { bench::openblas_sgemm(m, n, k, args[0].data<float>(), args[1].data<float>(), out, kThreads); };
      runtime::ThreadPool pool(kThreads);
      runtime::ParallelScope scope(&pool);
      std::unique_ptr<bench::DnnlConv> no_dnnl;
      const std::string wrong = check_against_peer(fn, ptrs, peer, args.back(), no_dnnl, false);
      if (!wrong.empty()) return state.SkipWithError((spec + ": " + wrong).c_str());
      ratios.push_back(ratio_to_peer([&] { fn(ptrs.data()); }, peer));
      std::fprintf(stderr, "%s fallback_vs_peer %.3f\n", spec.c_str(), ratios.back());
      if (ratios.back() <= *std::min_element(ratios.begin(), ratios.end())) worst_shape = spec;
    }
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  state.counters["fallback_vs_peer"] = std::exp(log_sum / static_cast<double>(ratios.size()));
  state.counters["worst"] = *std::min_element(ratios.begin(), ratios.end());
  state.SetLabel("worst: " + worst_shape);
}
BENCHMARK(BM_Fallback_RandomMatmuls)->Arg(24)->Iterations(1)->Unit(benchmark::kSecond);

// The geometric mean of the vs_peer of every BM_Tune_OddShapes run before it
// in this process (run it in the same --benchmark_filter).
void BM_Tune_OddShapesGeomean(benchmark::State& state) {
  if (odd_shape_ratios.empty()) return state.SkipWithError("no BM_Tune_OddShapes ran before it");
  for (auto _ : state) {
    double log_sum = 0;
    for (double r : odd_shape_ratios) log_sum += std::log(r);
    state.counters["vs_peer"] = std::exp(log_sum / static_cast<double>(odd_shape_ratios.size()));
    state.counters["shapes"] = static_cast<double>(odd_shape_ratios.size());
  }
}
BENCHMARK(BM_Tune_OddShapesGeomean)->Iterations(1);

// Evolution with and without crossover on the same space and seeds (matmul
// 512^3): trials to 90% of the best kernel either run of a seed found, and
// each run's best GFLOP/s; means over seeds 1..range(1).
void BM_Tune_Crossover(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=512,N=512,K=512").value();
  const int seeds = static_cast<int>(state.range(1));
  for (auto _ : state) {
    double t_on = 0, t_off = 0, g_on = 0, g_off = 0, wall = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      TuneConfig on{.trials = state.range(0), .seed = static_cast<uint64_t>(seed)};
      TuneConfig off = on;
      off.evolution.crossover = false;
      auto with = tune(op, on);
      auto without = tune(op, off);
      if (!with.is_ok() || !without.is_ok()) return state.SkipWithError("tuning failed");
      const double best = best_cost_of({&with->history, &without->history});
      t_on += trials_to_90pct(with->history, best);
      t_off += trials_to_90pct(without->history, best);
      g_on += op.flops / with->summary.best_cost_s / 1e9;
      g_off += op.flops / without->summary.best_cost_s / 1e9;
      wall += with->wall_s + without->wall_s;
      std::fprintf(stderr, "crossover seed %d: trials to 90%% with %.0f without %.0f, best GFLOP/s %.1f / %.1f\n", seed,
                   trials_to_90pct(with->history, best), trials_to_90pct(without->history, best),
                   op.flops / with->summary.best_cost_s / 1e9, op.flops / without->summary.best_cost_s / 1e9);
    }
    state.counters["trials_to_90pct_crossover"] = t_on / seeds;
    state.counters["trials_to_90pct_no_crossover"] = t_off / seeds;
    state.counters["best_gflops_crossover"] = g_on / seeds;
    state.counters["best_gflops_no_crossover"] = g_off / seeds;
    state.SetIterationTime(wall);
  }
}
BENCHMARK(BM_Tune_Crossover)->Args({128, 3})->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// Pre-training records for the cost model from a run's history: features of
// each program, throughput normalized by the run's best, one group.
std::vector<costmodel::TrainingRecord> training_records(const ops::OpInstance& op,
                                                        const std::vector<records::Record>& history, int64_t group) {
  std::vector<costmodel::TrainingRecord> out;
  double best = best_cost_of({&history});
  for (const records::Record& r : history) {
    auto steps = steps_from_json(r.steps_json);
    if (!steps.is_ok()) continue;
    auto st = replay(op.dag, *steps);
    if (!st.is_ok()) continue;
    auto f = costmodel::extract_features(*st);
    if (!f.is_ok()) continue;
    out.push_back({std::move(*f), tuner::normalized_throughput(r, best), group});
  }
  return out;
}

// Cold start vs a cost model pre-trained on another workload's records
// (matmul 512^3, tuned first) when tuning matmul 1024x1024x512; cold and warm
// runs use the same seeds 1..range(1). Counters, means over the seeds:
// trials to 90% of the best any run of a seed found, best GFLOP/s, and the
// first batch's mean GFLOP/s; "_forget": pre-trained with
// keep_pretrain_data = false (the records' trees, not the records).
void BM_Tune_Pretrain(benchmark::State& state) {
  auto source = ops::parse_op_spec("matmul:M=512,N=512,K=512").value();
  auto target = ops::parse_op_spec("matmul:M=1024,N=1024,K=512").value();
  const int seeds = static_cast<int>(state.range(1));
  // Mean GFLOP/s of the first batch: what the warm start changes most.
  auto first_batch = [&](const std::vector<records::Record>& h) {
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < h.size() && i < 16; ++i, ++n)
      if (h[i].ok()) sum += target.flops / h[i].mean_cost() / 1e9;
    return n ? sum / n : 0.0;
  };
  for (auto _ : state) {
    auto src = tune(source, TuneConfig{.trials = state.range(0), .seed = 5});
    if (!src.is_ok()) return state.SkipWithError(src.status().to_string().c_str());
    // Group 1: the target's own samples are group 0 (update()), ranked apart.
    const std::vector<costmodel::TrainingRecord> records = training_records(source, src->history, 1);
    double t_cold = 0, t_warm = 0, g_cold = 0, g_warm = 0, f_cold = 0, f_warm = 0, wall = src->wall_s;
    double t_forget = 0, g_forget = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      TuneConfig cold{.trials = state.range(0), .seed = static_cast<uint64_t>(seed)};
      TuneConfig warm = cold;
      warm.pretrain = records;
      // The records' trees without the records: later retrainings use the run's samples only.
      TuneConfig forget = warm;
      forget.keep_pretrain_data = false;
      auto c = tune(target, cold);
      auto w = tune(target, warm);
      auto fg = tune(target, forget);
      if (!c.is_ok() || !w.is_ok() || !fg.is_ok()) return state.SkipWithError("tuning failed");
      const double best = best_cost_of({&c->history, &w->history, &fg->history});
      t_forget += trials_to_90pct(fg->history, best);
      g_forget += target.flops / fg->summary.best_cost_s / 1e9;
      wall += fg->wall_s;
      t_cold += trials_to_90pct(c->history, best);
      t_warm += trials_to_90pct(w->history, best);
      g_cold += target.flops / c->summary.best_cost_s / 1e9;
      g_warm += target.flops / w->summary.best_cost_s / 1e9;
      f_cold += first_batch(c->history);
      f_warm += first_batch(w->history);
      wall += c->wall_s + w->wall_s;
      std::fprintf(stderr,
                   "pretrain seed %d: trials to 90%% cold %.0f warm %.0f warm-forget %.0f, best GFLOP/s %.1f / %.1f / "
                   "%.1f\n",
                   seed, trials_to_90pct(c->history, best), trials_to_90pct(w->history, best),
                   trials_to_90pct(fg->history, best), target.flops / c->summary.best_cost_s / 1e9,
                   target.flops / w->summary.best_cost_s / 1e9, target.flops / fg->summary.best_cost_s / 1e9);
    }
    state.counters["trials_to_90pct_cold"] = t_cold / seeds;
    state.counters["trials_to_90pct_pretrained"] = t_warm / seeds;
    state.counters["best_gflops_cold"] = g_cold / seeds;
    state.counters["best_gflops_pretrained"] = g_warm / seeds;
    state.counters["first_batch_gflops_cold"] = f_cold / seeds;
    state.counters["first_batch_gflops_pretrained"] = f_warm / seeds;
    state.counters["trials_to_90pct_pretrained_forget"] = t_forget / seeds;
    state.counters["best_gflops_pretrained_forget"] = g_forget / seeds;
    state.counters["pretrain_records"] = static_cast<double>(records.size());
    state.SetIterationTime(wall);
  }
}
BENCHMARK(BM_Tune_Pretrain)->Args({128, 2})->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
