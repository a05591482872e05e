// Quality of the knob space before any cost model: the best of N random
// configurations of the matmul template, built and measured on this machine,
// against OpenBLAS in the same run; the matmul and ResNet conv fallbacks
// (direct and Winograd) against OpenBLAS and oneDNN.
//
//   build/bin/bench_space_knob                          # N = 100
//   build/bin/bench_space_knob --samples=1000           # N = 1000
//
// Screening: every sample is built and run once; one that is more than twice
// as slow as the best so far is dropped, the others are timed by a short
// median. The best one is then timed by the full median (bench/peers.h)
// right next to OpenBLAS, and its result checked against OpenBLAS's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "bench/bench_main.h"
#include "bench/peers.h"
#include "bench/workloads.h"
#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/choose/generic_schedule.h"
#include "compiler/space/knob/templates.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"

namespace tessera {
namespace {

constexpr int kThreads = 2;
constexpr int64_t kSize = 1024;

struct Matrices {
  runtime::NDArray a, b, c, ref;
  Matrices()
      : a(runtime::NDArray::create({kSize, kSize}, DType::f32()).value()),
        b(runtime::NDArray::create({kSize, kSize}, DType::f32()).value()),
        c(runtime::NDArray::create({kSize, kSize}, DType::f32()).value()),
        ref(runtime::NDArray::create({kSize, kSize}, DType::f32()).value()) {
    a.fill_random(1);
    b.fill_random(2);
  }
};

// A built configuration, ready to run.
struct Candidate {
  runtime::Module module;
  TesseraKernelFn fn;
};

Result<Candidate> build(const KnobTemplate& t, const ops::OpInstance& inst, const KnobConfig& c, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(State state, apply_template(t, inst.dag, c, target));
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, tessera::build(state, target, "kernel"));
  TESSERA_ASSIGN_OR_RETURN(runtime::Module mod, runtime::Module::load_from_bytes(lib.bytes, "/tmp"));
  TESSERA_ASSIGN_OR_RETURN(TesseraKernelFn fn, mod.get_kernel("kernel"));
  return Candidate{std::move(mod), fn};
}

// The template's fallback configuration for `inst` (what an untuned model
// runs), built, with random arguments.
struct FallbackKernel {
  KnobConfig config;
  Candidate cand;
  std::vector<runtime::NDArray> arrays;
  std::vector<void*> args;  // into `arrays`
};

Result<FallbackKernel> fallback_kernel(const KnobTemplate& t, const ops::OpInstance& inst, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(KnobSpace space, t.define(*inst.dag, target));
  TESSERA_ASSIGN_OR_RETURN(KnobConfig config, t.fallback(space, *inst.dag, target));
  TESSERA_ASSIGN_OR_RETURN(Candidate cand, build(t, inst, config, target));
  FallbackKernel k{std::move(config), std::move(cand), bench::make_args(inst), {}};
  for (runtime::NDArray& a : k.arrays) k.args.push_back(a.raw_data());
  return k;
}

double once(TesseraKernelFn fn, void** args) {
  auto start = std::chrono::steady_clock::now();
  fn(args);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_Space_BestOfKnobMatmul1024(benchmark::State& state) {
  const int samples = static_cast<int>(state.range(0));
  const Target target = host_target();
  ops::OpInstance inst = ops::parse_op_spec("matmul:M=1024,N=1024,K=1024").value();
  const KnobTemplate& tmpl = *find_template("matmul");
  KnobSpace space = tmpl.define(*inst.dag, target).value();
  Matrices d;
  void* args[] = {d.a.raw_data(), d.b.raw_data(), d.c.raw_data()};
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);

  // Distinct random indices, the same on every run.
  std::mt19937_64 rng(20240601);
  std::vector<uint64_t> indices;
  while (indices.size() < std::min<uint64_t>(samples, space.size())) {
    uint64_t i = rng() % space.size();
    if (std::find(indices.begin(), indices.end(), i) == indices.end()) indices.push_back(i);
  }
  double best = INFINITY, ours = 0, peer = 0;
  KnobConfig best_config;
  int failed = 0, screened = 0;
  const auto search_start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (uint64_t index : indices) {
      KnobConfig c = space.config(index).value();
      auto cand = build(tmpl, inst, c, target);
      if (!cand.is_ok()) {
        ++failed;
        std::fprintf(stderr, "%s: %s\n", c.to_string().c_str(), cand.status().to_string().c_str());
        continue;
      }
      double t = once(cand->fn, args);
      if (t > 2 * best) continue;  // far from the best: not worth a median
      ++screened;
      t = bench::median_seconds([&] { cand->fn(args); }, 3, 20);
      if (t < best) {
        best = t;
        best_config = c;
      }
    }
    auto winner = build(tmpl, inst, best_config, target);
    if (!winner.is_ok()) return state.SkipWithError(winner.status().to_string().c_str());
    ours = bench::median_seconds([&] { winner->fn(args); });
    peer = bench::median_seconds([&] {
      bench::openblas_sgemm(kSize, kSize, kSize, d.a.data<float>(), d.b.data<float>(), d.ref.data<float>(), kThreads);
    });
    state.SetIterationTime(ours);
  }
  const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - search_start).count();
  double max_err = 0;
  for (int64_t i = 0; i < kSize * kSize; ++i)
    max_err = std::max<double>(max_err, std::fabs(d.c.data<float>()[i] - d.ref.data<float>()[i]));
  if (max_err > 1e-2) return state.SkipWithError("the best configuration's result differs from OpenBLAS");
  const double flops = 2.0 * kSize * kSize * kSize;
  state.counters["gflops"] = flops / ours / 1e9;
  state.counters["peer_gflops"] = flops / peer / 1e9;
  state.counters["vs_peer"] = peer / ours;
  state.counters["samples"] = static_cast<double>(indices.size());
  state.counters["screened"] = screened;
  state.counters["failed"] = failed;
  state.counters["search_s"] = search_s;
  state.SetLabel(best_config.to_string());
}

// The fallback configuration (what compile time uses without records).
void BM_Space_KnobFallbackMatmul1024(benchmark::State& state) {
  const Target target = host_target();
  ops::OpInstance inst = ops::parse_op_spec("matmul:M=1024,N=1024,K=1024").value();
  const KnobTemplate& tmpl = *find_template("matmul");
  KnobSpace space = tmpl.define(*inst.dag, target).value();
  KnobConfig fallback = tmpl.fallback(space, *inst.dag, target).value();
  auto cand = build(tmpl, inst, fallback, target);
  if (!cand.is_ok()) return state.SkipWithError(cand.status().to_string().c_str());
  Matrices d;
  void* args[] = {d.a.raw_data(), d.b.raw_data(), d.c.raw_data()};
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  double ours = 0, peer = 0;
  for (auto _ : state) {
    ours = bench::median_seconds([&] { cand->fn(args); });
    peer = bench::median_seconds([&] {
      bench::openblas_sgemm(kSize, kSize, kSize, d.a.data<float>(), d.b.data<float>(), d.ref.data<float>(), kThreads);
    });
    state.SetIterationTime(ours);
  }
  const double flops = 2.0 * kSize * kSize * kSize;
  state.counters["gflops"] = flops / ours / 1e9;
  state.counters["peer_gflops"] = flops / peer / 1e9;
  state.counters["vs_peer"] = peer / ours;
  state.SetLabel(fallback.to_string());
}

// The conv2d_nhwc fallback (what an untuned model runs) on the ResNet-50
// layers of BM_Tune_ResNetConvs, each against oneDNN in the same run;
// vs_peer is the geometric mean over the layers.
void BM_Space_KnobFallbackResNetConvs(benchmark::State& state) {
  const Target target = host_target();
  const KnobTemplate& tmpl = *find_template("conv2d_nhwc");
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  bench::set_dnnl_threads(kThreads);
  double log_sum = 0, total = 0;
  int n = 0;
  for (auto _ : state) {
    for (const bench::ConvLayer& l : bench::resnet50_conv_layers()) {
      const std::string spec = bench::conv2d_nhwc_spec(l);
      ops::OpInstance inst = ops::parse_op_spec(spec).value();
      auto k = fallback_kernel(tmpl, inst, target);
      if (!k.is_ok()) return state.SkipWithError(k.status().to_string().c_str());
      const double ours = bench::median_seconds([&] { k->cand.fn(k->args.data()); });
      bench::DnnlConv dnnl(l.c, l.h, l.w, l.k, l.r, l.s, l.stride, l.pad);
      dnnl.prepare(k->arrays[0].data<float>(), k->arrays[1].data<float>());
      const double peer = bench::median_seconds([&] { dnnl.run(); });
      ++n;
      log_sum += std::log(peer / ours);
      total += ours;
      state.counters["layer" + std::to_string(n) + "_vs_peer"] = peer / ours;
      state.counters["layer" + std::to_string(n) + "_gflops"] = inst.flops / ours / 1e9;
      std::fprintf(stderr, "%s: %s\n", spec.c_str(), k->config.to_string().c_str());
    }
    state.SetIterationTime(total);
  }
  state.counters["vs_peer"] = std::exp(log_sum / n);
  state.counters["fma_peak_gflops"] = bench::measure_fma_peak_gflops(kThreads);
}

// The Winograd fallback (what an untuned model runs for these layers) on the
// 3x3 layers of BM_Tune_ResNetConvs, each against oneDNN and against the
// direct conv2d_nhwc fallback in the same run; vs_peer (oneDNN time /
// Winograd time) and vs_direct are geometric means over the layers.
void BM_Space_KnobFallbackWinogradConvs(benchmark::State& state) {
  const Target target = host_target();
  const KnobTemplate& winograd = *find_template("conv2d_winograd_nhwc");
  const KnobTemplate& direct = *find_template("conv2d_nhwc");
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  bench::set_dnnl_threads(kThreads);
  double log_peer = 0, log_direct = 0, total = 0;
  int n = 0;
  auto fallback_seconds = [&](const KnobTemplate& t, const std::string& spec) -> Result<double> {
    TESSERA_ASSIGN_OR_RETURN(ops::OpInstance inst, ops::parse_op_spec(spec));
    TESSERA_ASSIGN_OR_RETURN(FallbackKernel k, fallback_kernel(t, inst, target));
    std::fprintf(stderr, "%s: %s\n", spec.c_str(), k.config.to_string().c_str());
    return bench::median_seconds([&] { k.cand.fn(k.args.data()); });
  };
  for (auto _ : state) {
    for (const bench::ConvLayer& l : bench::resnet50_conv_layers()) {
      if (l.r != 3) continue;
      const std::string spec = "conv2d_winograd_nhwc:N=1,C=" + std::to_string(l.c) + ",H=" + std::to_string(l.h) +
                               ",W=" + std::to_string(l.w) + ",K=" + std::to_string(l.k) +
                               ",pad=" + std::to_string(l.pad);
      auto ours = fallback_seconds(winograd, spec);
      auto plain = fallback_seconds(direct, bench::conv2d_nhwc_spec(l));
      if (!ours.is_ok()) return state.SkipWithError(ours.status().to_string().c_str());
      if (!plain.is_ok()) return state.SkipWithError(plain.status().to_string().c_str());
      std::vector<float> x(static_cast<size_t>(l.c * l.h * l.w), 0.5f), w(static_cast<size_t>(l.k * l.c * 9), 0.25f);
      bench::DnnlConv dnnl(l.c, l.h, l.w, l.k, l.r, l.s, l.stride, l.pad);
      dnnl.prepare(x.data(), w.data());
      const double peer = bench::median_seconds([&] { dnnl.run(); });
      ++n;
      log_peer += std::log(peer / *ours);
      log_direct += std::log(*plain / *ours);
      total += *ours;
      const std::string layer = "layer" + std::to_string(n);
      state.counters[layer + "_ms"] = *ours * 1e3;
      state.counters[layer + "_direct_ms"] = *plain * 1e3;
      state.counters[layer + "_onednn_ms"] = peer * 1e3;
    }
    state.SetIterationTime(total);
  }
  state.counters["vs_peer"] = std::exp(log_peer / n);
  state.counters["vs_direct"] = std::exp(log_direct / n);
}

// The depthwise fallback (what an untuned model runs) on MobileNetV2's 144
// channels of 56 x 56, 3 x 3, pad 1, stride 1 (Arg 1) and 2 (Arg 2), against
// oneDNN's depthwise conv in the same run, and the generic schedule a model
// ran before its depthwise convs fitted the template (generic_vs_peer).
void BM_Space_KnobFallbackDepthwise(benchmark::State& state) {
  const Target target = host_target();
  const KnobTemplate& tmpl = *find_template("depthwise_conv2d");
  const int64_t stride = state.range(0);
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  bench::set_dnnl_threads(kThreads);
  const std::string spec = "depthwise_conv2d:N=1,C=144,H=56,W=56,R=3,S=3,pad=1,stride=" + std::to_string(stride);
  ops::OpInstance inst = ops::parse_op_spec(spec).value();
  auto dw = fallback_kernel(tmpl, inst, target);
  if (!dw.is_ok()) return state.SkipWithError(dw.status().to_string().c_str());
  auto generic_state = generic_schedule(inst.dag, target);
  if (!generic_state.is_ok()) return state.SkipWithError(generic_state.status().to_string().c_str());
  auto generic_lib = tessera::build(*generic_state, target, "kernel");
  if (!generic_lib.is_ok()) return state.SkipWithError(generic_lib.status().to_string().c_str());
  auto generic_mod = runtime::Module::load_from_bytes(generic_lib->bytes, "/tmp");
  if (!generic_mod.is_ok()) return state.SkipWithError(generic_mod.status().to_string().c_str());
  TesseraKernelFn generic_fn = generic_mod->get_kernel("kernel").value();
  // The same layer in NHWC (vectorized along the channels), as a model runs
  // it in that layout.
  const KnobTemplate& nhwc_tmpl = *find_template("depthwise_conv2d_nhwc");
  ops::OpInstance nhwc =
      ops::parse_op_spec("depthwise_conv2d_nhwc:N=1,C=144,H=56,W=56,R=3,S=3,pad=1,stride=" + std::to_string(stride))
          .value();
  auto nhwc_k = fallback_kernel(nhwc_tmpl, nhwc, target);
  if (!nhwc_k.is_ok()) return state.SkipWithError(nhwc_k.status().to_string().c_str());
  double ours = 0, peer = 0, generic = 0, nhwc_ours = 0;
  for (auto _ : state) {
    bench::DnnlConv dnnl(144, 56, 56, 144, 3, 3, stride, 1, /*groups=*/144);
    dnnl.prepare(dw->arrays[0].data<float>(), dw->arrays[1].data<float>());
    peer = bench::median_seconds([&] { dnnl.run(); });
    ours = bench::median_seconds([&] { dw->cand.fn(dw->args.data()); });
    generic = bench::median_seconds([&] { generic_fn(dw->args.data()); });
    nhwc_ours = bench::median_seconds([&] { nhwc_k->cand.fn(nhwc_k->args.data()); });
    state.SetIterationTime(ours);
  }
  state.counters["us"] = ours * 1e6;
  state.counters["onednn_us"] = peer * 1e6;
  state.counters["vs_peer"] = peer / ours;
  state.counters["generic_vs_peer"] = peer / generic;
  state.counters["nhwc_vs_peer"] = peer / nhwc_ours;
  state.counters["gbytes_per_s"] =
      static_cast<double>(dw->arrays[0].numel() + dw->arrays.back().numel()) * 4 / ours / 1e9;
  state.SetLabel(dw->config.to_string() + "; nhwc " + nhwc_k->config.to_string());
}

}  // namespace
}  // namespace tessera

// --samples=N sets how many random configurations the search draws.
int main(int argc, char** argv) {
  int64_t samples = 100;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--samples=", 10) == 0)
      samples = std::max<int64_t>(1, std::atoll(argv[i] + 10));
    else
      rest.push_back(argv[i]);
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::RegisterBenchmark("BM_Space_BestOfKnobMatmul1024", tessera::BM_Space_BestOfKnobMatmul1024)
      ->Arg(samples)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Space_KnobFallbackMatmul1024", tessera::BM_Space_KnobFallbackMatmul1024)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Space_KnobFallbackResNetConvs", tessera::BM_Space_KnobFallbackResNetConvs)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Space_KnobFallbackWinogradConvs", tessera::BM_Space_KnobFallbackWinogradConvs)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Space_KnobFallbackDepthwise", tessera::BM_Space_KnobFallbackDepthwise)
      ->Arg(1)
      ->Arg(2)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  tessera::bench::add_machine_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
