// convert_layout_nhwc on the values of 1-D convs: a conv of height 1 between
// reshapes, then GroupNorm as torch exports it (a layer norm over time,
// a scale and shift per channel), or GLU (two channel slices, a sigmoid, a
// product), and the next conv. Channels last, the reshapes vanish and the
// norm, the slices and the elementwise work follow the convs: no transpose
// between them, and the graph computes what it did.
#include <gtest/gtest.h>

#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

constexpr int64_t kIn = 3, kChannels = 8, kWidth = 20;

// x [1, 3, 20] -> Reshape [1, 3, 1, 20] -> Conv 1x3 -> [1, 8, 1, 18] ->
// Reshape [1, 8, 18] -> LayerNorm over the last axis -> * scale[8, 1] +
// shift[8, 1] -> Relu -> Reshape [1, 8, 1, 18] -> Conv 1x3 -> [1, 8, 1, 16]
// -> Reshape [1, 8, 16] -> `last` (a Transpose to [1, 16, 8], or nothing).
Graph one_d_conv_group_norm(bool transposed_output) {
  Graph g;
  const DType f32 = DType::f32();
  ValueId x = g.add_input("x", {1, kIn, kWidth}, f32);
  ValueId x4 = g.add_op("x4", OpKind::kReshape, NoAttrs{}, {x}, {1, kIn, 1, kWidth}, f32);
  ValueId w1 = g.add_constant("w1", Constant::from_floats({kChannels, kIn, 1, 3}, test::random_floats(72, 3)));
  ValueId c1 = g.add_op("conv1", OpKind::kConv, ConvAttrs{}, {x4, w1}, {1, kChannels, 1, kWidth - 2}, f32);
  ValueId c1_3 = g.add_op("squeeze1", OpKind::kReshape, NoAttrs{}, {c1}, {1, kChannels, kWidth - 2}, f32);
  ValueId groups = g.add_op("groups", OpKind::kReshape, NoAttrs{}, {c1_3}, {1, kChannels, kWidth - 2}, f32);
  ValueId ones = g.add_constant("ones", Constant::from_floats({kWidth - 2}, std::vector<float>(kWidth - 2, 1.0f)));
  ValueId zeros = g.add_constant("zeros", Constant::from_floats({kWidth - 2}, std::vector<float>(kWidth - 2, 0.0f)));
  ValueId normed =
      g.add_op("norm", OpKind::kLayerNorm, NormAttrs{2, 1e-5}, {groups, ones, zeros}, {1, kChannels, kWidth - 2}, f32);
  ValueId scale = g.add_constant("scale", Constant::from_floats({kChannels, 1}, test::random_floats(kChannels, 4)));
  ValueId shift = g.add_constant("shift", Constant::from_floats({kChannels, 1}, test::random_floats(kChannels, 5)));
  ValueId scaled = g.add_op("scaled", OpKind::kMul, NoAttrs{}, {normed, scale}, {1, kChannels, kWidth - 2}, f32);
  ValueId shifted = g.add_op("shifted", OpKind::kAdd, NoAttrs{}, {scaled, shift}, {1, kChannels, kWidth - 2}, f32);
  ValueId act = g.add_op("relu", OpKind::kRelu, NoAttrs{}, {shifted}, {1, kChannels, kWidth - 2}, f32);
  ValueId act4 = g.add_op("unsqueeze", OpKind::kReshape, NoAttrs{}, {act}, {1, kChannels, 1, kWidth - 2}, f32);
  ValueId w2 = g.add_constant("w2", Constant::from_floats({kChannels, kChannels, 1, 3}, test::random_floats(192, 6)));
  ValueId c2 = g.add_op("conv2", OpKind::kConv, ConvAttrs{}, {act4, w2}, {1, kChannels, 1, kWidth - 4}, f32);
  ValueId c2_3 = g.add_op("squeeze2", OpKind::kReshape, NoAttrs{}, {c2}, {1, kChannels, kWidth - 4}, f32);
  if (!transposed_output) {
    g.set_outputs({c2_3});
    return g;
  }
  ValueId t = g.add_op("features", OpKind::kTranspose, PermAttrs{{0, 2, 1}}, {c2_3}, {1, kWidth - 4, kChannels}, f32);
  g.set_outputs({t});
  return g;
}

int count(const Graph& g, OpKind kind) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.kind == kind;
  return n;
}

class OneDConvGroupNorm : public ::testing::TestWithParam<bool> {};

TEST_P(OneDConvGroupNorm, RunsChannelsLastWithoutATransposeBetweenTheConvs) {
  const bool transposed_output = GetParam();
  const Graph g = one_d_conv_group_norm(transposed_output);
  auto nhwc = convert_layout_nhwc(g);
  ASSERT_TRUE(nhwc.is_ok()) << nhwc.status().to_string();
  // The input's transpose to channels last (of a 3-channel map), and the
  // output's back to [1, 8, 16] unless the model wants it channels last.
  EXPECT_EQ(count(*nhwc, OpKind::kTranspose), transposed_output ? 1 : 2);
  // The norm channels last, over the conv's H and W: [1, 1, 18, 8] from axis 1.
  const Node* norm = nullptr;
  for (const Node& n : nhwc->nodes())
    if (n.kind == OpKind::kLayerNorm) norm = &n;
  ASSERT_NE(norm, nullptr);
  const auto& a = std::get<NormAttrs>(norm->attrs);
  EXPECT_EQ(a.axis, 1);
  EXPECT_EQ(a.count, 2);
  EXPECT_EQ(nhwc->value(norm->inputs[0]).shape, (std::vector<int64_t>{1, 1, kWidth - 2, kChannels}));

  EXPECT_TRUE(test::same_outputs(g, *nhwc, test::random_floats(kIn * kWidth, 7)));
}

INSTANTIATE_TEST_SUITE_P(OutputChannelsFirstAndLast, OneDConvGroupNorm, ::testing::Bool());

// x [1, 4, 12] -> Reshape [1, 4, 1, 12] -> Conv 1x1 to 8 channels ->
// Reshape [1, 8, 12] -> GLU: Slice channels 0-3 and 4-7, a * sigmoid(b) ->
// Reshape [1, 4, 1, 12] -> Conv 1x3 -> [1, 4, 1, 10].
TEST(OneDConvGlu, SlicesTheChannelsOfTheTwinWithoutATranspose) {
  Graph g;
  const DType f32 = DType::f32();
  ValueId x = g.add_input("x", {1, 4, 12}, f32);
  ValueId x4 = g.add_op("x4", OpKind::kReshape, NoAttrs{}, {x}, {1, 4, 1, 12}, f32);
  ValueId w1 = g.add_constant("w1", Constant::from_floats({8, 4, 1, 1}, test::random_floats(32, 8)));
  ValueId c1 = g.add_op("conv1", OpKind::kConv, ConvAttrs{}, {x4, w1}, {1, 8, 1, 12}, f32);
  ValueId c1_3 = g.add_op("squeeze", OpKind::kReshape, NoAttrs{}, {c1}, {1, 8, 12}, f32);
  ValueId a = g.add_op("glu.a", OpKind::kSlice, SliceAttrs{{0, 0, 0}, {1, 1, 1}}, {c1_3}, {1, 4, 12}, f32);
  ValueId b = g.add_op("glu.b", OpKind::kSlice, SliceAttrs{{0, 4, 0}, {1, 1, 1}}, {c1_3}, {1, 4, 12}, f32);
  ValueId sb = g.add_op("glu.sigmoid", OpKind::kSigmoid, NoAttrs{}, {b}, {1, 4, 12}, f32);
  ValueId glu = g.add_op("glu", OpKind::kMul, NoAttrs{}, {a, sb}, {1, 4, 12}, f32);
  ValueId glu4 = g.add_op("unsqueeze", OpKind::kReshape, NoAttrs{}, {glu}, {1, 4, 1, 12}, f32);
  ValueId w2 = g.add_constant("w2", Constant::from_floats({4, 4, 1, 3}, test::random_floats(48, 9)));
  ValueId c2 = g.add_op("conv2", OpKind::kConv, ConvAttrs{}, {glu4, w2}, {1, 4, 1, 10}, f32);
  g.set_outputs({c2});
  auto nhwc = convert_layout_nhwc(g);
  ASSERT_TRUE(nhwc.is_ok()) << nhwc.status().to_string();
  EXPECT_EQ(count(*nhwc, OpKind::kTranspose), 2);  // the input's, and the output's back to NCHW
  EXPECT_EQ(count(*nhwc, OpKind::kReshape), 1);    // the input's [1, 4, 12] -> [1, 4, 1, 12]
  for (const Node& n : nhwc->nodes())
    if (n.kind == OpKind::kSlice) EXPECT_EQ(nhwc->value(n.outputs[0]).shape, (std::vector<int64_t>{1, 1, 12, 4}));
  EXPECT_TRUE(test::same_outputs(g, *nhwc, test::random_floats(48, 10)));
}

}  // namespace
}  // namespace tessera::graph
