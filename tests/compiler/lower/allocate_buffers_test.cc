#include "compiler/lower/allocate_buffers.h"

#include <gtest/gtest.h>

#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

LoweringPlan allocated(const State& s) {
  return allocate_buffers(infer_bounds(inline_stages(s).value()).value()).value();
}

TEST(AllocateBuffers, ParametersInArgumentOrderAndIntermediatesShapedByTheirRegion) {
  const State s = test::chain_at_outer(8, 4);
  LoweringPlan plan = allocated(s);
  ASSERT_EQ(plan.params.size(), 2u);
  EXPECT_EQ(plan.params[0]->name, "A");
  EXPECT_EQ(plan.params[1]->name, "C");
  EXPECT_EQ(plan.params[0]->scope, MemoryScope::kGlobal);
  EXPECT_TRUE(plan.params[1].same_as(plan.stages[s.stage_index("C")].buffer));
  const Buffer& b = plan.stages[s.stage_index("B")].buffer;
  EXPECT_EQ(b->name, "B");
  EXPECT_EQ(b->shape, std::vector<int64_t>{4});  // the region, not the tensor
  EXPECT_EQ(b->scope, MemoryScope::kLocal);
}

TEST(AllocateBuffers, InlinedStagesGetNoBuffer) {
  State s(test::chain_dag(8));
  ASSERT_TRUE(s.compute_inline(s.stage_index("B")).is_ok());
  EXPECT_FALSE(allocated(s).stages[s.stage_index("B")].buffer.defined());
}

TEST(AllocateBuffers, LargeIntermediateComesFromTheWorkspace) {
  const int64_t n = kMaxLocalBytes / 4;  // float32: exactly the limit
  EXPECT_EQ(allocated(State(test::chain_dag(n))).stages[1].buffer->scope, MemoryScope::kLocal);
  EXPECT_EQ(allocated(State(test::chain_dag(n + 1))).stages[1].buffer->scope, MemoryScope::kWorkspace);
}

}  // namespace
}  // namespace tessera
