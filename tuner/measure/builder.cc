#include "tuner/measure/builder.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "compiler/codegen/build.h"

namespace tessera::tuner {

const char* build_error_name(BuildError e) {
  switch (e) {
    case BuildError::kOk: return "ok";
    case BuildError::kInvalidSchedule: return "invalid-schedule";
    case BuildError::kLoweringError: return "lowering-error";
    case BuildError::kCodegenError: return "codegen-error";
    case BuildError::kTimeout: return "build-timeout";
  }
  return "?";
}

BuilderPool::BuilderPool(Target target, BuilderOptions options)
    : target_(std::move(target)), options_(std::move(options)) {
  n_parallel_ = options_.n_parallel > 0 ? options_.n_parallel
                                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

BuildResult BuilderPool::build_one(const BuildInput& input) const {
  BuildResult r;
  r.symbol = options_.symbol;
  auto start = std::chrono::steady_clock::now();
  auto finish = [&](BuildError e, const Status& st) {
    r.error = e;
    r.message = st.is_ok() ? "" : st.to_string();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r.error == BuildError::kOk && r.seconds > options_.timeout_s) {
      r.error = BuildError::kTimeout;
      r.message = "build took " + std::to_string(r.seconds) + " s (limit " + std::to_string(options_.timeout_s) + " s)";
      r.library.clear();
    }
    return r;
  };
  auto state = input.candidate.state(input.dag);
  if (!state.is_ok()) return finish(BuildError::kInvalidSchedule, state.status());
  auto func = input.candidate.kernel(input.dag, options_.symbol);
  if (!func.is_ok()) return finish(BuildError::kLoweringError, func.status());
  if (options_.rewrite_kernel) {
    func = options_.rewrite_kernel(std::move(*func));
    if (!func.is_ok()) return finish(BuildError::kLoweringError, func.status());
  }
  auto library = tessera::build(std::vector<PrimFunc>{std::move(*func)}, target_);
  if (!library.is_ok()) return finish(BuildError::kCodegenError, library.status());
  r.library = std::move(library->bytes);
  return finish(BuildError::kOk, Status::ok());
}

std::vector<BuildResult> BuilderPool::build(const std::vector<BuildInput>& inputs) const {
  std::vector<BuildResult> results(inputs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < inputs.size(); i = next++) results[i] = build_one(inputs[i]);
  };
  int threads = std::min<int>(n_parallel_, static_cast<int>(inputs.size()));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return results;
}

}  // namespace tessera::tuner
