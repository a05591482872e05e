// Tensor expressions: placeholders, computes, reduce axes.
#include "compiler/te/tensor.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera {
namespace {

TEST(Placeholder, HasItsShapeTypeAndNoCompute) {
  Tensor a = placeholder({3, 5}, DType::i8(), "A");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(a->dtype, DType::i8());
  EXPECT_EQ(a->ndim(), 2);
  EXPECT_TRUE(is_placeholder(a));
  EXPECT_EQ(compute_op(a), nullptr);
  EXPECT_EQ(op_of(a)->name, "A");
  EXPECT_TRUE(input_tensors(a).empty());
}

TEST(Compute, AxesAreNamedInOrderAndSpanTheShape) {
  Tensor a = placeholder({4, 6}, DType::f32(), "A");
  Tensor b = compute(
      {6, 4},
      [&](const Vars& i) {
        return read(a, {i[1], i[0]});
      },
      "B");
  const ComputeOpNode* op = compute_op(b);
  ASSERT_NE(op, nullptr);
  ASSERT_EQ(op->axes.size(), 2u);
  EXPECT_EQ(op->axes[0]->var.name(), "i");
  EXPECT_EQ(op->axes[1]->var.name(), "j");
  EXPECT_EQ(op->axes[0]->extent, 6);
  EXPECT_EQ(op->axes[1]->kind, IterKind::kSpatial);
  EXPECT_TRUE(op->reduce_axes.empty());
  EXPECT_EQ(op->pattern, OpPattern::kInjective);
  EXPECT_EQ(b->dtype, DType::f32());
  EXPECT_EQ(to_string(op->body), "A[j, i]");
}

TEST(Compute, BodyTypeIsTheTensorType) {
  Tensor a = placeholder({4}, DType::f32(), "A");
  Tensor b = compute(
      {4}, [&](const Vars& i) { return read(a, {i[0]}) > 0.0f; }, "positive");
  EXPECT_EQ(b->dtype, DType::boolean());
}

TEST(Compute, ExplicitPatternIsKept) {
  Tensor a = placeholder({4}, DType::f32(), "A");
  Tensor b = compute(
      {4}, [&](const Vars& i) { return read(a, {i[0]}) * 2.0f; }, "B", OpPattern::kElementwise);
  EXPECT_EQ(compute_op(b)->pattern, OpPattern::kElementwise);
  EXPECT_STREQ(op_pattern_name(OpPattern::kComplex), "complex");
}

TEST(Reduce, SumOverAReduceAxisIsAReduction) {
  Tensor a = placeholder({4, 8}, DType::f32(), "A");
  IterVar k = reduce_axis(8, "k");
  EXPECT_EQ(k->kind, IterKind::kReduce);
  EXPECT_EQ(k->extent, 8);
  Tensor s = compute(
      {4},
      [&](const Vars& i) {
        return sum(read(a, {i[0], k->var}), {k});
      },
      "S");
  const ComputeOpNode* op = compute_op(s);
  ASSERT_EQ(op->reduce_axes.size(), 1u);
  EXPECT_EQ(op->reduce_axes[0], k);
  EXPECT_EQ(op->pattern, OpPattern::kReduction);
  EXPECT_EQ(to_string(op->body), "sum(A[i, k], axes=[k:8])");
}

TEST(Reduce, MaxAndMinReduceOverTheirAxes) {
  Tensor a = placeholder({8}, DType::f32(), "A");
  IterVar k = reduce_axis(8, "k");
  Expr mx = max_reduce(read(a, {k->var}), {k});
  ASSERT_NE(mx.as<ReduceNode>(), nullptr);
  EXPECT_EQ(mx.as<ReduceNode>()->op, ReduceOp::kMax);
  EXPECT_EQ(min_reduce(read(a, {k->var}), {k}).as<ReduceNode>()->op, ReduceOp::kMin);
}

TEST(InputTensors, InOrderOfFirstReadWithoutRepeats) {
  Tensor a = placeholder({4}, DType::f32(), "A"), b = placeholder({4}, DType::f32(), "B");
  Tensor c = compute(
      {4}, [&](const Vars& i) { return read(b, {i[0]}) * read(a, {i[0]}) + read(b, {i[0]}); }, "C");
  std::vector<Tensor> in = input_tensors(c);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0], b);
  EXPECT_EQ(in[1], a);
}

TEST(TensorChecks, AxisOfExtentZeroAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(reduce_axis(0, "k"), "check failed: .*axis k of extent 0");
}

}  // namespace
}  // namespace tessera
