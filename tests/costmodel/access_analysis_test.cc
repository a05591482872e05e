#include "costmodel/access_analysis.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"

namespace tessera::costmodel {
namespace {

TEST(LinearCoefficients, AffineIndexGivesItsStrides) {
  Var i("i"), j("j"), k("k");
  std::vector<double> coefs;
  EXPECT_TRUE(linear_coefficients(i * 64 + j - k * 2 + 5, {i.node(), j.node(), k.node()}, -1, &coefs));
  EXPECT_EQ(coefs, (std::vector<double>{64, 1, -2}));
}

TEST(LinearCoefficients, RampStrideGoesToTheLaneSlot) {
  Var i("i");
  std::vector<double> coefs;
  EXPECT_TRUE(linear_coefficients(make_ramp(i * 16, Expr(1), 16), {i.node()}, 1, &coefs));
  EXPECT_EQ(coefs, (std::vector<double>{16, 1}));
}

TEST(LinearCoefficients, FusedLoopDivisionIsApproximated) {
  Var f("f");
  std::vector<double> coefs;
  // f / 16 * 1024 + f % 16: 64 per step from the quotient, 1 from the remainder.
  EXPECT_FALSE(linear_coefficients(f / Expr(16) * Expr(1024) + f % Expr(16), {f.node()}, -1, &coefs));
  EXPECT_DOUBLE_EQ(coefs[0], 65);
}

TEST(Footprint, ContiguousRowsCountElementsAndLines) {
  // 8 rows of 16 floats, rows 64 floats apart: 128 elements, 8 lines.
  Footprint f = footprint({64, 1}, {8, 16}, {0, 1}, 4, 1e9);
  EXPECT_DOUBLE_EQ(f.elements, 128);
  EXPECT_DOUBLE_EQ(f.lines, 8);
}

TEST(Footprint, LoopThatLeavesTheIndexAloneAddsNothing) {
  Footprint f = footprint({0, 1}, {100, 16}, {0, 1}, 4, 1e9);
  EXPECT_DOUBLE_EQ(f.elements, 16);
  EXPECT_DOUBLE_EQ(f.lines, 1);
}

TEST(Footprint, OverlappingLoopsCoverOnlyTheirSpan) {
  // k + r with k in [0, 10) and r in [0, 3): 12 distinct elements, not 30.
  Footprint f = footprint({1, 1}, {10, 3}, {0, 1}, 4, 1e9);
  EXPECT_DOUBLE_EQ(f.elements, 12);
}

TEST(Footprint, IsCappedByTheBuffer) {
  Footprint f = footprint({1}, {1000}, {0}, 4, 100);
  EXPECT_DOUBLE_EQ(f.elements, 100);
  EXPECT_DOUBLE_EQ(f.lines, 7);  // 400 bytes
}

}  // namespace
}  // namespace tessera::costmodel
