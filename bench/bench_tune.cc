// Tuning end to end: the sketch space searched by the cost-model-guided
// evolutionary search, measured on local workers (1 worker, 2 threads), then
// the best kernels re-measured here against the peers in the same run.
//
//   build/bin/bench_tune --benchmark_filter=BM_Tune_Matmul1024   (argument = trials)
//   build/bin/bench_tune --benchmark_filter=BM_Tuner_Overhead    (matmul 512^3, 128 trials)
//   build/bin/bench_tune --benchmark_filter='BM_Tune_OddShapes(/.*/trials:200/.*|Geomean)'   (eight shapes, the
//   depthwise ones in NCHW and NHWC, an STFT conv, x two spaces) build/bin/bench_tune
//   --benchmark_filter=BM_Fallback_RandomMatmuls   (24 untuned matmuls of random shapes;
//       TESSERA_BENCH_MATMULS="77x384x384 512x512x512" for those shapes instead)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>

#include "bench/bench_main.h"
#include "bench/peers.h"
#include "bench/tune_harness.h"
#include "bench/workloads.h"
#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
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

using namespace bench;  // the tuning harness and the peers

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
      bench::openblas_sgemm(1024, 1024, 1024, args[0].data<float>(), args[1].data<float>(), ref.data<float>(),
                            kThreads);
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
                         const std::function<double()>& peak_probe, const char* peak_counter,
                         const char* peer_counter) {
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
// the same run: AMX's tile-product peak where the CPU has AMX-INT8 (oneDNN
// then runs on tiles too), else VNNI's. gops counts a multiply-add as 2.
// Arguments: trials, space.
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
        state, op, *run, args, [&] { dnnl.run(); }, [] { return bench::measure_int8_peak_gops(kThreads); },
        "int8_peak_gops", "peer_gops");
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
// weights reordered once, untimed) and the machine's bfloat16 peak (AMX's
// where the CPU has AMX-BF16, else vdpbf16ps's), both measured in the same
// run. A multiply-add counts 2. Arguments: trials, space.
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
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

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
    auto peer = [&] {
      bench::openblas_sgemv(kN, kK, args[1].data<float>(), args[0].data<float>(), ref.data(), kThreads);
    };
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

TESSERA_BENCHMARK_MAIN()
