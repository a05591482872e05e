// float16 and bfloat16 models through import, the graph passes and the
// reference interpreter: their initializers (raw and int32_data), inputs,
// outputs and Casts, computed in float32 between the model's Casts and
// rounded to its type where it casts, against references written here with
// base/half.h; and the half-precision data that must be refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/half.h"
#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::to_bytes;
using graph::test::to_floats;
using onnx::TensorProto;
using test::attr;
using test::bytes_of;
using test::ModelBuilder;
using test::run_model;
using test::values_of;

std::vector<uint16_t> halves(const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float f : v) out.push_back(float_to_half(f));
  return out;
}

// y = x * w + b, all float16, as a converted model holds it: w in raw_data,
// b in int32_data (one 16-bit pattern per entry, as ONNX stores them).
TEST(OnnxHalf, AFloat16ModelComputesInFloat32AndRoundsItsOutput) {
  ModelBuilder m(13);
  m.input("x", {4}, TensorProto::FLOAT16);
  const std::vector<float> w = {0.1f, -3.0f, 1000.0f, 1.0f / 3.0f}, b = {1.0f, 0.5f, -7.25f, 65504.0f};
  m.raw<uint16_t>("w", {4}, TensorProto::FLOAT16, halves(w));
  auto* bias = m.model.mutable_graph()->add_initializer();
  bias->set_name("b");
  bias->set_data_type(TensorProto::FLOAT16);
  bias->add_dims(4);
  for (uint16_t h : halves(b)) bias->add_int32_data(h);
  m.node("Mul", {"x", "w"}, {"xw"});
  m.node("Add", {"xw", "b"}, {"y"});
  m.output("y", {4}, TensorProto::FLOAT16);
  const std::vector<uint16_t> x = halves({2.0f, 0.3f, 65.0f, 3.0f});
  auto y = run_model(m, {bytes_of(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<uint16_t> want;
  for (int i = 0; i < 4; ++i) {
    const float xi = half_to_float(x[i]), wi = half_to_float(float_to_half(w[i])),
                bi = half_to_float(float_to_half(b[i]));
    want.push_back(float_to_half(xi * wi + bi));
  }
  EXPECT_EQ(values_of<uint16_t>(*y), want);
  EXPECT_EQ(want[3], 0x7bff);  // 65504 + 1: rounds back to the largest half
}

// Cast(to=FLOAT16) -> Cast(to=FLOAT) inside a float32 model is a rounding to
// float16: ties to even, subnormals, overflow to infinity. The same for
// bfloat16.
TEST(OnnxHalf, ACastToHalfPrecisionRoundsAsIeeeSays) {
  for (int to : {TensorProto::FLOAT16, TensorProto::BFLOAT16}) {
    ModelBuilder m(13);
    m.input("x", {8});
    attr(m.node("Cast", {"x"}, {"h"}), "to", int64_t{to});
    attr(m.node("Cast", {"h"}, {"y"}), "to", int64_t{TensorProto::FLOAT});
    m.output("y", {8});
    const std::vector<float> x = {
        1.0f + std::ldexp(1.0f, -11),          1.0f + std::ldexp(3.0f, -11), 65520.0f, 1e-8f, 3e-8f, -0.1f, 1e30f,
        std::numeric_limits<float>::infinity()};
    auto y = run_model(m, {to_bytes(x)});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const std::vector<float> got = to_floats(*y);
    for (size_t i = 0; i < x.size(); ++i) {
      const float want =
          to == TensorProto::FLOAT16 ? half_to_float(float_to_half(x[i])) : bfloat16_to_float(float_to_bfloat16(x[i]));
      EXPECT_EQ(got[i], want) << "element " << i << (to == TensorProto::FLOAT16 ? " float16" : " bfloat16");
    }
  }
}

// A Cast to float16 of a constant folds at import with the same rounding; a
// float16 Constant node (int32_data) widens exactly.
TEST(OnnxHalf, ConstantsRoundAndWidenAtImport) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.floats("c", {2}, {1.0f / 3.0f, 70000.0f});
  attr(m.node("Cast", {"c"}, {"ch"}), "to", int64_t{TensorProto::FLOAT16});
  attr(m.node("Cast", {"ch"}, {"cf"}), "to", int64_t{TensorProto::FLOAT});
  auto* k = m.node("Constant", {}, {"k"});
  auto* value = k->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::FLOAT16);
  value->mutable_t()->add_dims(2);
  for (uint16_t h : halves({0.1f, -2.5f})) value->mutable_t()->add_int32_data(h);
  attr(m.node("Cast", {"k"}, {"kf"}), "to", int64_t{TensorProto::FLOAT});
  m.node("Add", {"x", "cf"}, {"s"});
  m.node("Add", {"s", "kf"}, {"y"});
  m.output("y", {2});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->nodes().size(), 2u) << "the casts of constants fold";
  auto y = run_model(m, {to_bytes({0.0f, 0.0f})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<float> got = to_floats(*y);
  EXPECT_EQ(got[0], half_to_float(float_to_half(1.0f / 3.0f)) + half_to_float(float_to_half(0.1f)));
  EXPECT_EQ(got[1], std::numeric_limits<float>::infinity());
}

TEST(OnnxHalf, HalfDataOfTheWrongLengthIsRefusedNamingTheTensor) {
  ModelBuilder raw(13);
  raw.input("x", {4}, TensorProto::FLOAT16);
  raw.raw<uint16_t>("w", {4}, TensorProto::FLOAT16, {1, 2, 3});  // three values for four
  raw.node("Mul", {"x", "w"}, {"y"});
  raw.output("y", {4}, TensorProto::FLOAT16);
  auto g = import_onnx_bytes(raw.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("initializer 'w'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("raw data holds 6 bytes, the shape needs 8"), std::string::npos)
      << g.status().message();

  ModelBuilder typed(13);
  typed.input("x", {4}, TensorProto::FLOAT16);
  auto* w = typed.model.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT16);
  w->add_dims(4);
  w->add_int32_data(0x3c00);
  typed.node("Mul", {"x", "w"}, {"y"});
  typed.output("y", {4}, TensorProto::FLOAT16);
  g = import_onnx_bytes(typed.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("tensor holds 1 values, the shape needs 4"), std::string::npos)
      << g.status().message();
}

// An operator whose inputs ONNX requires to share one type, given float16
// and float32 (the importer computes both in float32, which would hide it):
// refused, naming the node.
TEST(OnnxHalf, MixingFloat16AndFloat32InOneOperatorIsRefusedNamingTheNode) {
  ModelBuilder m(13);
  m.input("x", {4}, TensorProto::FLOAT16);
  m.raw<float>("w", {4}, TensorProto::FLOAT, {1, 2, 3, 4});
  m.node("Mul", {"x", "w"}, {"y"})->set_name("scale_by_w");
  m.output("y", {4}, TensorProto::FLOAT16);
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("scale_by_w"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("inconsistent type"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace tessera::frontend
