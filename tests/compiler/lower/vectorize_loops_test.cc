#include "compiler/lower/vectorize_loops.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "tests/compiler/ir_matchers.h"

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

TEST_F(VectorizeLoops, ALongVectorOfAnotherLengthRunsAsPowerOfTwoPieces) {
  // 48 lanes: 32 + 16 (LLVM builds a broadcast into 48 lanes element by
  // element); 56: 32 + 16 + 8; 8 and 64 stay whole, as does a short 6.
  Buffer a64 = make_buffer("A", DType::f32(), {64}), c64 = make_buffer("C", DType::f32(), {64});
  Buffer s = make_buffer("S", DType::f32(), {1});
  auto loop = [&](int64_t n) {
    return make_for(i, 0, n, LoopKind::kVectorized, make_store(c64, make_load(a64, i) * make_load(s, 0), i));
  };
  EXPECT_IR_EQ(vectorize_loops(loop(48)),
               "C[ramp(0, 1, 32)] = (A[ramp(0, 1, 32)]*x32(S[0]))\n"
               "C[ramp(32, 1, 16)] = (A[ramp(32, 1, 16)]*x16(S[0]))\n");
  EXPECT_IR_EQ(vectorize_loops(loop(56)),
               "C[ramp(0, 1, 32)] = (A[ramp(0, 1, 32)]*x32(S[0]))\n"
               "C[ramp(32, 1, 16)] = (A[ramp(32, 1, 16)]*x16(S[0]))\n"
               "C[ramp(48, 1, 8)] = (A[ramp(48, 1, 8)]*x8(S[0]))\n");
  EXPECT_IR_EQ(vectorize_loops(loop(9)),
               "C[ramp(0, 1, 8)] = (A[ramp(0, 1, 8)]*x8(S[0]))\n"
               "C[8] = (A[8]*S[0])\n");
  EXPECT_IR_EQ(vectorize_loops(loop(64)), "C[ramp(0, 1, 64)] = (A[ramp(0, 1, 64)]*x64(S[0]))\n");
  EXPECT_IR_EQ(vectorize_loops(loop(6)), "C[ramp(0, 1, 6)] = (A[ramp(0, 1, 6)]*x6(S[0]))\n");
}

TEST_F(VectorizeLoops, StoreToOneAddressStaysASerialLoop) {
  Stmt before = make_for(i, 0, 4, LoopKind::kVectorized, make_store(c, make_load(a, i), 0));
  EXPECT_IR_EQ(vectorize_loops(before), "for i in [0, 4) {\n  C[0] = A[i]\n}\n");
}

TEST_F(VectorizeLoops, SerialLoopsAreLeftAlone) {
  Stmt before = make_for(i, 0, 4, LoopKind::kSerial, make_store(c, make_load(a, i), i));
  EXPECT_TRUE(vectorize_loops(before).same_as(before));
}

TEST_F(VectorizeLoops, GuardVaryingAcrossLanesMasksTheAccessesItEncloses) {
  // A remainder of 5 in an 8-lane loop: one masked vector, not a scalar loop.
  Buffer a8 = make_buffer("A", DType::f32(), {5}), c8 = make_buffer("C", DType::f32(), {5});
  Var j{"j"};
  Stmt before = make_for(j, 0, 8, LoopKind::kVectorized, make_if(j < 5, make_store(c8, make_load(a8, j) * 2.0f, j)));
  EXPECT_IR_EQ(vectorize_loops(before),
               "C[ramp(0, 1, 8) if (ramp(0, 1, 8) < x8(5))] = "
               "(A[ramp(0, 1, 8) if (ramp(0, 1, 8) < x8(5))]*x8(2.0f))\n");
}

TEST_F(VectorizeLoops, ScalarLoadUnderAMaskIsReadWhenAnyLaneIsLive) {
  // A[o] is valid exactly when the guard holds for some lane.
  Buffer a4 = make_buffer("A", DType::f32(), {2}), c13 = make_buffer("C", DType::f32(), {13});
  Var o{"o"}, j{"j"};
  Stmt before = make_for(
      o, 0, 2, LoopKind::kSerial,
      make_for(j, 0, 8, LoopKind::kVectorized, make_if(o * 8 + j < 13, make_store(c13, make_load(a4, o), o * 8 + j))));
  EXPECT_IR_EQ(vectorize_loops(before),
               "for o in [0, 2) {\n"
               "  C[ramp((o*8), 1, 8) if (ramp((o*8), 1, 8) < x8(13))] = "
               "x8(A[o if (((o*8) < 13) || (((o*8) + 7) < 13))])\n"
               "}\n");
}

TEST_F(VectorizeLoops, LaneVaryingGuardWithAnElseStaysASerialLoop) {
  Stmt before = make_for(i, 0, 4, LoopKind::kVectorized,
                         make_if(i < 3, make_store(c, make_load(a, i), i), make_store(c, make_float(0.0f), i)));
  Stmt after = vectorize_loops(before);
  ASSERT_TRUE(after.as<ForNode>() != nullptr);
  EXPECT_EQ(after.as<ForNode>()->loop_kind, LoopKind::kSerial);
}

}  // namespace
}  // namespace tessera
