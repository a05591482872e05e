// The statement builders and their invariants.
#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera {
namespace {

TEST(StmtBuilders, SeqFlattensAndDropsUndefined) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Stmt s0 = make_store(a, 0.0f, 0), s1 = make_store(a, 1.0f, 1), s2 = make_store(a, 2.0f, 2);
  Stmt nested = make_seq({s0, make_seq({s1, Stmt(), s2})});
  ASSERT_NE(nested.as<SeqNode>(), nullptr);
  EXPECT_EQ(nested.as<SeqNode>()->stmts.size(), 3u);
}

TEST(StmtBuilders, SeqOfOneIsThatStatement) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Stmt s = make_store(a, 0.0f, 0);
  EXPECT_TRUE(make_seq({s}).same_as(s));
  EXPECT_TRUE(make_seq({}).as<SeqNode>()->stmts.empty());
}

TEST(StmtBuilders, VectorStoreTakesTheIndexLanes) {
  Buffer a = make_buffer("A", DType::f32(), {16});
  Var i("i");
  Stmt s = make_store(a, make_broadcast(Expr(1.0f), 4), make_ramp(i * 4, 1, 4));
  EXPECT_EQ(to_string(s), "A[ramp((i*4), 1, 4)] = x4(1.0f)\n");
}

TEST(StmtBuilders, LoopKindsPrintAsTheirKeywords) {
  EXPECT_STREQ(loop_kind_name(LoopKind::kSerial), "for");
  EXPECT_STREQ(loop_kind_name(LoopKind::kParallel), "parallel");
  EXPECT_STREQ(loop_kind_name(LoopKind::kVectorized), "vectorized");
  EXPECT_STREQ(loop_kind_name(LoopKind::kUnrolled), "unrolled");
  EXPECT_STREQ(attr_kind_name(AttrKind::kAutoUnrollMaxStep), "auto_unroll_max_step");
}

class StmtChecks : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(StmtChecks, StoreOfTheWrongTypeAborts) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  EXPECT_DEATH(make_store(a, Expr(1), 0), "stmt.cc:[0-9]+: check failed: .*Store of int64 to A of float32");
}

TEST_F(StmtChecks, LoopOverNonIndexBoundsAborts) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Var i("i");
  EXPECT_DEATH(make_for(i, make_int(0, DType::i32()), 4, LoopKind::kSerial, make_store(a, 0.0f, i)),
               "For i over \\[int32, \\+int64\\), not index type");
}

TEST_F(StmtChecks, IfOnAVectorConditionAborts) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Expr cond = make_binary(ExprKind::kLT, make_ramp(Expr(0), Expr(1), 4), make_broadcast(Expr(2), 4));
  EXPECT_DEATH(make_if(cond, make_store(a, 0.0f, 0)), "IfThenElse condition of type boolx4");
}

TEST_F(StmtChecks, AllocateOfAGlobalBufferAborts) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  EXPECT_DEATH(make_allocate(a, make_store(a, 0.0f, 0)), "Allocate of global buffer A");
}

}  // namespace
}  // namespace tessera
