// Local copies stored in another dimension order (StorageOrderStep): a panel
// of dense's W[n, k] stored k-major is read along n in contiguous vectors, and
// the kernel computes what the unscheduled one computes, interpreted and
// compiled. Wrong orders and stages that are not local copies are refused.
#include <gtest/gtest.h>

#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/lower/lower_test_util.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

// Counts vector loads from one buffer, and those whose index is a stride-1 ramp.
class PanelLoads final : public IRVisitor {
 public:
  explicit PanelLoads(std::string buffer) : buffer_(std::move(buffer)) {}
  int vector_loads = 0, contiguous = 0;

 protected:
  using IRVisitor::visit;
  void visit(const LoadNode* op) override {
    if (op->buffer->name == buffer_ && op->dtype.lanes > 1) {
      ++vector_loads;
      const auto* ramp = op->index.as<RampNode>();
      int64_t stride = 0;
      if (ramp && is_const_int(ramp->stride, &stride) && stride == 1) ++contiguous;
    }
    IRVisitor::visit(op);
  }

 private:
  std::string buffer_;
};

// Y = X W^T (dense) with W[n, k] copied to a local panel at each block of
// rows, Y's columns vectorized; `ordered` stores the panel k-major.
State dense_with_panel(const ops::OpInstance& op, bool ordered) {
  State s(op.dag);
  const int y = s.stage_index("dense");
  EXPECT_TRUE(s.cache_read(s.stage_index("W"), {y}).is_ok());
  const int yy = s.stage_index("dense");
  const int panel = s.stage_index("W.local");
  // Y: i j k -> i.0 i.1 k j, j vectorized; the panel at i.0.
  EXPECT_TRUE(s.split(yy, 0, {4}).is_ok());
  EXPECT_TRUE(s.reorder(yy, {0, 1, 3, 2}).is_ok());
  EXPECT_TRUE(s.vectorize(yy, 3).is_ok());
  EXPECT_TRUE(s.compute_at(panel, yy, 0).is_ok());
  if (ordered) EXPECT_TRUE(s.storage_order(panel, {1, 0}).is_ok());
  return s;
}

TEST(StorageOrder, APanelStoredKMajorIsReadInContiguousVectors) {
  auto op = ops::parse_op_spec("dense:M=8,N=16,K=5");
  ASSERT_TRUE(op.is_ok()) << op.status().to_string();
  for (bool ordered : {false, true}) {
    State s = dense_with_panel(*op, ordered);
    auto f = lower(s, "k");
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    PanelLoads loads("W.local");
    loads(f->body);
    EXPECT_GT(loads.vector_loads, 0) << to_string(*f);
    if (ordered)
      EXPECT_EQ(loads.contiguous, loads.vector_loads) << to_string(*f);
    else
      EXPECT_EQ(loads.contiguous, 0) << to_string(*f);
  }
}

TEST(StorageOrder, ComputesTheUnscheduledResultInterpretedAndCompiled) {
  runtime::ThreadPool pool(2);
  for (const char* spec : {"dense:M=8,N=16,K=5", "dense:M=7,N=19,K=3", "dense:M=1,N=33,K=17"}) {
    auto op = ops::parse_op_spec(spec);
    ASSERT_TRUE(op.is_ok()) << op.status().to_string();
    const auto inputs = test::random_inputs(*op->dag);
    auto want = test::run(State(op->dag), inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    State s = dense_with_panel(*op, true);
    auto interpreted = test::run(s, inputs);
    ASSERT_TRUE(interpreted.is_ok()) << spec << ": " << interpreted.status().to_string();
    EXPECT_TRUE(test::all_close(*interpreted, *want, test::kSumRtol, test::kSumAtol)) << spec;
    auto native = test::run_native(s, inputs, pool);
    ASSERT_TRUE(native.is_ok()) << spec << ": " << native.status().to_string();
    EXPECT_TRUE(test::all_close(*native, *want, test::kSumRtol, test::kSumAtol)) << spec;
    // The step replays from its JSON.
    auto replayed = replay(op->dag, steps_from_json(steps_to_json(s.steps())).value());
    ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
    EXPECT_EQ(replayed->stage(replayed->stage_index("W.local")).storage_order, (std::vector<int>{1, 0}));
  }
}

TEST(StorageOrder, RefusesAnOrderThatIsNoPermutationAndStagesThatAreNotLocalCopies) {
  auto op = ops::parse_op_spec("dense:M=8,N=16,K=5");
  ASSERT_TRUE(op.is_ok());
  State s = dense_with_panel(*op, false);
  const int panel = s.stage_index("W.local");
  for (const std::vector<int>& bad : {std::vector<int>{0, 0}, {1}, {0, 2}, {2, 1, 0}}) {
    Status st = s.storage_order(panel, bad);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidSchedule);
    EXPECT_NE(st.message().find("storage_order"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("permutation"), std::string::npos) << st.message();
  }
  Status root = s.storage_order(s.stage_index("dense"), {1, 0});
  EXPECT_EQ(root.code(), ErrorCode::kInvalidSchedule);
  EXPECT_NE(root.message().find("not computed at another stage"), std::string::npos) << root.message();
  EXPECT_EQ(s.stage(panel).storage_order, std::vector<int>{});
}

}  // namespace
}  // namespace tessera
