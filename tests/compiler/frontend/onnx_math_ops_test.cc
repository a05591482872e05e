// The converters of compiler/frontend/onnx_math_ops.cc on small models with
// odd shapes and broadcasting, run through lower + the reference
// interpreter, against C++ references (std:: math in double) or values
// computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::close;
using graph::test::random_floats;
using graph::test::to_bytes;
using graph::test::to_floats;
using test::attr;
using test::bytes_of;
using test::ModelBuilder;
using test::run_model;
using test::values_of;

// One unary operator: its attributes, the interval its inputs come from and
// the reference.
struct UnaryCase {
  const char* op;
  std::function<void(onnx::NodeProto*)> attrs;
  float lo, hi;
  std::function<double(double)> ref;
};

void no_attrs(onnx::NodeProto*) {}

std::ostream& operator<<(std::ostream& os, const UnaryCase& c) {
  return os << c.op;
}

class OnnxUnary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(OnnxUnary, MatchesTheReferenceOnAnOddShape) {
  const UnaryCase& c = GetParam();
  ModelBuilder m(17);
  m.input("x", {3, 5, 7});
  c.attrs(m.node(c.op, {"x"}, {"y"}));
  m.output("y", {3, 5, 7});
  std::vector<float> x = random_floats(105, 7);
  for (float& v : x) v = c.lo + (v + 1.0f) * 0.5f * (c.hi - c.lo);
  x[0] = c.lo, x[1] = c.hi;  // the ends of the interval
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<float> want;
  for (float v : x) want.push_back(static_cast<float>(c.ref(v)));
  EXPECT_TRUE(close(to_floats(*y), want));
}

double softplus(double x) {
  return std::log(1.0 + std::exp(x));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, OnnxUnary,
    ::testing::Values(
        UnaryCase{"Neg", no_attrs, -3, 3, [](double x) { return -x; }},
        UnaryCase{"Abs", no_attrs, -3, 3, [](double x) { return std::fabs(x); }},
        UnaryCase{"Sign", no_attrs, -3, 3, [](double x) { return x > 0   ? 1.0
                                                                 : x < 0 ? -1.0
                                                                         : 0.0; }},
        UnaryCase{"Reciprocal", no_attrs, 0.5, 4, [](double x) { return 1 / x; }},
        UnaryCase{"Sqrt", no_attrs, 0, 9, [](double x) { return std::sqrt(x); }},
        UnaryCase{"Exp", no_attrs, -5, 5, [](double x) { return std::exp(x); }},
        UnaryCase{"Log", no_attrs, 0.01, 9, [](double x) { return std::log(x); }},
        UnaryCase{"Floor", no_attrs, -3, 3, [](double x) { return std::floor(x); }},
        UnaryCase{"Ceil", no_attrs, -3, 3, [](double x) { return std::ceil(x); }},
        UnaryCase{"Round", no_attrs, -2.5, 2.5, [](double x) { return std::nearbyint(x); }},
        UnaryCase{"Sin", no_attrs, -4, 4, [](double x) { return std::sin(x); }},
        UnaryCase{"Cos", no_attrs, -4, 4, [](double x) { return std::cos(x); }},
        UnaryCase{"Tan", no_attrs, -1.2, 1.2, [](double x) { return std::tan(x); }},
        UnaryCase{"Asin", no_attrs, -1, 1, [](double x) { return std::asin(x); }},
        UnaryCase{"Acos", no_attrs, -1, 1, [](double x) { return std::acos(x); }},
        UnaryCase{"Atan", no_attrs, -9, 9, [](double x) { return std::atan(x); }},
        UnaryCase{"Sinh", no_attrs, -3, 3, [](double x) { return std::sinh(x); }},
        UnaryCase{"Cosh", no_attrs, -3, 3, [](double x) { return std::cosh(x); }},
        UnaryCase{"Asinh", no_attrs, -9, 9, [](double x) { return std::asinh(x); }},
        UnaryCase{"Acosh", no_attrs, 1, 9, [](double x) { return std::acosh(x); }},
        UnaryCase{"Atanh", no_attrs, -0.9, 0.9, [](double x) { return std::atanh(x); }},
        UnaryCase{"Elu", [](onnx::NodeProto* n) { attr(n, "alpha", 0.7f); }, -3, 3,
                  [](double x) { return x > 0 ? x : 0.7 * (std::exp(x) - 1); }},
        UnaryCase{"Selu", no_attrs, -3, 3,
                  [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (std::exp(x) - 1)); }},
        UnaryCase{"Celu", [](onnx::NodeProto* n) { attr(n, "alpha", 2.0f); }, -3, 3,
                  [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * (std::exp(x / 2.0) - 1)); }},
        UnaryCase{"Softplus", no_attrs, -30, 30, softplus},
        UnaryCase{"Softsign", no_attrs, -5, 5, [](double x) { return x / (1 + std::fabs(x)); }},
        UnaryCase{"ThresholdedRelu", [](onnx::NodeProto* n) { attr(n, "alpha", 0.5f); }, -2, 2,
                  [](double x) { return x > 0.5 ? x : 0.0; }},
        UnaryCase{"Shrink",
                  [](onnx::NodeProto* n) {
                    attr(n, "lambd", 0.6f);
                    attr(n, "bias", 0.25f);
                  },
                  -2, 2, [](double x) { return x < -0.6  ? x + 0.25
                                               : x > 0.6 ? x - 0.25
                                                         : 0.0; }},
        UnaryCase{"Mish", no_attrs, -5, 5, [](double x) { return x * std::tanh(softplus(x)); }},
        UnaryCase{"Gelu", no_attrs, -4, 4, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
        UnaryCase{
            "Gelu", [](onnx::NodeProto* n) { attr(n, "approximate", std::string("tanh")); }, -4, 4,
            [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) {
      return std::string(info.param.op) + std::to_string(info.index);
    });

TEST(OnnxMathOps, IsNaNIsInfAndNotYieldBools) {
  ModelBuilder m(17);
  m.input("x", {5});
  m.node("IsNaN", {"x"}, {"nan"});
  auto* inf = m.node("IsInf", {"x"}, {"neg_inf"});
  attr(inf, "detect_positive", int64_t{0});
  m.node("Not", {"nan"}, {"not_nan"});
  m.output("not_nan", {5}, onnx::TensorProto::BOOL);
  m.output("neg_inf", {5}, onnx::TensorProto::BOOL);
  const float inf_v = std::numeric_limits<float>::infinity();
  auto outs = test::run_model_outputs(m, {to_bytes({1.0f, std::nanf(""), inf_v, -inf_v, -2.0f})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(outs->at(0)), (std::vector<uint8_t>{1, 0, 1, 1, 1}));
  EXPECT_EQ(values_of<uint8_t>(outs->at(1)), (std::vector<uint8_t>{0, 0, 0, 1, 0}));
}

TEST(OnnxMathOps, NegAbsAndSignOfIntegers) {
  ModelBuilder m(17);
  m.input("x", {4}, onnx::TensorProto::INT32);
  m.node("Neg", {"x"}, {"n"});
  m.node("Abs", {"n"}, {"a"});
  m.node("Sign", {"n"}, {"s"});
  m.node("Mul", {"a", "s"}, {"y"});
  m.output("y", {4}, onnx::TensorProto::INT32);
  auto y = run_model(m, {bytes_of<int32_t>({3, -7, 0, 12})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), (std::vector<int32_t>{-3, 7, 0, -12}));
}

TEST(OnnxMathOps, ComparisonsBroadcast) {
  ModelBuilder m(17);
  m.input("a", {2, 1, 3});
  m.input("b", {4, 1});
  const char* ops[] = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
  for (const char* op : ops) {
    m.node(op, {"a", "b"}, {std::string(op) + "_y"});
    m.output(std::string(op) + "_y", {2, 4, 3}, onnx::TensorProto::BOOL);
  }
  const std::vector<float> a{0, 1, 2, 3, 4, 5}, b{1, 2, 3, 9};
  auto outs = test::run_model_outputs(m, {to_bytes(a), to_bytes(b)});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  const std::function<bool(float, float)> refs[] = {
      [](float x, float y) { return x == y; }, [](float x, float y) { return x < y; },
      [](float x, float y) { return x <= y; }, [](float x, float y) { return x > y; },
      [](float x, float y) { return x >= y; }};
  for (int k = 0; k < 5; ++k) {
    std::vector<uint8_t> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 3; ++l) want.push_back(refs[k](a[i * 3 + l], b[j]));
    EXPECT_EQ(values_of<uint8_t>(outs->at(k)), want) << ops[k];
  }
}

TEST(OnnxMathOps, LogicOfBoolsBroadcasts) {
  ModelBuilder m(17);
  m.input("a", {2, 3}, onnx::TensorProto::BOOL);
  m.input("b", {3}, onnx::TensorProto::BOOL);
  m.node("And", {"a", "b"}, {"and"});
  m.node("Or", {"a", "b"}, {"or"});
  m.node("Xor", {"a", "b"}, {"xor"});
  for (const char* o : {"and", "or", "xor"}) m.output(o, {2, 3}, onnx::TensorProto::BOOL);
  auto outs = test::run_model_outputs(m, {bytes_of<uint8_t>({0, 1, 1, 0, 0, 1}), bytes_of<uint8_t>({1, 1, 0})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(outs->at(0)), (std::vector<uint8_t>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(values_of<uint8_t>(outs->at(1)), (std::vector<uint8_t>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(values_of<uint8_t>(outs->at(2)), (std::vector<uint8_t>{1, 0, 1, 1, 1, 1}));
}

TEST(OnnxMathOps, ModTakesTheDivisorsSignAndFmodTheDividends) {
  ModelBuilder m(17);
  m.input("a", {4}, onnx::TensorProto::INT32);
  m.input("b", {4}, onnx::TensorProto::INT32);
  m.node("Mod", {"a", "b"}, {"mod"});
  attr(m.node("Mod", {"a", "b"}, {"fmod"}), "fmod", int64_t{1});
  m.output("mod", {4}, onnx::TensorProto::INT32);
  m.output("fmod", {4}, onnx::TensorProto::INT32);
  auto outs = test::run_model_outputs(m, {bytes_of<int32_t>({7, -7, 7, -7}), bytes_of<int32_t>({3, 3, -3, -3})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(values_of<int32_t>(outs->at(0)), (std::vector<int32_t>{1, 2, -2, -1}));
  EXPECT_EQ(values_of<int32_t>(outs->at(1)), (std::vector<int32_t>{1, -1, 1, -1}));
}

TEST(OnnxMathOps, FloatFmodAndBitShift) {
  ModelBuilder m(17);
  m.input("a", {3});
  m.input("b", {1});
  attr(m.node("Mod", {"a", "b"}, {"y"}), "fmod", int64_t{1});
  m.output("y", {3});
  auto y = run_model(m, {to_bytes({5.5f, -5.5f, 1.0f}), to_bytes({2.0f})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), {1.5f, -1.5f, 1.0f}));

  ModelBuilder s(17);
  s.input("x", {3}, onnx::TensorProto::UINT8);
  s.input("n", {3}, onnx::TensorProto::UINT8);
  attr(s.node("BitShift", {"x", "n"}, {"l"}), "direction", std::string("LEFT"));
  attr(s.node("BitShift", {"x", "n"}, {"r"}), "direction", std::string("RIGHT"));
  s.output("l", {3}, onnx::TensorProto::UINT8);
  s.output("r", {3}, onnx::TensorProto::UINT8);
  auto outs = test::run_model_outputs(s, {bytes_of<uint8_t>({16, 4, 255}), bytes_of<uint8_t>({1, 2, 4})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(outs->at(0)), (std::vector<uint8_t>{32, 16, 240}));
  EXPECT_EQ(values_of<uint8_t>(outs->at(1)), (std::vector<uint8_t>{8, 1, 15}));
}

TEST(OnnxMathOps, WhereAndPReluBroadcast) {
  ModelBuilder m(17);
  m.input("c", {3, 1}, onnx::TensorProto::BOOL);
  m.input("a", {1, 5});
  m.input("b", {5});
  m.node("Where", {"c", "a", "b"}, {"w"});
  m.node("PRelu", {"w", "b"}, {"y"});
  m.output("y", {3, 5});
  const std::vector<float> a{-1, 2, -3, 4, -5}, b{0.5f, -1, 2, -0.25f, 3};
  auto y = run_model(m, {bytes_of<uint8_t>({1, 0, 1}), to_bytes(a), to_bytes(b)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<float> want;
  const bool c[3] = {true, false, true};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      const float w = c[i] ? a[j] : b[j];
      want.push_back(w < 0 ? w * b[j] : w);
    }
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxMathOps, SumAndMeanOfThreeBroadcastInputs) {
  ModelBuilder m(17);
  m.input("a", {2, 3});
  m.input("b", {3});
  m.input("c", {2, 1});
  m.node("Sum", {"a", "b", "c"}, {"s"});
  m.node("Mean", {"a", "b", "c"}, {"m"});
  m.output("s", {2, 3});
  m.output("m", {2, 3});
  auto outs = test::run_model_outputs(m, {to_bytes({1, 2, 3, 4, 5, 6}), to_bytes({10, 20, 30}), to_bytes({100, 200})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_TRUE(close(to_floats(outs->at(0)), {111, 122, 133, 214, 225, 236}));
  EXPECT_TRUE(close(to_floats(outs->at(1)), {37, 122 / 3.0f, 133 / 3.0f, 214 / 3.0f, 75, 236 / 3.0f}));
}

TEST(OnnxMathOps, LogSoftmaxOverTheMiddleAxis) {
  ModelBuilder m(17);
  m.input("x", {2, 5, 3});
  attr(m.node("LogSoftmax", {"x"}, {"y"}), "axis", int64_t{1});
  m.output("y", {2, 5, 3});
  std::vector<float> x = random_floats(30, 3);
  for (float& v : x) v *= 40;  // large enough that exp without the max shift would overflow in sums
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<float> want(30);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 3; ++k) {
      double mx = -1e30, s = 0;
      for (int c = 0; c < 5; ++c) mx = std::max(mx, static_cast<double>(x[n * 15 + c * 3 + k]));
      for (int c = 0; c < 5; ++c) s += std::exp(x[n * 15 + c * 3 + k] - mx);
      for (int c = 0; c < 5; ++c)
        want[n * 15 + c * 3 + k] = static_cast<float>(x[n * 15 + c * 3 + k] - mx - std::log(s));
    }
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxMathOps, ArgMaxAndArgMinPickTheFirstOrLastTie) {
  ModelBuilder m(17);
  m.input("x", {2, 4});
  attr(m.node("ArgMax", {"x"}, {"first"}), "axis", int64_t{1});
  auto* last = m.node("ArgMax", {"x"}, {"last"});
  attr(last, "axis", int64_t{1});
  attr(last, "select_last_index", int64_t{1});
  attr(last, "keepdims", int64_t{0});
  auto* low = m.node("ArgMin", {"x"}, {"low"});
  attr(low, "axis", int64_t{0});
  m.output("first", {2, 1}, onnx::TensorProto::INT64);
  m.output("last", {2}, onnx::TensorProto::INT64);
  m.output("low", {1, 4}, onnx::TensorProto::INT64);
  auto outs = test::run_model_outputs(m, {to_bytes({3, 7, 1, 7, -2, -2, -5, -2})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(values_of<int64_t>(outs->at(0)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values_of<int64_t>(outs->at(1)), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values_of<int64_t>(outs->at(2)), (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(OnnxMathOps, HardmaxMarksTheFirstMaximum) {
  ModelBuilder m(17);
  m.input("x", {3, 3});
  m.node("Hardmax", {"x"}, {"y"});
  m.output("y", {3, 3});
  auto y = run_model(m, {to_bytes({1, 5, 5, -1, -3, -2, 0, 0, 4})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(to_floats(*y), (std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 1}));
}

// Every Reduce operator over axes {0, 2} of a 3 x 2 x 5 input, without keepdims.
TEST(OnnxMathOps, ReduceFamilyOverTwoAxes) {
  const std::vector<std::pair<const char*, std::function<double(const std::vector<double>&)>>> cases = {
      {"ReduceMin", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }},
      {"ReduceProd",
       [](const std::vector<double>& v) {
         double p = 1;
         for (double x : v) p *= x;
         return p;
       }},
      {"ReduceL1",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += std::fabs(x);
         return s;
       }},
      {"ReduceL2",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return std::sqrt(s);
       }},
      {"ReduceSumSquare",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return s;
       }},
      {"ReduceLogSum",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += std::fabs(x);
         return std::log(s);
       }},
      {"ReduceLogSumExp",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += std::exp(x);
         return std::log(s);
       }},
  };
  std::vector<float> x = random_floats(30, 11);
  for (float& v : x) v = v * 0.5f + (v < 0 ? -0.75f : 0.75f);  // no zeros; magnitudes near 1
  for (const auto& [op, ref] : cases) {
    ModelBuilder m(13);
    m.input("x", {3, 2, 5});
    const std::string in = std::string(op) == "ReduceLogSum" ? "ax" : "x";
    if (in == "ax") m.node("Abs", {"x"}, {"ax"});
    auto* n = m.node(op, {in}, {"y"});
    attr(n, "axes", std::vector<int64_t>{0, -1});
    attr(n, "keepdims", int64_t{0});
    m.output("y", {2});
    auto y = run_model(m, {to_bytes(x)});
    ASSERT_TRUE(y.is_ok()) << op << ": " << y.status().to_string();
    std::vector<float> want;
    for (int j = 0; j < 2; ++j) {
      std::vector<double> v;
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 5; ++k) v.push_back(x[i * 10 + j * 5 + k]);
      want.push_back(static_cast<float>(ref(v)));
    }
    EXPECT_TRUE(close(to_floats(*y), want)) << op;
  }
}

TEST(OnnxMathOps, ReduceMinAndArgMinOfInt64ReachTheTypesExtremes) {
  ModelBuilder m(13);
  m.input("x", {2, 3}, onnx::TensorProto::INT64);
  attr(m.node("ReduceMin", {"x"}, {"min"}), "axes", std::vector<int64_t>{1});
  m.node("ArgMin", {"x"}, {"arg"});
  m.output("min", {2, 1}, onnx::TensorProto::INT64);
  m.output("arg", {1, 3}, onnx::TensorProto::INT64);
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  auto outs = test::run_model_outputs(m, {bytes_of<int64_t>({hi, hi, hi, 5, lo, hi})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(values_of<int64_t>(outs->at(0)), (std::vector<int64_t>{hi, lo}));
  EXPECT_EQ(values_of<int64_t>(outs->at(1)), (std::vector<int64_t>{1, 1, 0}));
}

TEST(OnnxMathOps, CumSumExclusiveAndReverse) {
  ModelBuilder m(17);
  m.input("x", {2, 3});
  m.int64s("axis", {}, {1});
  m.node("CumSum", {"x", "axis"}, {"plain"});
  auto* n = m.node("CumSum", {"x", "axis"}, {"both"});
  attr(n, "exclusive", int64_t{1});
  attr(n, "reverse", int64_t{1});
  m.output("plain", {2, 3});
  m.output("both", {2, 3});
  auto outs = test::run_model_outputs(m, {to_bytes({1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(to_floats(outs->at(0)), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(to_floats(outs->at(1)), (std::vector<float>{5, 3, 0, 11, 6, 0}));
}

TEST(OnnxMathOps, InstanceAndLpNormalization) {
  ModelBuilder m(17);
  m.input("x", {1, 2, 3});
  m.floats("scale", {2}, {2, -1});
  m.floats("bias", {2}, {0.5f, 1});
  attr(m.node("InstanceNormalization", {"x", "scale", "bias"}, {"in"}), "epsilon", 0.0f);
  auto* lp = m.node("LpNormalization", {"x"}, {"lp"});
  attr(lp, "axis", int64_t{1});
  attr(lp, "p", int64_t{1});
  m.output("in", {1, 2, 3});
  m.output("lp", {1, 2, 3});
  auto outs = test::run_model_outputs(m, {to_bytes({1, 2, 3, -2, 0, 2})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  // Row 0: mean 2, std sqrt(2/3); row 1: mean 0, std sqrt(8/3); both give +-sqrt(1.5) at the ends.
  const float a = std::sqrt(1.5f);
  EXPECT_TRUE(close(to_floats(outs->at(0)), {-2 * a + 0.5f, 0.5f, 2 * a + 0.5f, a + 1, 1, -a + 1}, 1e-4, 1e-4));
  EXPECT_TRUE(close(to_floats(outs->at(1)), {1 / 3.0f, 2 / 2.0f, 3 / 5.0f, -2 / 3.0f, 0, 2 / 5.0f}));
}

TEST(OnnxMathOps, NegativeLogLikelihoodLossWeightedMeanAndIgnoreIndex) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.input("t", {2}, onnx::TensorProto::INT64);
  m.floats("w", {3}, {1, 2, 4});
  m.node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"mean"});
  auto* ii = m.node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"ignored"});
  attr(ii, "ignore_index", int64_t{2});
  attr(m.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"none"}), "reduction", std::string("none"));
  m.output("mean", {});
  m.output("ignored", {});
  m.output("none", {2});
  auto outs = test::run_model_outputs(m, {to_bytes({-1, -2, -3, -0.5f, -1.5f, -2.5f}), bytes_of<int64_t>({1, 2})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  // Losses 2 * 2 and 2.5 * 4 over weights 2 + 4; with class 2 ignored, 4 / 2.
  EXPECT_TRUE(close(to_floats(outs->at(0)), {14.0f / 6}));
  EXPECT_TRUE(close(to_floats(outs->at(1)), {2.0f}));
  EXPECT_TRUE(close(to_floats(outs->at(2)), {2.0f, 2.5f}));
}

TEST(OnnxMathOps, SoftmaxCrossEntropyLossAndItsLogProbabilities) {
  ModelBuilder m(13);
  m.input("s", {2, 3});
  m.input("t", {2}, onnx::TensorProto::INT64);
  attr(m.node("SoftmaxCrossEntropyLoss", {"s", "t"}, {"loss", "log_prob"}), "reduction", std::string("sum"));
  m.output("loss", {});
  m.output("log_prob", {2, 3});
  const std::vector<float> s{1, 2, 3, 0, 0, 5};
  auto outs = test::run_model_outputs(m, {to_bytes(s), bytes_of<int64_t>({0, 2})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  std::vector<float> lp;
  for (int n = 0; n < 2; ++n) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(s[n * 3 + c]);
    for (int c = 0; c < 3; ++c) lp.push_back(static_cast<float>(s[n * 3 + c] - std::log(z)));
  }
  EXPECT_TRUE(close(to_floats(outs->at(1)), lp));
  EXPECT_TRUE(close(to_floats(outs->at(0)), {-lp[0] - lp[5]}));
}

TEST(OnnxMathOps, MeanVarianceNormalizationOverItsDefaultAxes) {
  ModelBuilder m(13);
  m.input("x", {2, 1, 1, 2});
  m.node("MeanVarianceNormalization", {"x"}, {"y"});
  m.output("y", {2, 1, 1, 2});
  auto y = run_model(m, {to_bytes({1, 3, 5, 7})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // Axes 0, 2, 3: mean 4, variance 5 over all four.
  const float s = std::sqrt(5.0f);
  EXPECT_TRUE(close(to_floats(*y), {-3 / s, -1 / s, 1 / s, 3 / s}));
}

TEST(OnnxMathOps, LrnOverAnEvenWindowOfChannels) {
  ModelBuilder m(13);
  m.input("x", {1, 5, 1, 2});
  auto* n = m.node("LRN", {"x"}, {"y"});
  attr(n, "size", int64_t{2});
  attr(n, "alpha", 0.5f);
  attr(n, "beta", 0.75f);
  attr(n, "bias", 2.0f);
  m.output("y", {1, 5, 1, 2});
  const std::vector<float> x = random_floats(10, 5);
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // size 2: the window of channel c is {c, c + 1} (floor(1/2) = 0 before, 1 after).
  std::vector<float> want;
  for (int c = 0; c < 5; ++c)
    for (int w = 0; w < 2; ++w) {
      double sq = 0;
      for (int j = c; j <= std::min(c + 1, 4); ++j) sq += x[j * 2 + w] * x[j * 2 + w];
      want.push_back(static_cast<float>(x[c * 2 + w] / std::pow(2.0 + 0.5 / 2 * sq, 0.75)));
    }
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxMathOps, ConstantInputsFold) {
  ModelBuilder m(17);
  m.input("x", {3});
  m.floats("c", {3}, {1, 4, 9});
  m.node("Sqrt", {"c"}, {"r"});
  m.node("Less", {"r", "x"}, {"l"});
  m.node("Where", {"l", "r", "x"}, {"y"});
  m.output("y", {3});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto opt = graph::optimize_graph(*g);
  ASSERT_TRUE(opt.is_ok());
  EXPECT_EQ(opt->nodes().size(), 2u);  // Sqrt folded; Less and Where remain
  auto y = run_model(m, {to_bytes({0, 5, 3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(to_floats(*y), (std::vector<float>{0, 2, 3}));
}

TEST(OnnxMathOps, BadOperandsAreClearErrors) {
  auto import_one = [](const char* op, int elem_type, const char* attr_name, int64_t attr_value) {
    ModelBuilder m(17);
    m.input("a", {2}, elem_type);
    m.input("b", {2}, elem_type);
    const bool binary = std::string(op) == "Mod" || std::string(op) == "And";
    auto* n = m.node(op, binary ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, {"y"});
    if (attr_name) attr(n, attr_name, attr_value);
    m.output("y", {2}, elem_type);
    return import_onnx_bytes(m.bytes());
  };
  auto mod = import_one("Mod", onnx::TensorProto::FLOAT, nullptr, 0);
  ASSERT_FALSE(mod.is_ok());
  EXPECT_EQ(mod.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(mod.status().message().find("fmod=0"), std::string::npos) << mod.status().message();
  auto sqrt = import_one("Sqrt", onnx::TensorProto::INT32, nullptr, 0);
  ASSERT_FALSE(sqrt.is_ok());
  EXPECT_NE(sqrt.status().message().find("sqrt does not accept int32"), std::string::npos) << sqrt.status().message();
  auto logic = import_one("And", onnx::TensorProto::FLOAT, nullptr, 0);
  ASSERT_FALSE(logic.is_ok());
  EXPECT_NE(logic.status().message().find("and does not accept float32"), std::string::npos)
      << logic.status().message();
}

}  // namespace
}  // namespace tessera::frontend
