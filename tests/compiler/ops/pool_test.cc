#include "compiler/ops/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;
using test::kSumAtol;
using test::kSumRtol;
using test::random_data;

struct PoolCase {
  int64_t n, c, h, w, r, s, stride, pad, dilation;
};

enum class Kind { kMax, kAvgIncludePad, kAvgExcludePad };

std::vector<double> naive_pool(const PoolCase& p, const std::vector<float>& x, Kind kind) {
  const int64_t oh = (p.h + 2 * p.pad - p.dilation * (p.r - 1) - 1) / p.stride + 1;
  const int64_t ow = (p.w + 2 * p.pad - p.dilation * (p.s - 1) - 1) / p.stride + 1;
  std::vector<double> out;
  for (int64_t nc = 0; nc < p.n * p.c; ++nc)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        double best = -std::numeric_limits<double>::infinity(), total = 0;
        int64_t count = 0;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            int64_t h = y * p.stride + r * p.dilation - p.pad, w = xx * p.stride + s * p.dilation - p.pad;
            if (h < 0 || h >= p.h || w < 0 || w >= p.w) continue;
            double v = x[(nc * p.h + h) * p.w + w];
            best = std::max(best, v);
            total += v;
            ++count;
          }
        if (kind == Kind::kMax)
          out.push_back(best);
        else
          out.push_back(total / (kind == Kind::kAvgIncludePad ? p.r * p.s : count));
      }
  return out;
}

class PoolCases : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolCases, MaxPoolMatchesNaiveLoops) {
  const PoolCase p = GetParam();
  Tensor x = placeholder({p.n, p.c, p.h, p.w}, DType::f32(), "X");
  auto y = ops::max_pool2d(x, ops::Size2(p.r, p.s), p.stride, p.pad, p.dilation);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kReduction);
  auto xd = random_data(test::num_elements(x->shape), 21);
  auto got = test::run_default({x, *y}, {xd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_pool(p, xd, Kind::kMax), 0, 0));
}

TEST_P(PoolCases, AvgPoolMatchesNaiveLoopsBothCountModes) {
  PoolCase p = GetParam();
  p.dilation = 1;  // avg_pool2d has no dilation
  for (bool include : {false, true}) {
    Tensor x = placeholder({p.n, p.c, p.h, p.w}, DType::f32(), "X");
    auto y = ops::avg_pool2d(x, ops::Size2(p.r, p.s), p.stride, p.pad, include);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    auto xd = random_data(test::num_elements(x->shape), 22);
    auto got = test::run_default({x, *y}, {xd});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_TRUE(
        all_close(*got, naive_pool(p, xd, include ? Kind::kAvgIncludePad : Kind::kAvgExcludePad), kSumRtol, kSumAtol))
        << "count_include_pad=" << include;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, PoolCases,
                         ::testing::Values(PoolCase{1, 2, 7, 7, 2, 2, 2, 0, 1},  // non-dividing: 7 -> 3
                                           PoolCase{2, 3, 9, 8, 3, 3, 2, 1, 1},  // stride 2, pad 1
                                           PoolCase{1, 1, 5, 6, 3, 2, 1, 1, 1},  // non-square window
                                           PoolCase{1, 2, 9, 9, 3, 3, 1, 1, 2},  // dilation 2
                                           PoolCase{1, 1, 1, 1, 1, 1, 1, 0, 1}));

TEST(Pool, PaddingLargerThanTheWindowIsRejected) {
  Tensor x = placeholder({1, 1, 5, 5}, DType::f32(), "X");
  EXPECT_EQ(ops::max_pool2d(x, 2, 1, 2).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ops::avg_pool2d(x, 2, 1, 2).status().code(), ErrorCode::kInvalidArgument);
}

TEST(GlobalAvgPool, MeanOfEachChannel) {
  const int64_t n = 2, c = 3, h = 5, w = 7;
  Tensor x = placeholder({n, c, h, w}, DType::f32(), "X");
  auto y = ops::global_avg_pool2d(x);
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ((*y)->shape, (std::vector<int64_t>{n, c, 1, 1}));
  auto xd = random_data(n * c * h * w, 23);
  std::vector<double> want(n * c, 0.0);
  for (int64_t i = 0; i < n * c * h * w; ++i) want[i / (h * w)] += xd[i] / static_cast<double>(h * w);
  auto got = test::run_default({x, *y}, {xd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, kSumRtol, kSumAtol));
}

}  // namespace
}  // namespace tessera
