// Schedules are data: step lists survive JSON, replay to the same kernel, and
// refuse to apply to a DAG they were not made for.
#include <gtest/gtest.h>

#include <regex>

#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/state.h"

namespace tessera {
namespace {

std::shared_ptr<const ComputeDAG> dag_of(const std::string& spec) {
  auto inst = ops::parse_op_spec(spec);
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return inst->dag;
}

// A conv2d schedule using every step kind.
State every_step_kind_schedule() {
  State s(dag_of("conv2d:N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1"));
  // By name: cache_read, cache_write and rfactor insert stages.
  auto at = [&](const char* name) { return s.stage_index(name); };
  EXPECT_TRUE(s.cache_read(at("W"), {at("conv2d")}).is_ok());
  EXPECT_TRUE(s.cache_write(at("conv2d")).is_ok());
  EXPECT_TRUE(s.rfactor(at("conv2d.local"), 0, 3).is_ok()) << s.to_string();  // over rc
  const char* conv = "conv2d";
  EXPECT_TRUE(s.split(at(conv), 1, {4}).is_ok());                // n k.0 k.1 i j
  EXPECT_TRUE(s.split_nparts(at(conv), 3, 2).is_ok());           // n k.0 k.1 i.0 i.1 j
  EXPECT_TRUE(s.reorder(at(conv), {0, 1, 3, 2, 4, 5}).is_ok());  // n k.0 i.0 k.1 i.1 j
  EXPECT_TRUE(s.fuse(at(conv), {0, 1}).is_ok());                 // n@k.0 i.0 k.1 i.1 j
  EXPECT_TRUE(s.parallel(at(conv), 0).is_ok());
  EXPECT_TRUE(s.vectorize(at(conv), 4).is_ok());
  EXPECT_TRUE(s.compute_at(at("conv2d.local"), at(conv), 1).is_ok());
  EXPECT_TRUE(s.compute_inline(at("pad")).is_ok());
  EXPECT_TRUE(s.compute_at(at("W.local"), at("conv2d.local.rf"), 0).is_ok());
  EXPECT_TRUE(s.compute_root(at("W.local")).is_ok());
  EXPECT_TRUE(s.unroll(at(conv), 3).is_ok());
  EXPECT_TRUE(s.pragma_auto_unroll(at(conv), 1, 64).is_ok());
  EXPECT_TRUE(s.pack_layout(at("W"), 0, 4).is_ok());  // OIHW as [K/4][C][R][S][4]
  return s;
}

TEST(StepReplay, JsonRoundTripKeepsEveryStepKind) {
  State s = every_step_kind_schedule();
  ASSERT_EQ(s.steps().size(), 16u);
  std::vector<bool> seen(static_cast<int>(StepKind::kPackLayout) + 1, false);
  for (const Step& step : s.steps()) seen[static_cast<int>(step.kind())] = true;
  for (size_t k = 0; k < seen.size(); ++k) EXPECT_TRUE(seen[k]) << step_kind_name(static_cast<StepKind>(k));
  const std::string json = steps_to_json(s.steps());
  auto parsed = steps_from_json(json);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(*parsed, s.steps());
  EXPECT_EQ(steps_to_json(*parsed), json);
}

TEST(StepReplay, ReplayGivesTheSameLoweredText) {
  State s = every_step_kind_schedule();
  auto original = lower(s, "k");
  ASSERT_TRUE(original.is_ok()) << original.status().to_string();
  auto parsed = steps_from_json(steps_to_json(s.steps()));
  ASSERT_TRUE(parsed.is_ok());
  // A fresh DAG from the same spec: replay must not depend on node identity.
  auto replayed = replay(dag_of("conv2d:N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1"), *parsed);
  ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
  EXPECT_EQ(replayed->to_string(), s.to_string());
  auto again = lower(*replayed, "k");
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(to_string(*again), to_string(*original));
}

TEST(StepReplay, StepsOfAnotherDagFailWithTheStepNamed) {
  State conv = every_step_kind_schedule();
  auto result = replay(dag_of("softmax:M=4,N=10"), conv.steps());
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidSchedule);
  // "step 2: rfactor(stage=4, ...): stage softmax.local is not a reduction":
  // which step, what it was and why. (Replay addresses stages by index, so
  // the first steps may apply; records keep the workload key to match DAGs.)
  EXPECT_TRUE(std::regex_search(result.status().message(), std::regex("^step [0-9]+: [a-z_]+\\(stage=")))
      << result.status().message();
}

TEST(StepReplay, MalformedJsonIsAParseError) {
  EXPECT_EQ(steps_from_json("[{\"kind\":\"split\",\"stage\":").status().code(), ErrorCode::kParseError);
  EXPECT_EQ(steps_from_json("[{\"kind\":\"teleport\",\"stage\":1}]").status().code(), ErrorCode::kParseError);
}

}  // namespace
}  // namespace tessera
