// The generic schedule (compiler/space/generic_schedule.h): for operators with
// and without templates, small and large enough to run in parallel, it
// replays, lowers, and built natively matches the reference interpreter.
#include "compiler/space/choose/generic_schedule.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/ops/ops.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

struct Case {
  std::string name;
  std::string spec;  // an operator spec, or "" for a DAG built below
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

// The pooling and transposes a conv-heavy model runs in NHWC.
std::shared_ptr<const ComputeDAG> max_pool_nhwc_dag() {
  Tensor x = placeholder({1, 20, 20, 64}, DType::f32(), "X");
  Tensor y = ops::max_pool2d_nhwc(x, ops::Size2(3, 3), ops::Size2(2, 2), ops::Padding2(1)).value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, y}).value());
}

std::shared_ptr<const ComputeDAG> transpose_dag() {
  Tensor x = placeholder({1, 24, 30, 40}, DType::f32(), "X");
  Tensor y = compute(
      {1, 30, 40, 24},
      [&](const Vars& i) {
        return read(x, {i[0], i[3], i[1], i[2]});
      },
      "nhwc");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, y}).value());
}

// A layout change back from NHWC (the rows of the input are pixels, 64
// channels each): the transpose the generic schedule tiles by cache lines;
// and a scaled one over 199 time steps (no vector divides them), as a 1-D
// conv's output is read back.
std::shared_ptr<const ComputeDAG> nchw_transpose_dag() {
  Tensor x = placeholder({1, 20, 40, 64}, DType::f32(), "X");
  Tensor y = compute(
      {1, 64, 20, 40},
      [&](const Vars& i) {
        return read(x, {i[0], i[2], i[3], i[1]});
      },
      "nchw", OpPattern::kInjective);
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, y}).value());
}

std::shared_ptr<const ComputeDAG> time_major_dag() {
  Tensor x = placeholder({1, 199, 64}, DType::f32(), "X");
  Tensor y = compute(
      {1, 64, 199},
      [&](const Vars& i) {
        return read(x, {i[0], i[2], i[1]}) * make_const(DType::f32(), 2.0);
      },
      "ncw", OpPattern::kInjective);
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, y}).value());
}

// hardswish(x * gate) with a broadcast gate: an elementwise chain whose
// producers are inlined into the output.
std::shared_ptr<const ComputeDAG> gated_hardswish_dag() {
  Tensor x = placeholder({1, 88, 3, 96}, DType::f32(), "X");
  Tensor gate = placeholder({1, 88, 1, 1}, DType::f32(), "gate");
  Tensor gated = ops::mul(x, gate, "gated").value();
  Tensor y = ops::hardswish(gated, "act").value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, gate, y}).value());
}

// The range of a whole tensor, as dynamic quantization takes it: a
// reduction to one value, then min(., 0). 1000 columns: no vector divides
// them.
std::shared_ptr<const ComputeDAG> tensor_minimum_dag() {
  Tensor x = placeholder({1, 96, 1000}, DType::f32(), "X");
  Tensor lo = ops::reduce_min(x, {0, 1, 2}, false, "min").value();
  Tensor zero = compute(
      {}, [](const Vars&) { return make_const(DType::f32(), 0.0); }, "zero");
  Tensor y = ops::minimum(lo, zero, "min0").value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, y}).value());
}

std::vector<Case> cases() {
  return {
      {"softmax", "softmax:M=5,N=70"},
      {"softmax_large", "softmax:M=64,N=1000"},
      {"layer_norm", "layer_norm:M=6,N=50"},
      {"layer_norm_large", "layer_norm:M=128,N=768"},
      {"reduce_sum", "reduce_sum:M=3,N=300"},
      {"reduce_max_large", "reduce_max:M=512,N=300"},
      {"relu_large", "relu:M=300,N=517"},
      {"hardswish", "hardswish:M=7,N=45"},
      {"add_broadcast", "add:M=256,N=384,broadcast=1"},
      {"depthwise_strided", "depthwise_conv2d:N=1,C=32,H=12,W=96,R=5,S=5,stride=2,pad=2"},
      {"grouped_conv", "conv2d:N=1,C=16,H=14,W=14,K=16,R=3,S=3,pad=1,groups=4"},
      {"conv2d_nhwc", "conv2d_nhwc:N=1,C=8,H=9,W=9,K=48,R=3,S=3,pad=1"},
      {"matmul", "matmul:M=30,N=70,K=18"},
      {"global_avg_pool", "global_avg_pool2d:N=1,C=8,H=12,W=12"},
      {"max_pool_nhwc", ""},
      {"transpose", ""},
      {"nchw_transpose", ""},
      {"time_major", ""},
      {"gated_hardswish", ""},
      {"tensor_minimum", ""},
      {"tensor_sum", "reduce_sum:M=1,N=4099"},
  };
}

std::shared_ptr<const ComputeDAG> dag_of(const Case& c) {
  if (c.name == "max_pool_nhwc") return max_pool_nhwc_dag();
  if (c.name == "transpose") return transpose_dag();
  if (c.name == "nchw_transpose") return nchw_transpose_dag();
  if (c.name == "time_major") return time_major_dag();
  if (c.name == "gated_hardswish") return gated_hardswish_dag();
  if (c.name == "tensor_minimum") return tensor_minimum_dag();
  return ops::parse_op_spec(c.spec).value().dag;
}

class GenericSchedule : public ::testing::TestWithParam<Case> {};

TEST_P(GenericSchedule, ReplaysLowersAndMatchesTheReference) {
  auto dag = dag_of(GetParam());
  auto state = generic_schedule(dag, host_target());
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  auto replayed = replay(dag, state->steps());
  ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
  EXPECT_EQ(steps_to_json(replayed->steps()), steps_to_json(state->steps()));
  ASSERT_TRUE(lower(*state).is_ok());

  const auto inputs = test::random_inputs(*dag, 3);
  auto want = test::run(State(dag), inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  runtime::ThreadPool pool(2);
  auto got = test::run_native(*state, inputs, pool);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(test::all_close(*got, *want, 1e-4, 1e-4)) << state->to_string();
}

INSTANTIATE_TEST_SUITE_P(Ops, GenericSchedule, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

bool has_annotation(const State& s, IterAnnotation a) {
  for (const Stage& st : s.stages())
    for (const Iter& it : st.iters)
      if (it.annotation == a) return true;
  return false;
}

TEST(GenericScheduleShape, LargeWorkRunsInParallelAndVectorizes) {
  auto dag = ops::parse_op_spec("relu:M=300,N=512").value().dag;
  State s = generic_schedule(dag, host_target()).value();
  EXPECT_TRUE(has_annotation(s, IterAnnotation::kParallel)) << s.to_string();
  EXPECT_TRUE(has_annotation(s, IterAnnotation::kVectorize)) << s.to_string();
}

TEST(GenericScheduleShape, SmallWorkStaysOnOneThread) {
  auto dag = ops::parse_op_spec("relu:M=7,N=45").value().dag;
  State s = generic_schedule(dag, host_target()).value();
  EXPECT_FALSE(has_annotation(s, IterAnnotation::kParallel)) << s.to_string();
}

TEST(GenericScheduleShape, ElementwiseProducersAreInlined) {
  State s = generic_schedule(gated_hardswish_dag(), host_target()).value();
  const Stage& gated = s.stage(s.stage_index("gated"));
  EXPECT_EQ(gated.location, ComputeLocation::kInline);
}

TEST(GenericScheduleShape, ReductionAccumulatesWholeVectors) {
  // NHWC max pooling: the channels are the vector, inside the window loops.
  State s = generic_schedule(max_pool_nhwc_dag(), host_target()).value();
  const Stage& pool = s.stage(static_cast<int>(s.stages().size()) - 1);
  ASSERT_FALSE(pool.iters.empty());
  EXPECT_EQ(pool.iters.back().annotation, IterAnnotation::kVectorize) << s.to_string();
  EXPECT_EQ(pool.iters.back().kind, IterKind::kSpatial) << s.to_string();
}

TEST(GenericScheduleShape, AReductionToOneValueAccumulatesAVectorOfPartialResults) {
  State s = generic_schedule(tensor_minimum_dag(), host_target()).value();
  const int rf = s.stage_index("min.rf");
  ASSERT_GE(rf, 0) << s.to_string();
  const Stage& partials = s.stage(rf);
  EXPECT_EQ(partials.iters.back().annotation, IterAnnotation::kVectorize) << s.to_string();
  EXPECT_EQ(partials.iters.back().kind, IterKind::kSpatial) << s.to_string();
}

TEST(GenericScheduleShape, AnAxisWithoutAVectorDivisorGetsWholeVectorsAndAMaskedRemainder) {
  // 517 = 11 x 47: no whole registers and no power of two divide it.
  auto dag = ops::parse_op_spec("relu:M=300,N=517").value().dag;
  State s = generic_schedule(dag, host_target()).value();
  EXPECT_TRUE(has_annotation(s, IterAnnotation::kVectorize)) << s.to_string();
  EXPECT_TRUE(has_annotation(s, IterAnnotation::kParallel)) << s.to_string();
  // The parallel loop is the rows alone: the columns keep their own loop.
  const Stage& relu = s.stage(static_cast<int>(s.stages().size()) - 1);
  EXPECT_EQ(relu.iters.front().annotation, IterAnnotation::kParallel) << s.to_string();
  EXPECT_EQ(relu.iters.front().extent, 300) << s.to_string();
}

TEST(GenericScheduleShape, ATransposeIsTiledByCacheLinesOfTheInputsRows) {
  // The vector runs along the output's width (40 pixels, strided reads of
  // the input); a 16-channel line of each pixel goes right outside it.
  const Target target = host_target();
  State s = generic_schedule(nchw_transpose_dag(), target).value();
  const Stage& y = s.stage(static_cast<int>(s.stages().size()) - 1);
  ASSERT_GE(y.iters.size(), 2u);
  const Iter& tile = y.iters[y.iters.size() - 2];
  EXPECT_EQ(y.iters.back().annotation, IterAnnotation::kVectorize) << s.to_string();
  EXPECT_EQ(tile.extent, 16) << s.to_string();
  EXPECT_EQ(tile.var.as<VarNode>()->name, "j.1") << s.to_string();
  // A kernel that reads no input across rows keeps the plain order.
  State plain = generic_schedule(ops::parse_op_spec("relu:M=300,N=512").value().dag, target).value();
  for (const Iter& it : plain.stage(static_cast<int>(plain.stages().size()) - 1).iters)
    EXPECT_NE(it.extent, 16) << plain.to_string();
}

TEST(GenericScheduleShape, NoDagIsAnError) {
  auto s = generic_schedule(nullptr, host_target());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
