#include "compiler/ops/reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;
using test::kSumAtol;
using test::kSumRtol;
using test::random_data;

// x: 3 x 4 x 5 (row-major); reduces the axes in `mask` with sum or max.
std::vector<double> naive_reduce(const std::vector<float>& x, std::array<bool, 3> mask, bool is_max) {
  const int64_t d[3] = {3, 4, 5};
  int64_t od[3];
  for (int a = 0; a < 3; ++a) od[a] = mask[a] ? 1 : d[a];
  std::vector<double> out(od[0] * od[1] * od[2], is_max ? -std::numeric_limits<double>::infinity() : 0.0);
  for (int64_t i = 0; i < d[0]; ++i)
    for (int64_t j = 0; j < d[1]; ++j)
      for (int64_t k = 0; k < d[2]; ++k) {
        int64_t o = ((mask[0] ? 0 : i) * od[1] + (mask[1] ? 0 : j)) * od[2] + (mask[2] ? 0 : k);
        double v = x[(i * d[1] + j) * d[2] + k];
        out[o] = is_max ? std::max(out[o], v) : out[o] + v;
      }
  return out;
}

struct ReduceCase {
  std::vector<int> axes;
  std::array<bool, 3> mask;
};

class ReduceCases : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceCases, SumMeanAndMaxMatchNaiveLoopsWithAndWithoutKeepdims) {
  const ReduceCase& c = GetParam();
  auto xd = random_data(60, 41);
  auto sums = naive_reduce(xd, c.mask, false), maxes = naive_reduce(xd, c.mask, true);
  int64_t count = 1;
  for (int a = 0; a < 3; ++a) count *= c.mask[a] ? std::array<int64_t, 3>{3, 4, 5}[a] : 1;
  std::vector<double> means;
  for (double s : sums) means.push_back(s / count);
  for (bool keepdims : {false, true}) {
    Tensor x = placeholder({3, 4, 5}, DType::f32(), "X");
    std::vector<int64_t> shape;
    for (int a = 0; a < 3; ++a)
      if (!c.mask[a] || keepdims) shape.push_back(c.mask[a] ? 1 : std::array<int64_t, 3>{3, 4, 5}[a]);
    auto s = ops::reduce_sum(x, c.axes, keepdims), mean = ops::reduce_mean(x, c.axes, keepdims),
         mx = ops::reduce_max(x, c.axes, keepdims);
    ASSERT_TRUE(s.is_ok() && mean.is_ok() && mx.is_ok()) << s.status().to_string() << mean.status().to_string();
    EXPECT_EQ((*s)->shape, shape);
    EXPECT_EQ(compute_op(*s)->pattern, OpPattern::kReduction);
    auto got_sum = test::run_default({x, *s}, {xd});
    auto got_mean = test::run_default({x, *mean}, {xd});
    auto got_max = test::run_default({x, *mx}, {xd});
    ASSERT_TRUE(got_sum.is_ok()) << got_sum.status().to_string();
    ASSERT_TRUE(got_mean.is_ok()) << got_mean.status().to_string();
    ASSERT_TRUE(got_max.is_ok()) << got_max.status().to_string();
    EXPECT_TRUE(all_close(*got_sum, sums, kSumRtol, kSumAtol)) << "keepdims=" << keepdims;
    EXPECT_TRUE(all_close(*got_mean, means, kSumRtol, kSumAtol)) << "keepdims=" << keepdims;
    EXPECT_TRUE(all_close(*got_max, maxes, 0, 0)) << "keepdims=" << keepdims;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceCases,
                         ::testing::Values(ReduceCase{{-1}, {false, false, true}},
                                           ReduceCase{{0}, {true, false, false}},
                                           ReduceCase{{0, 2}, {true, false, true}},
                                           ReduceCase{{1, -1}, {false, true, true}},
                                           ReduceCase{{}, {true, true, true}}));  // every axis: 0-d without keepdims

TEST(Reduce, BadAxesAreRejected) {
  Tensor x = placeholder({3, 4}, DType::f32(), "X");
  EXPECT_EQ(ops::reduce_sum(x, {2}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ops::reduce_sum(x, {1, -1}).status().code(), ErrorCode::kInvalidArgument);
}

// [-min, max] of every element, whatever the shape: the last axis split
// into 64, 8 or single lanes, one to four axes, values all of one sign.
TEST(ReduceBounds, IsMinusTheMinimumAndTheMaximum) {
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 128}, {2, 5, 40}, {1, 3, 4, 7}, {256}};
  for (size_t c = 0; c < shapes.size(); ++c) {
    int64_t n = 1;
    for (int64_t e : shapes[c]) n *= e;
    for (double shift : {0.0, 5.0, -5.0}) {
      std::vector<float> xd = random_data(n, static_cast<uint32_t>(50 + c));
      for (float& v : xd) v += static_cast<float>(shift);
      Tensor x = placeholder(shapes[c], DType::f32(), "X");
      auto b = ops::reduce_bounds(x);
      ASSERT_TRUE(b.is_ok()) << b.status().to_string();
      EXPECT_EQ((*b)->shape, (std::vector<int64_t>{2}));
      auto got = test::run_default({x, *b}, {xd});
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      const auto [lo, hi] = std::minmax_element(xd.begin(), xd.end());
      EXPECT_TRUE(all_close(*got, std::vector<double>{-static_cast<double>(*lo), static_cast<double>(*hi)}, 0, 0))
          << "shape " << c << ", shift " << shift;
    }
  }
}

TEST(ReduceBounds, RefusesIntegersAndEmptyTensors) {
  EXPECT_EQ(ops::reduce_bounds(placeholder({4}, DType::i32(), "X")).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ops::reduce_bounds(placeholder({3, 0}, DType::f32(), "X")).status().code(), ErrorCode::kInvalidArgument);
}

std::vector<double> naive_softmax_rows(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t row_stride,
                                       int64_t col_stride) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -std::numeric_limits<double>::infinity(), total = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, static_cast<double>(x[r * row_stride + c * col_stride]));
    for (int64_t c = 0; c < cols; ++c) total += std::exp(x[r * row_stride + c * col_stride] - mx);
    for (int64_t c = 0; c < cols; ++c)
      out[r * row_stride + c * col_stride] = std::exp(x[r * row_stride + c * col_stride] - mx) / total;
  }
  return out;
}

TEST(Softmax, LastAxisMatchesNaiveLoopsAndHasThreeStages) {
  const int64_t m = 3, n = 97;
  Tensor x = placeholder({m, n}, DType::f32(), "X");
  auto y = ops::softmax(x, -1);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto dag = ComputeDAG::make({x, *y});
  ASSERT_TRUE(dag.is_ok());
  std::vector<std::string> names;
  for (const Tensor& t : dag->tensors()) names.push_back(t->name);
  EXPECT_EQ(names, (std::vector<std::string>{"X", "softmax.max", "softmax.expsum", "softmax"}));
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kBroadcast);
  auto xd = random_data(m * n, 42, -3, 3);
  auto got = test::run_default({x, *y}, {xd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_softmax_rows(xd, m, n, n, 1), 1e-5, 1e-7));
}

TEST(Softmax, FirstAxisMatchesNaiveLoops) {
  const int64_t m = 7, n = 4;
  Tensor x = placeholder({m, n}, DType::f32(), "X");
  auto y = ops::softmax(x, 0);
  ASSERT_TRUE(y.is_ok());
  auto xd = random_data(m * n, 43, -3, 3);
  auto got = test::run_default({x, *y}, {xd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // Columns are the softmax rows: stride 1 between them, n within one.
  EXPECT_TRUE(all_close(*got, naive_softmax_rows(xd, n, m, 1, n), 1e-5, 1e-7));
}

TEST(Softmax, LargeInputsDoNotOverflow) {
  Tensor x = placeholder({1, 3}, DType::f32(), "X");
  auto y = ops::softmax(x);
  auto got = test::run_default({x, *y}, {{1000.0f, 1001.0f, 1002.0f}});
  ASSERT_TRUE(got.is_ok());
  EXPECT_TRUE(all_close(*got, naive_softmax_rows({0, 1, 2}, 1, 3, 3, 1), 1e-5, 1e-7));
}

std::vector<double> naive_layer_norm(const std::vector<float>& x, const std::vector<float>& g,
                                     const std::vector<float>& b, int64_t rows, int64_t cols, double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = (x[r * cols + c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
  }
  return out;
}

TEST(LayerNorm, LastAxisMatchesNaiveLoops) {
  const int64_t m = 5, n = 33;
  Tensor x = placeholder({m, n}, DType::f32(), "X");
  Tensor g = placeholder({n}, DType::f32(), "gamma"), b = placeholder({n}, DType::f32(), "beta");
  auto y = ops::layer_norm(x, g, b, -1, 1e-5);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kBroadcast);
  auto xd = random_data(m * n, 44, 2, 4), gd = random_data(n, 45), bd = random_data(n, 46);
  auto got = test::run_default({x, g, b, *y}, {xd, gd, bd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_layer_norm(xd, gd, bd, m, n, 1e-5), 1e-4, 1e-5));
}

TEST(LayerNorm, TrailingTwoAxesNormaliseTogether) {
  const int64_t a = 2, r = 3, c = 7;
  Tensor x = placeholder({a, r, c}, DType::f32(), "X");
  Tensor g = placeholder({r, c}, DType::f32(), "gamma"), b = placeholder({r, c}, DType::f32(), "beta");
  auto y = ops::layer_norm(x, g, b, 1, 1e-3);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto xd = random_data(a * r * c, 47), gd = random_data(r * c, 48), bd = random_data(r * c, 49);
  auto got = test::run_default({x, g, b, *y}, {xd, gd, bd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_layer_norm(xd, gd, bd, a, r * c, 1e-3), 1e-4, 1e-5));
}

TEST(LayerNorm, GammaOfTheWrongShapeIsRejected) {
  Tensor x = placeholder({2, 3}, DType::f32(), "X");
  Tensor g = placeholder({2}, DType::f32(), "gamma"), b = placeholder({3}, DType::f32(), "beta");
  auto y = ops::layer_norm(x, g, b);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("gamma"), std::string::npos);
}

}  // namespace
}  // namespace tessera
