#include "compiler/lower/unroll_loops.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "tests/compiler/ir_matchers.h"

namespace tessera {
namespace {

class UnrollLoops : public ::testing::Test {
 protected:
  Buffer a = make_buffer("A", DType::f32(), {8});
  Buffer c = make_buffer("C", DType::f32(), {8});
  Var i{"i"}, j{"j"};

  // Two nested serial loops of 2 under an auto-unroll limit.
  Stmt nest_under(int64_t max_step) {
    Stmt inner = make_for(j, 0, 2, LoopKind::kSerial, make_store(c, 1.0f, i * 2 + j));
    return make_attr(AttrKind::kAutoUnrollMaxStep, max_step, make_for(i, 0, 2, LoopKind::kSerial, inner));
  }
};

TEST_F(UnrollLoops, UnrolledLoopBecomesStraightLineCode) {
  Stmt before = make_for(i, 0, 3, LoopKind::kUnrolled, make_store(c, make_load(a, i + 1), i));
  EXPECT_IR_EQ(unroll_loops(before), "C[0] = A[1]\nC[1] = A[2]\nC[2] = A[3]\n");
}

TEST_F(UnrollLoops, AutoUnrollTakesTheWholeNestWhenItFits) {
  EXPECT_IR_EQ(unroll_loops(nest_under(4)), "C[0] = 1.0f\nC[1] = 1.0f\nC[2] = 1.0f\nC[3] = 1.0f\n");
}

TEST_F(UnrollLoops, AutoUnrollTakesOnlyTheInnerLoopWhenTheNestIsTooLong) {
  EXPECT_IR_EQ(unroll_loops(nest_under(3)), "for i in [0, 2) {\n  C[((i*2) + 0)] = 1.0f\n  C[((i*2) + 1)] = 1.0f\n}\n");
}

}  // namespace
}  // namespace tessera
