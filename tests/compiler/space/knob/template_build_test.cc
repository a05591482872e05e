// Knob templates end to end: random configurations built for this machine
// compute what the reference interpreter computes, and the fallback schedule
// is far faster than the unscheduled kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/codegen/build.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/ops.h"
#include "compiler/space/knob/templates.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "tests/compiler/space/knob/template_check.h"

namespace tessera {
namespace {

// Operator specs per template with sizes that divide nothing; the 50 built
// configurations of a template are spread over its specs.
struct TemplateCase {
  const char* op;
  std::vector<const char*> specs;
};
const TemplateCase kCases[] = {
    {"matmul", {"matmul:M=37,N=45,K=29", "matmul:M=24,N=48,K=20", "matmul:M=1,N=64,K=30"}},
    {"dense", {"dense:M=9,N=35,K=20", "dense:M=13,N=40,K=27,bias=1,relu=1", "dense:M=1,N=200,K=19,bias=1"}},
    {"batch_matmul", {"batch_matmul:B=3,M=10,N=33,K=17"}},
    // Window products (their taps stored packed by some configurations).
    {"conv1d", {"conv1d:W=300,K=37,S=64,stride=7", "conv1d:N=2,W=130,K=20,S=33,stride=5"}},
    {"conv2d",
     {"conv2d:N=1,C=6,H=11,W=13,K=10,R=3,S=3,pad=1", "conv2d:N=2,C=4,H=9,W=10,K=6,R=3,S=2,stride=2",
      "conv2d:N=1,C=4,H=7,W=9,K=6,R=3,S=3,pad=1,groups=2"}},
    {"conv2d_nhwc",
     {"conv2d_nhwc:N=1,C=5,H=10,W=9,K=20,R=3,S=3,pad=1", "conv2d_nhwc:N=1,C=3,H=8,W=7,K=7,R=1,S=1",
      "conv2d_nhwc:N=1,C=6,H=6,W=5,K=96,R=3,S=3,pad=1"}},
    {"conv2d_winograd_nhwc",
     {"conv2d_winograd_nhwc:N=1,C=5,H=10,W=12,K=20,pad=1", "conv2d_winograd_nhwc:N=2,C=3,H=7,W=9,K=7",
      "conv2d_winograd_nhwc:N=1,C=6,H=6,W=6,K=48,pad=1",
      // 7 x 11 tiles (both prime): micro-kernels of 8 tiles with a guarded chunk.
      "conv2d_winograd_nhwc:N=1,C=4,H=14,W=22,K=16,pad=1"}},
    {"depthwise_conv2d",
     {"depthwise_conv2d:N=1,C=6,H=12,W=11,R=3,S=3,pad=1",
      "depthwise_conv2d:N=1,C=3,H=9,W=13,R=5,S=3,multiplier=2,stride=2,pad=2",
      "depthwise_conv2d:N=1,C=5,H=10,W=9,R=3,S=3,stride=2,stride_w=1,pad=1,bias=1,relu=1"}},
    {"max_pool2d", {"max_pool2d:N=1,C=5,H=13,W=12,R=3,S=3,stride=2,pad=1"}},
    {"avg_pool2d",
     {"avg_pool2d:N=2,C=3,H=10,W=11,R=3,S=3,pad=1", "avg_pool2d:N=1,C=2,H=9,W=9,R=2,S=2,stride=2,count_include_pad=1"}},
    {"global_avg_pool2d", {"global_avg_pool2d:N=2,C=7,H=5,W=6"}},
};

TEST(KnobTemplatesBuilt, FiftyRandomConfigsPerTemplateMatchTheInterpreter) {
  runtime::ThreadPool pool(2);
  std::mt19937_64 rng(2024);
  for (const TemplateCase& tc : kCases) {
    const KnobTemplate* tmpl = find_template(tc.op);
    ASSERT_NE(tmpl, nullptr);
    const int per_spec = (50 + static_cast<int>(tc.specs.size()) - 1) / static_cast<int>(tc.specs.size());
    for (const char* spec : tc.specs) {
      ops::OpInstance inst = ops::parse_op_spec(spec).value();
      const runtime::NDArray expected = reference(inst);
      KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
      for (int i = 0; i < per_spec; ++i) {
        KnobConfig c = i == 0 ? tmpl->fallback(space, *inst.dag, host_target()).value()
                              : space.config(rng() % space.size()).value();
        auto state = apply_template(*tmpl, inst.dag, c, host_target());
        ASSERT_TRUE(state.is_ok()) << state.status().to_string();
        expect_matches(inst, *state, expected, &pool, std::string(spec) + " " + c.to_string());
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The NHWC conv stores its weights packed by the micro-kernel's vector width,
// [K/kv][R][S][C][kv], unless that is HWIO itself (kv = K).
TEST(KnobTemplatesBuilt, NhwcConvPacksItsWeightsByTheVectorWidth) {
  const KnobTemplate* tmpl = find_template("conv2d_nhwc");
  for (const char* spec :
       {"conv2d_nhwc:N=1,C=64,H=7,W=7,K=256,R=3,S=3,pad=1", "conv2d_nhwc:N=1,C=8,H=7,W=7,K=16,R=3,S=3"}) {
    ops::OpInstance inst = ops::parse_op_spec(spec).value();
    KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
    KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
    State state = apply_template(*tmpl, inst.dag, c, host_target()).value();
    const int64_t kv = c.get("tile_k")[2], k = inst.dag->args()[1]->shape[3];
    const auto packed = packed_arguments(state);
    if (kv == k) {
      EXPECT_TRUE(packed.empty()) << spec;
    } else {
      ASSERT_EQ(packed.size(), 1u) << spec;
      EXPECT_EQ(packed[0].first, 1) << spec;  // W
      EXPECT_EQ(packed[0].second, (PackedLayout{3, kv})) << spec;
    }
  }
}

// Fused, each block of the Winograd output computes M for its own tiles
// only: bound inference sizes M by the block even though the unrolled output
// transform reads every tile 36 times (a min/max of repeated bounds once
// hid the constant extent, and every block computed every tile).
TEST(KnobTemplatesBuilt, WinogradBlocksComputeOnlyTheirTiles) {
  const KnobTemplate* tmpl = find_template("conv2d_winograd_nhwc");
  ops::OpInstance inst = ops::parse_op_spec("conv2d_winograd_nhwc:N=1,C=64,H=56,W=56,K=64,pad=1").value();
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
  ASSERT_EQ(c.get_int("stages"), 0) << c.to_string();  // fused
  State bounded = infer_bounds(apply_template(*tmpl, inst.dag, c, host_target()).value()).value();
  const int m = bounded.stage_index("conv2d_winograd_nhwc.gemm");
  ASSERT_GE(m, 0);
  int64_t elements = 1;  // of M computed per block: 4 x 4 x its tiles x 64 channels
  for (const Iter& it : bounded.stage(m).iters)
    if (it.kind == IterKind::kSpatial) elements *= it.extent;
  EXPECT_EQ(elements, 16 * c.get_int("block") * 64) << c.to_string();
}

// Dense reads W[n, k]: stored [N/nr][K][nr] so its columns are contiguous.
// Matmul's B[k, n] already is.
TEST(KnobTemplatesBuilt, DensePacksItsWeightsByTheMicroKernelWidth) {
  for (const char* spec : {"dense:M=1,N=1024,K=64,bias=1", "matmul:M=64,N=1024,K=64"}) {
    ops::OpInstance inst = ops::parse_op_spec(spec).value();
    const KnobTemplate* tmpl = find_template(inst.op);
    KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
    KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
    State state = apply_template(*tmpl, inst.dag, c, host_target()).value();
    const auto packed = packed_arguments(state);
    if (inst.op == "matmul") {
      EXPECT_TRUE(packed.empty()) << spec;
      continue;
    }
    ASSERT_EQ(packed.size(), 1u) << spec;
    EXPECT_EQ(packed[0].first, 1) << spec;  // W
    EXPECT_EQ(packed[0].second, (PackedLayout{0, c.get("tile_n")[2]})) << spec;
  }
}

// A GEMV's fallback: whole-register blocks of columns that do not divide N,
// the last one padded, the weights packed by the block width with a
// zero-padded last block; it computes what the interpreter computes.
TEST(KnobTemplatesBuilt, GemvFallbackPadsItsLastBlockAndMatchesTheInterpreter) {
  ops::OpInstance inst = ops::parse_op_spec("dense:M=1,N=1000,K=37,bias=1").value();
  const KnobTemplate* tmpl = find_template("dense");
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
  const int64_t nr = c.get("tile_n")[2], lanes = host_target().vector_lanes(DType::f32());
  EXPECT_EQ(nr % lanes, 0) << c.to_string();
  EXPECT_GE(nr, 2 * lanes) << c.to_string();
  State state = apply_template(*tmpl, inst.dag, c, host_target()).value();
  const auto packed = packed_arguments(state);
  ASSERT_EQ(packed.size(), 1u) << c.to_string();
  EXPECT_EQ(packed[0].second, (PackedLayout{0, nr})) << c.to_string();
  runtime::ThreadPool pool(2);
  expect_matches(inst, state, reference(inst), &pool, "gemv fallback " + c.to_string());
}

// A fused subgraph as graph fusion makes it: conv2d, then a broadcast bias
// and a ReLU, which the template inlines into the block write-back.
TEST(KnobTemplatesBuilt, ConvWithBiasAndReluTailMatchesTheInterpreter) {
  Tensor x = placeholder({1, 6, 11, 13}, DType::f32(), "X"), w = placeholder({10, 6, 3, 3}, DType::f32(), "W");
  Tensor bias = placeholder({1, 10, 1, 1}, DType::f32(), "bias");
  Tensor conv = ops::conv2d_nchw(x, w, 1, 1).value();
  Tensor out = ops::relu(ops::add(conv, bias).value()).value();
  ops::OpInstance inst;
  inst.op = "conv2d";
  inst.dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({x, w, bias, out}).value());
  const KnobTemplate* tmpl = find_template("conv2d");
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  const runtime::NDArray expected = reference(inst);
  runtime::ThreadPool pool(2);
  std::mt19937_64 rng(99);
  for (int i = 0; i < 300; ++i) {
    KnobConfig c =
        i == 0 ? tmpl->fallback(space, *inst.dag, host_target()).value() : space.config(rng() % space.size()).value();
    auto state = apply_template(*tmpl, inst.dag, c, host_target());
    ASSERT_TRUE(state.is_ok()) << state.status().to_string();
    ASSERT_TRUE(lower(*state).is_ok()) << c.to_string();
    if (i % 30 == 0) expect_matches(inst, *state, expected, &pool, "conv+bias+relu " + c.to_string());
    if (HasFatalFailure()) return;
  }
}

double seconds_per_run(const State& state, runtime::ThreadPool* pool, const ComputeDAG& dag) {
  auto lib = build(state, host_target(), "k");
  EXPECT_TRUE(lib.is_ok()) << lib.status().to_string();
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  auto fn = mod->get_kernel("k").value();
  Buffers b(dag);
  runtime::TimingOptions options;
  options.repeat = 3;
  options.min_repeat_ms = 20;
  auto t = runtime::time_kernel(fn, b.pointers.data(), options, pool);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t->median_s;
}

TEST(KnobTemplatesBuilt, MatmulFallbackIsAtLeastThreeTimesFasterThanTheDefault) {
  ops::OpInstance inst = ops::parse_op_spec("matmul:M=512,N=512,K=512").value();
  const KnobTemplate* tmpl = find_template("matmul");
  auto fallback = apply_fallback(*tmpl, inst.dag, host_target());
  ASSERT_TRUE(fallback.is_ok()) << fallback.status().to_string();
  runtime::ThreadPool pool(2);
  const double fast = seconds_per_run(*fallback, &pool, *inst.dag);
  const double slow = seconds_per_run(State(inst.dag), &pool, *inst.dag);
  const double gflops = inst.flops / fast / 1e9;
  RecordProperty("fallback_gflops", std::to_string(gflops));
  std::printf("matmul 512^3: fallback %.3f ms (%.0f GFLOP/s), default %.1f ms, %.0fx\n", fast * 1e3, gflops, slow * 1e3,
              slow / fast);
  EXPECT_GE(slow / fast, 3.0);
}

}  // namespace
}  // namespace tessera
