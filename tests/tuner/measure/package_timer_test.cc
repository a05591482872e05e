// Packages compiled by the model compiler, timed against each other on a
// local worker in its sandbox (RunnerPackageTimer): what comes back, and
// errors that say what failed.
#include "tuner/measure/package_timer.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/model/compile_model.h"

namespace tessera::tuner {
namespace {

using graph::OpKind;
using graph::ValueId;

// y = relu(x W) over n x n, compiled untuned for this machine.
runtime::PackageContents product_package(int64_t n) {
  graph::Graph g;
  ValueId x = g.add_input("x", {n, n}, DType::f32());
  std::vector<float> weights(static_cast<size_t>(n * n), 0.01f);
  ValueId w = g.add_constant("w", graph::Constant::from_floats({n, n}, weights));
  ValueId y = g.add_op("mm", OpKind::kMatMul, graph::NoAttrs{}, {x, w}, {n, n}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {n, n}, DType::f32());
  g.set_outputs({r}, {"y"});
  auto plan = model::plan_model(g);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto package = model::compile_package(*plan, host_target(), nullptr);
  EXPECT_TRUE(package.is_ok()) << package.status().to_string();
  return std::move(package).value();
}

class RunnerPackageTimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runner = rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = 2});
    ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
    runner_ = std::move(*runner);
  }
  std::unique_ptr<rpc::LocalRunner> runner_;
};

TEST_F(RunnerPackageTimerTest, ProfilesEachCallAndTimesWholeRunsOnTheWorker) {
  const runtime::PackageContents small = product_package(32), large = product_package(256);
  RunnerPackageTimer timer(*runner_, 60000);
  auto calls = timer.profile_alternately({&small, &large}, 5);
  ASSERT_TRUE(calls.is_ok()) << calls.status().to_string();
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].size(), small.calls.size());
  EXPECT_EQ((*calls)[1].size(), large.calls.size());
  auto whole = timer.time_alternately({&small, &large}, {.rounds = 4, .round_s = 0.01});
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  EXPECT_EQ(whole->rounds, 4);
  EXPECT_EQ(whole->ratio_to_first[0], 1.0);
  // 512 times the multiply-adds.
  EXPECT_GT(whole->ratio_to_first[1], 4.0);
}

TEST_F(RunnerPackageTimerTest, APackageThatDoesNotLoadGivesTheWorkersMessage) {
  const runtime::PackageContents good = product_package(32);
  runtime::PackageContents broken = good;
  broken.calls.front().symbol = "tsr_no_such_kernel";
  RunnerPackageTimer timer(*runner_, 60000);
  auto calls = timer.profile_alternately({&good, &broken}, 5);
  ASSERT_FALSE(calls.is_ok());
  EXPECT_EQ(calls.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(calls.status().message().find("tsr_no_such_kernel"), std::string::npos) << calls.status().message();
}

TEST_F(RunnerPackageTimerTest, MorePackagesThanAWorkerTakesAreRefusedBeforeSending) {
  const runtime::PackageContents p = product_package(16);
  RunnerPackageTimer timer(*runner_, 60000);
  auto calls = timer.profile_alternately(std::vector<const runtime::PackageContents*>(9, &p), 1);
  ASSERT_FALSE(calls.is_ok());
  EXPECT_EQ(calls.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(calls.status().message().find("exceed what a worker takes"), std::string::npos) << calls.status().message();
}

}  // namespace
}  // namespace tessera::tuner
