#include "compiler/graph/fuse_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

ConvAttrs pad1() {
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  return a;
}

// relu(conv(x, w, b) + skip): a residual block's tail.
Graph conv_bias_add_relu() {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 5, 5}, DType::f32());
  ValueId skip = g.add_input("skip", {1, 3, 5, 5}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({3, 2, 3, 3}, test::random_floats(54, 3)));
  ValueId b = g.add_constant("b", Constant::from_floats({3}, {0.5f, -0.5f, 0.25f}));
  ValueId y = g.add_op("conv", OpKind::kConv, pad1(), {x, w, b}, {1, 3, 5, 5}, DType::f32());
  ValueId s = g.add_op("add", OpKind::kAdd, NoAttrs{}, {y, skip}, {1, 3, 5, 5}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, NoAttrs{}, {s}, {1, 3, 5, 5}, DType::f32());
  g.set_outputs({r});
  return g;
}

TEST(FuseOps, ConvBiasAddReluIsOneGroup) {
  const Graph g = conv_bias_add_relu();
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 1u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_conv_add_relu");
  EXPECT_EQ(groups[0].pattern, OpPattern::kComplex);
  EXPECT_EQ(groups[0].inputs, (std::vector<ValueId>{0, 2, 3, 1}));  // x, w, b, skip
  EXPECT_EQ(groups[0].output, g.outputs()[0]);
}

TEST(FuseOps, FusedGroupMatchesNaiveLoops) {
  const Graph g = conv_bias_add_relu();
  const auto x = test::random_floats(50, 4), skip = test::random_floats(75, 5);
  auto got = test::run_graph(g, {{0, test::to_bytes(x)}, {1, test::to_bytes(skip)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = test::naive_conv(x, {1, 2, 5, 5}, test::to_floats(g.constant(2).bytes), {3, 2, 3, 3},
                               {0.5f, -0.5f, 0.25f}, pad1());
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0f, want[i] + skip[i]);
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// relu(conv(x, w) + sigmoid(skip)), the skip of shape `skip_shape`, and
// also a graph output when `skip_escapes`: a quantized residual's
// DequantizeLinear in float's clothes.
Graph conv_add_elementwise_skip(const std::vector<int64_t>& skip_shape, bool skip_escapes) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 5, 5}, DType::f32());
  ValueId skip = g.add_input("skip", skip_shape, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({3, 2, 3, 3}, test::random_floats(54, 3)));
  ValueId s = g.add_op("sig", OpKind::kSigmoid, NoAttrs{}, {skip}, skip_shape, DType::f32());
  ValueId y = g.add_op("conv", OpKind::kConv, pad1(), {x, w}, {1, 3, 5, 5}, DType::f32());
  ValueId a = g.add_op("add", OpKind::kAdd, NoAttrs{}, {y, s}, {1, 3, 5, 5}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, NoAttrs{}, {a}, {1, 3, 5, 5}, DType::f32());
  g.set_outputs(skip_escapes ? std::vector<ValueId>{r, s} : std::vector<ValueId>{r});
  return g;
}

// The add joins the conv's group and takes in the sigmoid's (created
// first, read by the add alone, at the add's shape): one kernel, the conv
// still its anchor, the sigmoid placed just before the add.
TEST(FuseOps, AnEpilogueTakesInTheElementwiseGroupOfItsOtherOperand) {
  const Graph g = conv_add_elementwise_skip({1, 3, 5, 5}, false);
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 1u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_conv_sigmoid_add_relu");
  EXPECT_EQ(g.nodes()[static_cast<size_t>(groups[0].anchor)].kind, OpKind::kConv);
  EXPECT_EQ(groups[0].pattern, OpPattern::kComplex);
  const auto x = test::random_floats(50, 4), skip = test::random_floats(75, 5);
  auto got = test::run_graph(g, {{0, test::to_bytes(x)}, {1, test::to_bytes(skip)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = test::naive_conv(x, {1, 2, 5, 5}, test::to_floats(g.constant(2).bytes), {3, 2, 3, 3}, {0, 0, 0}, pad1());
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0f, want[i] + 1.0f / (1.0f + std::exp(-skip[i])));
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// A smaller operand would be computed again for every output it broadcasts
// to, and one read elsewhere must be written out anyway: both stay apart.
TEST(FuseOps, AnEpilogueLeavesOperandsOfAnotherShapeOrReadElsewhere) {
  for (const bool escapes : {false, true}) {
    const Graph g = conv_add_elementwise_skip(
        escapes ? std::vector<int64_t>{1, 3, 5, 5} : std::vector<int64_t>{1, 3, 1, 1}, escapes);
    const auto groups = fuse_ops(g);
    ASSERT_EQ(groups.size(), 2u) << groups_to_string(g, groups);
    EXPECT_EQ(groups[0].name, "fused_sigmoid");
    EXPECT_EQ(groups[1].name, "fused_conv_add_relu");
  }
}

// SiLU, y * sigmoid(y): both readers of the conv's output join its group.
TEST(FuseOps, AValueWhoseReadersAllJoinStaysInsideTheGroup) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 4, 4}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({2, 2, 1, 1}, {1, 0, 0, 1}));
  ValueId y = g.add_op("conv", OpKind::kConv, ConvAttrs{}, {x, w}, {1, 2, 4, 4}, DType::f32());
  ValueId a = g.add_op("sig", OpKind::kSigmoid, NoAttrs{}, {y}, {1, 2, 4, 4}, DType::f32());
  ValueId m = g.add_op("mul", OpKind::kMul, NoAttrs{}, {y, a}, {1, 2, 4, 4}, DType::f32());
  g.set_outputs({m});
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 1u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_conv_sigmoid_mul");
  EXPECT_EQ(groups[0].inputs, (std::vector<ValueId>{x, w}));
}

// The conv's output is also read by a node that cannot join (a second
// conv): it stays the conv group's output. Its epilogue (sigmoid, mul)
// would be a group of its own, but the add after the second conv reads it
// alone, at its shape, and takes it in.
TEST(FuseOps, AValueReadOutsideTheGroupEndsIt) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 4, 4}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({2, 2, 1, 1}, {1, 0, 0, 1}));
  ValueId y = g.add_op("conv", OpKind::kConv, ConvAttrs{}, {x, w}, {1, 2, 4, 4}, DType::f32());
  ValueId a = g.add_op("sig", OpKind::kSigmoid, NoAttrs{}, {y}, {1, 2, 4, 4}, DType::f32());
  ValueId m = g.add_op("mul", OpKind::kMul, NoAttrs{}, {y, a}, {1, 2, 4, 4}, DType::f32());
  ValueId z = g.add_op("conv2", OpKind::kConv, ConvAttrs{}, {y, w}, {1, 2, 4, 4}, DType::f32());
  ValueId s = g.add_op("add", OpKind::kAdd, NoAttrs{}, {m, z}, {1, 2, 4, 4}, DType::f32());
  g.set_outputs({s});
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 2u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_conv");
  EXPECT_EQ(groups[0].output, y);
  EXPECT_EQ(groups[1].name, "fused_conv_sigmoid_mul_add");
  EXPECT_EQ(g.nodes()[static_cast<size_t>(groups[1].anchor)].name, "conv2");
  const auto xd = test::random_floats(32, 8);
  auto got = test::run_graph(g, {{x, test::to_bytes(xd)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<float> want(32);  // the identity conv twice: y = x
  for (size_t i = 0; i < 32; ++i) want[i] = xd[i] / (1.0f + std::exp(-xd[i])) + xd[i];
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// HardSwish as exporters write it, x * clip(x + 3, 0, 6) / 6, after a conv:
// x has two readers in the chain, and the whole chain is the conv's epilogue.
TEST(FuseOps, DecomposedHardSwishFusesIntoTheConv) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 3, 3}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({2, 2, 1, 1}, {4, 0, 0, -4}));
  ValueId three = g.add_constant("three", Constant::from_floats({}, {3}));
  ValueId six = g.add_constant("six", Constant::from_floats({}, {6}));
  const std::vector<int64_t> shape = {1, 2, 3, 3};
  ValueId y = g.add_op("conv", OpKind::kConv, ConvAttrs{}, {x, w}, shape, DType::f32());
  ValueId p = g.add_op("add", OpKind::kAdd, NoAttrs{}, {y, three}, shape, DType::f32());
  ValueId c = g.add_op("clip", OpKind::kClip, AffineAttrs{0, 6}, {p}, shape, DType::f32());
  ValueId m = g.add_op("mul", OpKind::kMul, NoAttrs{}, {y, c}, shape, DType::f32());
  ValueId d = g.add_op("div", OpKind::kDiv, NoAttrs{}, {m, six}, shape, DType::f32());
  g.set_outputs({d});
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 1u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_conv_add_clip_mul_div");
  EXPECT_EQ(groups[0].pattern, OpPattern::kComplex);
  const auto xd = test::random_floats(18, 9);
  auto got = test::run_graph(g, {{x, test::to_bytes(xd)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<float> want(18);
  for (size_t i = 0; i < 18; ++i) {
    const float v = (i < 9 ? 4.0f : -4.0f) * xd[i];
    want[i] = v * std::min(6.0f, std::max(0.0f, v + 3.0f)) / 6.0f;
  }
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// HardSigmoid times its own input, y * hardsigmoid(y), after a conv
// (MobileNetV3's h-swish as some exporters write it): one kernel.
TEST(FuseOps, HardSigmoidTimesItsInputFusesIntoTheConv) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 3, 3}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({2, 2, 1, 1}, {4, 0, 0, -4}));
  const std::vector<int64_t> shape = {1, 2, 3, 3};
  ValueId y = g.add_op("conv", OpKind::kConv, ConvAttrs{}, {x, w}, shape, DType::f32());
  ValueId h = g.add_op("hsig", OpKind::kHardSigmoid, AffineAttrs{1.0 / 6, 0.5}, {y}, shape, DType::f32());
  ValueId m = g.add_op("mul", OpKind::kMul, NoAttrs{}, {h, y}, shape, DType::f32());
  g.set_outputs({m});
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 1u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_conv_hard_sigmoid_mul");
  const auto xd = test::random_floats(18, 10);
  auto got = test::run_graph(g, {{x, test::to_bytes(xd)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<float> want(18);
  for (size_t i = 0; i < 18; ++i) {
    const float v = (i < 9 ? 4.0f : -4.0f) * xd[i];
    want[i] = v * std::min(1.0f, std::max(0.0f, v / 6.0f + 0.5f));
  }
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

TEST(FuseOps, InjectiveAfterConvStartsAGroupButJoinsElementwiseNeighbours) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2, 2, 2}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({2, 2, 1, 1}, {1, 0, 0, 1}));
  ValueId y = g.add_op("conv", OpKind::kConv, ConvAttrs{}, {x, w}, {1, 2, 2, 2}, DType::f32());
  ValueId t = g.add_op("transpose", OpKind::kTranspose, PermAttrs{{0, 2, 3, 1}}, {y}, {1, 2, 2, 2}, DType::f32());
  ValueId r = g.add_op("reshape", OpKind::kReshape, NoAttrs{}, {t}, {1, 8}, DType::f32());
  ValueId s = g.add_op("tanh", OpKind::kTanh, NoAttrs{}, {r}, {1, 8}, DType::f32());
  g.set_outputs({s});
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 2u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[1].name, "fused_transpose_reshape_tanh");
  const auto xd = test::random_floats(8, 6);
  auto got = test::run_graph(g, {{x, test::to_bytes(xd)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // out[(h*2 + w)*2 + c] = tanh(x[c, h, w]) with the identity 1x1 conv.
  std::vector<float> want(8);
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h)
      for (int ww = 0; ww < 2; ++ww) want[(h * 2 + ww) * 2 + c] = std::tanh(xd[(c * 2 + h) * 2 + ww]);
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// GLU: a, b = split(x); y = a * sigmoid(b).
Graph glu(bool a_is_an_output) {
  Graph g;
  ValueId x = g.add_input("x", {2, 4}, DType::f32());
  ValueId a = g.add_op("a", OpKind::kSlice, SliceAttrs{{0, 0}, {1, 1}}, {x}, {2, 2}, DType::f32());
  ValueId b = g.add_op("b", OpKind::kSlice, SliceAttrs{{0, 2}, {1, 1}}, {x}, {2, 2}, DType::f32());
  ValueId s = g.add_op("sig", OpKind::kSigmoid, NoAttrs{}, {b}, {2, 2}, DType::f32());
  ValueId y = g.add_op("mul", OpKind::kMul, NoAttrs{}, {a, s}, {2, 2}, DType::f32());
  g.set_outputs(a_is_an_output ? std::vector<ValueId>{y, a} : std::vector<ValueId>{y});
  return g;
}

void expect_glu(const Graph& g) {
  const auto xd = test::random_floats(8, 11);
  auto got = test::run_graph(g, {{g.inputs()[0], test::to_bytes(xd)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) want.push_back(xd[r * 4 + c] / (1.0f + std::exp(-xd[r * 4 + 2 + c])));
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// The mul joins the group of one input (sigmoid's, the later) and takes in
// the other's light group: one kernel.
TEST(FuseOps, AnElementwiseNodeTakesInTheLightGroupsOfItsInputs) {
  const Graph g = glu(false);
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 1u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_slice_slice_sigmoid_mul");
  expect_glu(g);
}

// With `a` a graph output too (pinned), its group stays apart: the mul may not
// join it (created first, it would read sigmoid's group, created later) and
// joins sigmoid's.
TEST(FuseOps, ANodeNeverJoinsAGroupThatWouldReadALaterGroup) {
  const Graph g = glu(true);
  const auto groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 2u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_slice");
  EXPECT_EQ(groups[1].name, "fused_slice_sigmoid_mul");
  expect_glu(g);
}

TEST(FuseOps, PoolTakesAnElementwiseEpilogue) {
  Graph g;
  ValueId x = g.add_input("x", {1, 1, 4, 4}, DType::f32());
  PoolAttrs p;
  p.kernel_h = p.kernel_w = p.stride_h = p.stride_w = 2;
  ValueId y = g.add_op("pool", OpKind::kMaxPool, p, {x}, {1, 1, 2, 2}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, NoAttrs{}, {y}, {1, 1, 2, 2}, DType::f32());
  g.set_outputs({r});
  EXPECT_EQ(fuse_ops(g).size(), 1u);
}

// softmax(q k^T / 2 + mask) v with the values' projection (a Relu here)
// between the scores and the softmax in graph order, as exporters write it:
// one group, placed where the context is; the Relu its own group before it.
Graph attention_chain(bool probs_read_twice) {
  Graph g;
  const DType f = DType::f32();
  ValueId q = g.add_input("q", {1, 2, 6, 4}, f);
  ValueId kt = g.add_input("kt", {1, 2, 4, 5}, f);
  ValueId v_in = g.add_input("v", {1, 2, 5, 3}, f);
  ValueId mask = g.add_input("mask", {1, 1, 1, 5}, f);
  ValueId two = g.add_constant("two", Constant::from_floats({}, {2.0f}));
  ValueId s = g.add_op("scores", OpKind::kMatMul, NoAttrs{}, {q, kt}, {1, 2, 6, 5}, f);
  ValueId v = g.add_op("values", OpKind::kRelu, NoAttrs{}, {v_in}, {1, 2, 5, 3}, f);
  ValueId d = g.add_op("scaled", OpKind::kDiv, NoAttrs{}, {s, two}, {1, 2, 6, 5}, f);
  ValueId m = g.add_op("masked", OpKind::kAdd, NoAttrs{}, {d, mask}, {1, 2, 6, 5}, f);
  ValueId p = g.add_op("probs", OpKind::kSoftmax, AxisAttrs{3}, {m}, {1, 2, 6, 5}, f);
  ValueId c = g.add_op("context", OpKind::kMatMul, NoAttrs{}, {p, v}, {1, 2, 6, 3}, f);
  g.set_outputs(probs_read_twice ? std::vector<ValueId>{c, p} : std::vector<ValueId>{c});
  return g;
}

// Attention chains of any size (the default fuses scores of 4 MiB or more).
const FuseOptions kAnyAttention{0};

TEST(FuseOps, AnAttentionChainIsOneGroupWhereItsContextIs) {
  const Graph g = attention_chain(false);
  const auto groups = fuse_ops(g, kAnyAttention);
  ASSERT_EQ(groups.size(), 2u) << groups_to_string(g, groups);
  EXPECT_EQ(groups[0].name, "fused_relu");
  EXPECT_EQ(groups[1].name, "fused_matmul_div_add_softmax_matmul");
  EXPECT_EQ(groups[1].pattern, OpPattern::kComplex);
  EXPECT_EQ(groups[1].anchor, 0);  // the scores' MatMul
  EXPECT_EQ(groups[1].output, g.outputs()[0]);
  // And it computes what the nodes do: softmax(q kt / 2 + mask) v.
  const auto q = test::random_floats(48, 1), kt = test::random_floats(40, 2), v = test::random_floats(30, 3),
             mask = test::random_floats(5, 4);
  auto got = test::run_graph(
      g, {{0, test::to_bytes(q)}, {1, test::to_bytes(kt)}, {2, test::to_bytes(v)}, {3, test::to_bytes(mask)}},
      kAnyAttention);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<float> want(2 * 6 * 3, 0.0f);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 6; ++i) {
      float row[5], top = -1e30f, total = 0;
      for (int j = 0; j < 5; ++j) {
        float dot = 0;
        for (int k = 0; k < 4; ++k) dot += q[(h * 6 + i) * 4 + k] * kt[(h * 4 + k) * 5 + j];
        row[j] = dot / 2 + mask[j];
        top = std::max(top, row[j]);
      }
      for (float& x : row) total += x = std::exp(x - top);
      for (int j = 0; j < 5; ++j)
        for (int c = 0; c < 3; ++c)
          want[(h * 6 + i) * 3 + c] += row[j] / total * std::max(0.0f, v[(h * 5 + j) * 3 + c]);
    }
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want));
}

// The probabilities are also a graph output: the scores' product, the
// softmax and the context are their usual groups.
TEST(FuseOps, AttentionWhoseProbabilitiesAreReadElsewhereIsNoChain) {
  const Graph g = attention_chain(true);
  const auto groups = fuse_ops(g, kAnyAttention);
  for (const FusedGroup& group : groups)
    EXPECT_EQ(group.name.find("softmax_matmul"), std::string::npos) << groups_to_string(g, groups);
}

// By default only scores too large for a core's cache fuse: these take 240
// bytes, and the product, the softmax and the context stay kernels of their own.
TEST(FuseOps, SmallAttentionStaysThreeKernels) {
  const Graph g = attention_chain(false);
  const auto groups = fuse_ops(g);
  for (const FusedGroup& group : groups)
    EXPECT_EQ(group.name.find("softmax_matmul"), std::string::npos) << groups_to_string(g, groups);
}

}  // namespace
}  // namespace tessera::graph
