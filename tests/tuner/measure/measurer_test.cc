#include "tuner/measure/measurer.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "tests/tuner/measure/matmul_task.h"

namespace tessera::tuner {
namespace {

Task matmul_task(int64_t n) {
  return test::matmul_task(n, n, n);
}

class MeasurerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runner = rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = 2});
    ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
    runner_ = std::move(*runner);
  }
  std::unique_ptr<rpc::LocalRunner> runner_;
};

TEST_F(MeasurerTest, EveryCandidateBecomesARecordGoodOrBad) {
  Task task = matmul_task(64);
  State tiled(task.dag);
  ASSERT_TRUE(tiled.tile(2, {0, 1}, {{8}, {16}}).is_ok());
  ASSERT_TRUE(tiled.vectorize(2, 3).is_ok());
  Step bad = FuseStep{.stage = 2, .iters = {0, 2}};  // not adjacent
  BuilderPool builder(task.target, {.n_parallel = 2});
  Measurer measurer(builder, *runner_, {.timing = {.number = 1, .repeat = 2}, .check_correctness = true});
  auto records = measurer.measure(task, {Candidate(tiled.steps()), Candidate({bad}), Candidate()});
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), 3u);
  const auto& good = (*records)[0];
  EXPECT_TRUE(good.ok()) << good.error_kind << ": " << good.error_message;
  EXPECT_EQ(good.costs.size(), 2u);
  EXPECT_EQ(good.workload_key, task.workload_key());
  EXPECT_GT(good.build_seconds, 0);
  const auto& invalid = (*records)[1];
  EXPECT_EQ(invalid.error_kind, "invalid-schedule");
  EXPECT_TRUE(invalid.costs.empty());
  EXPECT_TRUE((*records)[2].ok()) << (*records)[2].error_message;  // the default schedule
}

// Workers fill a packed argument with the same random bytes as a plain one;
// the reference check reads them unpacked in each candidate's layout. Two
// layouts of B and the plain one in one batch all pass only if each gets a
// reference of its own (the bytes mean a different B in each).
TEST_F(MeasurerTest, PackedArgumentsAreCheckedAgainstTheirOwnReference) {
  Task task = matmul_task(64);
  State packed(task.dag);
  ASSERT_TRUE(packed.tile(2, {0, 1}, {{8}, {16}}).is_ok());
  ASSERT_TRUE(packed.vectorize(2, 3).is_ok());
  ASSERT_TRUE(packed.pack_layout(1, 1, 16).is_ok());  // B as [64/16][64][16]
  State packed_by_8 = without_packed_layouts(packed).value();
  ASSERT_TRUE(packed_by_8.pack_layout(1, 1, 8).is_ok());
  BuilderPool builder(task.target, {.n_parallel = 2});
  Measurer measurer(builder, *runner_, {.timing = {.number = 1, .repeat = 1}, .check_correctness = true});
  auto records = measurer.measure(task, {Candidate(packed.steps()), Candidate(packed_by_8.steps()), Candidate()});
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  for (const auto& r : *records) EXPECT_TRUE(r.ok()) << r.error_kind << ": " << r.error_message;
}

}  // namespace
}  // namespace tessera::tuner
