#include "base/int_div.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "compiler/ir/op.h"

namespace tessera {
namespace {

TEST(FloorDiv, RoundsTowardNegativeInfinity) {
  EXPECT_EQ(floordiv(7, 2), 3);
  EXPECT_EQ(floordiv(-7, 2), -4);
  EXPECT_EQ(floordiv(7, -2), -4);
  EXPECT_EQ(floordiv(-7, -2), 3);
  EXPECT_EQ(floordiv(-8, 2), -4);
  EXPECT_EQ(floordiv(0, -3), 0);
}

TEST(FloorMod, HasTheSignOfTheDivisor) {
  EXPECT_EQ(floormod(7, 3), 1);
  EXPECT_EQ(floormod(-7, 3), 2);
  EXPECT_EQ(floormod(7, -3), -2);
  EXPECT_EQ(floormod(-7, -3), -1);
  EXPECT_EQ(floormod(-6, 3), 0);
}

TEST(FloorDiv, QuotientAndRemainderRecomposeTheDividend) {
  for (int64_t a = -20; a <= 20; ++a) {
    for (int64_t b : {-7, -3, -2, -1, 1, 2, 5}) {
      const int64_t q = floordiv(a, b), r = floormod(a, b);
      EXPECT_EQ(q * b + r, a) << a << " " << b;
      EXPECT_TRUE(r == 0 || (r < 0) == (b < 0)) << a << " " << b;
      EXPECT_LT(r < 0 ? -r : r, b < 0 ? -b : b) << a << " " << b;
    }
  }
}

TEST(FloorDiv, MinimumByMinusOneWrapsInsteadOfTrapping) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(floordiv(kMin, -1), kMin);
  EXPECT_EQ(floormod(kMin, -1), 0);
  EXPECT_EQ(floordiv(kMin, 1), kMin);
}

TEST(FloorDiv, ConstantFoldingOfTheIrUsesIt) {
  int64_t out = 0;
  ASSERT_TRUE(fold_int_binary(ExprKind::kDiv, -7, 2, &out));
  EXPECT_EQ(out, -4);
  ASSERT_TRUE(fold_int_binary(ExprKind::kMod, -7, 2, &out));
  EXPECT_EQ(out, 1);
  EXPECT_FALSE(fold_int_binary(ExprKind::kMod, 1, 0, &out));
}

}  // namespace
}  // namespace tessera
