#include "compiler/lower/partition_loops.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "tests/compiler/ir_matchers.h"

namespace tessera {
namespace {

class PartitionLoops : public ::testing::Test {
 protected:
  Buffer c = make_buffer("C", DType::f32(), {64});
  Var i{"i"}, j{"j"}, o{"o"};
  Stmt store(const Expr& index) { return make_store(c, make_float(1.0f), index); }
  // 61 points in tiles of 8 (7 full tiles and a remainder of 5), the outer
  // loop of kind `kind`.
  Stmt tiles_of_61(LoopKind kind) {
    return make_for(i, 0, 8, kind, make_for(j, 0, 8, LoopKind::kSerial, make_if(i * 8 + j < 61, store(i * 8 + j))));
  }
};

TEST_F(PartitionLoops, NonDividingTileRunsAGuardFreeMiddleAndAGuardedTail) {
  // The remainder's own loop is partitioned once more (its guard-free part
  // is all it has).
  EXPECT_IR_EQ(partition_loops(tiles_of_61(LoopKind::kSerial)),
               "for i in [0, 7) {\n"
               "  for j in [0, 8) {\n"
               "    C[((i*8) + j)] = 1.0f\n"
               "  }\n"
               "}\n"
               "for j in [0, 5) {\n"
               "  C[(j + 56)] = 1.0f\n"
               "}\n");
}

TEST_F(PartitionLoops, SplitPointIsAnExpressionOfEnclosingLoops) {
  // The tile's position depends on `o`, bound outside (a fused parallel
  // loop, say): the middle ends where o*64 + i*8 + 7 reaches 997, computed
  // at run time.
  Stmt inner = make_for(j, 0, 8, LoopKind::kSerial, make_if(o * 64 + i * 8 + j < 997, store(j)));
  Stmt before = make_for(i, 0, 8, LoopKind::kSerial, inner);
  Stmt after = partition_loops(before);
  const std::string text = to_string(after);
  EXPECT_NE(text.find("for i in [0, "), std::string::npos) << text;
  EXPECT_NE(text.find("for i.tail in ["), std::string::npos) << text;
  // The middle holds no guard: the first `if` comes after the tail begins.
  EXPECT_GT(text.find("if ("), text.find("i.tail")) << text;
}

TEST_F(PartitionLoops, RemaindersArePartitionedOnceNotAgain) {
  // Three nested tiled loops: the tail of i is partitioned at j (loops of
  // one iteration fold away), the tail of that at k is left guarded, so the
  // copies stay few.
  Var k{"k"};
  Stmt body = make_if(i * 4 + j * 2 + k < 7, store(i * 4 + j * 2 + k));
  Stmt before = make_for(i, 0, 2, LoopKind::kSerial,
                         make_for(j, 0, 2, LoopKind::kSerial, make_for(k, 0, 2, LoopKind::kSerial, body)));
  const std::string text = to_string(partition_loops(before));
  EXPECT_EQ(text.find("k.tail"), std::string::npos) << text;
  EXPECT_NE(text.find("(k + 6) < 7"), std::string::npos) << text;
  EXPECT_NE(text.find("if ("), std::string::npos) << text;
}

TEST_F(PartitionLoops, AParallelLoopStaysOneLoopWhoseTasksTestForTheRemainder) {
  // Split into a middle and a tail loop, it would be two launches and the
  // tail's would run alone on one thread. The remainder's own loop is
  // partitioned once more, at a point the task computes.
  EXPECT_IR_EQ(partition_loops(tiles_of_61(LoopKind::kParallel)),
               "parallel i in [0, 8) {\n"
               "  if (i < 7) {\n"
               "    for j in [0, 8) {\n"
               "      C[((i*8) + j)] = 1.0f\n"
               "    }\n"
               "  } else {\n"
               "    for j in [0, min(((0 - (i*8)) + 61), 8)) {\n"
               "      C[((i*8) + j)] = 1.0f\n"
               "    }\n"
               "    for j.tail in [min(((0 - (i*8)) + 61), 8), +((0 - min(((0 - (i*8)) + 61), 8)) + 8)) {\n"
               "      if (((i*8) + j.tail) < 61) {\n"
               "        C[((i*8) + j.tail)] = 1.0f\n"
               "      }\n"
               "    }\n"
               "  }\n"
               "}\n");
}

TEST_F(PartitionLoops, LowerBoundGuardsMakeAHead) {
  Stmt before = make_for(i, 0, 8, LoopKind::kSerial, make_if(i - 2 >= 0, store(i)));
  EXPECT_IR_EQ(partition_loops(before), "for i in [2, +6) {\n  C[i] = 1.0f\n}\n");
}

TEST_F(PartitionLoops, GuardsNonLinearInTheLoopAreLeftAlone) {
  Stmt before = make_for(i, 0, 8, LoopKind::kSerial, make_if(i % 3 < 1, store(i)));
  EXPECT_TRUE(structural_equal(partition_loops(before), before)) << to_string(partition_loops(before));
}

TEST_F(PartitionLoops, LoopsInsideVectorizedLoopsAreLeftToMasks) {
  // Partitioning j would give it bounds that vary across i's lanes.
  Stmt before =
      make_for(i, 0, 8, LoopKind::kVectorized, make_for(j, 0, 8, LoopKind::kSerial, make_if(i + j < 9, store(i + j))));
  EXPECT_TRUE(structural_equal(partition_loops(before), before)) << to_string(partition_loops(before));
}

TEST_F(PartitionLoops, AGuardThroughAnInnerLoopOfUnknownExtentIsPartitionedThere) {
  // j's extent depends on o, so i cannot be split for every j; j can.
  Stmt before =
      make_for(i, 0, 8, LoopKind::kSerial, make_for(j, 0, o, LoopKind::kSerial, make_if(i * 8 + j < 61, store(i + j))));
  EXPECT_IR_EQ(partition_loops(before),
               "for i in [0, 8) {\n"
               "  for j in [0, min(((0 - (i*8)) + 61), o)) {\n"
               "    C[(i + j)] = 1.0f\n"
               "  }\n"
               "  for j.tail in [min(((0 - (i*8)) + 61), o), +(o - min(((0 - (i*8)) + 61), o))) {\n"
               "    if (((i*8) + j.tail) < 61) {\n"
               "      C[(i + j.tail)] = 1.0f\n"
               "    }\n"
               "  }\n"
               "}\n");
}

}  // namespace
}  // namespace tessera
