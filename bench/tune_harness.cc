#include "bench/tune_harness.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench/peers.h"
#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "runtime/thread_pool.h"

namespace tessera::bench {

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
  // The benchmarks time the tuned kernel and its peer back to back with
  // everything cached: the search ranks candidates on the same terms (its
  // default times weights that outgrow L2 cold, as a model reads them).
  job_config.cache = tuner::CacheMode::kWarm;
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

Result<TuneRun> tune(const ops::OpInstance& op, int64_t trials, bool guided, uint64_t seed, bool knob) {
  return tune(op, TuneConfig{.trials = trials, .guided = guided, .seed = seed, .knob = knob});
}

const char* space_label(bool knob) {
  return knob ? "knob space (xgb)" : "sketch space (evolutionary)";
}

const records::Record* best_of_first(const std::vector<records::Record>& history, size_t n) {
  const records::Record* best = nullptr;
  for (size_t i = 0; i < history.size() && i < n; ++i)
    if (history[i].ok() && (!best || history[i].mean_cost() < best->mean_cost())) best = &history[i];
  return best;
}

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

Result<double> time_steps(const ops::OpInstance& op, const std::string& steps_json,
                          std::vector<runtime::NDArray>& args) {
  TESSERA_ASSIGN_OR_RETURN(BuiltKernel kernel, build_steps(op, steps_json));
  const TesseraKernelFn fn = kernel.fn;
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.raw_data());
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  return median_seconds([&] { fn(ptrs.data()); });
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

}  // namespace tessera::bench
