#include "compiler/lower/build_loop_nests.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

TEST(BuildLoopNests, ReductionIsResetBeforeItsLoopAndGuarded) {
  State s(test::matmul_dag(6, 4, 3));
  ASSERT_TRUE(s.split(s.stage_index("C"), 0, {4}).is_ok());
  PrimFunc f = build_loop_nests(test::full_plan(s), "k");
  EXPECT_EQ(to_string(f),
            "func k(A: float32[6, 3], B: float32[3, 4], C: float32[6, 4]) {\n"
            "  for i.0 in [0, 2) {\n"
            "    for i.1 in [0, 4) {\n"
            "      if (((i.0*4) + i.1) < 6) {\n"
            "        for j in [0, 4) {\n"
            "          C[((0 + ((0 + j)*1)) + ((0 + ((i.0*4) + i.1))*4))] = 0.0f\n"
            "          for k in [0, 3) {\n"
            "            C[((0 + ((0 + j)*1)) + ((0 + ((i.0*4) + i.1))*4))] = (C[((0 + ((0 + j)*1)) + ((0 + ((i.0*4) + "
            "i.1))*4))] + (A_1[(0 + ((i.0*4) + i.1)), k]*B_1[k, (0 + j)]))\n"
            "          }\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
  // Reads stay tensor reads until flatten_storage.
  EXPECT_TRUE(verify(f, VerifyOptions{.stage = IrStage::kLoopNests}).is_ok());
  EXPECT_FALSE(verify(f, VerifyOptions{.stage = IrStage::kFlat}).is_ok());
}

TEST(BuildLoopNests, AttachedStageIsAllocatedAndComputedFirstInsideItsLoop) {
  PrimFunc f = build_loop_nests(test::full_plan(test::chain_at_outer(8, 4)), "k");
  EXPECT_EQ(to_string(f),
            "func k(A: float32[8], C: float32[8]) {\n"
            "  for i.0 in [0, 2) {\n"
            "    alloc B_1: float32[4] local\n"
            "    for i in [0, 4) {\n"
            "      if (((i.0*4) + i) >= 0) {\n"
            "        if (((i.0*4) + i) < 8) {\n"
            "          B_1[(0 + ((((i.0*4) + i) - (i.0*4))*1))] = (A_1[((i.0*4) + i)] + 1.0f)\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "    for i.1 in [0, 4) {\n"
            "      C[(0 + ((0 + ((i.0*4) + i.1))*1))] = (B[(0 + ((i.0*4) + i.1))]*2.0f)\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(BuildLoopNests, RootIntermediateIsAllocatedAroundTheKernel) {
  PrimFunc f = build_loop_nests(test::full_plan(State(test::chain_dag(4))), "k");
  EXPECT_EQ(to_string(f),
            "func k(A: float32[4], C: float32[4]) {\n"
            "  alloc B_1: float32[4] local\n"
            "  for i in [0, 4) {\n"
            "    B_1[(0 + ((0 + i)*1))] = (A_1[(0 + i)] + 1.0f)\n"
            "  }\n"
            "  for i in [0, 4) {\n"
            "    C[(0 + ((0 + i)*1))] = (B[(0 + i)]*2.0f)\n"
            "  }\n"
            "}\n");
}

TEST(BuildLoopNests, LoopsKeepTheirAnnotations) {
  State s(test::chain_dag(8));
  const int C = s.stage_index("C");
  ASSERT_TRUE(s.split(C, 0, {4}).is_ok());
  ASSERT_TRUE(s.parallel(C, 0).is_ok());
  ASSERT_TRUE(s.vectorize(C, 1).is_ok());
  ASSERT_TRUE(s.pragma_auto_unroll(C, 0, 16).is_ok());
  const std::string text = to_string(build_loop_nests(test::full_plan(s), "k"));
  EXPECT_NE(text.find("attr auto_unroll_max_step = 16\n  parallel i.0 in [0, 2) {\n    vectorized i.1 in [0, 4) {"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace tessera
