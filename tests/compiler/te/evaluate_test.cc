#include "compiler/te/evaluate.h"

#include <gtest/gtest.h>

#include <numeric>

#include "compiler/ir/op.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/elementwise.h"
#include "compiler/ops/linalg.h"
#include "compiler/ops/reduction.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;

// Every output element of the DAG of `args` evaluated directly, and by the
// reference interpreter running its default (unscheduled) lowering.
void expect_matches_interpreter(const std::vector<Tensor>& args, double rtol = 1e-5, double atol = 1e-6) {
  ComputeDAG dag = ComputeDAG::make(args).value();
  auto inputs = test::random_inputs(dag);
  auto interpreted = test::run(State(dag), inputs);
  ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
  std::vector<const void*> data;
  size_t next = 0;
  for (const Tensor& t : dag.args()) data.push_back(is_placeholder(t) ? inputs[next++].data() : nullptr);
  auto evaluator = TensorEvaluator::make(dag, data);
  ASSERT_TRUE(evaluator.is_ok()) << evaluator.status().to_string();
  std::vector<int64_t> points(interpreted->size());
  std::iota(points.begin(), points.end(), 0);
  auto values = evaluator->evaluate(static_cast<int>(dag.args().size()) - 1, points);
  ASSERT_TRUE(values.is_ok()) << values.status().to_string();
  EXPECT_TRUE(all_close(*interpreted, *values, rtol, atol));
}

Tensor f32(std::vector<int64_t> shape, const char* name) {
  return placeholder(std::move(shape), DType::f32(), name);
}

TEST(TensorEvaluator, MatmulMatchesTheInterpreter) {
  Tensor a = f32({13, 37}, "A"), b = f32({37, 11}, "B");
  expect_matches_interpreter({a, b, ops::matmul(a, b).value()});
}

TEST(TensorEvaluator, PaddedStridedConv2dMatchesTheInterpreter) {
  Tensor x = f32({1, 5, 9, 9}, "X"), w = f32({6, 5, 3, 3}, "W");
  expect_matches_interpreter({x, w, ops::conv2d_nchw(x, w, 2, 1).value()});
}

TEST(TensorEvaluator, DepthwiseConvMatchesTheInterpreter) {
  Tensor x = f32({1, 8, 10, 10}, "X"), w = f32({8, 1, 3, 3}, "W");
  expect_matches_interpreter({x, w, ops::depthwise_conv2d_nchw(x, w, 1, 1).value()});
}

TEST(TensorEvaluator, FusedBiasReluEpilogueMatchesTheInterpreter) {
  Tensor x = f32({7, 40}, "X"), w = f32({19, 40}, "W"), bias = f32({19}, "bias");
  Tensor dense = ops::dense(x, w, bias, /*relu=*/true).value();
  expect_matches_interpreter({x, w, bias, ops::hardswish(dense).value()});
}

TEST(TensorEvaluator, SoftmaxChainOfReductionsMatchesTheInterpreter) {
  Tensor x = f32({6, 33}, "X");
  expect_matches_interpreter({x, ops::softmax(x).value()});
}

TEST(TensorEvaluator, ReduceMaxOverTwoAxesMatchesTheInterpreter) {
  Tensor x = f32({4, 5, 6}, "X");
  expect_matches_interpreter({x, ops::reduce_max(x, {0, 2}).value()});
}

TEST(TensorEvaluator, IntegerArithmeticWrapsAndFloorDivides) {
  Tensor x = placeholder({4}, DType::i8(), "X");
  Tensor y = compute(
      {4}, [&](const Vars& i) { return make_cast(DType::i8(), read(x, {i[0]}) * Expr(make_const(DType::i8(), 3))); },
      "Y");
  Tensor z = compute(
      {4}, [&](const Vars& i) { return make_binary(ExprKind::kDiv, read(y, {i[0]}), make_const(DType::i8(), 4)); },
      "Z");
  ComputeDAG dag = ComputeDAG::make({x, z}).value();
  const int8_t in[4] = {100, -7, 5, -128};
  auto ev = TensorEvaluator::make(dag, {in, nullptr}).value();
  auto out = ev.evaluate(1, {0, 1, 2, 3});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // 300 wraps to 44, -21 floor-divides to -6, 15 to 3, -384 wraps to -128 -> -32.
  EXPECT_EQ(*out, (std::vector<double>{11, -6, 3, -32}));
}

TEST(TensorEvaluator, ReadOutOfBoundsIsARuntimeErrorNamingTheTensor) {
  Tensor x = f32({4}, "X");
  Tensor y = compute(
      {4}, [&](const Vars& i) { return read(x, {i[0] + 1}); }, "Y");
  ComputeDAG dag = ComputeDAG::make({x, y}).value();
  const float in[4] = {1, 2, 3, 4};
  auto ev = TensorEvaluator::make(dag, {in, nullptr}).value();
  EXPECT_EQ(ev.evaluate(1, {2}).value(), std::vector<double>{4});
  auto out = ev.evaluate(1, {3});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kRuntimeError);
  EXPECT_NE(out.status().message().find("X"), std::string::npos) << out.status().message();
}

TEST(TensorEvaluator, Float16IsNotModelled) {
  Tensor x = placeholder({4}, DType::f16(), "X");
  Tensor y = compute(
      {4}, [&](const Vars& i) { return read(x, {i[0]}); }, "Y");
  ComputeDAG dag = ComputeDAG::make({x, y}).value();
  auto ev = TensorEvaluator::make(dag, {nullptr, nullptr});
  ASSERT_FALSE(ev.is_ok());
  EXPECT_EQ(ev.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
