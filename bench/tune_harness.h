// What bench_tune's benchmarks share: a tuning run as `tessera tune` makes
// one (a tuning job on one local worker, its records read back), and the
// kernels of its records built and timed here against the peers.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ops/op_spec.h"
#include "compiler/schedule/state.h"
#include "costmodel/xgb_model.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "tuner/job.h"

namespace tessera::bench {

/// Threads of every kernel and peer timed here (and of the worker).
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

/// Tunes `op` with TVM's measurement settings (repeat 1, min_repeat_ms 100)
/// as a tuning job on one local worker.
Result<TuneRun> tune(const ops::OpInstance& op, const TuneConfig& config);
Result<TuneRun> tune(const ops::OpInstance& op, int64_t trials, bool guided, uint64_t seed, bool knob = false);

/// "sketch" or "knob", for the benchmark's label.
const char* space_label(bool knob);

/// The best record among the first `n` of the history.
const records::Record* best_of_first(const std::vector<records::Record>& history, size_t n);

/// A kernel built for the host, with the module that keeps it loaded.
struct BuiltKernel {
  runtime::Module module;
  TesseraKernelFn fn;
};

Result<BuiltKernel> build_state(const State& st);
Result<BuiltKernel> build_steps(const ops::OpInstance& op, const std::string& steps_json);

/// A schedule built and timed here with the benchmark's median.
Result<double> time_steps(const ops::OpInstance& op, const std::string& steps_json,
                          std::vector<runtime::NDArray>& args);

/// The best kernel after 64 and 200 trials and at the end, timed against
/// the peer's `peer_s` (counters vs_peer_64, vs_peer_200, gflops, s_per_trial,
/// overhead_ms); the last ratio into `final_ratio`.
void report_checkpoints(benchmark::State& state, const ops::OpInstance& op, const TuneRun& run, double peer_s,
                        std::vector<runtime::NDArray>& args, double* final_ratio);

}  // namespace tessera::bench
