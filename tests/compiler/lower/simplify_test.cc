// One test per family of the simplifier's rules (the table in
// compiler/lower/simplify.cc), each checking the printed IR.
#include "compiler/lower/simplify.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "tests/compiler/ir_matchers.h"

namespace tessera {
namespace {

// Simplified under `bounds`, printed.
std::string simp(const Expr& e, const BoundMap& bounds = {}) {
  return to_string(simplify(e, bounds));
}

Expr node(ExprKind k, const Expr& a, const Expr& b) {
  return make_binary(k, a, b);
}
Expr f32(double v) {
  return make_float(v, DType::f32());
}

class Simplify : public ::testing::Test {
 protected:
  Var i{"i"}, j{"j"}, n{"n"};
  BoundMap loops{{i.node(), {0, 15}}, {j.node(), {0, 3}}};
};

TEST_F(Simplify, ConstantFoldingUsesFloorDivision) {
  EXPECT_EQ(simp(node(ExprKind::kDiv, make_int(-7), make_int(2))), "-4");
  EXPECT_EQ(simp(node(ExprKind::kMod, make_int(-7), make_int(2))), "1");
  EXPECT_EQ(simp(node(ExprKind::kLT, make_int(3), make_int(4))), "true");
  EXPECT_EQ(simp(node(ExprKind::kMul, f32(0.1), f32(3.0))), to_string(f32(static_cast<float>(0.1 * 3.0))));
  EXPECT_EQ(simp(node(ExprKind::kMax, f32(-1.0), f32(2.5))), to_string(f32(2.5)));
  // Division by zero stays as written.
  EXPECT_EQ(simp(node(ExprKind::kDiv, make_int(1), make_int(0))),
            to_string(node(ExprKind::kDiv, make_int(1), make_int(0))));
}

TEST_F(Simplify, VectorRampsAndBroadcastsStayAffine) {
  Expr r = make_ramp(i * 4, make_int(1), 4);
  EXPECT_EQ(simp(node(ExprKind::kAdd, r, make_broadcast(j + 2, 4))),
            to_string(make_ramp(i * 4 + j + 2, make_int(1), 4)));
  EXPECT_EQ(simp(node(ExprKind::kAdd, make_broadcast(j, 4), r)), "ramp((j + (i*4)), 1, 4)");
  EXPECT_EQ(simp(node(ExprKind::kSub, r, make_ramp(i, make_int(1), 4))), to_string(make_ramp(i * 3, make_int(0), 4)));
  EXPECT_EQ(simp(node(ExprKind::kMul, r, make_broadcast(make_int(2), 4))), to_string(make_ramp(i * 8, make_int(2), 4)));
  EXPECT_EQ(simp(node(ExprKind::kMul, make_broadcast(make_int(3), 4), make_ramp(j, make_int(2), 4))),
            to_string(make_ramp(j * 3, make_int(6), 4)));
  EXPECT_EQ(simp(node(ExprKind::kAdd, make_broadcast(make_int(1), 4), make_broadcast(make_int(2), 4))),
            to_string(make_broadcast(make_int(3), 4)));
}

TEST_F(Simplify, LogicWithAConstantSide) {
  Expr c = i < n;
  EXPECT_EQ(simp(node(ExprKind::kAnd, make_bool(true), c)), to_string(c));
  EXPECT_EQ(simp(node(ExprKind::kAnd, c, make_bool(false))), "false");
  EXPECT_EQ(simp(node(ExprKind::kOr, make_bool(false), c)), to_string(c));
  EXPECT_EQ(simp(node(ExprKind::kOr, c, make_bool(true))), "true");
}

TEST_F(Simplify, LinearIndexArithmeticIsCanonical) {
  // (i*4 + j) * 3 - j*2 + 1 - i*12 -> j + 1
  Expr e = node(ExprKind::kSub, node(ExprKind::kMul, i * 4 + j, make_int(3)), j * 2) + 1 - i * 12;
  EXPECT_EQ(simp(e), to_string(node(ExprKind::kAdd, j, make_int(1))));
  // 5 - n*2 -> 0 - n*2 + 5: positive terms, then negative ones, then the constant.
  EXPECT_EQ(simp(node(ExprKind::kSub, make_int(5), n * 2)),
            to_string(node(ExprKind::kAdd, node(ExprKind::kSub, make_int(0), n * 2), make_int(5))));
}

TEST_F(Simplify, DivisionAndModuloByAConstantSplitOffMultiples) {
  EXPECT_EQ(simp(node(ExprKind::kDiv, n, make_int(1))), to_string(n));
  EXPECT_EQ(simp(node(ExprKind::kMod, n, make_int(1))), "0");
  // (i*4 + j) / 4 -> i and % 4 -> j when j is in [0, 4).
  EXPECT_EQ(simp(node(ExprKind::kDiv, i * 4 + j, make_int(4)), loops), to_string(i));
  EXPECT_EQ(simp(node(ExprKind::kMod, i * 4 + j, make_int(4)), loops), to_string(j));
  // (i*4 + j + 6) / 4 -> i + 1 and % 4 -> j + 2 only when j is in [0, 2).
  EXPECT_EQ(simp(node(ExprKind::kDiv, i * 4 + j + 6, make_int(4)), {{j.node(), {0, 1}}}), to_string(i + 1));
  EXPECT_EQ(simp(node(ExprKind::kMod, i * 4 + j + 6, make_int(4)), {{j.node(), {0, 1}}}), to_string(j + 2));
  // Without bounds the rest stays: (n*8 + i) / 4 -> n*2 + i / 4, % 4 -> i % 4.
  EXPECT_EQ(simp(node(ExprKind::kDiv, n * 8 + i, make_int(4))),
            to_string(node(ExprKind::kAdd, n * 2, node(ExprKind::kDiv, i, make_int(4)))));
  EXPECT_EQ(simp(node(ExprKind::kMod, n * 8 + i, make_int(4))), to_string(node(ExprKind::kMod, i, make_int(4))));
  // A negative constant part floors: (n*4 - 1) / 4 -> n - 1 + (3 / 4 folded) = n - 1.
  EXPECT_EQ(simp(node(ExprKind::kDiv, n * 4 - 1, make_int(4))), to_string(node(ExprKind::kSub, n, make_int(1))));
  // A divisor that is not a positive constant is left alone.
  EXPECT_EQ(simp(node(ExprKind::kDiv, i, n), loops), to_string(node(ExprKind::kDiv, i, n)));
}

TEST_F(Simplify, MinMaxDecidedByBounds) {
  EXPECT_EQ(simp(node(ExprKind::kMin, j, i + 3), loops), to_string(j));
  EXPECT_EQ(simp(node(ExprKind::kMin, i + 3, j), loops), to_string(j));
  EXPECT_EQ(simp(node(ExprKind::kMax, j, i + 3), loops), to_string(i + 3));
  EXPECT_EQ(simp(node(ExprKind::kMax, i, j), loops), to_string(node(ExprKind::kMax, i, j)));
}

TEST_F(Simplify, ComparisonsDecidedByBounds) {
  EXPECT_EQ(simp(node(ExprKind::kLT, i * 4 + j, make_int(64)), loops), "true");
  EXPECT_EQ(simp(node(ExprKind::kGE, i * 4 + j, make_int(64)), loops), "false");
  EXPECT_EQ(simp(node(ExprKind::kEQ, n + j - j, n), loops), "true");
  EXPECT_EQ(simp(node(ExprKind::kNE, n + 1, n)), "true");
  EXPECT_EQ(simp(node(ExprKind::kLT, i * 4 + j, make_int(63)), loops),
            to_string(node(ExprKind::kLT, i * 4 + j, make_int(63))));
}

TEST_F(Simplify, FloatIdentities) {
  Var x("x", DType::f32());
  EXPECT_EQ(simp(node(ExprKind::kMul, x, f32(1.0))), to_string(x));
  EXPECT_EQ(simp(node(ExprKind::kMul, f32(1.0), x)), to_string(x));
  EXPECT_EQ(simp(node(ExprKind::kAdd, x, f32(0.0))), to_string(x));
  EXPECT_EQ(simp(node(ExprKind::kSub, x, f32(0.0))), to_string(x));
  EXPECT_EQ(simp(node(ExprKind::kAdd, f32(0.0), x)), to_string(x));
  EXPECT_EQ(simp(node(ExprKind::kSub, f32(0.0), x)), to_string(node(ExprKind::kSub, f32(0.0), x)));
}

TEST_F(Simplify, NotSelectAndCastOfConstants) {
  EXPECT_EQ(simp(make_not(make_bool(false))), "true");
  EXPECT_EQ(simp(make_select(node(ExprKind::kLT, i, make_int(16)), j, n), loops), to_string(j));
  EXPECT_EQ(simp(make_cast(DType::f32(), make_int(3))), to_string(f32(3.0)));
  EXPECT_EQ(simp(make_cast(DType::i64(), n)), to_string(n));
}

TEST_F(Simplify, LoopsOfExtentZeroAndOneAndDecidedBranches) {
  Buffer a = make_buffer("A", DType::i64(), {16});
  Var k("k");
  EXPECT_IR_EQ(simplify(make_for(k, make_int(0), make_int(0), LoopKind::kSerial, make_store(a, k, k))),
               to_string(make_seq({})));
  EXPECT_IR_EQ(simplify(make_for(k, make_int(2), make_int(1), LoopKind::kSerial, make_store(a, k, k))),
               to_string(make_store(a, make_int(2), make_int(2))));
  // Inside the loop k is in [0, 16): the guard k < 16 is always taken.
  Stmt guarded = make_for(k, make_int(0), make_int(16), LoopKind::kSerial,
                          make_if(node(ExprKind::kLT, k, make_int(16)), make_store(a, k, k)));
  EXPECT_IR_EQ(simplify(guarded),
               to_string(make_for(k, make_int(0), make_int(16), LoopKind::kSerial, make_store(a, k, k))));
  EXPECT_TRUE(can_prove(node(ExprKind::kLT, i, make_int(16)), loops));
  EXPECT_FALSE(can_prove(node(ExprKind::kLT, i, make_int(15)), loops));
}

}  // namespace
}  // namespace tessera
