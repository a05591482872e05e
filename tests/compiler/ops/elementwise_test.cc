#include "compiler/ops/elementwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;
using test::random_data;

using BinaryOp = Result<Tensor> (*)(const Tensor&, const Tensor&, const std::string&);

struct BinaryCase {
  const char* name;
  BinaryOp op;
  std::function<double(double, double)> ref;
};

class BinaryOps : public ::testing::TestWithParam<BinaryCase> {};

// a: 2 x 1 x 5 and b: 3 x 1 broadcast to 2 x 3 x 5.
TEST_P(BinaryOps, BroadcastsLikeNumPy) {
  const BinaryCase& c = GetParam();
  Tensor a = placeholder({2, 1, 5}, DType::f32(), "A"), b = placeholder({3, 1}, DType::f32(), "B");
  auto y = c.op(a, b, c.name);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)->shape, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kBroadcast);
  // Positive inputs keep power and div well defined.
  auto ad = random_data(10, 31, 0.5f, 2.0f), bd = random_data(3, 32, 0.5f, 2.0f);
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 5; ++k) want.push_back(c.ref(ad[i * 5 + k], bd[j]));
  auto got = test::run_default({a, b, *y}, {ad, bd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, 1e-6, 1e-7));
}

TEST_P(BinaryOps, SameShapesAreElementwise) {
  const BinaryCase& c = GetParam();
  Tensor a = placeholder({7, 3}, DType::f32(), "A"), b = placeholder({7, 3}, DType::f32(), "B");
  auto y = c.op(a, b, c.name);
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kElementwise);
  auto ad = random_data(21, 33, 0.5f, 2.0f), bd = random_data(21, 34, 0.5f, 2.0f);
  std::vector<double> want;
  for (int i = 0; i < 21; ++i) want.push_back(c.ref(ad[i], bd[i]));
  auto got = test::run_default({a, b, *y}, {ad, bd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, 1e-6, 1e-7));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, BinaryOps,
    ::testing::Values(BinaryCase{"add", ops::add, [](double a, double b) { return a + b; }},
                      BinaryCase{"sub", ops::sub, [](double a, double b) { return a - b; }},
                      BinaryCase{"mul", ops::mul, [](double a, double b) { return a * b; }},
                      BinaryCase{"div", ops::div, [](double a, double b) { return a / b; }},
                      BinaryCase{"maximum", ops::maximum, [](double a, double b) { return std::max(a, b); }},
                      BinaryCase{"minimum", ops::minimum, [](double a, double b) { return std::min(a, b); }},
                      BinaryCase{"power", ops::power, [](double a, double b) { return std::pow(a, b); }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Broadcast, IncompatibleShapesAreRejected) {
  Tensor a = placeholder({2, 3}, DType::f32(), "A"), b = placeholder({4}, DType::f32(), "B");
  auto y = ops::add(a, b);
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(y.status().message().find("[2, 3]"), std::string::npos) << y.status().message();
}

TEST(Broadcast, ShapeRuleAlignsTrailingDimensions) {
  EXPECT_EQ(*ops::broadcast_shape({8, 1, 6, 1}, {7, 1, 5}), (std::vector<int64_t>{8, 7, 6, 5}));
  EXPECT_EQ(*ops::broadcast_shape({}, {3}), (std::vector<int64_t>{3}));
  EXPECT_FALSE(ops::broadcast_shape({3}, {4}).is_ok());
}

TEST(Broadcast, MixedTypesAreRejected) {
  Tensor a = placeholder({2}, DType::f32(), "A"), b = placeholder({2}, DType::i32(), "B");
  EXPECT_EQ(ops::mul(a, b).status().code(), ErrorCode::kInvalidArgument);
}

struct UnaryCase {
  const char* name;
  std::function<Result<Tensor>(const Tensor&)> op;
  std::function<double(double)> ref;
};

class UnaryOps : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryOps, MatchesTheFormula) {
  const UnaryCase& c = GetParam();
  Tensor x = placeholder({3, 97}, DType::f32(), "X");
  auto y = c.op(x);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kElementwise);
  auto xd = random_data(3 * 97, 35, -5.0f, 5.0f);
  std::vector<double> want;
  for (float v : xd) want.push_back(c.ref(v));
  auto got = test::run_default({x, *y}, {xd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UnaryOps,
    ::testing::Values(
        UnaryCase{"relu", [](const Tensor& x) { return ops::relu(x); }, [](double v) { return v > 0 ? v : 0.0; }},
        UnaryCase{"sigmoid", [](const Tensor& x) { return ops::sigmoid(x); },
                  [](double v) { return 1 / (1 + std::exp(-v)); }},
        UnaryCase{"tanh", [](const Tensor& x) { return ops::tanh(x); }, [](double v) { return std::tanh(v); }},
        UnaryCase{"exp", [](const Tensor& x) { return ops::exp(x); }, [](double v) { return std::exp(v); }},
        UnaryCase{"hardswish", [](const Tensor& x) { return ops::hardswish(x); },
                  [](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }},
        UnaryCase{"clip", [](const Tensor& x) { return ops::clip(x, -1.5, 2.0); },
                  [](double v) { return std::min(std::max(v, -1.5), 2.0); }},
        UnaryCase{"leaky_relu", [](const Tensor& x) { return ops::leaky_relu(x, 0.2); },
                  [](double v) { return v > 0 ? v : 0.2 * v; }},
        UnaryCase{"gelu", [](const Tensor& x) { return ops::gelu(x); },
                  [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Unary, TranscendentalsRequireFloats) {
  Tensor x = placeholder({4}, DType::i32(), "X");
  EXPECT_EQ(ops::sigmoid(x).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ops::relu(x).is_ok());
}

TEST(Unary, ClipRejectsLoAboveHi) {
  Tensor x = placeholder({4}, DType::f32(), "X");
  EXPECT_EQ(ops::clip(x, 1.0, 0.0).status().code(), ErrorCode::kInvalidArgument);
}

// Every function of the families, float32: its kernel expression and its
// double reference (what constant folding applies) are one function's two
// forms, so they agree wherever the function is defined.
#define TESSERA_COUNT_FN(e, s) +1
constexpr int kUnaryFns = 0 TESSERA_UNARY_FNS(TESSERA_COUNT_FN);
constexpr int kBinaryFns = 0 TESSERA_BINARY_FNS(TESSERA_COUNT_FN);
#undef TESSERA_COUNT_FN

std::pair<float, float> domain_of(ops::UnaryFn fn) {
  switch (fn) {
    case ops::UnaryFn::kSqrt:
    case ops::UnaryFn::kLog: return {0.05f, 4.0f};
    case ops::UnaryFn::kAcosh: return {1.05f, 4.0f};
    case ops::UnaryFn::kAsin:
    case ops::UnaryFn::kAcos:
    case ops::UnaryFn::kAtanh: return {-0.95f, 0.95f};
    case ops::UnaryFn::kTan: return {-1.2f, 1.2f};
    case ops::UnaryFn::kReciprocal: return {0.25f, 4.0f};
    default: return {-5.0f, 5.0f};
  }
}

TEST(UnaryFamily, EveryFunctionsKernelAgreesWithItsReference) {
  const ops::UnaryParams params{.alpha = 0.3, .beta = 0.7};
  int checked = 0;
  for (int i = 0; i < kUnaryFns; ++i) {
    const auto fn = static_cast<ops::UnaryFn>(i);
    if (!ops::unary_fn_accepts(fn, DType::f32()) || ops::unary_fn_result(fn, DType::f32()) != DType::f32()) continue;
    Tensor x = placeholder({257}, DType::f32(), "X");
    auto y = ops::unary(fn, x, params);
    ASSERT_TRUE(y.is_ok()) << ops::unary_fn_name(fn) << ": " << y.status().to_string();
    const auto [lo, hi] = domain_of(fn);
    const std::vector<float> xd = random_data(257, 40 + i, lo, hi);
    std::vector<double> want;
    for (float v : xd) want.push_back(ops::unary_reference(fn, v, params));
    auto got = test::run_default({x, *y}, {xd});
    ASSERT_TRUE(got.is_ok()) << ops::unary_fn_name(fn) << ": " << got.status().to_string();
    EXPECT_TRUE(all_close(*got, want, 2e-5, 2e-6)) << ops::unary_fn_name(fn);
    ++checked;
  }
  EXPECT_GE(checked, 35);
}

TEST(BinaryFamily, EveryFloatFunctionsKernelAgreesWithItsReference) {
  int checked = 0;
  for (int i = 0; i < kBinaryFns; ++i) {
    const auto fn = static_cast<ops::BinaryFn>(i);
    if (!ops::binary_fn_accepts(fn, DType::f32()) || ops::binary_fn_result(fn, DType::f32()) != DType::f32()) continue;
    Tensor a = placeholder({3, 41}, DType::f32(), "A"), b = placeholder({41}, DType::f32(), "B");
    auto y = ops::binary(fn, a, b);
    ASSERT_TRUE(y.is_ok()) << ops::binary_fn_name(fn) << ": " << y.status().to_string();
    // Positive divisors keep div and fmod defined, positive bases pow.
    const std::vector<float> ad = random_data(123, 50 + i, 0.1f, 3.0f), bd = random_data(41, 60 + i, 0.5f, 2.0f);
    std::vector<float> signed_a = ad;
    if (fn != ops::BinaryFn::kPow)
      for (size_t k = 1; k < signed_a.size(); k += 3) signed_a[k] = -signed_a[k];
    std::vector<double> want;
    for (size_t k = 0; k < ad.size(); ++k)
      want.push_back(ops::binary_reference(fn, signed_a[k], bd[k % 41], DType::f32()));
    auto got = test::run_default({a, b, *y}, {signed_a, bd});
    ASSERT_TRUE(got.is_ok()) << ops::binary_fn_name(fn) << ": " << got.status().to_string();
    EXPECT_TRUE(all_close(*got, want, 2e-5, 2e-6)) << ops::binary_fn_name(fn);
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

}  // namespace
}  // namespace tessera
