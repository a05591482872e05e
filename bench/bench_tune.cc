// Tuning end to end: the sketch space searched by the cost-model-guided
// evolutionary search, measured on local workers (1 worker, 2 threads), then
// the best kernels re-measured here against the peers in the same run.
//
//   build/bin/bench_tune --benchmark_filter=BM_Tune_Matmul1024   (argument = trials)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "bench/peers.h"
#include "compiler/codegen/build.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/sketch_space.h"
#include "costmodel/xgb_model.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "tuner/sketch_policy.h"
#include "tuner/tuner.h"

namespace tessera {
namespace {

constexpr int kThreads = 2;

struct TuneRun {
  tuner::TaskSummary summary;
  std::vector<records::Record> history;  // in measurement order
  double wall_s = 0;
};

// Tunes `spec` for `trials` measurements with TVM's measurement settings
// (repeat 1, min_repeat_ms 100).
Result<TuneRun> tune(const ops::OpInstance& op, int64_t trials, bool guided, uint64_t seed) {
  Target target = Target::host();
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<rpc::LocalRunner> runner,
                           rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = kThreads}));
  TESSERA_ASSIGN_OR_RETURN(SketchSpace space, SketchSpace::make(op.dag, target));
  std::unique_ptr<costmodel::CostModel> model;
  if (guided) model = std::make_unique<costmodel::XGBModel>(costmodel::XGBOptions{.seed = seed});
  std::vector<std::unique_ptr<tuner::SearchPolicy>> policies;
  policies.push_back(std::make_unique<tuner::SketchPolicy>(std::move(space), std::move(model),
                                                           tuner::EvolutionOptions{}, seed));
  tuner::Task task{op.spec, op.dag, target, "local", 1};
  tuner::BuilderPool builder(target);
  tuner::Measurer measurer(builder, *runner, {.timing = {.number = 1, .repeat = 1, .min_repeat_ms = 100}});
  // The records go to a private database so the history can be read back.
  std::string db = "/tmp/tessera-bench-tune-" + std::to_string(::getpid()) + ".db";
  std::remove(db.c_str());
  TESSERA_ASSIGN_OR_RETURN(records::Store store, records::Store::open(db));
  tuner::Tuner tuner({task}, std::move(policies), measurer, &store,
                     {.trials = trials, .batch_size = 16, .seed = seed, .measure_default = false});
  auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(std::vector<tuner::TaskSummary> summaries, tuner.run(nullptr, nullptr));
  TuneRun run;
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.summary = summaries[0];
  TESSERA_ASSIGN_OR_RETURN(run.history, store.records_of(task.workload_key(), target.to_string()));
  std::remove(db.c_str());
  return run;
}

// The best record among the first `n` of the history.
const records::Record* best_of_first(const std::vector<records::Record>& history, size_t n) {
  const records::Record* best = nullptr;
  for (size_t i = 0; i < history.size() && i < n; ++i)
    if (history[i].ok() && (!best || history[i].mean_cost() < best->mean_cost())) best = &history[i];
  return best;
}

// A built kernel with its arguments, timed here with the benchmark's median.
struct Kernel {
  runtime::Module module;
  TesseraKernelFn fn;
};

Result<double> time_steps(const ops::OpInstance& op, const std::string& steps_json, std::vector<runtime::NDArray>& args) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Step> steps, steps_from_json(steps_json));
  TESSERA_ASSIGN_OR_RETURN(State state, replay(op.dag, steps));
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, build_kernel(state, Target::host(), "kernel"));
  TESSERA_ASSIGN_OR_RETURN(runtime::Module mod, runtime::Module::load_from_bytes(lib.bytes, "/tmp"));
  TESSERA_ASSIGN_OR_RETURN(TesseraKernelFn fn, mod.get_kernel("kernel"));
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.raw_data());
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  return bench::median_seconds([&] { fn(ptrs.data()); });
}

std::vector<runtime::NDArray> make_args(const ops::OpInstance& op) {
  std::vector<runtime::NDArray> args;
  uint64_t seed = 1;
  for (const Tensor& t : op.dag->args()) {
    args.push_back(runtime::NDArray::create(t->shape, t->dtype).value());
    args.back().fill_random(seed++);
  }
  return args;
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
  state.counters["overhead_ms"] = (run.summary.search_seconds + run.summary.store_seconds) / n * 1e3;
  state.counters["trials"] = n;
}

void BM_Tune_Matmul1024(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=1024,N=1024,K=1024").value();
  for (auto _ : state) {
    auto run = tune(op, state.range(0), /*guided=*/true, 1);
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    auto args = make_args(op);
    runtime::NDArray ref = runtime::NDArray::create({1024, 1024}, DType::f32()).value();
    double peer = bench::median_seconds([&] {
      bench::openblas_sgemm(1024, 1024, 1024, args[0].data<float>(), args[1].data<float>(), ref.data<float>(), kThreads);
    });
    double ratio = 0;
    report_checkpoints(state, op, *run, peer, args, &ratio);
    state.counters["vs_peer"] = ratio;
    state.counters["peer_gflops"] = op.flops / peer / 1e9;
    state.counters["fma_peak_gflops"] = bench::measure_fma_peak_gflops(kThreads);
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Tune_Matmul1024)->Arg(200)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

void BM_Tune_ResNetConvs(benchmark::State& state) {
  struct Layer { int64_t c, h, w, k, r, s, stride, pad; };
  const Layer layers[] = {{64, 56, 56, 64, 3, 3, 1, 1}, {128, 28, 28, 128, 3, 3, 1, 1},
                          {256, 14, 14, 256, 3, 3, 1, 1}, {64, 56, 56, 256, 1, 1, 1, 0}};
  bench::set_dnnl_threads(kThreads);
  double log_sum = 0, log_sum_64 = 0, wall = 0;
  int n = 0, n64 = 0;
  for (auto _ : state) {
    for (const Layer& l : layers) {
      std::string spec = "conv2d:N=1,C=" + std::to_string(l.c) + ",H=" + std::to_string(l.h) + ",W=" +
                         std::to_string(l.w) + ",K=" + std::to_string(l.k) + ",R=" + std::to_string(l.r) +
                         ",S=" + std::to_string(l.s) + ",stride=" + std::to_string(l.stride) +
                         ",pad=" + std::to_string(l.pad);
      auto op = ops::parse_op_spec(spec).value();
      auto run = tune(op, state.range(0), true, 1);
      if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
      wall += run->wall_s;
      auto args = make_args(op);
      bench::DnnlConv dnnl(l.c, l.h, l.w, l.k, l.r, l.s, l.stride, l.pad);
      dnnl.prepare(args[0].data<float>(), args[1].data<float>());
      double peer = bench::median_seconds([&] { dnnl.run(); });
      const records::Record* best = best_of_first(run->history, run->history.size());
      const records::Record* best64 = best_of_first(run->history, 64);
      if (best) {
        auto t = time_steps(op, best->steps_json, args);
        if (t.is_ok()) {
          log_sum += std::log(peer / *t);
          ++n;
          state.counters["layer" + std::to_string(n) + "_vs_peer"] = peer / *t;
        }
      }
      if (best64 && run->history.size() > 64) {
        auto t = time_steps(op, best64->steps_json, args);
        if (t.is_ok()) {
          log_sum_64 += std::log(peer / *t);
          ++n64;
        }
      }
    }
    state.SetIterationTime(wall);
  }
  if (n) state.counters["vs_peer"] = std::exp(log_sum / n);
  if (n64) state.counters["vs_peer_64"] = std::exp(log_sum_64 / n64);
}
BENCHMARK(BM_Tune_ResNetConvs)->Arg(64)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// Trials to reach 90% of the best kernel either search found: guided by
// XGBoost vs random sampling of the same space.
void BM_Tune_Efficiency(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=512,N=512,K=512").value();
  for (auto _ : state) {
    auto guided = tune(op, state.range(0), true, 3);
    auto random = tune(op, state.range(0), false, 3);
    if (!guided.is_ok() || !random.is_ok()) return state.SkipWithError("tuning failed");
    double best = std::numeric_limits<double>::infinity();
    for (const auto* h : {&guided->history, &random->history})
      for (const auto& r : *h)
        if (r.ok()) best = std::min(best, r.mean_cost());
    auto trials_to_90 = [&](const std::vector<records::Record>& h) {
      for (size_t i = 0; i < h.size(); ++i)
        if (h[i].ok() && best / h[i].mean_cost() >= 0.9) return static_cast<double>(i + 1);
      return static_cast<double>(h.size() + 1);  // not reached within the budget
    };
    state.counters["trials_to_90pct_xgb"] = trials_to_90(guided->history);
    state.counters["trials_to_90pct_random"] = trials_to_90(random->history);
    state.SetIterationTime(guided->wall_s + random->wall_s);
  }
}
BENCHMARK(BM_Tune_Efficiency)->Arg(128)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
