// A streaming model called call after call, as a voice-activity detector
// runs (issue 32): the VAD of scripts/models/streaming_vad.py (an If on the
// sample rate, bound at compile time to 16 kHz; nested shape-check Ifs; the
// STFT as a Conv; an LSTM cell whose state goes in and out), 1,000
// consecutive calls of 512 samples, its state carried in place
// (GraphExecutor::carry), against ONNX Runtime making the same 1,000 calls
// in one session with its state fed back (ort_run.js --stream), in the same
// run. Every call's outputs are checked against ONNX Runtime's.
//
//   build/bin/bench_stream --benchmark_counters_tabular=true
//
// The argument is the threads of both. Counters: call_us (Tessera's median
// call: the audio set, the run), ort_call_us (ONNX Runtime's median call
// through Node.js), vs_peer = ort_call_us / call_us, p99_us (Tessera's 99th
// percentile), max_rel_err (the largest difference from ONNX Runtime over
// every call and output, relative to that output's largest magnitude).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "bench/bench_main.h"
#include "bench/ort_peer.h"
#include "driver/compile.h"
#include "runtime/graph_executor.h"
#include "runtime/ndarray.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;

constexpr int kCalls = 1000;
constexpr int64_t kSamples = 512;
constexpr int kHidden = 128;

// Speech-like audio: a tone that comes and goes under noise, [calls, 1, 512].
NDArray audio(int calls) {
  NDArray a = NDArray::create({calls, 1, kSamples}, DType::f32()).value();
  NDArray noise = NDArray::create({calls, 1, kSamples}, DType::f32()).value();
  noise.fill_random(7);
  float* p = a.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const bool on = (i / kSamples) % 40 < 20;
    p[i] = (on ? 0.3f * std::sin(0.05f * static_cast<float>(i)) : 0.0f) + 0.02f * noise.data<float>()[i];
  }
  return a;
}

// Slice `k` of a stacked [calls, ...] array.
NDArray slice(const NDArray& stacked, int64_t k) {
  std::vector<int64_t> shape(stacked.shape().begin() + 1, stacked.shape().end());
  NDArray one = NDArray::create(shape, stacked.dtype()).value();
  const size_t bytes = static_cast<size_t>(one.nbytes());
  std::memcpy(one.raw_data(), static_cast<const uint8_t*>(stacked.raw_data()) + static_cast<size_t>(k) * bytes, bytes);
  return one;
}

// max |ours - theirs| / max |theirs| of two float32 arrays of one size.
double relative_error(const NDArray& ours, const NDArray& theirs) {
  double worst = 0, scale = 1e-6;
  for (int64_t i = 0; i < theirs.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(ours.data<float>()[i]) - theirs.data<float>()[i]));
    scale = std::max(scale, std::fabs(double(theirs.data<float>()[i])));
  }
  return worst / scale;
}

void BM_Model_StreamingVad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  char pattern[] = "/tmp/tessera-bench-stream-XXXXXX";
  if (!::mkdtemp(pattern)) return state.SkipWithError("cannot make a temp dir");
  const std::string dir = pattern;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  const std::string model = dir + "/vad.onnx";
  if (Status st = bench::write_generated_model("streaming_vad.py", model, 7); !st.is_ok())
    return state.SkipWithError(st.to_string().c_str());
  std::string why;
  if (!bench::ort_available(&why)) return state.SkipWithError(why.c_str());

  // ONNX Runtime: the 1,000 calls, every output stacked.
  const NDArray chunks = audio(kCalls);
  NDArray zeros = NDArray::create({2, 1, kHidden}, DType::f32()).value();
  NDArray rate = NDArray::create({}, DType::i64()).value();
  rate.data<int64_t>()[0] = 16000;
  for (auto [array, name] :
       {std::pair<const NDArray*, const char*>{&chunks, "audio"}, {&zeros, "state"}, {&rate, "sr"}})
    if (Status st = runtime::save_npy(*array, dir + "/" + name + ".npy"); !st.is_ok())
      return state.SkipWithError(st.to_string().c_str());
  auto ort_ms = bench::ort_stream_median_ms(
      model, {{"input", dir + "/audio.npy"}, {"state", dir + "/state.npy"}, {"sr", dir + "/sr.npy"}}, {"input"},
      {{"stateN", "state"}}, kCalls, threads, dir + "/ort");
  if (!ort_ms.is_ok()) return state.SkipWithError(ort_ms.status().to_string().c_str());

  // Tessera: the sample rate bound at compile time, the state carried.
  driver::ModelCompileArgs args;
  args.model = model;
  args.input_values = {"sr=16000"};
  args.use_records = false;
  args.byoc = "none";
  auto compiled = driver::compile_model_file(args);
  if (!compiled.is_ok()) return state.SkipWithError(compiled.status().to_string().c_str());
  runtime::ExecutorOptions options;
  options.num_threads = threads;
  auto exec = runtime::GraphExecutor::load(compiled->compiled.package, options);
  if (!exec.is_ok()) return state.SkipWithError(exec.status().to_string().c_str());
  runtime::GraphExecutor& vad = **exec;
  if (Status st = vad.carry("stateN", "state"); !st.is_ok()) return state.SkipWithError(st.to_string().c_str());
  std::vector<NDArray> inputs;
  for (int k = 0; k < kCalls; ++k) inputs.push_back(slice(chunks, k));
  auto want_output = runtime::load_npy(dir + "/ort/output.npy");
  auto want_state = runtime::load_npy(dir + "/ort/stateN.npy");
  if (!want_output.is_ok() || !want_state.is_ok()) return state.SkipWithError("ONNX Runtime wrote no outputs");

  std::vector<double> call_s;
  double max_err = 0;
  for (auto _ : state) {
    call_s.clear();
    if (Status st = vad.set_input("state", zeros); !st.is_ok()) return state.SkipWithError(st.to_string().c_str());
    for (int k = 0; k < kCalls; ++k) {
      const auto start = std::chrono::steady_clock::now();
      Status st = vad.set_input("input", inputs[static_cast<size_t>(k)]);
      if (st.is_ok()) st = vad.run();
      call_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!st.is_ok()) return state.SkipWithError(st.to_string().c_str());
      for (auto [name, want] : {std::pair{"output", &*want_output}, std::pair{"stateN", &*want_state}})
        max_err = std::max(max_err, relative_error(vad.get_output(name).value(), slice(*want, k)));
    }
    std::sort(call_s.begin(), call_s.end());
    state.SetIterationTime(call_s[call_s.size() / 2]);
  }
  const double call_us = call_s[call_s.size() / 2] * 1e6;
  state.counters["call_us"] = call_us;
  state.counters["p99_us"] = call_s[call_s.size() * 99 / 100] * 1e6;
  state.counters["ort_call_us"] = *ort_ms * 1e3;
  state.counters["vs_peer"] = *ort_ms * 1e3 / call_us;
  state.counters["max_rel_err"] = max_err;
  if (max_err > 1e-4) state.SkipWithError(("outputs differ from ONNX Runtime's by " + std::to_string(max_err)).c_str());
}
BENCHMARK(BM_Model_StreamingVad)->Arg(1)->Arg(2)->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

TESSERA_BENCHMARK_MAIN()
