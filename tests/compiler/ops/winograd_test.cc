#include "compiler/ops/winograd.h"

#include <gtest/gtest.h>

#include "compiler/ops/conv.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

using test::all_close;
using test::random_data;

struct WinogradCase {
  int64_t n, c, h, w, k, pad;
};

class WinogradCases : public ::testing::TestWithParam<WinogradCase> {};

// The Winograd convolution with transformed weights computes what the direct
// NHWC convolution computes with the original ones (both unscheduled, under
// the reference interpreter).
TEST_P(WinogradCases, MatchesTheDirectConvolution) {
  const WinogradCase p = GetParam();
  Tensor x = placeholder({p.n, p.h, p.w, p.c}, DType::f32(), "X");
  Tensor w = placeholder({3, 3, p.c, p.k}, DType::f32(), "W");
  Tensor u = placeholder({4, 4, p.c, p.k}, DType::f32(), "U");
  auto direct = ops::conv2d_nhwc(x, w, 1, p.pad);
  auto wino = ops::conv2d_winograd_nhwc(x, u, p.pad);
  ASSERT_TRUE(direct.is_ok()) << direct.status().to_string();
  ASSERT_TRUE(wino.is_ok()) << wino.status().to_string();
  EXPECT_EQ((*wino)->shape, (*direct)->shape);
  auto xd = random_data(test::num_elements(x->shape), 21), wd = random_data(test::num_elements(w->shape), 22);
  auto want = test::run_default({x, w, *direct}, {xd, wd});
  auto got = test::run_default({x, u, *wino}, {xd, ops::winograd_f2x3_weights(wd, p.c, p.k)});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(all_close(*got, std::vector<double>(want->begin(), want->end()), 1e-5, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Ops, WinogradCases,
                         ::testing::Values(WinogradCase{1, 3, 8, 8, 4, 1},    // even output, same padding
                                           WinogradCase{2, 2, 7, 9, 3, 1},    // odd output: tiles overhang
                                           WinogradCase{1, 4, 6, 5, 5, 0},    // no padding
                                           WinogradCase{1, 1, 3, 3, 1, 0}));  // one output

TEST(Winograd, StagesAreInputTransformGemmAndOutputTransform) {
  Tensor x = placeholder({1, 6, 6, 2}, DType::f32(), "X"), u = placeholder({4, 4, 2, 3}, DType::f32(), "U");
  Tensor y = ops::conv2d_winograd_nhwc(x, u, 1, "c").value();
  EXPECT_EQ(compute_op(y)->pattern, OpPattern::kInjective);
  Tensor m = input_tensors(y)[0];
  EXPECT_EQ(m->name, "c.gemm");
  EXPECT_EQ(compute_op(m)->pattern, OpPattern::kComplex);
  EXPECT_EQ(m->shape, (std::vector<int64_t>{4, 4, 9, 3}));
  Tensor v = input_tensors(m)[0];
  EXPECT_EQ(v->name, "c.input");
  EXPECT_EQ(compute_op(v)->pattern, OpPattern::kInjective);
  EXPECT_EQ(input_tensors(v)[0]->name, "pad");
}

TEST(Winograd, RejectsWeightsThatAreNotTransformed) {
  Tensor x = placeholder({1, 6, 6, 2}, DType::f32(), "X");
  auto bad = ops::conv2d_winograd_nhwc(x, placeholder({3, 3, 2, 3}, DType::f32(), "W"), 1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("4 x 4 x C x K"), std::string::npos);
  EXPECT_FALSE(ops::conv2d_winograd_nhwc(placeholder({1, 2, 2, 2}, DType::f32(), "X"),
                                         placeholder({4, 4, 2, 3}, DType::f32(), "U"))
                   .is_ok());
}

// U = G g G^T: a weight that is 1 at the window's centre and 0 elsewhere
// transforms to the outer product of G's middle column with itself.
TEST(Winograd, WeightTransformOfTheCentreTap) {
  std::vector<float> g(9, 0.0f);
  g[4] = 1.0f;
  const std::vector<float> u = ops::winograd_f2x3_weights(g, 1, 1);
  const float col[4] = {0.0f, 0.5f, -0.5f, 0.0f};
  for (int e = 0; e < 4; ++e)
    for (int v = 0; v < 4; ++v) EXPECT_FLOAT_EQ(u[static_cast<size_t>(e * 4 + v)], col[e] * col[v]) << e << "," << v;
}

}  // namespace
}  // namespace tessera
