#include "compiler/ops/conv.h"

#include <gtest/gtest.h>

#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;
using test::kSumAtol;
using test::kSumRtol;
using test::random_data;

struct ConvCase {
  int64_t n, c, h, w, k, r, s, stride, pad, dilation, groups;
};

int64_t out_size(int64_t in, int64_t window, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (window - 1) - 1) / stride + 1;
}

// Naive grouped convolution; x, w and the result are NCHW/OIHW or, with
// `nhwc`, NHWC/HWIO.
std::vector<double> naive_conv(const ConvCase& p, const std::vector<float>& x, const std::vector<float>& w, bool nhwc) {
  const int64_t oh = out_size(p.h, p.r, p.stride, p.pad, p.dilation),
                ow = out_size(p.w, p.s, p.stride, p.pad, p.dilation);
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  auto xi = [&](int64_t n, int64_t c, int64_t h, int64_t wi) {
    return nhwc ? ((n * p.h + h) * p.w + wi) * p.c + c : ((n * p.c + c) * p.h + h) * p.w + wi;
  };
  auto wi_ = [&](int64_t k, int64_t c, int64_t r, int64_t s) {
    return nhwc ? ((r * p.s + s) * cg + c) * p.k + k : ((k * cg + c) * p.r + r) * p.s + s;
  };
  auto oi = [&](int64_t n, int64_t k, int64_t y, int64_t xx) {
    return nhwc ? ((n * oh + y) * ow + xx) * p.k + k : ((n * p.k + k) * oh + y) * ow + xx;
  };
  std::vector<double> out(p.n * p.k * oh * ow, 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = 0;
          const int64_t g = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < p.r; ++r)
              for (int64_t s = 0; s < p.s; ++s) {
                const int64_t h = y * p.stride + r * p.dilation - p.pad, wx = xx * p.stride + s * p.dilation - p.pad;
                if (h < 0 || h >= p.h || wx < 0 || wx >= p.w) continue;
                acc += static_cast<double>(x[xi(n, g * cg + c, h, wx)]) * w[wi_(k, c, r, s)];
              }
          out[oi(n, k, y, xx)] = acc;
        }
  return out;
}

class Conv2dCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dCases, NchwDefaultScheduleMatchesNaiveLoops) {
  const ConvCase p = GetParam();
  Tensor x = placeholder({p.n, p.c, p.h, p.w}, DType::f32(), "X");
  Tensor w = placeholder({p.k, p.c / p.groups, p.r, p.s}, DType::f32(), "W");
  auto y = ops::conv2d_nchw(x, w, p.stride, p.pad, p.dilation, p.groups);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto xd = random_data(test::num_elements(x->shape), 11), wd = random_data(test::num_elements(w->shape), 12);
  auto got = test::run_default({x, w, *y}, {xd, wd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_conv(p, xd, wd, false), kSumRtol, kSumAtol));
}

TEST_P(Conv2dCases, NhwcDefaultScheduleMatchesNaiveLoops) {
  const ConvCase p = GetParam();
  Tensor x = placeholder({p.n, p.h, p.w, p.c}, DType::f32(), "X");
  Tensor w = placeholder({p.r, p.s, p.c / p.groups, p.k}, DType::f32(), "W");
  auto y = ops::conv2d_nhwc(x, w, p.stride, p.pad, p.dilation, p.groups);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto xd = random_data(test::num_elements(x->shape), 13), wd = random_data(test::num_elements(w->shape), 14);
  auto got = test::run_default({x, w, *y}, {xd, wd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_conv(p, xd, wd, true), kSumRtol, kSumAtol));
}

INSTANTIATE_TEST_SUITE_P(Ops, Conv2dCases,
                         ::testing::Values(ConvCase{1, 3, 7, 7, 4, 3, 3, 1, 0, 1, 1},    // plain, no pad stage
                                           ConvCase{2, 3, 9, 8, 5, 3, 3, 2, 1, 1, 1},    // stride 2, padding
                                           ConvCase{1, 2, 11, 10, 3, 3, 2, 1, 2, 2, 1},  // dilation 2
                                           ConvCase{1, 4, 6, 7, 6, 3, 3, 1, 1, 1, 2},    // 2 groups
                                           ConvCase{1, 6, 5, 5, 6, 1, 1, 1, 0, 1, 6},    // 1x1, one channel per group
                                           ConvCase{1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1}));  // all ones

TEST(Conv2d, PaddingIsASeparateInjectiveStage) {
  Tensor x = placeholder({1, 2, 5, 5}, DType::f32(), "X"), w = placeholder({3, 2, 3, 3}, DType::f32(), "W");
  auto y = ops::conv2d_nchw(x, w, 1, 1);
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kComplex);
  Tensor padded = input_tensors(*y)[0];
  ASSERT_NE(compute_op(padded), nullptr);
  EXPECT_EQ(padded->name, "pad");
  EXPECT_EQ(compute_op(padded)->pattern, OpPattern::kInjective);
  EXPECT_EQ(padded->shape, (std::vector<int64_t>{1, 2, 7, 7}));
  // Without padding the convolution reads X directly.
  EXPECT_TRUE(is_placeholder(input_tensors(*ops::conv2d_nchw(x, w))[0]));
}

TEST(Conv2d, AsymmetricPaddingAndStrides) {
  const int64_t h = 6, w = 5;
  Tensor x = placeholder({1, 1, h, w}, DType::f32(), "X"), k = placeholder({1, 1, 2, 2}, DType::f32(), "W");
  auto y = ops::conv2d_nchw(x, k, ops::Size2(2, 1), ops::Padding2(1, 0, 0, 2));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)->shape, (std::vector<int64_t>{1, 1, 3, 6}));
  auto xd = random_data(h * w, 15), kd = random_data(4, 16);
  std::vector<double> want;
  for (int64_t oy = 0; oy < 3; ++oy)
    for (int64_t ox = 0; ox < 6; ++ox) {
      double acc = 0;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t s = 0; s < 2; ++s) {
          int64_t iy = oy * 2 + r - 1, ix = ox + s;
          if (iy >= 0 && iy < h && ix < w) acc += static_cast<double>(xd[iy * w + ix]) * kd[r * 2 + s];
        }
      want.push_back(acc);
    }
  auto got = test::run_default({x, k, *y}, {xd, kd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, want, kSumRtol, kSumAtol));
}

TEST(Conv2d, RejectsGroupsThatDoNotDivideChannels) {
  Tensor x = placeholder({1, 4, 5, 5}, DType::f32(), "X"), w = placeholder({6, 2, 3, 3}, DType::f32(), "W");
  auto y = ops::conv2d_nchw(x, w, 1, 0, 1, 3);
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(y.status().message().find("groups"), std::string::npos);
}

TEST(Conv2d, RejectsAWindowLargerThanThePaddedInput) {
  Tensor x = placeholder({1, 1, 3, 3}, DType::f32(), "X"), w = placeholder({1, 1, 3, 3}, DType::f32(), "W");
  EXPECT_EQ(ops::conv2d_nchw(x, w, 1, 0, 2).status().code(), ErrorCode::kInvalidArgument);
}

class DepthwiseCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(DepthwiseCases, DefaultScheduleMatchesNaiveLoops) {
  const ConvCase p = GetParam();  // k is the channel multiplier
  Tensor x = placeholder({p.n, p.c, p.h, p.w}, DType::f32(), "X");
  Tensor w = placeholder({p.c, p.k, p.r, p.s}, DType::f32(), "W");
  auto y = ops::depthwise_conv2d_nchw(x, w, p.stride, p.pad, p.dilation);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(compute_op(*y)->pattern, OpPattern::kComplex);
  auto xd = random_data(test::num_elements(x->shape), 17), wd = random_data(test::num_elements(w->shape), 18);
  // The same as a grouped convolution with C groups and C*M outputs, whose
  // OIHW weights are W reshaped to (C*M) x 1 x R x S.
  ConvCase grouped{p.n, p.c, p.h, p.w, p.c * p.k, p.r, p.s, p.stride, p.pad, p.dilation, p.c};
  auto got = test::run_default({x, w, *y}, {xd, wd});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, naive_conv(grouped, xd, wd, false), kSumRtol, kSumAtol));
}

INSTANTIATE_TEST_SUITE_P(Ops, DepthwiseCases,
                         ::testing::Values(ConvCase{1, 3, 7, 7, 1, 3, 3, 1, 1, 1, 0},
                                           ConvCase{2, 2, 9, 6, 2, 3, 3, 2, 1, 1, 0},
                                           ConvCase{1, 3, 8, 8, 1, 3, 3, 1, 2, 2, 0}));

TEST(Pad, SelectsTheValueOutsideTheInput) {
  Tensor x = placeholder({2, 3}, DType::f32(), "X");
  auto y = ops::pad(x, {1, 0}, {0, 2}, -5.0);
  ASSERT_TRUE(y.is_ok());
  EXPECT_EQ((*y)->shape, (std::vector<int64_t>{3, 5}));
  auto got = test::run_default({x, *y}, {{1, 2, 3, 4, 5, 6}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(*got, (std::vector<float>{-5, -5, -5, -5, -5, 1, 2, 3, -5, -5, 4, 5, 6, -5, -5}));
}

}  // namespace
}  // namespace tessera
