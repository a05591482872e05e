// Steps a user (or a search space) can get wrong are kInvalidSchedule errors
// that name the step, and leave the state as it was.
#include <gtest/gtest.h>

#include "compiler/ops/op_spec.h"
#include "compiler/schedule/state.h"

namespace tessera {
namespace {

class InvalidStep : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inst = ops::parse_op_spec("conv2d:N=1,C=3,H=7,W=7,K=4,R=3,S=3,pad=1");
    ASSERT_TRUE(inst.is_ok());
    state_ = std::make_unique<State>(inst->dag);
    conv_ = state_->stage_index("conv2d");
    pad_ = state_->stage_index("pad");
  }

  // Applies `step`, expects kInvalidSchedule naming the step kind and
  // mentioning `why`, and an unchanged state.
  void expect_rejected(const Step& step, const std::string& why) {
    const std::string before = state_->to_string();
    const size_t steps = state_->steps().size();
    Status st = state_->apply(step);
    ASSERT_FALSE(st.is_ok()) << step.to_string();
    EXPECT_EQ(st.code(), ErrorCode::kInvalidSchedule) << st.to_string();
    EXPECT_NE(st.message().find(step_kind_name(step.kind())), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message() << " (should mention '" << why << "')";
    EXPECT_EQ(state_->to_string(), before);
    EXPECT_EQ(state_->steps().size(), steps);
  }

  std::unique_ptr<State> state_;
  int conv_ = 0, pad_ = 0;
};

TEST_F(InvalidStep, SplitFactorZero) {
  Step s = SplitStep{.stage = conv_, .iter = 1, .factors = {4, 0}, .nparts = 0};
  expect_rejected(s, "factor 0");
}

TEST_F(InvalidStep, SplitOfAnUnknownLoop) {
  Step s = SplitStep{.stage = conv_, .iter = 42, .factors = {2}, .nparts = 0};
  expect_rejected(s, "no loop 42");
}

TEST_F(InvalidStep, SplitOfAnUnknownStage) {
  Step s = SplitStep{.stage = 99, .iter = 0, .factors = {2}, .nparts = 0};
  expect_rejected(s, "no stage 99");
}

TEST_F(InvalidStep, ReorderDroppingALoop) {
  // conv2d has 7 loops (n k i j rc ry rx); the order lists 6.
  Step s = ReorderStep{.stage = conv_, .order = {0, 1, 2, 3, 4, 5}};
  expect_rejected(s, "may not drop");
}

TEST_F(InvalidStep, ReorderRepeatingALoop) {
  Step s = ReorderStep{.stage = conv_, .order = {0, 1, 2, 3, 4, 5, 5}};
  expect_rejected(s, "twice");
}

TEST_F(InvalidStep, FuseOfLoopsThatAreNotAdjacent) {
  Step s = FuseStep{.stage = conv_, .iters = {0, 2}};
  expect_rejected(s, "consecutive");
}

TEST_F(InvalidStep, FuseOfSpatialAndReduceLoops) {
  Step s = FuseStep{.stage = conv_, .iters = {3, 4}};
  expect_rejected(s, "spatial and reduce");
}

TEST_F(InvalidStep, ComputeAtItself) {
  Step s = ComputeAtStep{.stage = pad_, .target_stage = pad_, .target_iter = 0};
  expect_rejected(s, "itself");
}

TEST_F(InvalidStep, ComputeAtIntoAStageThatDoesNotReadIt) {
  auto inst = ops::parse_op_spec("dense:M=2,N=3,K=4,bias=1,relu=1");
  ASSERT_TRUE(inst.is_ok());
  state_ = std::make_unique<State>(inst->dag);
  // X.local feeds dense.matmul; the epilogue stage dense never reads it.
  ASSERT_TRUE(state_->cache_read(state_->stage_index("X"), {state_->stage_index("dense.matmul")}).is_ok());
  Step s = ComputeAtStep{
      .stage = state_->stage_index("X.local"), .target_stage = state_->stage_index("dense"), .target_iter = 0};
  expect_rejected(s, "does not read");
}

TEST_F(InvalidStep, ComputeAtOfTheOutput) {
  Step s = ComputeAtStep{.stage = conv_, .target_stage = pad_, .target_iter = 0};
  expect_rejected(s, "output");
}

TEST_F(InvalidStep, VectorizeBeyondSixtyFourLanes) {
  ASSERT_TRUE(state_->fuse(conv_, {2, 3}).is_ok());  // i@j: 49 lanes
  ASSERT_TRUE(state_->fuse(conv_, {1, 2}).is_ok());  // k@i@j: 196 lanes
  Step s = AnnotateStep{.stage = conv_, .iter = 1, .annotation = IterAnnotation::kVectorize};
  expect_rejected(s, "exceeds 64");
}

TEST_F(InvalidStep, ParallelReduceLoop) {
  Step s = AnnotateStep{.stage = conv_, .iter = 4, .annotation = IterAnnotation::kParallel};
  expect_rejected(s, "reduce loop");
}

TEST_F(InvalidStep, InlineOfAReduction) {
  auto inst = ops::parse_op_spec("softmax:M=2,N=3");
  ASSERT_TRUE(inst.is_ok());
  state_ = std::make_unique<State>(inst->dag);
  Step s = ComputeInlineStep{.stage = state_->stage_index("softmax.max")};
  expect_rejected(s, "reduction cannot be inlined");
}

TEST_F(InvalidStep, CacheWriteAfterALoopTransform) {
  ASSERT_TRUE(state_->split(conv_, 0, {1}).is_ok());
  Step s = CacheWriteStep{.stage = conv_};
  expect_rejected(s, "before any loop transform");
}

TEST_F(InvalidStep, RfactorWithFactorZero) {
  Step s = RfactorStep{.stage = conv_, .axis = 0, .factor = 0};
  expect_rejected(s, "positive");
}

TEST_F(InvalidStep, SplitOfALoopWithAStageAttached) {
  ASSERT_TRUE(state_->compute_at(pad_, conv_, 2).is_ok());
  Step s = SplitStep{.stage = conv_, .iter = 2, .factors = {2}, .nparts = 0};
  expect_rejected(s, "computed at it");
}

}  // namespace
}  // namespace tessera
