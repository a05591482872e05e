#include "compiler/lower/inline_stages.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

TEST(InlineStages, InlinedProducerIsSubstitutedIntoItsReader) {
  State s(test::chain_dag(8));
  const int B = s.stage_index("B"), C = s.stage_index("C");
  ASSERT_TRUE(s.compute_inline(B).is_ok());
  LoweringPlan plan = inline_stages(s).value();
  EXPECT_EQ(to_string(plan.stages[C].body), "((A[i] + 1.0f)*2.0f)");
  // The inlined stage is nobody's producer any more: A is read by C directly.
  EXPECT_EQ(plan.stages[s.stage_index("A")].consumers, std::vector<int>{C});
  EXPECT_TRUE(plan.stages[B].consumers.empty());
}

TEST(InlineStages, BodiesStayAsTheyAreWithoutInlining) {
  State s(test::chain_dag(8));
  LoweringPlan plan = inline_stages(s).value();
  EXPECT_EQ(to_string(plan.stages[s.stage_index("C")].body), "(B[i]*2.0f)");
  EXPECT_FALSE(plan.stages[s.stage_index("A")].body.defined());  // a placeholder has no body
}

TEST(InlineStages, RecordsConsumersAndAttachedStages) {
  const State s = test::chain_at_outer(8, 4);
  const int A = s.stage_index("A"), B = s.stage_index("B"), C = s.stage_index("C");
  LoweringPlan plan = inline_stages(s).value();
  EXPECT_EQ(plan.stages[A].consumers, std::vector<int>{B});
  EXPECT_EQ(plan.stages[B].consumers, std::vector<int>{C});
  EXPECT_EQ(plan.stages[C].attached, std::vector<int>{B});
  EXPECT_EQ(plan.stage_of_tensor(s.stage(B).tensor.get()), B);
  EXPECT_EQ(plan.to_string(), "stage A: placeholder\nstage B: at C.i.0\nstage C: root\n");
}

}  // namespace
}  // namespace tessera
