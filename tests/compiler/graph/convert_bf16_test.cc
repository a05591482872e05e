// convert_bf16 (--precision bf16): which products it takes, the graph it
// leaves (one cast of each activation, weights packed in pairs, Gemm's C
// added after), and that the converted graph computes the float32 one to
// bfloat16's precision through the reference interpreter.
#include <gtest/gtest.h>

#include "base/half.h"
#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

using test::random_constant;

// x [2, 3, 8] -> MatMul by W1 [8, 6] and by W2 [8, 4] (one activation, two
// products), and a MatMul of two activations (x by x^T-shaped y).
Graph two_products() {
  Graph g;
  ValueId x = g.add_input("x", {2, 3, 8}, DType::f32());
  ValueId y = g.add_input("y", {2, 8, 5}, DType::f32());
  ValueId w1 = g.add_constant("w1", random_constant({8, 6}, 1));
  ValueId w2 = g.add_constant("w2", random_constant({8, 4}, 2));
  ValueId a = g.add_op("a", OpKind::kMatMul, NoAttrs{}, {x, w1}, {2, 3, 6}, DType::f32());
  ValueId b = g.add_op("b", OpKind::kMatMul, NoAttrs{}, {x, w2}, {2, 3, 4}, DType::f32());
  ValueId c = g.add_op("c", OpKind::kMatMul, NoAttrs{}, {x, y}, {2, 3, 5}, DType::f32());
  g.set_outputs({a, b, c});
  return g;
}

TEST(ConvertBf16, ProductsByConstantWeightsShareOneCastOfTheirActivation) {
  const Graph g = two_products();
  auto converted = convert_bf16(g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  std::vector<OpKind> kinds;
  for (const Node& n : converted->nodes()) kinds.push_back(n.kind);
  EXPECT_EQ(kinds, (std::vector<OpKind>{OpKind::kCast, OpKind::kMatMulBf16, OpKind::kMatMulBf16, OpKind::kMatMul}))
      << graph_to_string(*converted);
  const Node& product = converted->nodes()[1];
  EXPECT_EQ(product.inputs[0], converted->nodes()[0].outputs[0]);
  EXPECT_EQ(converted->value(product.inputs[0]).dtype, DType::bf16());
  const Constant& packed = converted->constant(product.inputs[1]);
  EXPECT_EQ(packed.dtype, DType::bf16());
  EXPECT_EQ(packed.shape, (std::vector<int64_t>{4, 6, 2}));
  // w1[3][5] is pair 1 (rows 2, 3), column 5, second of the pair; rounded.
  const Constant& w1 = g.constant(g.nodes()[0].inputs[1]);
  EXPECT_EQ(packed.at((1 * 6 + 5) * 2 + 1), bfloat16_to_float(float_to_bfloat16(static_cast<float>(w1.at(3 * 6 + 5)))));
  EXPECT_EQ(converted->constants().size(), 2u) << "the float32 weights are gone";
}

TEST(ConvertBf16, GemmWithTransposedWeightsAndBiasAddsItsBiasAfter) {
  Graph g;
  ValueId x = g.add_input("x", {3, 8}, DType::f32());
  ValueId w = g.add_constant("w", random_constant({5, 8}, 3));  // [N, K]: trans_b
  ValueId bias = g.add_constant("bias", random_constant({5}, 4));
  GemmAttrs attrs;
  attrs.trans_b = true;
  ValueId y = g.add_op("fc", OpKind::kGemm, attrs, {x, w, bias}, {3, 5}, DType::f32());
  g.set_outputs({y});
  auto converted = convert_bf16(g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  ASSERT_EQ(converted->nodes().size(), 3u) << graph_to_string(*converted);
  EXPECT_EQ(converted->nodes()[1].kind, OpKind::kMatMulBf16);
  EXPECT_EQ(converted->nodes()[2].kind, OpKind::kAdd);
  EXPECT_EQ(converted->nodes()[2].outputs[0], y);
  const auto xs = test::random_floats(24, 5);
  auto want = test::run_graph(g, {{x, test::to_bytes(xs)}});
  auto got = test::run_graph(*converted, {{x, test::to_bytes(xs)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // Eight products of operands rounded to 8 bits each: within 2^-7 of the
  // sum of their magnitudes (random_floats are within 1).
  EXPECT_TRUE(
      test::close(test::to_floats((*got)[0]), test::to_floats((*want)[0]), 0, 8 * 2 * std::ldexp(1.0, -8) + 1e-6));
}

TEST(ConvertBf16, ComputesTheFloat32GraphToBfloat16Precision) {
  const Graph g = two_products();
  auto converted = convert_bf16(g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  const auto xs = test::random_floats(48, 6), ys = test::random_floats(80, 7);
  const std::map<ValueId, test::Bytes> inputs = {{g.inputs()[0], test::to_bytes(xs)},
                                                 {g.inputs()[1], test::to_bytes(ys)}};
  auto want = test::run_graph(g, inputs);
  auto got = test::run_graph(*converted, inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(
        test::close(test::to_floats((*got)[i]), test::to_floats((*want)[i]), 0, 8 * 2 * std::ldexp(1.0, -8) + 1e-6))
        << "output " << i;
  EXPECT_EQ(test::to_floats((*got)[2]), test::to_floats((*want)[2])) << "the product of two activations stays float32";
}

// An NHWC conv (stride 2, padded, with a bias) of 6 channels: packed in
// pairs of channels, computing the float32 conv to bfloat16's precision.
TEST(ConvertBf16, AnNhwcConvRunsOnPairsOfChannels) {
  Graph g;
  ValueId x = g.add_input("x", {1, 7, 7, 6}, DType::f32());
  ValueId w = g.add_constant("w", random_constant({3, 3, 6, 5}, 10));
  ValueId bias = g.add_constant("bias", random_constant({5}, 11));
  ConvAttrs a;
  a.nhwc = true;
  a.stride_h = a.stride_w = 2;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("conv", OpKind::kConv, a, {x, w, bias}, {1, 4, 4, 5}, DType::f32());
  g.set_outputs({y});
  ASSERT_TRUE(bf16_eligible(g, g.nodes()[0]));
  auto converted = convert_bf16(g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  ASSERT_EQ(converted->nodes().size(), 2u) << graph_to_string(*converted);
  const Node& conv = converted->nodes()[1];
  EXPECT_EQ(conv.kind, OpKind::kConvBf16);
  EXPECT_EQ(converted->value(conv.inputs[1]).shape, (std::vector<int64_t>{3, 3, 3, 5, 2}));
  EXPECT_EQ(conv.inputs[2], bias);
  const auto xs = test::random_floats(294, 12);
  auto want = test::run_graph(g, {{x, test::to_bytes(xs)}});
  auto got = test::run_graph(*converted, {{x, test::to_bytes(xs)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // 54 products of operands rounded to 8 bits: within 2^-7 of their sum of magnitudes.
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), test::to_floats((*want)[0]), 0, 54 * 2 * std::ldexp(1.0, -8)));
  EXPECT_FALSE(test::close(test::to_floats((*got)[0]), test::to_floats((*want)[0]), 0, 1e-7)) << "nothing was rounded";
}

TEST(ConvertBf16, OddReductionsAndTransposedActivationsStayFloat32) {
  Graph g;
  ValueId x = g.add_input("x", {3, 7}, DType::f32());
  ValueId w = g.add_constant("w", random_constant({7, 4}, 8));
  ValueId y = g.add_op("odd", OpKind::kMatMul, NoAttrs{}, {x, w}, {3, 4}, DType::f32());
  ValueId z = g.add_input("z", {8, 3}, DType::f32());
  ValueId v = g.add_constant("v", random_constant({8, 2}, 9));
  GemmAttrs trans_a;
  trans_a.trans_a = true;
  ValueId u = g.add_op("ta", OpKind::kGemm, trans_a, {z, v}, {3, 2}, DType::f32());
  g.set_outputs({y, u});
  for (const Node& n : g.nodes()) EXPECT_FALSE(bf16_eligible(g, n)) << n.name;
  auto converted = convert_bf16(g);
  ASSERT_TRUE(converted.is_ok());
  EXPECT_EQ(converted->nodes().size(), 2u);
}

}  // namespace
}  // namespace tessera::graph
