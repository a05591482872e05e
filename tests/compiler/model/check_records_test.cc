// check_records_in_model: after a tuning, a record that makes the model
// slower than its untuned compile keeps its fallback.
#include "compiler/model/check_records.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/model/compile_model.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::model {
namespace {

using graph::Graph;
using graph::OpKind;
using graph::ValueId;
namespace gt = graph::test;

// x [128, 128] times a constant [128, 128], then Relu: one kernel.
Graph product() {
  Graph g;
  ValueId x = g.add_input("x", {128, 128}, DType::f32());
  ValueId w = g.add_constant("w", graph::Constant::from_floats({128, 128}, gt::random_floats(128 * 128, 3)));
  ValueId y = g.add_op("mm", OpKind::kMatMul, graph::NoAttrs{}, {x, w}, {128, 128}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {128, 128}, DType::f32());
  g.set_outputs({r}, {"y"});
  return g;
}

TEST(CheckRecordsInModel, ARecordSlowerInTheModelThanItsFallbackKeepsTheFallback) {
  const Graph g = product();
  auto plan = plan_model(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->tasks.size(), 1u);
  // A record that claims a nanosecond for the unscheduled loops: scalar,
  // one thread, about a hundred times the fallback's time in the model.
  FixedScheduleSource source;
  ScheduleCandidate lying;
  lying.steps_json = "[]";
  lying.cost_s = 1e-9;
  lying.record_id = 42;
  const std::string key = plan->tasks[0].dag->workload_key();
  source.add(key, host_target().to_string(), lying);

  runtime::InProcessPackageTimer timer;
  auto checked = check_records_in_model(prepare_model(g).value(), host_target(), source, timer);
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  const ModelRecordsCheck& check = *checked;
  ASSERT_EQ(check.records.size(), 1u);
  const RecordCheck& r = check.records[0];
  EXPECT_EQ(r.workload_key, key);
  EXPECT_EQ(r.record_id, 42);
  EXPECT_TRUE(r.keeps_fallback);
  EXPECT_GT(check.tuned_s, 5 * check.untuned_s);
  EXPECT_GT(r.model_with_record_s, 5 * r.model_with_fallback_s);
  EXPECT_DOUBLE_EQ(check.chosen_s, check.untuned_s);  // every record dropped: the untuned compile
  EXPECT_DOUBLE_EQ(check.chosen_vs_untuned, 1.0);
  const std::string text = format_records_check(check);
  EXPECT_NE(text.find("1 of 1 kernels keep their fallback"), std::string::npos) << text;
  EXPECT_NE(text.find("(record 42, "), std::string::npos) << text;
}

TEST(CheckRecordsInModel, AModelWithoutRecordsHasNothingToCheck) {
  FixedScheduleSource empty;
  runtime::InProcessPackageTimer timer;
  auto checked = check_records_in_model(prepare_model(product()).value(), host_target(), empty, timer);
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  const ModelRecordsCheck& check = *checked;
  EXPECT_TRUE(check.records.empty());
  EXPECT_EQ(check.packages_timed, 0);
  EXPECT_EQ(format_records_check(check), "the model takes no kernel from a record: nothing to check\n");
}

}  // namespace
}  // namespace tessera::model
