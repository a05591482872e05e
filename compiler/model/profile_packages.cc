#include "compiler/model/profile_packages.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "runtime/graph_executor.h"

namespace tessera::model {
namespace {

// Executors for `packages`, each with its inputs set to random values.
Result<std::vector<std::unique_ptr<runtime::GraphExecutor>>> load_with_random_inputs(
    const std::vector<const runtime::PackageContents*>& packages) {
  std::vector<std::unique_ptr<runtime::GraphExecutor>> execs;
  for (const runtime::PackageContents* package : packages) {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<runtime::GraphExecutor> exec, runtime::GraphExecutor::load(*package));
    uint64_t seed = 1;
    for (const runtime::TensorInfo& in : exec->input_info()) {
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray array, runtime::NDArray::create(in.shape, in.dtype));
      array.fill_random(seed++);
      TESSERA_RETURN_IF_ERROR(exec->set_input(in.name, array));
    }
    execs.push_back(std::move(exec));
  }
  return execs;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

Result<runtime::PackageContents> compile_package(const ModelPlan& plan, const Target& target, ScheduleSource* source,
                                                 std::vector<size_t>* group_calls) {
  CompileOptions co;
  co.source = source;
  TESSERA_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(plan, target, co));
  if (group_calls) *group_calls = std::move(compiled.group_calls);
  return std::move(compiled.package);
}

// Per call of each package, its median seconds over about `runs` runs on
// random inputs, the packages profiled in alternating rounds: a burst of
// load on a shared machine then falls on every package alike. Profiled one
// block each, a burst during the all-Tessera block once put a whole
// ResNet-18 on oneDNN, 30% slower there.
Result<std::vector<std::vector<double>>> profile_alternately(
    const std::vector<const runtime::PackageContents*>& packages, int runs) {
  constexpr int kRounds = 5;
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<runtime::GraphExecutor>> execs,
                           load_with_random_inputs(packages));
  const int per_round = std::max(1, (runs + kRounds - 1) / kRounds);
  std::vector<std::vector<std::vector<double>>> rounds(execs.size());  // package, call, round
  for (int round = 0; round < kRounds; ++round)
    for (size_t p = 0; p < execs.size(); ++p) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<runtime::GraphExecutor::CallProfile> profile, execs[p]->profile(per_round));
      rounds[p].resize(profile.size());
      for (size_t c = 0; c < profile.size(); ++c) rounds[p][c].push_back(profile[c].median_s);
    }
  std::vector<std::vector<double>> seconds(execs.size());
  for (size_t p = 0; p < execs.size(); ++p)
    for (std::vector<double>& calls : rounds[p]) seconds[p].push_back(median_of(std::move(calls)));
  return seconds;
}

Result<AlternatingTimes> time_alternately(const std::vector<const runtime::PackageContents*>& packages, int rounds,
                                          double round_s) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<runtime::GraphExecutor>> execs,
                           load_with_random_inputs(packages));
  // A warm run of each, and the slowest sizes the rounds (the same number
  // of runs for every package): a round of microseconds would time the
  // clock, one of seconds would let the load drift within it.
  double slowest_s = 0;
  for (const std::unique_ptr<runtime::GraphExecutor>& exec : execs) {
    TESSERA_ASSIGN_OR_RETURN(runtime::TimingResult warm, exec->benchmark(1, 1));
    slowest_s = std::max(slowest_s, warm.median_s);
  }
  const int runs = static_cast<int>(std::clamp(std::ceil(round_s / std::max(slowest_s, 1e-7)), 1.0, 1000.0));
  std::vector<std::vector<double>> medians(execs.size());  // package, round
  for (int round = 0; round < std::max(rounds, 1); ++round)
    for (size_t p = 0; p < execs.size(); ++p) {
      TESSERA_ASSIGN_OR_RETURN(runtime::TimingResult t, execs[p]->benchmark(0, runs));
      medians[p].push_back(t.median_s);
    }
  AlternatingTimes out;
  out.rounds = std::max(rounds, 1);
  for (size_t p = 0; p < execs.size(); ++p) {
    std::vector<double> ratios;
    for (size_t r = 0; r < medians[p].size(); ++r) ratios.push_back(medians[p][r] / medians[0][r]);
    const auto slower = std::count_if(ratios.begin(), ratios.end(), [](double x) { return x > 1; });
    out.rounds_slower.push_back(static_cast<int>(slower));
    out.median_s.push_back(median_of(medians[p]));
    out.ratio_to_first.push_back(median_of(std::move(ratios)));
  }
  return out;
}

}  // namespace tessera::model
