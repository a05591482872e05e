#include "compiler/lower/place_guards.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

// guards_at as text: "depth: guard; ..." for the non-empty depths.
std::string guards_text(const StageGuards& p) {
  std::string out;
  for (size_t d = 0; d < p.guards_at.size(); ++d)
    for (const Expr& g : p.guards_at[d]) out += std::to_string(d) + ": " + to_string(g) + "; ";
  for (const Expr& g : p.init_guards) out += "init: " + to_string(g) + "; ";
  return out;
}

TEST(PlaceGuards, DividingSplitNeedsNoGuard) {
  State s(test::matmul_dag(8, 4, 3));
  ASSERT_TRUE(s.split(s.stage_index("C"), 0, {4}).is_ok());
  LoweringPlan plan = test::full_plan(s);
  EXPECT_EQ(guards_text(plan.guards[s.stage_index("C")]), "");
}

TEST(PlaceGuards, NonDividingSplitIsGuardedJustInsideItsInnerLoop) {
  State s(test::matmul_dag(6, 4, 3));
  ASSERT_TRUE(s.split(s.stage_index("C"), 0, {4}).is_ok());  // i.0 i.1 j k
  LoweringPlan plan = test::full_plan(s);
  const StageGuards& c = plan.guards[s.stage_index("C")];
  EXPECT_EQ(guards_text(c), "2: (((i.0*4) + i.1) < 6); ");
  EXPECT_EQ(to_string(c.root_values.at(s.stage(s.stage_index("C")).axes[0]->var.node())), "(0 + ((i.0*4) + i.1))");
}

TEST(PlaceGuards, AttachedRegionOverTheTensorsEdgeIsGuardedBothWays) {
  // Regions of 3 over a tensor of 8: the last one hangs over by one.
  const State s = test::chain_at_outer(8, 3);
  LoweringPlan plan = test::full_plan(s);
  EXPECT_EQ(guards_text(plan.guards[s.stage_index("B")]), "1: (((i.0*3) + i) < 8); 1: (((i.0*3) + i) >= 0); ");
  EXPECT_EQ(guards_text(plan.guards[s.stage_index("C")]), "2: (((i.0*3) + i.1) < 8); ");
}

TEST(PlaceGuards, ReductionResetKeepsSpatialGuardsBelowTheFirstReduceLoop) {
  State s(test::matmul_dag(2, 4, 3));
  const int C = s.stage_index("C");
  ASSERT_TRUE(s.split(C, 1, {3}).is_ok());
  ASSERT_TRUE(s.reorder(C, {0, 1, 3, 2}).is_ok());  // i j.0 k j.1
  LoweringPlan plan = test::full_plan(s);
  EXPECT_EQ(guards_text(plan.guards[C]), "4: (((j.0*3) + j.1) < 4); init: (((j.0*3) + j.1) < 4); ");
}

}  // namespace
}  // namespace tessera
