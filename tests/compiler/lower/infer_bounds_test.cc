#include "compiler/lower/infer_bounds.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

LoweringPlan bounded(const State& s) {
  return infer_bounds(inline_stages(s).value()).value();
}

TEST(InferBounds, RootStagesComputeTheirWholeTensor) {
  State s(test::matmul_dag(6, 4, 3));
  ASSERT_TRUE(s.split(s.stage_index("C"), 0, {4}).is_ok());
  EXPECT_EQ(bounded(s).to_string(),
            "stage A: placeholder, region [0 +6, 0 +3]\n"
            "stage B: placeholder, region [0 +3, 0 +4]\n"
            "stage C: root, region [0 +6, 0 +4], loops i.0:2 i.1:4 j:4 k:3\n");
}

TEST(InferBounds, AttachedStageRegionFollowsItsConsumersLoop) {
  // C's outer loop i.0 covers C[3 i.0, 3 i.0 + 3), so B computes B[3 i.0, 3 i.0 + 3).
  const State s = test::chain_at_outer(8, 3);
  LoweringPlan plan = bounded(s);
  const PlannedStage& b = plan.stages[plan.state->stage_index("B")];
  ASSERT_EQ(b.region_min.size(), 1u);
  EXPECT_EQ(to_string(b.region_min[0]), "(i.0*3)");
  EXPECT_EQ(b.region_extent, std::vector<int64_t>{3});
  EXPECT_EQ(plan.to_string(),
            "stage A: placeholder, region [0 +8]\n"
            "stage B: at C.i.0, region [(i.0*3) +3], loops i:3\n"
            "stage C: root, region [0 +8], loops i.0:3 i.1:3\n");
}

TEST(InferBounds, AttachedStageCoversOnlyItsRegion) {
  auto dag = test::matmul_dag(64, 64, 64);
  State s(dag);
  int C = s.stage_index("C");
  ASSERT_TRUE(s.cache_write(C).is_ok());
  int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  ASSERT_TRUE(s.tile(C, {0, 1}, {{8}, {16}}).is_ok());
  ASSERT_TRUE(s.compute_at(CL, C, 1).is_ok());
  auto inferred = infer_bounds(s);
  ASSERT_TRUE(inferred.is_ok()) << inferred.status().to_string();
  const Stage& local = inferred->stage(CL);
  EXPECT_EQ(local.iters[0].extent, 8);
  EXPECT_EQ(local.iters[1].extent, 16);
  EXPECT_EQ(local.iters[2].extent, 64);  // the reduction is not cut
}

TEST(InferBounds, OversizedVectorizeOfAttachedStageIsALoweringError) {
  auto dag = test::matmul_dag(64, 128, 8);
  State s(dag);
  int C = s.stage_index("C");
  ASSERT_TRUE(s.cache_write(C).is_ok());
  int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  ASSERT_TRUE(s.compute_at(CL, C, 0).is_ok());  // region 1 x 128
  ASSERT_TRUE(s.vectorize(CL, 1).is_ok());      // 128 lanes: only lowering knows
  auto f = lower(s, "mm");
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kLoweringError);
  EXPECT_NE(f.status().message().find("128 lanes"), std::string::npos) << f.status().message();
  auto plan = infer_bounds(inline_stages(s).value());
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kLoweringError);
}

}  // namespace
}  // namespace tessera
