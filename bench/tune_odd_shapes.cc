// bench_tune's odd shapes: shapes that do not divide into friendly tiles,
// tuned and untuned against their peers (BM_Tune_OddShapes and its
// geometric mean, BM_OddShapeSchedule), and untuned matmuls of random
// shapes (BM_Fallback_RandomMatmuls). Part of the bench_tune program.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>

#include "bench/peers.h"
#include "bench/tune_harness.h"
#include "bench/workloads.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/choose/apply_best.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"

namespace tessera::bench {
namespace {

// Shapes that do not divide into friendly tiles: primes, an odd class count,
// a GEMV, depthwise convs. Each is tuned as `tessera tune` does (the
// fallback measured first, then the search), then its best kernel and its
// untuned fallback (what compile time uses without records) are timed here
// against the peer, alternately, in the same run.

struct OddShape {
  const char* spec;
  const char* peer;  // what the peer is, for the label
};

const OddShape kOddShapes[] = {
    {"matmul:M=997,N=1009,K=499", "cblas_sgemm"},
    {"dense:M=40,N=6625,K=120,bias=1", "cblas_sgemm + bias"},
    {"dense:M=1,N=1000,K=2048", "cblas_sgemv"},
    {"depthwise_conv2d:N=1,C=144,H=56,W=56,R=3,S=3,stride=1,pad=1", "oneDNN"},
    {"depthwise_conv2d:N=1,C=144,H=56,W=56,R=3,S=3,stride=2,pad=1", "oneDNN"},
    // The same layers in NHWC, as a model runs them (oneDNN in its own
    // blocked layout either way, its reorders untimed).
    {"depthwise_conv2d_nhwc:N=1,C=144,H=56,W=56,R=3,S=3,stride=1,pad=1", "oneDNN"},
    {"depthwise_conv2d_nhwc:N=1,C=144,H=56,W=56,R=3,S=3,stride=2,pad=1", "oneDNN"},
    // A mel front end's STFT (one input channel, 512 taps, 257 channels,
    // stride 160), as a model compiles it: the product of its windows.
    {"conv1d:W=16512,K=257,S=512,stride=160", "oneDNN"},
};

bool is_nhwc_shape(int index) {
  return index >= 5;
}

// `from` (d0 x d1 x d2 x d3) transposed by `perm` (out dim i is in dim perm[i]).
std::vector<float> transposed(const float* from, const std::vector<int64_t>& shape, const std::vector<int>& perm) {
  std::vector<int64_t> out_shape(4), strides(4, 1);
  for (int d = 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  for (int d = 0; d < 4; ++d) out_shape[d] = shape[perm[d]];
  std::vector<float> out;
  out.reserve(static_cast<size_t>(out_shape[0] * out_shape[1] * out_shape[2] * out_shape[3]));
  for (int64_t a = 0; a < out_shape[0]; ++a)
    for (int64_t b = 0; b < out_shape[1]; ++b)
      for (int64_t c = 0; c < out_shape[2]; ++c)
        for (int64_t d = 0; d < out_shape[3]; ++d) {
          const int64_t idx[4] = {a, b, c, d};
          int64_t i = 0;
          for (int k = 0; k < 4; ++k) i += idx[k] * strides[perm[k]];
          out.push_back(from[i]);
        }
  return out;
}

// The peer of shape `index` on `args` (the operator's arguments, output last).
std::function<void()> odd_shape_peer(int index, std::vector<runtime::NDArray>& args,
                                     std::unique_ptr<bench::DnnlConv>& dnnl) {
  float* out = args.back().data<float>();
  switch (index) {
    case 0:
      return [&args, out] {
        bench::openblas_sgemm(997, 1009, 499, args[0].data<float>(), args[1].data<float>(), out, kThreads);
      };
    case 1:
      return [&args, out] {
        bench::openblas_dense(40, 6625, 120, args[0].data<float>(), args[1].data<float>(), args[2].data<float>(), out,
                              kThreads);
      };
    case 2:
      return [&args, out] {
        bench::openblas_sgemv(1000, 2048, args[1].data<float>(), args[0].data<float>(), out, kThreads);
      };
    case 7: {
      // X is N x 1 x W x 1, the same bytes as NCHW; the S x K weights as OIHW.
      dnnl = std::make_unique<bench::DnnlConv>(1, 1, 16512, 257, 1, 512, 160, 0);
      const std::vector<float> w = transposed(args[1].data<float>(), {1, 1, 512, 257}, {3, 0, 1, 2});
      dnnl->prepare(args[0].data<float>(), w.data());
      return [&dnnl] { dnnl->run(); };
    }
    default: {
      const int64_t stride = index == 3 || index == 5 ? 1 : 2;
      dnnl = std::make_unique<bench::DnnlConv>(144, 56, 56, 144, 3, 3, stride, 1, 144);
      if (is_nhwc_shape(index)) {
        // NHWC input and R x S x 1 x K weights, given to oneDNN as NCHW / OIHW.
        const std::vector<float> x = transposed(args[0].data<float>(), args[0].shape(), {0, 3, 1, 2});
        const std::vector<float> w = transposed(args[1].data<float>(), args[1].shape(), {3, 2, 0, 1});
        dnnl->prepare(x.data(), w.data());
      } else {
        dnnl->prepare(args[0].data<float>(), args[1].data<float>());
      }
      return [&dnnl] { dnnl->run(); };
    }
  }
}

// Peer time / kernel time, the median of 7 rounds, each timing after the
// other side's threads have gone idle (bench::let_peer_threads_idle).
double ratio_to_peer(const std::function<void()>& kernel, const std::function<void()>& peer) {
  std::vector<double> ratios;
  for (int r = 0; r < 7; ++r) {
    bench::let_peer_threads_idle();
    const double peer_s = bench::median_seconds(peer, 3, 20);
    bench::let_peer_threads_idle();
    ratios.push_back(peer_s / bench::median_seconds(kernel, 3, 20));
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios[ratios.size() / 2];
}

// Runs `kernel` and the peer on the same arguments and compares the outputs;
// an error message when the kernel fails or differs.
std::string check_against_peer(TesseraKernelFn kernel, std::vector<void*> ptrs, const std::function<void()>& peer,
                               runtime::NDArray& out, std::unique_ptr<bench::DnnlConv>& dnnl, bool nhwc) {
  if (const int32_t status = kernel(ptrs.data()); status != 0)
    return "kernel returned status " + std::to_string(status);
  std::vector<float> ours(out.data<float>(), out.data<float>() + out.numel());
  peer();
  if (dnnl && nhwc) {
    const std::vector<int64_t>& s = out.shape();  // N x P x Q x K
    std::vector<float> nchw(static_cast<size_t>(out.numel()));
    dnnl->output(nchw.data());
    const std::vector<float> back = transposed(nchw.data(), {s[0], s[3], s[1], s[2]}, {0, 2, 3, 1});
    std::copy(back.begin(), back.end(), out.data<float>());
  } else if (dnnl) {
    dnnl->output(out.data<float>());
  }
  double worst = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double want = out.data<float>()[i];
    worst = std::max(worst, std::fabs(ours[i] - want) / (1.0 + std::fabs(want)));
  }
  return worst > 1e-3 ? "output differs from the peer's (relative error " + std::to_string(worst) + ")" : "";
}

// A kernel's argument pointers: `args`, except the ones its schedule packs
// (pack_layout), which point to packed copies kept in `packed`.
std::vector<void*> kernel_args(const State& state, std::vector<runtime::NDArray>& args,
                               std::vector<runtime::NDArray>& packed) {
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.raw_data());
  for (const auto& [index, layout] : packed_arguments(state)) {
    runtime::NDArray& a = args[static_cast<size_t>(index)];
    packed.push_back(runtime::NDArray::create(packed_shape(a.shape(), layout), a.dtype()).value());
    pack_elements(a.raw_data(), packed.back().raw_data(), a.shape(), a.dtype().storage_bytes(), layout);
    ptrs[static_cast<size_t>(index)] = packed.back().raw_data();
  }
  return ptrs;
}

std::vector<double> odd_shape_ratios;  // vs_peer of every shape run in this process

// Arguments: shape (index into kOddShapes), trials, space (0 sketch, 1 knob).
void BM_Tune_OddShapes(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const bool knob = state.range(2) != 0;
  const OddShape& shape = kOddShapes[index];
  auto op = ops::parse_op_spec(shape.spec).value();
  state.SetLabel(std::string(shape.spec) + " vs " + shape.peer + ", " + space_label(knob));
  bench::set_dnnl_threads(kThreads);
  for (auto _ : state) {
    auto run = tune(op, TuneConfig{.trials = state.range(1), .seed = 1, .knob = knob, .baselines = true});
    if (!run.is_ok()) return state.SkipWithError(run.status().to_string().c_str());
    const records::Record* best = best_of_first(run->history, run->history.size());
    if (!best) return state.SkipWithError("no kernel was measured");
    auto tuned = build_steps(op, best->steps_json);
    if (!tuned.is_ok()) return state.SkipWithError(tuned.status().to_string().c_str());
    auto choice = choose_schedule(op.dag, op.op, host_target(), nullptr);
    if (!choice.is_ok()) return state.SkipWithError(choice.status().to_string().c_str());
    auto fallback_kernel = build_state(choice->state);
    if (!fallback_kernel.is_ok()) return state.SkipWithError(fallback_kernel.status().to_string().c_str());
    TesseraKernelFn fallback = fallback_kernel->fn;

    auto args = bench::make_args(op);
    std::vector<runtime::NDArray> packed;
    packed.reserve(2 * args.size());  // ptrs point into it
    auto tuned_state = replay(op.dag, steps_from_json(best->steps_json).value());
    if (!tuned_state.is_ok()) return state.SkipWithError(tuned_state.status().to_string().c_str());
    std::vector<void*> ptrs = kernel_args(*tuned_state, args, packed);
    std::vector<void*> fallback_ptrs = kernel_args(choice->state, args, packed);
    std::unique_ptr<bench::DnnlConv> dnnl;
    auto peer = odd_shape_peer(index, args, dnnl);
    runtime::ThreadPool pool(kThreads);
    runtime::ParallelScope scope(&pool);
    for (bool is_fallback : {false, true}) {
      const std::string wrong =
          check_against_peer(is_fallback ? fallback : tuned->fn, is_fallback ? fallback_ptrs : ptrs, peer, args.back(),
                             dnnl, is_nhwc_shape(index));
      if (!wrong.empty()) return state.SkipWithError(((is_fallback ? "fallback: " : "tuned: ") + wrong).c_str());
    }
    const double vs_peer = ratio_to_peer([&] { tuned->fn(ptrs.data()); }, peer);
    odd_shape_ratios.push_back(vs_peer);
    state.counters["vs_peer"] = vs_peer;
    state.counters["fallback_vs_peer"] = ratio_to_peer([&] { fallback(fallback_ptrs.data()); }, peer);
    state.counters["gflops"] = op.flops / bench::median_seconds([&] { tuned->fn(ptrs.data()); }) / 1e9;
    state.counters["check_ms"] = run->summary.check_seconds / std::max<double>(1, run->summary.trials) * 1e3;
    state.counters["s_per_trial"] = run->wall_s / std::max<double>(1, run->summary.trials);
    std::fprintf(stderr, "%s best steps: %s\n", shape.spec, best->steps_json.c_str());
    state.SetIterationTime(run->wall_s);
  }
}
BENCHMARK(BM_Tune_OddShapes)
    ->ArgNames({"shape", "trials", "knob"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {16, 200}, {0, 1}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// One schedule of an odd shape against its peer, to study a record without
// tuning: TESSERA_BENCH_STEPS is the schedule's steps JSON (as the records
// keep it) or a file holding it. Argument: shape (index into kOddShapes).
void BM_OddShapeSchedule(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const char* given = std::getenv("TESSERA_BENCH_STEPS");
  if (!given || !*given) return state.SkipWithError("set TESSERA_BENCH_STEPS to a steps JSON or a file holding one");
  std::string steps_json = given;
  if (steps_json.front() != '[') {
    std::ifstream in(given);
    if (!in) return state.SkipWithError(("cannot read " + steps_json).c_str());
    steps_json.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto op = ops::parse_op_spec(kOddShapes[index].spec).value();
  state.SetLabel(std::string(kOddShapes[index].spec) + " vs " + kOddShapes[index].peer);
  bench::set_dnnl_threads(kThreads);
  auto steps = steps_from_json(steps_json);
  if (!steps.is_ok()) return state.SkipWithError(steps.status().to_string().c_str());
  auto replayed = replay(op.dag, *steps);
  if (!replayed.is_ok()) return state.SkipWithError(replayed.status().to_string().c_str());
  auto kernel = build_state(*replayed);
  if (!kernel.is_ok()) return state.SkipWithError(kernel.status().to_string().c_str());
  TesseraKernelFn fn = kernel->fn;
  auto args = bench::make_args(op);
  std::vector<runtime::NDArray> packed;
  std::vector<void*> ptrs = kernel_args(*replayed, args, packed);
  std::unique_ptr<bench::DnnlConv> dnnl;
  auto peer = odd_shape_peer(index, args, dnnl);
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  const std::string wrong = check_against_peer(fn, ptrs, peer, args.back(), dnnl, is_nhwc_shape(index));
  if (!wrong.empty()) return state.SkipWithError(wrong.c_str());
  for (auto _ : state) {
    state.counters["vs_peer"] = ratio_to_peer([&] { fn(ptrs.data()); }, peer);
    state.counters["gflops"] = op.flops / bench::median_seconds([&] { fn(ptrs.data()); }) / 1e9;
  }
}
BENCHMARK(BM_OddShapeSchedule)->ArgName("shape")->DenseRange(0, 6)->Iterations(1);

// The M x N x K of BM_Fallback_RandomMatmuls: `count` drawn log-uniformly
// from 1..2048 (seed 7), or those TESSERA_BENCH_MATMULS lists ("77x384x384
// 512x512x512", separated by spaces or commas).
std::vector<std::array<int64_t, 3>> fallback_matmul_shapes(int64_t count) {
  std::vector<std::array<int64_t, 3>> shapes;
  if (const char* listed = std::getenv("TESSERA_BENCH_MATMULS")) {
    std::string text = listed;
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream in(text);
    for (std::string word; in >> word;) {
      std::array<int64_t, 3> mnk{};
      char x1 = 0, x2 = 0;
      std::istringstream w(word);
      if (!(w >> mnk[0] >> x1 >> mnk[1] >> x2 >> mnk[2]) || x1 != 'x' || x2 != 'x' || mnk[0] < 1 || mnk[1] < 1 ||
          mnk[2] < 1)
        return {};
      shapes.push_back(mnk);
    }
    return shapes;
  }
  SpaceRng rng(7);
  auto dim = [&rng] { return std::max<int64_t>(1, static_cast<int64_t>(std::exp(std::log(2048.0) * rng.real()))); };
  for (int64_t s = 0; s < count; ++s) {
    const int64_t m = dim(), n = dim(), k = dim();
    shapes.push_back({m, n, k});
  }
  return shapes;
}

// Untuned matmuls of shapes nobody picked (fallback_matmul_shapes), each the
// fallback schedule (choose_schedule, no records) against cblas_sgemm on the
// same arguments. Counters: the geometric mean and the worst
// fallback_vs_peer; each shape's ratio goes to stderr. Argument: how many
// random shapes.
void BM_Fallback_RandomMatmuls(benchmark::State& state) {
  const std::vector<std::array<int64_t, 3>> shapes = fallback_matmul_shapes(state.range(0));
  if (shapes.empty()) return state.SkipWithError("TESSERA_BENCH_MATMULS: expected shapes like 77x384x384");
  std::vector<double> ratios;
  std::string worst_shape;
  for (auto _ : state) {
    for (const auto& [m, n, k] : shapes) {
      const std::string spec = "matmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
      auto op = ops::parse_op_spec(spec).value();
      auto choice = choose_schedule(op.dag, op.op, host_target(), nullptr);
      if (!choice.is_ok()) return state.SkipWithError((spec + ": " + choice.status().to_string()).c_str());
      auto kernel = build_state(choice->state);
      if (!kernel.is_ok()) return state.SkipWithError((spec + ": " + kernel.status().to_string()).c_str());
      TesseraKernelFn fn = kernel->fn;
      auto args = bench::make_args(op);
      std::vector<runtime::NDArray> packed;
      std::vector<void*> ptrs = kernel_args(choice->state, args, packed);
      float* out = args.back().data<float>();
      auto peer = [&] { bench::openblas_sgemm(m, n, k, args[0].data<float>(), args[1].data<float>(), out, kThreads); };
      runtime::ThreadPool pool(kThreads);
      runtime::ParallelScope scope(&pool);
      std::unique_ptr<bench::DnnlConv> no_dnnl;
      const std::string wrong = check_against_peer(fn, ptrs, peer, args.back(), no_dnnl, false);
      if (!wrong.empty()) return state.SkipWithError((spec + ": " + wrong).c_str());
      ratios.push_back(ratio_to_peer([&] { fn(ptrs.data()); }, peer));
      std::fprintf(stderr, "%s fallback_vs_peer %.3f\n", spec.c_str(), ratios.back());
      if (ratios.back() <= *std::min_element(ratios.begin(), ratios.end())) worst_shape = spec;
    }
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  state.counters["fallback_vs_peer"] = std::exp(log_sum / static_cast<double>(ratios.size()));
  state.counters["worst"] = *std::min_element(ratios.begin(), ratios.end());
  state.SetLabel("worst: " + worst_shape);
}
BENCHMARK(BM_Fallback_RandomMatmuls)->Arg(24)->Iterations(1)->Unit(benchmark::kSecond);

// The geometric mean of the vs_peer of every BM_Tune_OddShapes run before it
// in this process (run it in the same --benchmark_filter).
void BM_Tune_OddShapesGeomean(benchmark::State& state) {
  if (odd_shape_ratios.empty()) return state.SkipWithError("no BM_Tune_OddShapes ran before it");
  for (auto _ : state) {
    double log_sum = 0;
    for (double r : odd_shape_ratios) log_sum += std::log(r);
    state.counters["vs_peer"] = std::exp(log_sum / static_cast<double>(odd_shape_ratios.size()));
    state.counters["shapes"] = static_cast<double>(odd_shape_ratios.size());
  }
}
BENCHMARK(BM_Tune_OddShapesGeomean)->Iterations(1);

}  // namespace
}  // namespace tessera::bench
