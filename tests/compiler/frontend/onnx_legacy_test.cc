// Opset < 7 binary operators (compiler/frontend/onnx_legacy.cc): the
// `broadcast` and `axis` attributes, against hand-computed values through
// lower + the reference interpreter, and the errors for shapes they refuse.
#include <gtest/gtest.h>

#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::random_floats;
using graph::test::to_bytes;
using graph::test::to_floats;
using test::attr;
using test::ModelBuilder;
using test::run_model;
using test::values_of;

// A one-node model A op B -> C at `opset`; B a graph input of shape `bs`.
ModelBuilder binary(int64_t opset, const std::string& op, const std::vector<int64_t>& as,
                    const std::vector<int64_t>& bs, int64_t broadcast, int64_t axis = INT64_MIN,
                    int out_type = onnx::TensorProto::FLOAT) {
  ModelBuilder m(opset);
  m.input("a", as);
  m.input("b", bs);
  auto* n = m.node(op, {"a", "b"}, {"c"});
  if (broadcast >= 0) attr(n, "broadcast", broadcast);
  if (axis != INT64_MIN) attr(n, "axis", axis);
  m.output("c", as, out_type);
  return m;
}

TEST(OnnxLegacyBroadcast, AddAlignsBAtTheAxis) {
  // A 2x3x4x5, B 3x4 at axis 1: c[i, j, k, l] = a[i, j, k, l] + b[j, k].
  const auto a = random_floats(120, 1), b = random_floats(12, 2);
  auto c = run_model(binary(6, "Add", {2, 3, 4, 5}, {3, 4}, 1, 1), {to_bytes(a), to_bytes(b)});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  std::vector<float> want(120);
  for (size_t i = 0; i < 120; ++i) want[i] = a[i] + b[(i / 5) % 12];
  EXPECT_EQ(to_floats(*c), want);
}

TEST(OnnxLegacyBroadcast, MulWithoutAnAxisAlignsTheTrailingDimensions) {
  const auto a = random_floats(30, 3), b = random_floats(5, 4);
  auto c = run_model(binary(6, "Mul", {2, 3, 5}, {5}, 1), {to_bytes(a), to_bytes(b)});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  std::vector<float> want(30);
  for (size_t i = 0; i < 30; ++i) want[i] = a[i] * b[i % 5];
  EXPECT_EQ(to_floats(*c), want);
}

TEST(OnnxLegacyBroadcast, OneElementBIsAScalar) {
  auto c = run_model(binary(6, "Sub", {2, 3}, {1}, 1), {to_bytes({1, 2, 3, 4, 5, 6}), to_bytes({10})});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(to_floats(*c), (std::vector<float>{-9, -8, -7, -6, -5, -4}));
}

TEST(OnnxLegacyBroadcast, GreaterAtAxisZeroComparesPerRow) {
  auto c = run_model(binary(1, "Greater", {2, 3}, {2}, 1, 0, onnx::TensorProto::BOOL),
                     {to_bytes({1, 5, 9, 1, 5, 9}), to_bytes({4, 8})});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(*c), (std::vector<uint8_t>{0, 1, 1, 0, 0, 1}));
}

TEST(OnnxLegacyBroadcast, SizeOneDimensionsOfBBroadcastAsExportersWroteThem) {
  // PyTorch's opset-6 exports: B 2x1 against A 2x3 with broadcast=1.
  auto c = run_model(binary(6, "Add", {2, 3}, {2, 1}, 1), {to_bytes({1, 2, 3, 4, 5, 6}), to_bytes({10, 20})});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(to_floats(*c), (std::vector<float>{11, 12, 13, 24, 25, 26}));
}

TEST(OnnxLegacyBroadcast, PReluSlopeOfOpset6IsPerChannel) {
  // X 1x2x2x2 (channels 2, last dim also 2): the slope [0.5, 2] goes by channel, not by column.
  ModelBuilder m(6);
  m.input("x", {1, 2, 2, 2});
  m.floats("slope", {2}, {0.5f, 2.0f});
  m.node("PRelu", {"x", "slope"}, {"y"});
  m.output("y", {1, 2, 2, 2});
  auto y = run_model(m, {to_bytes({-2, 2, -4, 4, -2, 2, -4, 4})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(to_floats(*y), (std::vector<float>{-1, 2, -2, 4, -4, 2, -8, 4}));
}

TEST(OnnxLegacyBroadcast, EqualShapesNeedNoBroadcast) {
  auto c = run_model(binary(6, "Div", {3}, {3}, -1), {to_bytes({2, 9, 8}), to_bytes({2, 3, 4})});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(to_floats(*c), (std::vector<float>{1, 3, 2}));
}

TEST(OnnxLegacyBroadcast, DifferentShapesWithoutBroadcastAreAnError) {
  // Opset 7 would broadcast these; opset 6 without broadcast=1 refuses them.
  auto g = import_onnx_bytes(binary(6, "Add", {2, 3}, {3}, -1).bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("broadcast=0 (opset < 7) needs one shape"), std::string::npos)
      << g.status().to_string();
}

TEST(OnnxLegacyBroadcast, BThatDoesNotMatchAAtTheAxisIsAnError) {
  auto g = import_onnx_bytes(binary(6, "Add", {2, 3, 4}, {4}, 1, 1).bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("does not match A [2, 3, 4] at axis 1"), std::string::npos)
      << g.status().to_string();
}

}  // namespace
}  // namespace tessera::frontend
