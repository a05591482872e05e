#include "runtime/package_timing.h"

#include <algorithm>
#include <cmath>

namespace tessera::runtime {
namespace {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

std::vector<GraphExecutor*> pointers(const std::vector<std::unique_ptr<GraphExecutor>>& executors) {
  std::vector<GraphExecutor*> out;
  for (const std::unique_ptr<GraphExecutor>& e : executors) out.push_back(e.get());
  return out;
}

}  // namespace

Result<std::vector<std::unique_ptr<GraphExecutor>>> load_with_random_inputs(
    const std::vector<const PackageContents*>& packages, const ExecutorOptions& options, uint64_t seed) {
  std::vector<std::unique_ptr<GraphExecutor>> executors;
  for (const PackageContents* package : packages) {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<GraphExecutor> exec, GraphExecutor::load(*package, options));
    uint64_t input_seed = seed;
    for (const TensorInfo& in : exec->input_info()) {
      TESSERA_ASSIGN_OR_RETURN(NDArray array, NDArray::create(in.shape, in.dtype));
      array.fill_random(input_seed++);
      TESSERA_RETURN_IF_ERROR(exec->set_input(in.name, array));
    }
    executors.push_back(std::move(exec));
  }
  return executors;
}

// Profiled one block each, a burst during the all-Tessera block once put a
// whole ResNet-18 on oneDNN, 30% slower there: hence rounds.
Result<std::vector<std::vector<double>>> profile_alternately(const std::vector<GraphExecutor*>& executors, int runs) {
  constexpr int kRounds = 5;
  const int per_round = std::max(1, (runs + kRounds - 1) / kRounds);
  std::vector<std::vector<std::vector<double>>> rounds(executors.size());  // executor, call, round
  for (int round = 0; round < kRounds; ++round)
    for (size_t p = 0; p < executors.size(); ++p) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<GraphExecutor::CallProfile> profile, executors[p]->profile(per_round));
      rounds[p].resize(profile.size());
      for (size_t c = 0; c < profile.size(); ++c) rounds[p][c].push_back(profile[c].median_s);
    }
  std::vector<std::vector<double>> seconds(executors.size());
  for (size_t p = 0; p < executors.size(); ++p)
    for (std::vector<double>& calls : rounds[p]) seconds[p].push_back(median_of(std::move(calls)));
  return seconds;
}

Result<AlternatingTimes> time_alternately(const std::vector<GraphExecutor*>& executors,
                                          const AlternatingRounds& rounds) {
  // A warm run of each, and the slowest sizes the rounds (the same number
  // of runs for every package): a round of microseconds would time the
  // clock, one of seconds would let the load drift within it.
  double slowest_s = 0;
  for (GraphExecutor* exec : executors) {
    TESSERA_ASSIGN_OR_RETURN(TimingResult warm, exec->benchmark(1, 1));
    slowest_s = std::max(slowest_s, warm.median_s);
  }
  const int runs = static_cast<int>(std::clamp(std::ceil(rounds.round_s / std::max(slowest_s, 1e-7)), 1.0, 1000.0));
  const int count = std::max(rounds.rounds, 1);
  std::vector<std::vector<double>> medians(executors.size());  // executor, round
  for (int round = 0; round < count; ++round)
    for (size_t p = 0; p < executors.size(); ++p) {
      TESSERA_ASSIGN_OR_RETURN(TimingResult t, executors[p]->benchmark(0, runs));
      medians[p].push_back(t.median_s);
    }
  AlternatingTimes out;
  out.rounds = count;
  for (size_t p = 0; p < executors.size(); ++p) {
    std::vector<double> ratios;
    for (size_t r = 0; r < medians[p].size(); ++r) ratios.push_back(medians[p][r] / medians[0][r]);
    const auto slower = std::count_if(ratios.begin(), ratios.end(), [](double x) { return x > 1; });
    out.rounds_slower.push_back(static_cast<int>(slower));
    out.median_s.push_back(median_of(medians[p]));
    out.ratio_to_first.push_back(median_of(std::move(ratios)));
  }
  return out;
}

Result<std::vector<std::vector<double>>> InProcessPackageTimer::profile_alternately(
    const std::vector<const PackageContents*>& packages, int runs) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GraphExecutor>> executors,
                           load_with_random_inputs(packages, options_));
  return runtime::profile_alternately(pointers(executors), runs);
}

Result<AlternatingTimes> InProcessPackageTimer::time_alternately(const std::vector<const PackageContents*>& packages,
                                                                 const AlternatingRounds& rounds) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GraphExecutor>> executors,
                           load_with_random_inputs(packages, options_));
  return runtime::time_alternately(pointers(executors), rounds);
}

}  // namespace tessera::runtime
