// Random valid schedules of every operator, compiled by LLVM and run natively
// on two threads, compute what the reference interpreter computes for the
// same schedule (tests/compiler/schedule/random_schedule_test.cc checks the
// interpreter against the default schedule and naive C++ loops).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "compiler/ir/functor.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

constexpr int kBuildsPerOperator = 40;

const char* const kSpecs[] = {
    "matmul:M=7,N=13,K=9",
    "dense:M=3,N=11,K=7,bias=1,relu=1",
    "batch_matmul:B=2,M=5,N=7,K=3",
    "conv2d:N=1,C=3,H=7,W=7,K=4,R=3,S=3,stride=2,pad=1",
    "conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3,pad=2,dilation=2,groups=2",
    "conv2d_nhwc:N=1,C=3,H=6,W=5,K=5,R=3,S=3,pad=1",
    "depthwise_conv2d:N=1,C=3,H=7,W=7,R=3,S=3,multiplier=2,stride=2,pad=1",
    "max_pool2d:N=1,C=2,H=7,W=7,R=3,S=3,stride=2,pad=1",
    "avg_pool2d:N=1,C=2,H=7,W=6,R=3,S=2,stride=2,pad=1",
    "global_avg_pool2d:N=1,C=3,H=5,W=7",
    "softmax:M=3,N=13",
    "layer_norm:M=3,N=13",
    "reduce_sum:M=5,N=11",
    "reduce_max:M=5,N=11",
    "add:M=5,N=7,broadcast=1",
    "div:M=5,N=7",
    "power:M=5,N=7",
    "sigmoid:M=5,N=7",
    "tanh:M=5,N=7",
    "exp:M=5,N=7",
    "hardswish:M=5,N=7",
    "gelu:M=5,N=7",
    "clip:M=5,N=7",
};

class RandomBuilds : public ::testing::TestWithParam<const char*> {};

TEST_P(RandomBuilds, NativeCodeMatchesTheInterpreter) {
  auto inst = ops::parse_op_spec(GetParam());
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  const bool positive = inst->op == "power";
  auto inputs = test::random_inputs(*inst->dag, 5, positive ? 0.5f : -1.0f, positive ? 2.0f : 1.0f);
  runtime::ThreadPool pool(2);
  for (int trial = 0; trial < kBuildsPerOperator; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(1000 + trial * 7919));
    State state = gen.generate(inst->dag, 4 + trial % 10);
    auto want = test::run(state, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    auto got = test::run_native(state, inputs, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_TRUE(test::all_close(*got, *want, 1e-4, 1e-5))
        << GetParam() << " trial " << trial << "\nsteps: " << steps_to_json(state.steps());
  }
}

// Counts what the schedules above exercise of non-dividing loops: masked
// (predicated) accesses and partitioned loops (a ".tail" or ".head" copy).
class TailCounter final : public IRVisitor {
 public:
  int predicated = 0, partitioned = 0;

 protected:
  using IRVisitor::visit;
  void visit(const LoadNode* op) override {
    predicated += op->predicate.defined();
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    predicated += op->predicate.defined();
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    const std::string& name = op->var.name();
    partitioned += name.ends_with(".tail") || name.ends_with(".head");
    IRVisitor::visit(op);
  }
};

TEST(RandomBuildsCoverage, SchedulesExerciseRemaindersAndMaskedVectorTails) {
  int masked = 0, partitioned = 0, padded = 0;
  for (const char* spec : kSpecs) {
    auto inst = ops::parse_op_spec(spec).value();
    for (int trial = 0; trial < kBuildsPerOperator; ++trial) {
      test::RandomScheduler gen(static_cast<uint32_t>(1000 + trial * 7919));
      State state = gen.generate(inst.dag, 4 + trial % 10);
      auto func = lower(state);
      ASSERT_TRUE(func.is_ok()) << func.status().to_string();
      TailCounter count;
      count(func->body);
      masked += count.predicated > 0;
      partitioned += count.partitioned > 0;
      padded += std::any_of(state.stages().begin(), state.stages().end(), [](const Stage& st) { return st.pad_tile; });
    }
  }
  EXPECT_GE(masked, 20) << "kernels with a masked vector tail";
  EXPECT_GE(partitioned, 100) << "kernels with a partitioned loop";
  EXPECT_GE(padded, 20) << "kernels with a padded tile (PadTileStep)";
}

INSTANTIATE_TEST_SUITE_P(Ops, RandomBuilds, ::testing::ValuesIn(kSpecs), [](const auto& info) {
  std::string name = std::to_string(info.index) + "_" + info.param;
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

}  // namespace
}  // namespace tessera
