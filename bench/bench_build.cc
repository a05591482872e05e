// The builder pool: candidate kernels built per second (replay + lower + LLVM
// + link) for random sketch programs of matmul 1024^3, with n_parallel = 1
// and 2.
//
//   build/bin/bench_build --benchmark_filter=BM_Build_Candidates
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench/bench_main.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/sketch/sketch_space.h"
#include "tuner/measure/builder.h"

namespace tessera {
namespace {

void BM_Build_Candidates(benchmark::State& state) {
  auto op = ops::parse_op_spec("matmul:M=1024,N=1024,K=1024").value();
  Target target = host_target();
  auto space = SketchSpace::make(op.dag, target);
  if (!space.is_ok()) return state.SkipWithError(space.status().to_string().c_str());
  auto programs = space->sample(32, /*seed=*/7);
  if (!programs.is_ok()) return state.SkipWithError(programs.status().to_string().c_str());
  std::vector<tuner::BuildInput> inputs;
  for (const auto& p : *programs)
    inputs.push_back({op.dag, tuner::Candidate(p.state.steps())});  // replayed by the build
  tuner::BuilderPool pool(target, {.n_parallel = static_cast<int>(state.range(0))});
  int64_t built = 0, failed = 0;
  double seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto results = pool.build(inputs);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds += t;
    for (const auto& r : results) (r.error == tuner::BuildError::kOk ? built : failed) += 1;
    state.SetIterationTime(t);
  }
  state.counters["builds_per_s"] = static_cast<double>(built + failed) / seconds;
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_Build_Candidates)->Arg(1)->Arg(2)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace tessera

TESSERA_BENCHMARK_MAIN()
