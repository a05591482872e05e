// How well scores rank candidates: the measures tests, benchmarks and the
// tuner's logs report for a cost model.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::costmodel {

/// Spearman rank correlation of `a` and `b` (equal sizes): the Pearson
/// correlation of their ranks, ties sharing their mean rank. In [-1, 1];
/// 0 when either side is constant or has fewer than two entries.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Share of pairs (i, j) with truth[i] != truth[j] that `predicted` orders the
/// same way; a tie in `predicted` counts one half. Only pairs within one
/// group are compared when `groups` is not empty. 0.5 when there is no pair.
double pairwise_accuracy(const std::vector<double>& predicted, const std::vector<double>& truth,
                         const std::vector<int64_t>& groups = {});

}  // namespace tessera::costmodel
