// The Python module's overhead: tessera.Module.run called from Python, in an
// interpreter embedded here, against the C++ graph executor running the same
// package in the same process (set_input, run, get_output: what a C++ caller
// does). The model is tiny (one 3x3 convolution of a 7x5 image), so the
// kernel's time is small and the difference is the module's own.
//
//   build/bin/bench_python --benchmark_counters_tabular=true
//
// BM_Python_ModuleRun's counter overhead_us = (Module.run from Python) − (the
// C++ executor), both on one thread, timed in the same benchmark.
#include <benchmark/benchmark.h>
#include <pybind11/embed.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "runtime/graph_executor.h"

namespace py = pybind11;

namespace tessera::runtime {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kConv = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

// The package, compiled once by tessera.compile (from the fallbacks).
const std::string& package_path() {
  static const std::string path = [] {
    const std::string out =
        (std::filesystem::temp_directory_path() / ("bench_python_" + std::to_string(::getpid()) + ".tsr")).string();
    py::module_::import("tessera").attr("compile")(kConv, py::arg("output") = out, py::arg("use_records") = false);
    return out;
  }();
  return path;
}

NDArray random_array(std::vector<int64_t> shape, uint64_t seed) {
  NDArray a = NDArray::create(std::move(shape), DType::f32()).value();
  a.fill_random(seed);
  return a;
}

// Microseconds per set_input + run + get_output of the C++ executor: the
// median of 7 batches of 2,000 calls (`run_only`: run() alone).
double cpp_call_us(bool run_only) {
  ExecutorOptions options;
  options.num_threads = 1;
  auto exec = GraphExecutor::load_file(package_path(), options).value();
  NDArray x = random_array({1, 1, 7, 5}, 1), w = random_array({1, 1, 3, 3}, 2);
  (void)exec->set_input("x", x);
  (void)exec->set_input("W", w);
  constexpr int kCalls = 2000;
  std::vector<double> batches;
  for (int b = 0; b < 7; ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < kCalls; ++i) {
      if (!run_only) {
        (void)exec->set_input("x", x);
        (void)exec->set_input("W", w);
      }
      (void)exec->run();
      if (!run_only) benchmark::DoNotOptimize(exec->get_output("y"));
    }
    batches.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kCalls);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

// `aligned`: inputs from tessera.empty, read in place; otherwise numpy's own
// arrays (16-byte aligned), which Module.run copies once.
void module_run(benchmark::State& state, bool aligned) {
  if (!std::filesystem::exists(kConv)) {
    state.SkipWithError("libonnx-testdata is not installed");
    return;
  }
  py::dict scope;
  scope["path"] = package_path();
  scope["aligned"] = aligned;
  py::exec(R"(
import numpy as np, tessera
m = tessera.Module(path, threads=1)
rng = np.random.default_rng(0)
x = rng.standard_normal((1, 1, 7, 5)).astype(np.float32)
W = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
if aligned:
    x, W = tessera.empty(x.shape), tessera.empty(W.shape)
def step():
    return m.run(x=x, W=W)
)",
           scope);
  py::object step = scope["step"];
  step();
  const auto start = Clock::now();
  for (auto _ : state) step();
  const double python_us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() / static_cast<double>(state.iterations());
  const double cpp_us = cpp_call_us(false);
  state.counters["python_us"] = python_us;
  state.counters["cpp_us"] = cpp_us;
  state.counters["cpp_run_only_us"] = cpp_call_us(true);
  state.counters["overhead_us"] = python_us - cpp_us;
}

void BM_Python_ModuleRun(benchmark::State& state) {
  module_run(state, false);
}
void BM_Python_ModuleRunAlignedInputs(benchmark::State& state) {
  module_run(state, true);
}
BENCHMARK(BM_Python_ModuleRun)->MinTime(1.0);
BENCHMARK(BM_Python_ModuleRunAlignedInputs)->MinTime(1.0);

// The peer alone: the C++ executor's set_input + run + get_output.
void BM_Python_CppExecutorRun(benchmark::State& state) {
  ExecutorOptions options;
  options.num_threads = 1;
  auto exec = GraphExecutor::load_file(package_path(), options).value();
  NDArray x = random_array({1, 1, 7, 5}, 1), w = random_array({1, 1, 3, 3}, 2);
  for (auto _ : state) {
    (void)exec->set_input("x", x);
    (void)exec->set_input("W", w);
    (void)exec->run();
    benchmark::DoNotOptimize(exec->get_output("y"));
  }
}
BENCHMARK(BM_Python_CppExecutorRun)->MinTime(1.0);

}  // namespace
}  // namespace tessera::runtime

int main(int argc, char** argv) {
  py::scoped_interpreter interpreter;
  py::module_::import("sys").attr("path").attr("insert")(0, TESSERA_PYTHON_DIR);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  tessera::bench::add_machine_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove(tessera::runtime::package_path());
  return 0;
}
