// Property test: for every operator, random valid schedules compute what the
// default schedule computes, replay to the same kernel, and survive a JSON
// round trip. A failure prints a minimised reproducer (the operator spec, the
// steps JSON and the state) for the lowering/schedule owners.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "compiler/ir/printer.h"
#include "compiler/ops/op_spec.h"
#include "tests/compiler/ops/op_test_util.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

constexpr int kTrialsPerOperator = 200;

// Small shapes with sizes that no power of two divides.
const char* const kSpecs[] = {
    "matmul:M=7,N=13,K=9",
    "dense:M=3,N=11,K=7,bias=1,relu=1",
    "batch_matmul:B=2,M=5,N=7,K=3",
    "conv2d:N=1,C=3,H=7,W=7,K=4,R=3,S=3,stride=2,pad=1",
    "conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3,pad=2,dilation=2,groups=2",
    "conv2d_nhwc:N=1,C=3,H=6,W=5,K=5,R=3,S=3,pad=1",
    "depthwise_conv2d:N=1,C=3,H=7,W=7,R=3,S=3,multiplier=2,stride=2,pad=1",
    "depthwise_conv2d_nhwc:N=1,C=5,H=7,W=6,R=3,S=3,multiplier=2,stride=2,pad=1,bias=1,relu=1",
    "max_pool2d:N=1,C=2,H=7,W=7,R=3,S=3,stride=2,pad=1",
    "avg_pool2d:N=1,C=2,H=7,W=6,R=3,S=2,stride=2,pad=1",
    "global_avg_pool2d:N=1,C=3,H=5,W=7",
    "softmax:M=3,N=13",
    "layer_norm:M=3,N=13",
    "reduce_sum:M=5,N=11",
    "reduce_mean:M=5,N=11",
    "reduce_max:M=5,N=11",
    "add:M=5,N=7,broadcast=1",
    "sub:M=5,N=7",
    "mul:M=5,N=7,broadcast=1",
    "div:M=5,N=7",
    "maximum:M=5,N=7",
    "minimum:M=5,N=7,broadcast=1",
    "power:M=5,N=7",
    "relu:M=5,N=7",
    "sigmoid:M=5,N=7",
    "tanh:M=5,N=7",
    "exp:M=5,N=7",
    "hardswish:M=5,N=7",
    "gelu:M=5,N=7",
    "leaky_relu:M=5,N=7",
    "clip:M=5,N=7",
};

struct Failure {
  std::string category;  // "lowering", "runtime", "mismatch", "replay" or "json"
  std::string detail;
};

class ScheduleChecker {
 public:
  ScheduleChecker(std::vector<std::vector<float>> inputs, std::vector<float> want)
      : inputs_(std::move(inputs)), want_(std::move(want)) {}

  // Lowers and runs `state` (parallel loops in reverse, to expose iterations
  // that are not independent) and compares with the default schedule; checks
  // that its steps survive JSON and replay to the same kernel.
  std::optional<Failure> check(const State& state) const {
    auto f = lower(state, "kernel", LowerOptions{.verify = true});  // the IR verifier between passes
    if (!f.is_ok()) return Failure{"lowering", f.status().to_string()};
    auto got = test::run(state, inputs_, InterpretOptions{.reverse_parallel_loops = true});
    if (!got.is_ok()) return Failure{"runtime", got.status().to_string()};
    auto close = test::all_close(*got, want_, test::kSumRtol, test::kSumAtol);
    if (!close) return Failure{"mismatch", close.message()};
    auto parsed = steps_from_json(steps_to_json(state.steps()));
    if (!parsed.is_ok() || *parsed != state.steps())
      return Failure{"json", "steps differ after a JSON round trip: " + steps_to_json(state.steps())};
    auto again = replay(state.dag_ptr(), *parsed);
    if (!again.is_ok()) return Failure{"replay", again.status().to_string()};
    auto g = lower(*again, "kernel");
    if (!g.is_ok() || to_string(*g) != to_string(*f)) return Failure{"replay", "replayed steps lower differently"};
    return std::nullopt;
  }

 private:
  std::vector<std::vector<float>> inputs_;
  std::vector<float> want_;
};

std::string reproducer(const std::string& spec, const State& state, const Failure& failure) {
  std::string text = "operator: " + spec + "\nfailure: " + failure.category + ": " + failure.detail +
                     "\nsteps: " + steps_to_json(state.steps()) + "\nstate:\n" + state.to_string();
  auto f = lower(state, "kernel");
  if (f.is_ok()) {
    std::string ir = to_string(*f);
    if (ir.size() > 4000) ir = ir.substr(0, 4000) + "\n...";
    text += "lowered:\n" + ir;
  }
  return text;
}

class RandomSchedules : public ::testing::TestWithParam<const char*> {};

TEST_P(RandomSchedules, ComputeWhatTheDefaultScheduleComputes) {
  const std::string spec = GetParam();
  auto inst = ops::parse_op_spec(spec);
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  const bool positive = inst->op == "power";  // real results only
  auto inputs = test::random_inputs(*inst->dag, 3, positive ? 0.5f : -1.0f, positive ? 2.0f : 1.0f);
  auto want = test::run(State(inst->dag), inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ScheduleChecker checker(inputs, *want);

  int failures = 0, total_steps = 0;
  for (int trial = 0; trial < kTrialsPerOperator; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(std::hash<std::string>()(spec) + trial));
    State state = gen.generate(inst->dag, 3 + trial % 12);
    total_steps += static_cast<int>(state.steps().size());
    for (const std::string& d : gen.dirty_rejections()) ADD_FAILURE() << spec << ": " << d;
    std::optional<Failure> failure = checker.check(state);
    if (!failure) continue;
    if (failures++ >= 2) continue;  // report the first few only
    auto same_failure = [&](const State& s) {
      auto f = checker.check(s);
      return f.has_value() && f->category == failure->category;
    };
    auto steps = test::minimize_steps(inst->dag, state.steps(), same_failure);
    State minimal = replay(inst->dag, steps).value();
    const std::string text = reproducer(spec, minimal, *checker.check(minimal));
    ADD_FAILURE() << "random schedule " << trial << " fails; minimised reproducer:\n" << text;
  }
  EXPECT_EQ(failures, 0) << failures << " of " << kTrialsPerOperator << " random schedules of " << spec << " fail";
  // The generator must actually schedule: on average a few steps per trial.
  EXPECT_GT(total_steps, kTrialsPerOperator * 2) << spec;
}

INSTANTIATE_TEST_SUITE_P(Ops, RandomSchedules, ::testing::ValuesIn(kSpecs), [](const auto& info) {
  std::string name = std::to_string(info.index) + "_" + info.param;
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

// Regressions of two bugs the random schedules found.
TEST(ScheduleRegressions, ComputeAtOneOfTwoConsumersIsRejected) {
  // softmax.max (stage 1) at softmax.expsum's (stage 2) loop j, though softmax reads it too.
  auto inst = ops::parse_op_spec("softmax:M=3,N=13");
  ASSERT_TRUE(inst.is_ok());
  auto steps = steps_from_json(R"([{"kind":"compute_at","stage":1,"target":2,"iter":1}])");
  ASSERT_TRUE(steps.is_ok()) << steps.status().to_string();
  auto state = replay(inst->dag, *steps);
  ASSERT_FALSE(state.is_ok());
  EXPECT_EQ(state.status().code(), ErrorCode::kInvalidSchedule);
  EXPECT_NE(state.status().message().find("also reads"), std::string::npos) << state.status().message();
}

TEST(ScheduleRegressions, CacheReadOfAnAttachedStageStaysAttachedAndComputesTheSame) {
  // pad (stage 2) at conv2d's (stage 3) loop j, then pad cached for conv2d.
  auto inst = ops::parse_op_spec("conv2d:N=1,C=3,H=7,W=7,K=4,R=3,S=3,stride=2,pad=1");
  ASSERT_TRUE(inst.is_ok());
  auto steps = steps_from_json(
      R"([{"kind":"compute_at","stage":2,"target":3,"iter":1},{"kind":"cache_read","stage":2,"readers":[3]}])");
  ASSERT_TRUE(steps.is_ok()) << steps.status().to_string();
  auto state = replay(inst->dag, *steps);
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  auto inputs = test::random_inputs(*inst->dag);
  auto want = test::run(State(inst->dag), inputs), got = test::run(*state, inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(test::all_close(*got, *want, test::kSumRtol, test::kSumAtol));
}

}  // namespace
}  // namespace tessera
