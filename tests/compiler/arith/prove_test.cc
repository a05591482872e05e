#include "compiler/arith/prove.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"

namespace tessera::arith {
namespace {

TEST(DecideSign, EachComparisonAgainstZero) {
  EXPECT_EQ(decide_sign(ExprKind::kLT, {-5, -1}), true);
  EXPECT_EQ(decide_sign(ExprKind::kLT, {0, 3}), false);
  EXPECT_EQ(decide_sign(ExprKind::kLT, {-1, 0}), std::nullopt);
  EXPECT_EQ(decide_sign(ExprKind::kLE, {-1, 0}), true);
  EXPECT_EQ(decide_sign(ExprKind::kGT, {1, 9}), true);
  EXPECT_EQ(decide_sign(ExprKind::kGE, {-9, -1}), false);
  EXPECT_EQ(decide_sign(ExprKind::kEQ, Interval::point(0)), true);
  EXPECT_EQ(decide_sign(ExprKind::kEQ, {1, 2}), false);
  EXPECT_EQ(decide_sign(ExprKind::kNE, {-2, 2}), std::nullopt);
  EXPECT_EQ(decide_sign(ExprKind::kAdd, {1, 2}), std::nullopt);
}

TEST(Prove, LoopBoundsDecideAGuard) {
  Var i("i"), j("j");
  BoundMap bounds{{i.node(), {0, 7}}, {j.node(), {0, 3}}};
  EXPECT_TRUE(can_prove_lt(i * 4 + j, Expr(32), bounds));
  EXPECT_FALSE(can_prove_lt(i * 4 + j, Expr(31), bounds));
  EXPECT_EQ(prove(ExprKind::kLT, i * 4 + j, Expr(31), bounds), std::nullopt);
  EXPECT_EQ(prove(ExprKind::kGE, i, Expr(8), bounds), false);
}

TEST(Prove, CommonTermsCancelWhateverTheirRange) {
  Var n("n"), i("i");
  BoundMap bounds{{i.node(), {0, 3}}};
  EXPECT_TRUE(can_prove_lt(n + i, n + 4, bounds));
  EXPECT_TRUE(can_prove_le(n * 2, n * 2, bounds));
  EXPECT_TRUE(can_prove_eq(n + i - i, n, bounds));
  EXPECT_FALSE(can_prove_lt(n, n + i, bounds));  // i may be 0
}

TEST(Prove, DifferenceBoundsOfUnrelatedVariablesAreUnknown) {
  Var n("n"), m("m");
  Interval d = difference_bounds(n, m, {});
  EXPECT_FALSE(d.bounded());
  EXPECT_FALSE(can_prove_le(n, m, {}));
}

}  // namespace
}  // namespace tessera::arith
