#include "costmodel/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera::costmodel {
namespace {

// Ranks from 1, ties sharing the mean of the ranks they span.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean_rank = (double(i) + double(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[order[k]] = mean_rank;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  const double mean = (n + 1) / 2;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (va == 0 || vb == 0) return 0;
  return cov / std::sqrt(va * vb);
}

double pairwise_accuracy(const std::vector<double>& predicted, const std::vector<double>& truth,
                         const std::vector<int64_t>& groups) {
  const size_t n = std::min(predicted.size(), truth.size());
  double right = 0, pairs = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (truth[i] == truth[j]) continue;
      if (!groups.empty() && groups[i] != groups[j]) continue;
      pairs += 1;
      const double dp = predicted[i] - predicted[j];
      const double dt = truth[i] - truth[j];
      if (dp == 0) {
        right += 0.5;
      } else if ((dp > 0) == (dt > 0)) {
        right += 1;
      }
    }
  }
  return pairs > 0 ? right / pairs : 0.5;
}

}  // namespace tessera::costmodel
