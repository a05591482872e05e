#include "compiler/codegen/build.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "compiler/codegen/link.h"
#include "compiler/codegen/llvm_codegen.h"
#include "compiler/lower/lower.h"

namespace tessera {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One object per function, on `jobs` threads; the first error (lowest index) wins.
Result<std::vector<std::string>> emit_objects(const std::vector<PrimFunc>& funcs, const Target& target, int jobs) {
  const size_t n = funcs.size();
  std::vector<std::string> objects(n);
  std::vector<Status> status(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      auto object = emit_object({funcs[i]}, target);
      if (object.is_ok())
        objects[i] = std::move(object).value();
      else
        status[i] = object.status().with_context("compiling " + funcs[i].name);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(static_cast<size_t>(std::max(jobs, 1)), n); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (const Status& s : status)
    if (!s.is_ok()) return s;
  return objects;
}

}  // namespace

Result<BuiltLibrary> build(const std::vector<PrimFunc>& funcs, const Target& target, BuildOptions options) {
  BuiltLibrary lib;
  if (funcs.empty() && options.extra_objects.empty()) return lib;
  if (!funcs.empty()) lib.symbol = funcs.front().name;
  const int jobs =
      options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto t0 = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> objects, emit_objects(funcs, target, jobs));
  lib.codegen_seconds = seconds_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  objects.insert(objects.end(), options.extra_objects.begin(), options.extra_objects.end());
  TESSERA_ASSIGN_OR_RETURN(lib.bytes, link_shared_library(objects, target, options.libraries));
  lib.link_seconds = seconds_since(t1);
  return lib;
}

Result<BuiltLibrary> build(const State& state, const Target& target, const std::string& name) {
  auto t0 = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, lower(state, name));
  const double lower_seconds = seconds_since(t0);
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, build(std::vector<PrimFunc>{std::move(func)}, target));
  lib.lower_seconds = lower_seconds;
  return lib;
}

}  // namespace tessera
