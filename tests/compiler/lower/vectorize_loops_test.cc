#include "compiler/lower/vectorize_loops.h"

#include <gtest/gtest.h>

#include "tests/compiler/ir_matchers.h"

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera {
namespace {

class VectorizeLoops : public ::testing::Test {
 protected:
  Buffer a = make_buffer("A", DType::f32(), {8});
  Buffer c = make_buffer("C", DType::f32(), {8});
  Var i{"i"};
};

TEST_F(VectorizeLoops, LoopBecomesOneIterationOverRamps) {
  Stmt before = make_for(i, 0, 4, LoopKind::kVectorized, make_store(c, make_load(a, i) * 2.0f, i));
  EXPECT_IR_EQ(vectorize_loops(before), "C[ramp(0, 1, 4)] = (A[ramp(0, 1, 4)]*x4(2.0f))\n");
}

TEST_F(VectorizeLoops, StoreToOneAddressStaysASerialLoop) {
  Stmt before = make_for(i, 0, 4, LoopKind::kVectorized, make_store(c, make_load(a, i), 0));
  EXPECT_IR_EQ(vectorize_loops(before), "for i in [0, 4) {\n  C[0] = A[i]\n}\n");
}

TEST_F(VectorizeLoops, SerialLoopsAreLeftAlone) {
  Stmt before = make_for(i, 0, 4, LoopKind::kSerial, make_store(c, make_load(a, i), i));
  EXPECT_TRUE(vectorize_loops(before).same_as(before));
}

}  // namespace
}  // namespace tessera
