// convert_fp16_weights (--precision fp16): which products keep their weights
// in float16, one copy of each weight for all its products, and that the
// converted graph computes the float32 one to float16's precision through
// the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>

#include "base/half.h"
#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

using test::random_constant;

// x [3, 8] by W [8, 6] twice (one weight, two products), by a Gemm's
// transposed V [5, 8] with a bias, and by the activation y [8, 4].
struct Products {
  Graph g;
  ValueId x, y, w, v;
};

Products products() {
  Products p;
  Graph& g = p.g;
  p.x = g.add_input("x", {3, 8}, DType::f32());
  p.y = g.add_input("y", {8, 4}, DType::f32());
  p.w = g.add_constant("w", random_constant({8, 6}, 1));
  p.v = g.add_constant("v", random_constant({5, 8}, 2));
  ValueId bias = g.add_constant("bias", random_constant({5}, 3));
  GemmAttrs trans_b;
  trans_b.trans_b = true;
  ValueId a = g.add_op("a", OpKind::kMatMul, NoAttrs{}, {p.x, p.w}, {3, 6}, DType::f32());
  ValueId b = g.add_op("b", OpKind::kMatMul, NoAttrs{}, {p.x, p.w}, {3, 6}, DType::f32());
  ValueId c = g.add_op("c", OpKind::kGemm, trans_b, {p.x, p.v, bias}, {3, 5}, DType::f32());
  ValueId d = g.add_op("d", OpKind::kMatMul, NoAttrs{}, {p.x, p.y}, {3, 4}, DType::f32());
  g.set_outputs({a, b, c, d});
  return p;
}

TEST(ConvertFp16Weights, ProductsByConstantWeightsReadOneFloat16CopyOfEach) {
  const Products p = products();
  auto converted = convert_fp16_weights(p.g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  const auto& nodes = converted->nodes();
  ASSERT_EQ(nodes.size(), 4u) << graph_to_string(*converted);
  EXPECT_EQ(nodes[0].inputs[1], nodes[1].inputs[1]) << "one copy of w for both of its products";
  const Constant& w16 = converted->constant(nodes[0].inputs[1]);
  EXPECT_EQ(w16.dtype, DType::f16());
  EXPECT_EQ(w16.shape, (std::vector<int64_t>{8, 6}));
  const Constant& w = p.g.constant(p.w);
  EXPECT_EQ(w16.at(3 * 6 + 5), half_to_float(float_to_half(static_cast<float>(w.at(3 * 6 + 5)))));
  EXPECT_EQ(converted->constant(nodes[2].inputs[1]).dtype, DType::f16()) << "the Gemm's [N, K] weight";
  EXPECT_EQ(converted->constant(nodes[2].inputs[2]).dtype, DType::f32()) << "a bias stays float32";
  EXPECT_EQ(nodes[3].inputs[1], p.y) << "a product of two activations is left alone";
  EXPECT_EQ(converted->constants().size(), 3u) << "the float32 weights are gone: " << graph_to_string(*converted);
}

TEST(ConvertFp16Weights, ComputesTheFloat32GraphToFloat16Precision) {
  const Products p = products();
  auto converted = convert_fp16_weights(p.g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  const auto xs = test::random_floats(24, 6), ys = test::random_floats(32, 7);
  const std::map<ValueId, test::Bytes> inputs = {{p.x, test::to_bytes(xs)}, {p.y, test::to_bytes(ys)}};
  auto want = test::run_graph(p.g, inputs);
  auto got = test::run_graph(*converted, inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // Eight products, each weight within 2^-11 of itself (inputs within 1).
  for (size_t i = 0; i < 3; ++i) {
    const auto g = test::to_floats((*got)[i]), f = test::to_floats((*want)[i]);
    EXPECT_TRUE(test::close(g, f, 0, 8 * std::ldexp(1.0, -11) + 1e-6)) << "output " << i;
    EXPECT_NE(g, f) << "output " << i << " read no float16 weight";
  }
  EXPECT_EQ(test::to_floats((*got)[3]), test::to_floats((*want)[3])) << "the product of two activations";
}

// NHWC convolutions, direct (stride 2, padded, a bias) and by Winograd
// (3 x 3, stride 1: its transformed weights), keep their weights in float16
// and compute the float32 convs to float16's precision; an NCHW one stays.
TEST(ConvertFp16Weights, NhwcConvolutionsDirectAndByWinogradReadFloat16Weights) {
  Graph g;
  ValueId x = g.add_input("x", {1, 8, 8, 6}, DType::f32());
  ValueId w1 = g.add_constant("w1", random_constant({3, 3, 6, 5}, 10));
  ValueId bias = g.add_constant("bias", random_constant({5}, 11));
  ValueId w2 = g.add_constant("w2", random_constant({3, 3, 6, 4}, 12));
  ConvAttrs strided;
  strided.nhwc = true;
  strided.stride_h = strided.stride_w = 2;
  strided.pad_top = strided.pad_left = strided.pad_bottom = strided.pad_right = 1;
  ConvAttrs same = strided;
  same.stride_h = same.stride_w = 1;
  ValueId a = g.add_op("a", OpKind::kConv, strided, {x, w1, bias}, {1, 4, 4, 5}, DType::f32());
  ValueId b = g.add_op("b", OpKind::kConv, same, {x, w2}, {1, 8, 8, 4}, DType::f32());
  g.set_outputs({a, b});
  auto winograd = convert_winograd(g, [](const Node& n) { return n.name == "b"; });
  ASSERT_TRUE(winograd.is_ok()) << winograd.status().to_string();
  auto converted = convert_fp16_weights(*winograd);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  int half = 0;
  for (const Node& n : converted->nodes())
    if (n.kind == OpKind::kConv) {
      EXPECT_EQ(converted->value(n.inputs[1]).dtype, DType::f16()) << n.name;
      ++half;
    }
  EXPECT_EQ(half, 2) << graph_to_string(*converted);
  const auto xs = test::random_floats(384, 13);
  auto want = test::run_graph(g, {{x, test::to_bytes(xs)}});
  auto got = test::run_graph(*converted, {{x, test::to_bytes(xs)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // 54 products, each weight within 2^-11 of itself (Winograd's transform
  // sums up to 4 of them: 2^-9 of the weights' magnitudes).
  for (size_t i = 0; i < 2; ++i) {
    const auto h = test::to_floats((*got)[i]), f = test::to_floats((*want)[i]);
    EXPECT_TRUE(test::close(h, f, 0, 54 * 4 * std::ldexp(1.0, -9) + 1e-5)) << "output " << i;
    EXPECT_FALSE(test::close(h, f, 0, 1e-7)) << "output " << i << ": nothing was rounded";
  }
  ConvAttrs nchw;
  Graph g2;
  ValueId x2 = g2.add_input("x", {1, 6, 8, 8}, DType::f32());
  ValueId w3 = g2.add_constant("w", random_constant({5, 6, 3, 3}, 14));
  g2.set_outputs({g2.add_op("c", OpKind::kConv, nchw, {x2, w3}, {1, 5, 6, 6}, DType::f32())});
  EXPECT_FALSE(fp16_weights_eligible(g2, g2.nodes()[0])) << "NCHW convs keep float32 weights";
}

TEST(ConvertFp16Weights, OtherTypesStayAsTheyAre) {
  Graph g;
  ValueId x = g.add_input("x", {3, 8}, DType::f64());
  ValueId w = g.add_constant("w", Constant{DType::f64(), {8, 2}, std::vector<uint8_t>(8 * 2 * 8)});
  g.set_outputs({g.add_op("a", OpKind::kMatMul, NoAttrs{}, {x, w}, {3, 2}, DType::f64())});
  EXPECT_FALSE(fp16_weights_eligible(g, g.nodes()[0])) << "a float64 product";
  auto converted = convert_fp16_weights(g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  EXPECT_EQ(converted->nodes()[0].inputs, g.nodes()[0].inputs);
}

// A product of a constant activation is not always folded (an LSTM's first
// step by its zero initial state runs as any step does): it reads the
// float16 weight too, so a weight it shares with the other steps is stored
// once, in float16, not in both types.
TEST(ConvertFp16Weights, AConstantActivationReadsTheSameFloat16Weight) {
  Graph g;
  ValueId x = g.add_input("x", {3, 8}, DType::f32());
  ValueId k = g.add_constant("k", random_constant({3, 8}, 4));
  ValueId w = g.add_constant("w", random_constant({8, 2}, 5));
  ValueId a = g.add_op("a", OpKind::kMatMul, NoAttrs{}, {x, w}, {3, 2}, DType::f32());
  ValueId b = g.add_op("b", OpKind::kMatMul, NoAttrs{}, {k, w}, {3, 2}, DType::f32());
  g.set_outputs({a, b});
  EXPECT_TRUE(fp16_weights_eligible(g, g.nodes()[1]));
  auto converted = convert_fp16_weights(g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  EXPECT_EQ(converted->nodes()[0].inputs[1], converted->nodes()[1].inputs[1]);
  EXPECT_EQ(converted->constant(converted->nodes()[1].inputs[1]).dtype, DType::f16());
  EXPECT_EQ(converted->constants().size(), 2u) << "k, and w in float16 only: " << graph_to_string(*converted);
}

}  // namespace
}  // namespace tessera::graph
