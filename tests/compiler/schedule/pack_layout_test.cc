// Packed layouts: the data helpers, the pack_layout step's checks, and the
// lowering's packed reads (an interpreted kernel over packed data computes
// what the plain kernel computes over plain data).
#include <gtest/gtest.h>

#include <numeric>

#include "compiler/codegen/interpreter.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/schedule/state.h"
#include "runtime/ndarray.h"

namespace tessera {
namespace {

TEST(PackLayout, PackedShapeMovesTheBlocksOutermostAndTheFactorInnermost) {
  EXPECT_EQ(packed_shape({3, 3, 64, 512}, {3, 32}), (std::vector<int64_t>{16, 3, 3, 64, 32}));
  EXPECT_EQ(packed_shape({8, 5}, {0, 4}), (std::vector<int64_t>{2, 5, 4}));
  EXPECT_EQ(packed_shape({6}, {0, 3}), (std::vector<int64_t>{2, 3}));
  // A factor that does not divide rounds the blocks up.
  EXPECT_EQ(packed_shape({8, 5}, {1, 4}), (std::vector<int64_t>{2, 8, 4}));
  // The last `inner` dimensions stay innermost: bfloat16 pairs.
  EXPECT_EQ(packed_shape({3, 3, 32, 512, 2}, {3, 32, 1}), (std::vector<int64_t>{16, 3, 3, 32, 32, 2}));
}

TEST(PackLayout, InnerDimensionsStayTogetherAfterTheFactor) {
  // A 2 x 4 x 2 tensor (4 columns of pairs) packed on its columns by 2,
  // the pairs innermost: [2][2][2][2].
  std::vector<int32_t> m(16);
  std::iota(m.begin(), m.end(), 0);
  std::vector<int32_t> packed(16, -1), back(16);
  pack_elements(m.data(), packed.data(), {2, 4, 2}, 4, {1, 2, 1});
  EXPECT_EQ(packed, (std::vector<int32_t>{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15}));
  unpack_elements(packed.data(), back.data(), {2, 4, 2}, 4, {1, 2, 1});
  EXPECT_EQ(back, m);
  // A factor that does not divide: 3 columns by 2, the fourth pair zero.
  std::vector<int32_t> odd(12), padded(16, -1);
  std::iota(odd.begin(), odd.end(), 1);
  pack_elements(odd.data(), padded.data(), {2, 3, 2}, 4, {1, 2, 1});
  EXPECT_EQ(padded, (std::vector<int32_t>{1, 2, 3, 4, 7, 8, 9, 10, 5, 6, 0, 0, 11, 12, 0, 0}));
}

TEST(PackLayout, ANonDividingFactorPadsTheLastBlockWithZeros) {
  // A 2 x 3 matrix packed on its columns by 2: [2][2][2], column 3 zero.
  const std::vector<int32_t> m = {1, 2, 3,  //
                                  4, 5, 6};
  std::vector<int32_t> packed(8, -1), back(6);
  pack_elements(m.data(), packed.data(), {2, 3}, 4, {1, 2});
  EXPECT_EQ(packed, (std::vector<int32_t>{1, 2, 4, 5, 3, 0, 6, 0}));
  unpack_elements(packed.data(), back.data(), {2, 3}, 4, {1, 2});
  EXPECT_EQ(back, m);
}

TEST(PackLayout, PackOrdersElementsAsThePackedShapeAndUnpackInvertsIt) {
  // A 2 x 4 matrix packed on its columns by 2: [4/2][2][2].
  const std::vector<int32_t> m = {0, 1, 2, 3,  //
                                  4, 5, 6, 7};
  std::vector<int32_t> packed(8), back(8);
  pack_elements(m.data(), packed.data(), {2, 4}, 4, {1, 2});
  EXPECT_EQ(packed, (std::vector<int32_t>{0, 1, 4, 5, 2, 3, 6, 7}));
  unpack_elements(packed.data(), back.data(), {2, 4}, 4, {1, 2});
  EXPECT_EQ(back, m);

  // Any rank, axis and element size round-trips.
  const std::vector<int64_t> shape = {2, 3, 4, 6};
  std::vector<uint16_t> x(2 * 3 * 4 * 6), p(x.size()), y(x.size());
  std::iota(x.begin(), x.end(), 0);
  for (int axis = 0; axis < 4; ++axis) {
    const int64_t factor = shape[static_cast<size_t>(axis)];
    pack_elements(x.data(), p.data(), shape, 2, {axis, factor});
    unpack_elements(p.data(), y.data(), shape, 2, {axis, factor});
    EXPECT_EQ(y, x) << "axis " << axis;
  }
}

class PackLayoutStep : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inst = ops::parse_op_spec("conv2d_nhwc:N=1,C=4,H=6,W=6,K=8,R=3,S=3,pad=1");
    ASSERT_TRUE(inst.is_ok());
    dag_ = inst->dag;
    state_ = std::make_unique<State>(dag_);
    w_ = state_->stage_index("W");
    ASSERT_GE(w_, 0);
  }

  void expect_rejected(int stage, int axis, int64_t factor, const std::string& why) {
    const std::string before = state_->to_string();
    const auto packed_before = packed_arguments(*state_);
    Status st = state_->pack_layout(stage, axis, factor);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), ErrorCode::kInvalidSchedule);
    EXPECT_NE(st.message().find("pack_layout"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message() << " (should mention '" << why << "')";
    EXPECT_EQ(state_->to_string(), before);
    EXPECT_EQ(packed_arguments(*state_), packed_before);
  }

  std::shared_ptr<const ComputeDAG> dag_;
  std::unique_ptr<State> state_;
  int w_ = -1;
};

TEST_F(PackLayoutStep, RejectsComputedStagesBadAxesFactorsAndRepacking) {
  expect_rejected(state_->stage_index("conv2d_nhwc"), 3, 4, "only inputs are packed");
  expect_rejected(w_, 4, 4, "has no dimension 4");
  expect_rejected(w_, -1, 4, "has no dimension -1");
  expect_rejected(w_, 3, 17, "must be at least 2 and at most twice");
  expect_rejected(w_, 3, 1, "must be at least 2 and at most twice");
  expect_rejected(99, 3, 4, "no stage 99");
  {
    const std::string before = state_->to_string();
    Status st = state_->pack_layout(w_, 3, 4, /*inner=*/1);  // the axis itself kept innermost
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("outside the last dimensions"), std::string::npos) << st.message();
    EXPECT_EQ(state_->to_string(), before);
  }
  ASSERT_TRUE(state_->pack_layout(w_, 3, 4).is_ok());
  EXPECT_NE(state_->to_string().find("W: input, stored as [2, 3, 3, 4, 4]"), std::string::npos) << state_->to_string();
  expect_rejected(w_, 2, 2, "is packed already");
}

TEST_F(PackLayoutStep, ReplaysFromJsonAndNamesTheArgument) {
  for (int inner : {0, 1}) {
    State state(dag_);
    ASSERT_TRUE(state.pack_layout(w_, 2 - inner, 4, inner).is_ok());
    const std::string text = steps_to_json(state.steps());
    // A step without inner dimensions is written as before they existed.
    EXPECT_EQ(text.find("inner") != std::string::npos, inner != 0) << text;
    auto steps = steps_from_json(text);
    ASSERT_TRUE(steps.is_ok()) << steps.status().to_string();
    auto replayed = replay(dag_, *steps);
    ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
    const auto packed = packed_arguments(*replayed);
    ASSERT_EQ(packed.size(), 1u);
    EXPECT_EQ(packed[0].first, 1);
    EXPECT_EQ(packed[0].second, (PackedLayout{2 - inner, 4, inner}));
  }
}

// Every axis and factor of the weight: the interpreted kernel reading packed
// weights matches the plain kernel reading plain ones, element for element.
TEST_F(PackLayoutStep, LoweredReadsOfPackedDataMatchThePlainKernel) {
  std::vector<runtime::NDArray> plain;
  uint64_t seed = 1;
  for (const Tensor& t : dag_->args()) {
    plain.push_back(runtime::NDArray::create(t->shape, t->dtype).value());
    if (!dag_->is_output(t)) plain.back().fill_random(seed++);
  }
  auto run = [&](const State& s, std::vector<runtime::NDArray>& arrays) {
    std::vector<void*> ptrs;
    for (auto& a : arrays) ptrs.push_back(a.raw_data());
    auto f = lower(s, "k");
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    Status st = interpret(*f, ptrs);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  };
  run(State(dag_), plain);
  const std::vector<int64_t>& shape = dag_->args()[1]->shape;  // 3 x 3 x 4 x 8
  for (int inner = 0; inner < 3; ++inner)
    for (int axis = 0; axis < 4 - inner; ++axis) {
      for (int64_t factor = 2; factor <= shape[static_cast<size_t>(axis)]; ++factor) {
        // Dividing or not (the last block padded).
        const PackedLayout layout{axis, factor, inner};
        State s(dag_);
        ASSERT_TRUE(s.pack_layout(w_, axis, factor, inner).is_ok());
        std::vector<runtime::NDArray> arrays;
        for (const auto& a : plain) arrays.push_back(a.copy().value());
        arrays[1] = runtime::NDArray::create(packed_shape(shape, layout), dag_->args()[1]->dtype).value();
        pack_elements(plain[1].raw_data(), arrays[1].raw_data(), shape, 4, layout);
        run(s, arrays);
        const float* got = arrays.back().data<float>();
        const float* want = plain.back().data<float>();
        for (int64_t i = 0; i < plain.back().numel(); ++i)
          ASSERT_EQ(got[i], want[i]) << "axis " << axis << " factor " << factor << " inner " << inner << " element "
                                     << i;
      }
    }
}

}  // namespace
}  // namespace tessera
