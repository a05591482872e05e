// The cost model: how fast features are extracted, and how well the XGBoost
// model ranks candidates it has not seen, against a random model.
//
//   build/bin/bench_costmodel --benchmark_filter=BM_CostModel_FeatureExtraction
//   build/bin/bench_costmodel --benchmark_filter=BM_CostModel_Ranking
//
// Ranking builds and measures ~300 random schedules of matmul 256^3 and of a
// 3x3 conv (64 -> 64 channels, 28x28) on 2 threads, trains on two thirds of
// each workload (groups = workloads) and reports the pairwise ranking
// accuracy on the held-out third: /0 rank:pairwise, /1 reg:squarederror.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <random>

#include "bench/bench_main.h"
#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "costmodel/features.h"
#include "costmodel/metrics.h"
#include "costmodel/xgb_model.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "tests/costmodel/random_schedules.h"

namespace tessera {
namespace {

using costmodel::testing::conv_dag;
using costmodel::testing::matmul_dag;
using costmodel::testing::random_schedule;

constexpr int kThreads = 2;
constexpr int kSchedulesPerWorkload = 300;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

std::vector<State> lowerable_schedules(std::shared_ptr<const ComputeDAG> dag, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<State> out;
  while (static_cast<int>(out.size()) < count) {
    auto s = random_schedule(dag, rng);
    if (s.is_ok() && costmodel::lower_for_features(*s).is_ok()) out.push_back(std::move(*s));
  }
  return out;
}

void BM_CostModel_FeatureExtraction(benchmark::State& state) {
  const bool include_lowering = state.range(0) == 1;
  std::vector<State> states = lowerable_schedules(matmul_dag(1024, 1024, 1024), 200, 1);
  std::vector<PrimFunc> lowered;
  for (const State& s : states) lowered.push_back(costmodel::lower_for_features(s).value());
  size_t done = 0;
  double seconds = 0, cpu_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    for (size_t i = 0; i < states.size(); ++i) {
      auto f = include_lowering ? costmodel::extract_features(states[i]) : costmodel::extract_features(lowered[i]);
      benchmark::DoNotOptimize(f);
    }
    cpu_seconds += thread_cpu_seconds() - cpu_start;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds += t;
    done += states.size();
    state.SetIterationTime(t);
  }
  // CPU time of this thread: what one core does, whatever else the shared
  // machine runs; the wall-clock rate is reported beside it.
  state.counters["candidates_per_s"] = double(done) / cpu_seconds;
  state.counters["candidates_per_s_wall"] = double(done) / seconds;
  state.SetLabel(include_lowering ? "lowering included (schedule_to_loops, simplify, vectorize)" : "lowering excluded");
}
BENCHMARK(BM_CostModel_FeatureExtraction)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

// One workload's measured candidates.
struct Measured {
  std::string name;
  std::vector<std::vector<float>> features;
  std::vector<double> seconds;  // 0: failed to build or run
};

Measured measure_workload(const std::string& name, std::shared_ptr<const ComputeDAG> dag, uint64_t seed,
                          runtime::ThreadPool& pool) {
  Measured m{name, {}, {}};
  std::vector<runtime::NDArray> arrays;
  std::vector<void*> args;
  for (const Tensor& t : dag->args()) {
    arrays.push_back(runtime::NDArray::create(t->shape, t->dtype).value());
    arrays.back().fill_random(arrays.size());
  }
  for (auto& a : arrays) args.push_back(a.raw_data());
  const Target target = host_target();
  runtime::TimingOptions timing;
  timing.repeat = 5;
  timing.min_repeat_ms = 2;
  for (const State& s : lowerable_schedules(dag, kSchedulesPerWorkload, seed)) {
    m.features.push_back(costmodel::extract_features(s).value());
    double cost = 0;
    auto lib = build(s, target, "kernel");
    if (lib.is_ok()) {
      auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
      if (mod.is_ok()) {
        auto fn = mod->get_kernel(lib->symbol);
        if (fn.is_ok()) {
          auto t = runtime::time_kernel(*fn, args.data(), timing, &pool);
          if (t.is_ok()) cost = t->min_s;  // the least disturbed run on a shared machine
        }
      }
    }
    m.seconds.push_back(cost);
  }
  return m;
}

// Built once per process: measuring takes a minute, and both objectives
// (and the random baseline) must see the same measurements.
const std::vector<Measured>& measured_workloads() {
  static const std::vector<Measured> data = [] {
    runtime::ThreadPool pool(kThreads);
    std::vector<Measured> w;
    w.push_back(measure_workload("matmul256", matmul_dag(256, 256, 256), 11, pool));
    w.push_back(measure_workload("conv64x28", conv_dag(64, 28, 64), 12, pool));
    return w;
  }();
  return data;
}

struct Split {
  std::vector<std::vector<float>> train_x, test_x;
  std::vector<double> train_y, test_throughput;
  std::vector<int64_t> train_groups, test_groups;
};

// Two thirds of each workload for training (throughput normalized by the
// best training candidate of its workload), one third held out.
Split split(const std::vector<Measured>& workloads) {
  Split sp;
  for (size_t g = 0; g < workloads.size(); ++g) {
    const Measured& m = workloads[g];
    std::vector<size_t> order(m.seconds.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(99 + g));
    const size_t n_train = order.size() * 2 / 3;
    double best = 0;
    for (size_t i = 0; i < n_train; ++i) {
      const double c = m.seconds[order[i]];
      if (c > 0 && (best == 0 || c < best)) best = c;
    }
    for (size_t i = 0; i < order.size(); ++i) {
      const size_t k = order[i];
      const double throughput = m.seconds[k] > 0 ? 1.0 / m.seconds[k] : 0;
      if (i < n_train) {
        sp.train_x.push_back(m.features[k]);
        sp.train_y.push_back(m.seconds[k] > 0 ? best / m.seconds[k] : 0);
        sp.train_groups.push_back(int64_t(g));
      } else {
        sp.test_x.push_back(m.features[k]);
        sp.test_throughput.push_back(throughput);
        sp.test_groups.push_back(int64_t(g));
      }
    }
  }
  return sp;
}

double accuracy_in_group(const std::vector<double>& pred, const Split& sp, int64_t group) {
  std::vector<double> p, t;
  for (size_t i = 0; i < pred.size(); ++i) {
    if (sp.test_groups[i] != group) continue;
    p.push_back(pred[i]);
    t.push_back(sp.test_throughput[i]);
  }
  return costmodel::pairwise_accuracy(p, t);
}

void BM_CostModel_Ranking(benchmark::State& state) {
  const auto objective =
      state.range(0) == 0 ? costmodel::XGBObjective::kRankPairwise : costmodel::XGBObjective::kRegression;
  const std::vector<Measured>& workloads = measured_workloads();
  const Split sp = split(workloads);
  std::vector<double> predicted, random_scores;
  double train_s = 0;
  for (auto _ : state) {
    costmodel::XGBModel model(
        costmodel::XGBOptions{.objective = objective, .max_bin = static_cast<int>(state.range(1))});
    const auto start = std::chrono::steady_clock::now();
    Status st = Status::ok();
    const size_t batch = static_cast<size_t>(state.range(2));
    if (batch == 0) {
      st = model.update_with_groups(sp.train_x, sp.train_y, sp.train_groups);
    } else {
      // As a tuning run feeds the model: batches in a shuffled order, most
      // continuing the boosting, a retraining whenever the samples doubled.
      std::vector<size_t> order(sp.train_x.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
      for (size_t b = 0; b < order.size() && st.is_ok(); b += batch) {
        std::vector<std::vector<float>> x;
        std::vector<double> y;
        std::vector<int64_t> g;
        for (size_t i = b; i < std::min(order.size(), b + batch); ++i) {
          x.push_back(sp.train_x[order[i]]);
          y.push_back(sp.train_y[order[i]]);
          g.push_back(sp.train_groups[order[i]]);
        }
        st = model.update_with_groups(x, y, g);
      }
    }
    train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!st.is_ok()) return state.SkipWithError(st.to_string().c_str());
    predicted = model.predict(sp.test_x).value();
    costmodel::RandomModel random(7);
    random_scores = random.predict(sp.test_x).value();
    state.SetIterationTime(train_s);
  }
  size_t failed = 0;
  for (const Measured& m : workloads) failed += std::count(m.seconds.begin(), m.seconds.end(), 0.0);
  state.counters["pairwise_acc"] = costmodel::pairwise_accuracy(predicted, sp.test_throughput, sp.test_groups);
  state.counters["pairwise_acc_random"] =
      costmodel::pairwise_accuracy(random_scores, sp.test_throughput, sp.test_groups);
  state.counters["acc_matmul"] = accuracy_in_group(predicted, sp, 0);
  state.counters["acc_conv"] = accuracy_in_group(predicted, sp, 1);
  state.counters["train_ms"] = train_s * 1e3;
  state.counters["train_samples"] = double(sp.train_x.size());
  state.counters["test_samples"] = double(sp.test_x.size());
  state.counters["failed"] = double(failed);
  state.SetLabel(costmodel::xgb_objective_name(objective));
}
// Arguments: objective (0 rank:pairwise, 1 reg:squarederror), max_bin,
// training batch (0: all samples at once; n: updates of n samples).
BENCHMARK(BM_CostModel_Ranking)
    ->Args({0, 64, 0})
    ->Args({1, 64, 0})
    ->Args({0, 256, 0})
    ->Args({0, 64, 16})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

TESSERA_BENCHMARK_MAIN()
