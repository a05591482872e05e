#include "compiler/lower/flatten_storage.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/lower/build_loop_nests.h"
#include "tests/compiler/ir_matchers.h"
#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

TEST(FlattenStorage, ReadsOfARegionAreOffsetByItsMin) {
  const State s = test::chain_at_outer(8, 4);
  const LoweringPlan plan = test::full_plan(s);
  PrimFunc f = build_loop_nests(plan, "k");
  f.body = flatten_storage(f.body, plan);
  EXPECT_IR_EQ(f,
               "func k(A: float32[8], C: float32[8]) {\n"
               "  for i.0 in [0, 2) {\n"
               "    alloc B: float32[4] local\n"
               "    for i in [0, 4) {\n"
               "      if (((i.0*4) + i) >= 0) {\n"
               "        if (((i.0*4) + i) < 8) {\n"
               "          B[(0 + ((((i.0*4) + i) - (i.0*4))*1))] = (A[(0 + (((i.0*4) + i)*1))] + 1.0f)\n"
               "        }\n"
               "      }\n"
               "    }\n"
               "    for i.1 in [0, 4) {\n"
               "      C[(0 + ((0 + ((i.0*4) + i.1))*1))] = (B[(0 + (((0 + ((i.0*4) + i.1)) - (i.0*4))*1))]*2.0f)\n"
               "    }\n"
               "  }\n"
               "}\n");
  EXPECT_TRUE(verify(f).is_ok()) << verify(f).to_string();
}

TEST(FlattenStorage, MultiDimensionalReadsAreRowMajor) {
  const State s(test::matmul_dag(2, 8, 3));
  const LoweringPlan plan = test::full_plan(s);
  Var i("i"), k("k");
  Expr read = make_tensor_read(plan.stage(0).tensor, {i, k});  // A[i, k] of A[2, 3]
  Stmt before = make_store(plan.params[2], read, 0);
  EXPECT_IR_EQ(flatten_storage(before, plan), "C[0] = A[((0 + (k*1)) + (i*3))]\n");
}

TEST(FlattenStorage, PackedArgumentIsReadInItsPackedOrder) {
  // B[3, 8] packed on axis 1 by 4 is stored as [2, 3, 4]: B[k, j] is at
  // ((j / 4) * 3 + k) * 4 + j % 4.
  State s(test::matmul_dag(2, 8, 3));
  ASSERT_TRUE(s.pack_layout(s.stage_index("B"), 1, 4).is_ok());
  const LoweringPlan plan = test::full_plan(s);
  Var k("k"), j("j");
  EXPECT_IR_EQ(flat_index(plan, s.stage_index("B"), {k, j}), "(((((j/4)*3) + (0 + (k*1)))*4) + (j % 4))");
}

}  // namespace
}  // namespace tessera
