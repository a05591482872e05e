// One candidate identity: a candidate is its step list, and on the candidate
// path (policy proposes -> features -> build -> record -> observe) its steps
// are replayed once and lowered once, counted on the candidate itself.
#include "tuner/candidate.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/knob/templates.h"
#include "costmodel/cost_model.h"
#include "rpc/runner.h"
#include "tuner/knob_policy.h"
#include "tuner/measure/measurer.h"
#include "tuner/sketch_policy.h"

namespace tessera::tuner {
namespace {

constexpr const char* kSpec = "matmul:M=64,N=64,K=64";

Task task_of(const ops::OpInstance& op) {
  Task t;
  t.name = op.spec;
  t.dag = op.dag;
  t.target = host_target();
  t.device_key = "local";
  return t;
}

void expect_made_once(const std::vector<Candidate>& batch, const std::string& where) {
  for (const Candidate& c : batch) {
    const CandidateTrace t = c.trace();
    EXPECT_EQ(t.replays, 1) << where << ": " << steps_to_json(c.steps());
    EXPECT_EQ(t.lowerings, 1) << where << ": " << steps_to_json(c.steps());
  }
}

TEST(Candidate, EqualityAndHashAreTheStepLists) {
  auto op = ops::parse_op_spec(kSpec).value();
  State s(op.dag);
  ASSERT_TRUE(s.split(2, 0, {8}).is_ok());
  Candidate a(s.steps()), b(steps_from_json(steps_to_json(s.steps())).value(), records::SpaceKind::kKnob, "{}");
  EXPECT_EQ(a, b);  // space and knob configuration are not identity
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.hash(), hash_steps(s.steps()));
  EXPECT_FALSE(a == Candidate());
  EXPECT_EQ(Candidate(), Candidate(std::vector<Step>{}));
}

TEST(Candidate, CopiesShareWhatWasMade) {
  auto op = ops::parse_op_spec(kSpec).value();
  State s(op.dag);
  ASSERT_TRUE(s.split(2, 0, {8}).is_ok());
  Candidate a(s.steps());
  Candidate copy = a;
  EXPECT_EQ(a.trace().replays, 0);  // replayed on first use, not before
  ASSERT_TRUE(copy.loop_nest(op.dag).is_ok());
  ASSERT_TRUE(a.loop_nest(op.dag).is_ok());
  ASSERT_TRUE(a.state(op.dag).is_ok());
  EXPECT_EQ(a.trace().replays, 1);
  EXPECT_EQ(a.trace().lowerings, 1);
  EXPECT_EQ(copy.trace().lowerings, 1);
}

TEST(Candidate, FromStateCountsTheApplicationAsItsReplay) {
  auto op = ops::parse_op_spec(kSpec).value();
  State s(op.dag);
  ASSERT_TRUE(s.split(2, 1, {16}).is_ok());
  Candidate c = Candidate::from_state(s, records::SpaceKind::kSketch);
  EXPECT_EQ(c.steps(), s.steps());
  ASSERT_TRUE(c.state(op.dag).is_ok());
  EXPECT_EQ(c.trace().replays, 1);
  EXPECT_EQ(c.trace().lowerings, 0);
}

TEST(Candidate, StepsThatDoNotReplayKeepTheirError) {
  auto op = ops::parse_op_spec(kSpec).value();
  Candidate c({FuseStep{.stage = 2, .iters = {0, 2}}});
  auto state = c.state(op.dag);
  ASSERT_FALSE(state.is_ok());
  EXPECT_EQ(state.status().code(), ErrorCode::kInvalidSchedule);
  EXPECT_FALSE(c.loop_nest(op.dag).is_ok());
  EXPECT_EQ(c.trace().replays, 1);  // failed once, not tried again
  EXPECT_EQ(c.trace().lowerings, 0);
}

TEST(Candidate, KernelIsWhatLowerGives) {
  auto op = ops::parse_op_spec(kSpec).value();
  State s(op.dag);
  ASSERT_TRUE(s.tile(2, {0, 1}, {{8}, {16}}).is_ok());
  ASSERT_TRUE(s.vectorize(2, 3).is_ok());
  ASSERT_TRUE(s.unroll(2, 2).is_ok());
  ASSERT_TRUE(s.pragma_auto_unroll(2, 0, 64).is_ok());
  Candidate c = Candidate::from_state(s, records::SpaceKind::kSketch);
  auto kernel = c.kernel(op.dag, "k");
  auto lowered = lower(s, "k");
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().to_string();
  EXPECT_EQ(to_string(*kernel), to_string(*lowered));
}

// The candidate path with real builds and measurements on a local worker.
class CandidatePath : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runner = rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = 2});
    ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
    runner_ = std::move(*runner);
  }
  // propose -> measure (build, record) -> observe, `rounds` times; every
  // proposed candidate is checked after its batch was observed.
  void run(SearchPolicy& policy, const Task& task, int rounds, int batch_size) {
    BuilderPool builder(task.target, {.n_parallel = 2});
    Measurer measurer(builder, *runner_, {.timing = {.number = 1, .repeat = 1}});
    for (int r = 0; r < rounds; ++r) {
      auto batch = policy.propose(batch_size);
      ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
      ASSERT_FALSE(batch->empty());
      auto records = measurer.measure(task, *batch);
      ASSERT_TRUE(records.is_ok()) << records.status().to_string();
      ASSERT_TRUE(policy.observe(*batch, *records).is_ok());
      expect_made_once(*batch, policy.name() + " round " + std::to_string(r));
      int measured = 0;
      for (const auto& rec : *records) measured += rec.ok();
      EXPECT_GT(measured, 0);
    }
  }
  std::unique_ptr<rpc::LocalRunner> runner_;
};

TEST_F(CandidatePath, SketchSearchReplaysAndLowersEachStepListOnce) {
  auto op = ops::parse_op_spec(kSpec).value();
  auto space = SketchSpace::make(op.dag, host_target());
  ASSERT_TRUE(space.is_ok()) << space.status().to_string();
  // A model that is always ready: every proposal is an evolutionary search
  // that lowers its population for features.
  SketchPolicy policy(std::move(*space), std::make_unique<costmodel::RandomModel>(1),
                      EvolutionOptions{.population = 24, .generations = 2}, 1);
  run(policy, task_of(op), /*rounds=*/3, /*batch_size=*/6);
  EXPECT_GT(policy.last_model_picks(), 0);
}

TEST_F(CandidatePath, KnobXgbSearchReplaysAndLowersEachStepListOnce) {
  auto op = ops::parse_op_spec(kSpec).value();
  const KnobTemplate* tmpl = find_template(op.op);
  ASSERT_NE(tmpl, nullptr);
  const Target target = host_target();
  KnobPolicy policy(*tmpl, op.dag, target, tmpl->define(*op.dag, target).value(), KnobStrategy::kXgb, nullptr, 1,
                    {.sa_chains = 16, .sa_max_iters = 20});
  run(policy, task_of(op), /*rounds=*/3, /*batch_size=*/6);
  EXPECT_GT(policy.last_model_picks(), 0);
}

TEST_F(CandidatePath, ResumedRecordsAreReplayedAndLoweredOnce) {
  // As Tuner::resume gives them: steps parsed from stored records, observed
  // by a guided policy (features) after being built and measured.
  auto op = ops::parse_op_spec(kSpec).value();
  auto space = SketchSpace::make(op.dag, host_target());
  ASSERT_TRUE(space.is_ok());
  SpaceRng rng(3);
  std::vector<Candidate> stored;
  for (int i = 0; i < 4; ++i)
    stored.emplace_back(steps_from_json(steps_to_json(space->sample(rng).value().state.steps())).value());
  SketchPolicy policy(std::move(*space), std::make_unique<costmodel::RandomModel>(1), EvolutionOptions{}, 1);
  BuilderPool builder(host_target(), {.n_parallel = 2});
  Measurer measurer(builder, *runner_, {.timing = {.number = 1, .repeat = 1}});
  auto records = measurer.measure(task_of(op), stored);
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  ASSERT_TRUE(policy.observe(stored, *records).is_ok());
  expect_made_once(stored, "resumed");
}

}  // namespace
}  // namespace tessera::tuner
