#include "compiler/ops/linalg.h"

#include <gtest/gtest.h>

#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;
using test::kSumAtol;
using test::kSumRtol;
using test::random_data;

// Plain loops in double: C = A (M x K) * B (K x N).
std::vector<double> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t n,
                                 int64_t k) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t r = 0; r < k; ++r) c[i * n + j] += static_cast<double>(a[i * k + r]) * b[r * n + j];
  return c;
}

class MatmulShapes : public ::testing::TestWithParam<std::array<int64_t, 3>> {};

TEST_P(MatmulShapes, DefaultScheduleMatchesNaiveLoops) {
  auto [m, n, k] = GetParam();
  Tensor a = placeholder({m, k}, DType::f32(), "A"), b = placeholder({k, n}, DType::f32(), "B");
  auto c = ops::matmul(a, b);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  auto x = random_data(m * k, 1), y = random_data(k * n, 2);
  auto got = test::run_default({a, b, *c}, {x, y});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_matmul(x, y, m, n, k), kSumRtol, kSumAtol));
}

INSTANTIATE_TEST_SUITE_P(Ops, MatmulShapes,
                         ::testing::Values(std::array<int64_t, 3>{1, 1, 1}, std::array<int64_t, 3>{7, 13, 9},
                                           std::array<int64_t, 3>{97, 3, 5}, std::array<int64_t, 3>{4, 97, 33}));

TEST(Matmul, IsComplexAndRejectsMismatchedK) {
  Tensor a = placeholder({4, 5}, DType::f32(), "A"), b = placeholder({5, 3}, DType::f32(), "B");
  EXPECT_EQ(compute_op(*ops::matmul(a, b))->pattern, OpPattern::kComplex);
  auto bad = ops::matmul(a, placeholder({4, 3}, DType::f32(), "B2"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("K"), std::string::npos) << bad.status().message();
}

struct DenseCase {
  bool bias, relu;
};

class DenseVariants : public ::testing::TestWithParam<DenseCase> {};

TEST_P(DenseVariants, DefaultScheduleMatchesNaiveLoops) {
  const auto [with_bias, relu] = GetParam();
  const int64_t m = 3, n = 11, k = 7;
  Tensor x = placeholder({m, k}, DType::f32(), "X"), w = placeholder({n, k}, DType::f32(), "W");
  Tensor bias = placeholder({n}, DType::f32(), "bias");
  auto y = ops::dense(x, w, with_bias ? std::optional<Tensor>(bias) : std::nullopt, relu);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto xd = random_data(m * k, 3), wd = random_data(n * k, 4), bd = random_data(n, 5);
  std::vector<Tensor> args = {x, w};
  std::vector<std::vector<float>> inputs = {xd, wd};
  if (with_bias) {
    args.push_back(bias);
    inputs.push_back(bd);
  }
  args.push_back(*y);
  std::vector<double> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = with_bias ? bd[j] : 0.0;
      for (int64_t r = 0; r < k; ++r) s += static_cast<double>(xd[i * k + r]) * wd[j * k + r];
      want[i * n + j] = relu && s < 0 ? 0.0 : s;
    }
  auto got = test::run_default(args, inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, kSumRtol, kSumAtol));
  // The product is kComplex; an epilogue is broadcast (bias) or elementwise.
  const ComputeOpNode* out = compute_op(*y);
  if (!with_bias && !relu) {
    EXPECT_EQ(out->pattern, OpPattern::kComplex);
  } else {
    EXPECT_EQ(out->pattern, with_bias ? OpPattern::kBroadcast : OpPattern::kElementwise);
    EXPECT_EQ(compute_op(input_tensors(*y)[0])->pattern, OpPattern::kComplex);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, DenseVariants,
                         ::testing::Values(DenseCase{false, false}, DenseCase{true, false}, DenseCase{false, true},
                                           DenseCase{true, true}));

TEST(Dense, RejectsABiasOfTheWrongLength) {
  Tensor x = placeholder({2, 3}, DType::f32(), "X"), w = placeholder({4, 3}, DType::f32(), "W");
  auto y = ops::dense(x, w, placeholder({3}, DType::f32(), "bias"));
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kInvalidArgument);
}

TEST(BatchMatmul, DefaultScheduleMatchesNaiveLoops) {
  const int64_t batch = 3, m = 5, n = 7, k = 2;
  Tensor a = placeholder({batch, m, k}, DType::f32(), "A"), b = placeholder({batch, k, n}, DType::f32(), "B");
  auto c = ops::batch_matmul(a, b);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(compute_op(*c)->pattern, OpPattern::kComplex);
  auto x = random_data(batch * m * k, 6), y = random_data(batch * k * n, 7);
  std::vector<double> want;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> xa(x.begin() + i * m * k, x.begin() + (i + 1) * m * k);
    std::vector<float> yb(y.begin() + i * k * n, y.begin() + (i + 1) * k * n);
    auto part = naive_matmul(xa, yb, m, n, k);
    want.insert(want.end(), part.begin(), part.end());
  }
  auto got = test::run_default({a, b, *c}, {x, y});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, kSumRtol, kSumAtol));
}

TEST(BatchMatmul, RejectsDifferentBatches) {
  Tensor a = placeholder({2, 3, 4}, DType::f32(), "A"), b = placeholder({3, 4, 5}, DType::f32(), "B");
  EXPECT_EQ(ops::batch_matmul(a, b).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
