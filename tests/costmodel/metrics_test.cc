#include "costmodel/metrics.h"

#include <gtest/gtest.h>

namespace tessera::costmodel {
namespace {

TEST(Spearman, MonotoneIsOneAndReversedIsMinusOne) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 300, 4000}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
}

TEST(Spearman, TiesShareTheirMeanRank) {
  // Ranks of {1, 2, 2, 3} are {1, 2.5, 2.5, 4}.
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9486832980505138, 1e-12);
}

TEST(Spearman, ConstantOrTooShortIsZero) {
  EXPECT_EQ(spearman({1, 1, 1}, {1, 2, 3}), 0.0);
  EXPECT_EQ(spearman({1}, {1}), 0.0);
  EXPECT_EQ(spearman({1, 2}, {1, 2, 3}), 0.0);
}

TEST(PairwiseAccuracy, CountsOrderedPairsAndHalfForTies) {
  EXPECT_DOUBLE_EQ(pairwise_accuracy({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({3, 2, 1}, {10, 20, 30}), 0.0);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({1, 1}, {1, 2}), 0.5);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({1, 2}, {5, 5}), 0.5);  // no pair with distinct truth
}

TEST(PairwiseAccuracy, ComparesOnlyWithinAGroup) {
  // Across groups the order is wrong, within each it is right.
  EXPECT_DOUBLE_EQ(pairwise_accuracy({10, 11, 1, 2}, {1, 2, 3, 4}, {0, 0, 1, 1}), 1.0);
}

}  // namespace
}  // namespace tessera::costmodel
