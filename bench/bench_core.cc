// The compiler core before any tuning: hand-written schedules through the
// public schedule API against OpenBLAS, and the speed of building a kernel.
//
//   build/bin/bench_core --benchmark_filter=BM_Core_HandMatmul1024
//   build/bin/bench_core --benchmark_filter=BM_Core_LaunchBesideABusyCore
//   build/bin/bench_core --benchmark_filter=BM_Layout_Transpose
#include <benchmark/benchmark.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/bench_main.h"
#include "bench/peers.h"
#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/ops/conv.h"
#include "compiler/space/choose/generic_schedule.h"
#include "runtime/c_abi.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"

namespace tessera {
namespace {

constexpr int kThreads = 2;

std::shared_ptr<const ComputeDAG> matmul_dag(int64_t m, int64_t n, int64_t k) {
  Tensor a = placeholder({m, k}, DType::f32(), "A");
  Tensor b = placeholder({k, n}, DType::f32(), "B");
  IterVar r = reduce_axis(k, "k");
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      "C", OpPattern::kComplex);
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
}

void check(const Status& s) {
  if (!s.is_ok()) {
    std::fprintf(stderr, "schedule error: %s\n", s.to_string().c_str());
    std::abort();
  }
}

// A register-tiled matmul: C is cut into MB x NB blocks run in parallel; each
// block accumulates in C.local, whose MR x NR micro-tile stays in registers
// (MR rows unrolled, NR columns in two vectors) while k runs inside. A KB x NR
// panel of B is copied to a contiguous buffer (cache_read) and reused by every
// micro-tile row of the block.
State hand_matmul(std::shared_ptr<const ComputeDAG> dag, const Target& target) {
  const int64_t lanes = target.vector_lanes(DType::f32());
  const int64_t nr = 2 * lanes, mr = 8, kb = 256, nb = 256, mb = 64;
  State s(dag);
  int C = s.stage_index("C");
  check(s.cache_write(C));
  int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  // C: i.0 j.0 i.1 j.1 with blocks mb x nb; parallel over the fused blocks.
  check(s.tile(C, {0, 1}, {{mb}, {nb}}));
  check(s.fuse(C, {0, 1}));
  check(s.parallel(C, 0));
  check(s.split(C, 2, {lanes}));
  check(s.vectorize(C, 3));
  check(s.compute_at(CL, C, 0));
  // C.local: i j k -> i.0 i.1 j.0 j.1 k.0 k.1 -> k.0 i.0 j.0 k.1 i.1 j.1
  check(s.split(CL, 0, {mr}));
  check(s.split(CL, 2, {nr}));
  check(s.split(CL, 4, {kb}));
  check(s.reorder(CL, {4, 2, 0, 5, 1, 3}));
  check(s.unroll(CL, 4));
  check(s.vectorize(CL, 5));
  check(s.cache_read(s.stage_index("B"), {CL}));
  int BL = s.stage_index("B.local");
  CL = s.stage_index("C.local");
  check(s.compute_at(BL, CL, 1));
  check(s.split(BL, 1, {lanes}));
  check(s.vectorize(BL, 2));
  return s;
}

struct MatmulData {
  runtime::NDArray a, b, c, ref;
  MatmulData(int64_t m, int64_t n, int64_t k)
      : a(runtime::NDArray::create({m, k}, DType::f32()).value()),
        b(runtime::NDArray::create({k, n}, DType::f32()).value()),
        c(runtime::NDArray::create({m, n}, DType::f32()).value()),
        ref(runtime::NDArray::create({m, n}, DType::f32()).value()) {
    a.fill_random(1);
    b.fill_random(2);
  }
};

// Args: M, N, K. The prime shape runs the same schedule with tiles that do
// not divide its loops (remainders, masked vector tails).
void BM_Core_HandMatmul(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Target target = host_target();
  State s = hand_matmul(matmul_dag(m, n, k), target);
  auto lib = build(s, target, "matmul");
  if (!lib.is_ok()) return state.SkipWithError(lib.status().to_string().c_str());
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  auto fn = mod->get_kernel("matmul").value();
  MatmulData d(m, n, k);
  void* args[] = {d.a.raw_data(), d.b.raw_data(), d.c.raw_data()};
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  double ours = 0, peer = 0;
  for (auto _ : state) {
    ours = bench::median_seconds([&] { fn(args); });
    peer = bench::median_seconds(
        [&] { bench::openblas_sgemm(m, n, k, d.a.data<float>(), d.b.data<float>(), d.ref.data<float>(), kThreads); });
    state.SetIterationTime(ours);
  }
  double max_err = 0;
  for (int64_t i = 0; i < m * n; ++i)
    max_err = std::max<double>(max_err, std::fabs(d.c.data<float>()[i] - d.ref.data<float>()[i]));
  if (max_err > 1e-2) return state.SkipWithError("result differs from OpenBLAS");
  double flops = 2.0 * m * n * k;
  state.counters["gflops"] = flops / ours / 1e9;
  state.counters["peer_gflops"] = flops / peer / 1e9;
  state.counters["vs_peer"] = peer / ours;
}
BENCHMARK(BM_Core_HandMatmul)
    ->Args({1024, 1024, 1024})
    ->Args({997, 1009, 499})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Direct NCHW conv: the output is cut into (8 channels x 4 rows x 8 columns)
// register tiles, each accumulated over (c, r, s) in conv.local with the
// channels and rows unrolled and the columns one 8-lane vector; tiles of
// different channel blocks and rows run in parallel. The padded input is
// computed once at the root.
State hand_conv(std::shared_ptr<const ComputeDAG> dag, const std::string& out) {
  const int64_t kt = 8, yt = 4, xt = 8, ct = 8;
  State s(dag);
  int O = s.stage_index(out);
  check(s.cache_write(O));
  int OL = s.stage_index(out + ".local");
  O = s.stage_index(out);
  int P = s.stage_index("pad");
  // n k y x -> n k.0 k.1 y.0 y.1 x.0 x.1 -> (n k.0 y.0) x.0 k.1 y.1 x.1
  check(s.split(O, 1, {kt}));
  check(s.split(O, 3, {yt}));
  check(s.split(O, 5, {xt}));
  check(s.reorder(O, {0, 1, 3, 5, 2, 4, 6}));
  check(s.fuse(O, {0, 1, 2}));
  check(s.parallel(O, 0));
  check(s.vectorize(O, 4));
  check(s.compute_at(OL, O, 1));
  // n k y x rc ry rx -> n rc.0 rc.1 ry rx y k x
  check(s.split(OL, 4, {ct}));
  check(s.reorder(OL, {0, 4, 5, 6, 7, 2, 1, 3}));
  check(s.unroll(OL, 5));
  check(s.unroll(OL, 6));
  check(s.vectorize(OL, 7));
  check(s.parallel(P, 1));
  return s;
}

void BM_Core_HandConv2dResNet(benchmark::State& state) {
  const int64_t c = 64, h = 56, w = 56, k = 64;
  Tensor x = placeholder({1, c, h, w}, DType::f32(), "X");
  Tensor wt = placeholder({k, c, 3, 3}, DType::f32(), "W");
  auto y = ops::conv2d_nchw(x, wt, 1, 1);
  if (!y.is_ok()) return state.SkipWithError(y.status().to_string().c_str());
  auto dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({x, wt, *y}).value());
  State s = hand_conv(dag, (*y)->name);
  auto lib = build(s, host_target(), "conv");
  if (!lib.is_ok()) return state.SkipWithError(lib.status().to_string().c_str());
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  auto fn = mod->get_kernel("conv").value();
  auto in = runtime::NDArray::create({1, c, h, w}, DType::f32()).value();
  auto weights = runtime::NDArray::create({k, c, 3, 3}, DType::f32()).value();
  auto out = runtime::NDArray::create({1, k, h, w}, DType::f32()).value();
  auto ref = runtime::NDArray::create({1, k, h, w}, DType::f32()).value();
  in.fill_random(1);
  weights.fill_random(2);
  void* args[] = {in.raw_data(), weights.raw_data(), out.raw_data()};
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  bench::Im2colConv baseline(c, h, w, k, 3, 3, 1, 1);
  double ours = 0, peer = 0;
  for (auto _ : state) {
    ours = bench::median_seconds([&] { fn(args); });
    peer = bench::median_seconds(
        [&] { baseline.run(in.data<float>(), weights.data<float>(), ref.data<float>(), kThreads); });
    state.SetIterationTime(ours);
  }
  for (int64_t i = 0; i < k * h * w; ++i)
    if (std::fabs(out.data<float>()[i] - ref.data<float>()[i]) > 1e-3)
      return state.SkipWithError("result differs from im2col");
  double flops = 2.0 * k * c * 9 * h * w;
  state.counters["gflops"] = flops / ours / 1e9;
  state.counters["peer_gflops"] = flops / peer / 1e9;
  state.counters["vs_peer"] = peer / ours;
}
BENCHMARK(BM_Core_HandConv2dResNet)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Core_BuildMatmul1024(benchmark::State& state) {
  Target target = host_target();
  auto dag = matmul_dag(1024, 1024, 1024);
  State s = hand_matmul(dag, target);
  std::vector<Step> steps = s.steps();
  std::vector<double> times;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto replayed = replay(dag, steps);
    auto lib = build(*replayed, target, "matmul");
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!lib.is_ok()) return state.SkipWithError(lib.status().to_string().c_str());
    times.push_back(t);
    state.SetIterationTime(t);
  }
  std::sort(times.begin(), times.end());
  state.counters["build_ms"] = times[times.size() / 2] * 1e3;
}
BENCHMARK(BM_Core_BuildMatmul1024)->UseManualTime()->Iterations(21)->Unit(benchmark::kMillisecond);

// Microseconds per launch of a small parallel loop (two tasks of ~10 us of
// arithmetic), the median of `launches`, with the worker on a CPU that a busy
// process holds (the launcher on another), as on a machine shared with a
// build: the worker runs only when the scheduler preempts that process.
double launch_us_beside_busy_core(bool steal, int launches) {
  const std::vector<int> cpus = runtime::allowed_cpus();
  runtime::PoolOptions options;
  options.pin_threads = true;
  options.cpus = {cpus[0], cpus[1]};
  options.steal_late_shares = steal;
  runtime::ThreadPool pool(2, options);
  const pid_t busy = fork();
  if (busy < 0) return -1;  // no busy process: nothing to time beside (kill(-1) would signal every process)
  if (busy == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[1], &one);
    sched_setaffinity(0, sizeof(one), &one);
    for (uint64_t i = 0;; ++i) benchmark::DoNotOptimize(i);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto body = [](int32_t task, int32_t, void* closure) -> int32_t {
    float x = static_cast<float>(task);
    for (int i = 0; i < 20000; ++i) x = x * 0.999f + 1.0f;
    static_cast<float*>(closure)[task] = x;
    return 0;
  };
  float out[2];
  std::vector<double> us;
  for (int l = 0; l < launches; ++l) {
    const auto start = std::chrono::steady_clock::now();
    pool.run(body, out, 2);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the worker goes back to sleep
  }
  kill(busy, SIGKILL);
  waitpid(busy, nullptr, 0);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// A parallel loop launched while another process holds the worker's CPU:
// the launcher running the late worker's share (steal_late_shares) against
// waiting for the worker. vs_peer = waiting / stealing.
void BM_Core_LaunchBesideABusyCore(benchmark::State& state) {
  if (runtime::allowed_cpus().size() < 2) return state.SkipWithError("needs two CPUs");
  const cpu_set_t saved = [] {
    cpu_set_t set;
    sched_getaffinity(0, sizeof(set), &set);
    return set;
  }();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(runtime::allowed_cpus()[0], &one);
  sched_setaffinity(0, sizeof(one), &one);
  for (auto _ : state) {
    const double waiting = launch_us_beside_busy_core(false, 200);
    const double stealing = launch_us_beside_busy_core(true, 200);
    if (waiting < 0 || stealing < 0) {
      sched_setaffinity(0, sizeof(saved), &saved);
      return state.SkipWithError("cannot fork the busy process");
    }
    state.counters["waiting_us"] = waiting;
    state.counters["stealing_us"] = stealing;
    state.counters["vs_peer"] = waiting / stealing;
  }
  sched_setaffinity(0, sizeof(saved), &saved);
}
BENCHMARK(BM_Core_LaunchBesideABusyCore)->Iterations(1)->Unit(benchmark::kMillisecond);

// A transpose as a model's layout change compiles it (the generic schedule:
// no template, no record), against a copy of the same bytes on the same
// threads: `of_copy` is the copy's time over the transpose's, the share of
// the machine's copy bandwidth the transpose reaches. Args: rows, columns
// of the input (97 x 257: a spectrogram; 1024 x 1000: a large one).
struct CopyClosure {
  const char* from;
  char* to;
  size_t bytes;
};

int32_t copy_share(int32_t task, int32_t tasks, void* closure) {
  const auto* c = static_cast<const CopyClosure*>(closure);
  const size_t begin = c->bytes * static_cast<size_t>(task) / static_cast<size_t>(tasks);
  const size_t end = c->bytes * static_cast<size_t>(task + 1) / static_cast<size_t>(tasks);
  std::memcpy(c->to + begin, c->from + begin, end - begin);
  return 0;
}

void BM_Layout_Transpose(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const Target target = host_target();
  Tensor in = placeholder({rows, cols}, DType::f32(), "X");
  Tensor out = compute(
      {cols, rows},
      [&](const Vars& i) {
        return read(in, {i[1], i[0]});
      },
      "Y", OpPattern::kInjective);
  auto dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({in, out}).value());
  auto schedule = generic_schedule(dag, target);
  if (!schedule.is_ok()) return state.SkipWithError(schedule.status().to_string().c_str());
  auto lib = build(*schedule, target, "transpose");
  if (!lib.is_ok()) return state.SkipWithError(lib.status().to_string().c_str());
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  auto fn = mod->get_kernel("transpose").value();
  auto x = runtime::NDArray::create({rows, cols}, DType::f32()).value();
  auto y = runtime::NDArray::create({cols, rows}, DType::f32()).value();
  auto copy = runtime::NDArray::create({cols, rows}, DType::f32()).value();
  x.fill_random(1);
  void* args[] = {x.raw_data(), y.raw_data()};
  runtime::ThreadPool pool(kThreads);
  runtime::ParallelScope scope(&pool);
  CopyClosure closure{static_cast<const char*>(x.raw_data()), static_cast<char*>(copy.raw_data()),
                      static_cast<size_t>(x.nbytes())};
  double ours = 0, peer = 0;
  for (auto _ : state) {
    ours = bench::median_seconds([&] { fn(args); }, 9);
    peer = bench::median_seconds([&] { tessera_parallel_launch(copy_share, &closure, 0); }, 9);
    state.SetIterationTime(ours);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (y.data<float>()[c * rows + r] != x.data<float>()[r * cols + c]) return state.SkipWithError("wrong transpose");
  const double bytes = 2.0 * static_cast<double>(x.nbytes());  // read and written
  state.counters["gb_per_s"] = bytes / ours / 1e9;
  state.counters["copy_gb_per_s"] = bytes / peer / 1e9;
  state.counters["of_copy"] = peer / ours;
}
BENCHMARK(BM_Layout_Transpose)
    ->Args({97, 257})
    ->Args({1024, 1000})
    ->Args({3199, 512})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

TESSERA_BENCHMARK_MAIN()
