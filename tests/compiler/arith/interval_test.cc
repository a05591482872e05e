#include "compiler/arith/interval.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"

namespace tessera::arith {
namespace {

constexpr int64_t kNegInf = Interval::kNegInf;
constexpr int64_t kPosInf = Interval::kPosInf;

void expect_interval(Interval got, int64_t lo, int64_t hi) {
  EXPECT_EQ(got.lo, lo);
  EXPECT_EQ(got.hi, hi);
}

TEST(Interval, AddAndSubtract) {
  expect_interval(add({1, 3}, {-2, 5}), -1, 8);
  expect_interval(sub({1, 3}, {-2, 5}), -4, 5);
}

TEST(Interval, InfiniteEndsSaturate) {
  expect_interval(add({0, kPosInf}, {1, 1}), 1, kPosInf);
  expect_interval(sub({0, 4}, Interval::everything()), kNegInf, kPosInf);
  expect_interval(add({kPosInf - 1, kPosInf - 1}, {5, 5}), kPosInf, kPosInf);
  EXPECT_EQ(sat_mul(kNegInf, -2), kPosInf);
  EXPECT_EQ(sat_mul(kPosInf, 0), 0);
  EXPECT_EQ(sat_neg(kNegInf), kPosInf);
}

TEST(Interval, ScaleByANegativeConstantSwapsTheEnds) {
  expect_interval(scale({1, 3}, -2), -6, -2);
  expect_interval(scale({1, 3}, 0), 0, 0);
}

TEST(Interval, ProductOfBoundedIntervalsTakesTheExtremeCorners) {
  expect_interval(mul({-2, 3}, {-5, 4}), -15, 12);
  expect_interval(mul({-2, 3}, Interval::point(2)), -4, 6);
  expect_interval(mul({0, 3}, {0, kPosInf}), kNegInf, kPosInf);
}

TEST(Interval, FloorDivisionOfNegativeRanges) {
  expect_interval(floordiv({-7, 7}, 2), -4, 3);
  expect_interval(floordiv({kNegInf, 9}, 4), kNegInf, 2);
}

TEST(Interval, FloorModuloIsExactWithinOnePeriod) {
  expect_interval(floormod({8, 10}, 4), 0, 2);
  expect_interval(floormod({-3, -1}, 4), 1, 3);
  expect_interval(floormod({3, 5}, 4), 0, 3);
  expect_interval(floormod(Interval::everything(), 4), 0, 3);
}

TEST(Interval, MinMaxAndHull) {
  expect_interval(min({0, 10}, {3, 5}), 0, 5);
  expect_interval(max({0, 10}, {3, 5}), 3, 10);
  expect_interval(hull({0, 2}, {7, 9}), 0, 9);
  EXPECT_TRUE(always_le({0, 3}, {3, 8}));
  EXPECT_FALSE(always_le({0, 4}, {3, 8}));
}

TEST(BoundsOf, LoopVariablesThroughIndexArithmetic) {
  Var i("i"), j("j");
  BoundMap bounds{{i.node(), {0, 15}}, {j.node(), {0, 3}}};
  expect_interval(bounds_of(i * 4 + j, bounds), 0, 63);
  expect_interval(bounds_of(i / 4 - j, bounds), -3, 3);
  expect_interval(bounds_of(i % 8, bounds), 0, 7);
  expect_interval(bounds_of(min(i, j + 2), bounds), 0, 5);
  expect_interval(bounds_of(select(i < j, i, j), bounds), 0, 15);
}

TEST(BoundsOf, UnknownPartsAreUnbounded) {
  Var i("i"), n("n");
  BoundMap bounds{{i.node(), {0, 15}}};
  expect_interval(bounds_of(i + n, bounds), kNegInf, kPosInf);
  expect_interval(bounds_of(i * n, bounds), kNegInf, kPosInf);
  expect_interval(bounds_of(i < n, bounds), 0, 1);
  expect_interval(bounds_of(make_float(1.5, DType::f32()), bounds), kNegInf, kPosInf);
}

}  // namespace
}  // namespace tessera::arith
