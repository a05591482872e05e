// The expression builders: types, folding, and the invariants they check.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/te/tensor.h"

namespace tessera {
namespace {

TEST(ExprBuilders, LiteralsAreInt64AndFloat32) {
  Expr i = 3, f = 1.5f;
  EXPECT_EQ(i.dtype(), kIndexType);
  EXPECT_EQ(f.dtype(), DType::f32());
  EXPECT_EQ(make_bool(true).dtype(), DType::boolean());
  int64_t v = 0;
  ASSERT_TRUE(is_const_int(i, &v));
  EXPECT_EQ(v, 3);
}

TEST(ExprBuilders, VectorConstantIsABroadcast) {
  Expr c = make_const(DType::f32(8), 2.0);
  ASSERT_NE(c.as<BroadcastNode>(), nullptr);
  EXPECT_EQ(c.dtype(), DType::f32(8));
  double v = 0;
  EXPECT_TRUE(is_const_float(c, &v));
  EXPECT_EQ(v, 2.0);
}

TEST(ExprBuilders, ComparisonYieldsBoolWithTheOperandLanes) {
  Var i("i");
  Expr ramp = make_ramp(i, 1, 4);
  Expr lt = make_binary(ExprKind::kLT, ramp, make_broadcast(Expr(10), 4));
  EXPECT_EQ(lt.dtype(), DType::boolean(4));
}

TEST(ExprBuilders, VariablesAreTheirNodesNotTheirNames) {
  Var a("i"), b("i");
  EXPECT_FALSE(a.same_as(b));
  EXPECT_EQ(a.name(), b.name());
  Var copy(a.node());
  EXPECT_TRUE(copy.same_as(a));
}

TEST(Operators, ConstantTakesTheOtherOperandsType) {
  Var x("x", DType::i32());
  Expr sum = x + 1;
  EXPECT_EQ(sum.dtype(), DType::i32());
  EXPECT_EQ(to_string(sum), "(x + int32(1))");
}

TEST(Operators, ScalarIsBroadcastToTheVectorOperand) {
  Var i("i");
  Expr v = make_ramp(i, 1, 8) * Expr(Var("s"));
  EXPECT_EQ(v.dtype(), kIndexType.with_lanes(8));
  EXPECT_EQ(to_string(v), "(ramp(i, 1, 8)*x8(s))");
}

TEST(Operators, IntegerConstantsFoldWithFloorSemantics) {
  int64_t v = 0;
  ASSERT_TRUE(is_const_int(Expr(-7) / Expr(2), &v));
  EXPECT_EQ(v, -4);
  ASSERT_TRUE(is_const_int(Expr(-7) % Expr(2), &v));
  EXPECT_EQ(v, 1);
  EXPECT_FALSE(is_const_int(Expr(Var("i")) / Expr(2)));
}

TEST(Operators, SelectOnAConstantConditionIsABranch) {
  Expr t = 1.0f, f = 2.0f;
  EXPECT_TRUE(select(make_bool(true), t, f).same_as(t));
  EXPECT_TRUE(select(make_bool(false), t, f).same_as(f));
}

TEST(Operators, CastOfAConstantIsAConstant) {
  Expr c = cast(DType::f32(), Expr(3));
  ASSERT_NE(c.as<FloatImmNode>(), nullptr);
  EXPECT_EQ(c.as<FloatImmNode>()->value, 3.0);
}

TEST(ReduceHelpers, IdentityOfEachCombiner) {
  double v = 0;
  ASSERT_TRUE(is_const_float(reduce_identity(ReduceOp::kSum, DType::f32()), &v));
  EXPECT_EQ(v, 0.0);
  ASSERT_TRUE(is_const_float(reduce_identity(ReduceOp::kProd, DType::f32()), &v));
  EXPECT_EQ(v, 1.0);
  ASSERT_TRUE(is_const_float(reduce_identity(ReduceOp::kMax, DType::f32()), &v));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  int64_t i = 0;
  ASSERT_TRUE(is_const_int(reduce_identity(ReduceOp::kMin, DType::i8()), &i));
  EXPECT_EQ(i, 127);
}

TEST(ExprKinds, EveryKindHasAName) {
  EXPECT_STREQ(expr_kind_name(ExprKind::kTensorRead), "TensorRead");
  EXPECT_STREQ(expr_kind_name(ExprKind::kAdd), "Add");
  EXPECT_STREQ(call_op_name(CallOp::kSigmoid), "sigmoid");
  EXPECT_STREQ(reduce_op_name(ReduceOp::kMax), "max");
}

// Broken invariants abort in every build type, with file:line and a message.
class ExprChecks : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(ExprChecks, BinaryOperandsOfDifferentTypesAbort) {
  Var f("f", DType::f32()), i("i");
  EXPECT_DEATH(make_binary(ExprKind::kAdd, f, i),
               "expr.cc:[0-9]+: check failed: .*Add operands must have one type, "
               "not float32 and int64");
}

TEST_F(ExprChecks, SelectOnANonBoolConditionAborts) {
  EXPECT_DEATH(make_select(Expr(1), Expr(2), Expr(3)), "check failed: .*Select condition of type int64");
}

TEST_F(ExprChecks, RampOfOneLaneAborts) {
  EXPECT_DEATH(make_ramp(Expr(0), Expr(1), 1), "check failed: .*Ramp of base int64, stride int64, 1 lanes");
}

TEST_F(ExprChecks, TensorReadWithTheWrongNumberOfIndicesAborts) {
  Tensor a = placeholder({4, 4}, DType::f32(), "A");
  EXPECT_DEATH(make_tensor_read(a, {Expr(0)}), "read of A with 1 indices, it has 2 dimensions");
}

TEST_F(ExprChecks, ReduceOverASpatialAxisAborts) {
  IterVar spatial = make_iter_var("i", 4, IterKind::kSpatial);
  EXPECT_DEATH(make_reduce(ReduceOp::kSum, Expr(1.0f), {spatial}), "sum over spatial axis i");
}

TEST_F(ExprChecks, MismatchedOperatorOperandsAbort) {
  Var f("f", DType::f32()), i("i");
  EXPECT_DEATH(f + i, "op.cc:[0-9]+: check failed: false: operands of different types: float32 and int64");
}

}  // namespace
}  // namespace tessera
