#include "tuner/measure/reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "compiler/ir/op.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/linalg.h"
#include "runtime/ndarray.h"

namespace tessera::tuner {
namespace {

TEST(CheckPoints, ASmallOutputIsComparedWhole) {
  std::vector<int64_t> points = check_points({8, 8}, 1);
  ASSERT_EQ(points.size(), 64u);
  EXPECT_EQ(points.front(), 0);
  EXPECT_EQ(points.back(), 63);
}

// Remainders of tiles that do not divide an extent live at its end: every
// dimension's first and last index is among the points, with random ones.
TEST(CheckPoints, EveryEdgeOfEveryDimensionIsSampled) {
  const std::vector<int64_t> shape = {3, 97, 101};
  std::vector<int64_t> points = check_points(shape, 7);
  EXPECT_TRUE(std::is_sorted(points.begin(), points.end()));
  EXPECT_EQ(std::adjacent_find(points.begin(), points.end()), points.end());
  EXPECT_LT(points.size(), 3u * 97 * 101 / 20);
  auto has = [&](int64_t i, int64_t j, int64_t k) {
    return std::binary_search(points.begin(), points.end(), (i * 97 + j) * 101 + k);
  };
  for (int64_t i : {0, 2})
    for (int64_t j : {0, 96})
      for (int64_t k : {0, 100}) EXPECT_TRUE(has(i, j, k)) << i << "," << j << "," << k;
  for (size_t d = 0; d < shape.size(); ++d)
    for (int64_t edge : {int64_t{0}, shape[d] - 1}) {
      int on_face = 0;
      for (int64_t p : points) {
        const int64_t at[3] = {p / (97 * 101), p / 101 % 97, p % 101};
        on_face += at[d] == edge;
      }
      EXPECT_GE(on_face, 4) << "dimension " << d << " at " << edge;
    }
  EXPECT_EQ(check_points(shape, 7), points) << "the same seed gives the same points";
  EXPECT_NE(check_points(shape, 8), points);
}

TEST(CheckTolerance, GrowsWithTheLongestReduction) {
  Tensor a = placeholder({4, 8192}, DType::f32(), "A"), b = placeholder({8192, 4}, DType::f32(), "B");
  ComputeDAG long_sum = ComputeDAG::make({a, b, ops::matmul(a, b).value()}).value();
  EXPECT_DOUBLE_EQ(check_tolerance(long_sum, 1e-3), 4.0 * 8192 * std::ldexp(1.0, -24));
  Tensor c = placeholder({4, 16}, DType::f32(), "C"), d = placeholder({16, 4}, DType::f32(), "D");
  ComputeDAG short_sum = ComputeDAG::make({c, d, ops::matmul(c, d).value()}).value();
  EXPECT_DOUBLE_EQ(check_tolerance(short_sum, 1e-3), 1e-3);
}

// The reference holds the values the kernel must write for the workers'
// inputs (argument i filled from seed + i).
TEST(EvaluateReference, ValuesAtThePointsForTheWorkersInputs) {
  Tensor a = placeholder({3, 5}, DType::f32(), "A"), b = placeholder({5, 2}, DType::f32(), "B");
  ComputeDAG dag = ComputeDAG::make({a, b, ops::matmul(a, b).value()}).value();
  auto check = evaluate_reference(dag, {}, 1, {0, 5}, 1e-3);
  ASSERT_TRUE(check.is_ok()) << check.status().to_string();
  EXPECT_EQ(check->points, (std::vector<int64_t>{0, 5}));
  ASSERT_EQ(check->expected_output.size(), 2 * sizeof(float));
  auto x = runtime::NDArray::create({3, 5}, DType::f32()).value();
  auto y = runtime::NDArray::create({5, 2}, DType::f32()).value();
  x.fill_random(1);
  y.fill_random(2);
  double want = 0;  // C[2][1]
  for (int k = 0; k < 5; ++k) want += static_cast<double>(x.data<float>()[2 * 5 + k]) * y.data<float>()[k * 2 + 1];
  float got;
  std::memcpy(&got, check->expected_output.data() + 4, 4);
  EXPECT_NEAR(got, want, 1e-6);
}

// float16 and bfloat16 values: read, computed and written at their own
// precision; the tolerance grows to it.
TEST(EvaluateReference, HalfPrecisionIsEvaluatedAtItsOwnPrecision) {
  for (DType t : {DType::f16(), DType::bf16()}) {
    Tensor a = placeholder({4}, t, "A");
    Tensor b = compute(
        {4}, [&](const Vars& i) { return read(a, {i[0]}) * make_const(t, 3); }, "B");
    ComputeDAG dag = ComputeDAG::make({a, b}).value();
    auto check = evaluate_reference(dag, {}, 1, {0, 1, 2, 3}, 1e-3);
    ASSERT_TRUE(check.is_ok()) << check.status().to_string();
    ASSERT_EQ(check->expected_output.size(), 4 * 2u);
    auto x = runtime::NDArray::create({4}, t).value();
    x.fill_random(1);
    for (int i = 0; i < 4; ++i) {
      const uint16_t in = x.data<uint16_t>()[i];
      const uint16_t want =
          t == DType::f16() ? float_to_half(3 * half_to_float(in)) : float_to_bfloat16(3 * bfloat16_to_float(in));
      uint16_t got;
      std::memcpy(&got, check->expected_output.data() + 2 * i, 2);
      EXPECT_EQ(got, want) << t.to_string() << " element " << i;
    }
    EXPECT_DOUBLE_EQ(check_tolerance(dag, 1e-3), 4 * std::ldexp(1.0, t == DType::f16() ? -11 : -8));
  }
}

}  // namespace
}  // namespace tessera::tuner
