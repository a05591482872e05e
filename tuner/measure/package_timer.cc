#include "tuner/measure/package_timer.h"

#include "rpc/wire.h"
#include "runtime/package.h"

namespace tessera::tuner {

Result<rpc::MeasureResult> RunnerPackageTimer::measure(const std::vector<const runtime::PackageContents*>& packages,
                                                       rpc::PackageTimingSpec spec) {
  int64_t total = 0;
  for (const runtime::PackageContents* p : packages) {
    TESSERA_ASSIGN_OR_RETURN(std::string bytes, runtime::write_package_bytes(*p));
    total += static_cast<int64_t>(bytes.size());
    spec.packages.push_back(std::move(bytes));
  }
  const rpc::WireLimits limits;
  if (total > limits.max_package_bytes() || static_cast<int>(packages.size()) > limits.max_packages)
    return Status(ErrorCode::kInvalidArgument, std::to_string(packages.size()) + " packages of " +
                                                   std::to_string(total >> 20) + " MiB exceed what a worker takes (" +
                                                   std::to_string(limits.max_packages) + " packages, " +
                                                   std::to_string(limits.max_package_bytes() >> 20) + " MiB)");
  rpc::MeasureInput input;
  input.timeout_ms = timeout_ms_;
  input.packages = std::move(spec);
  TESSERA_ASSIGN_OR_RETURN(std::vector<rpc::MeasureResult> results, runner_.run({input}));
  if (results.size() != 1) return Status(ErrorCode::kInternal, "the runner gave no result for the packages");
  rpc::MeasureResult& r = results.front();
  if (r.ok()) return std::move(r);
  const std::string where = r.worker_id.empty() ? "" : " (worker " + r.worker_id + ")";
  switch (r.error) {
    case rpc::MeasureErrorKind::kLoadError: return Status(ErrorCode::kNotFound, r.message);
    case rpc::MeasureErrorKind::kRuntimeError: return Status(ErrorCode::kRuntimeError, r.message);
    default:
      return Status(rpc::is_infrastructure_error(r.error) ? ErrorCode::kUnavailable : ErrorCode::kRuntimeError,
                    std::string("timing the packages: ") + rpc::measure_error_kind_name(r.error) +
                        (r.message.empty() ? "" : ": " + r.message) + where);
  }
}

Result<std::vector<std::vector<double>>> RunnerPackageTimer::profile_alternately(
    const std::vector<const runtime::PackageContents*>& packages, int runs) {
  rpc::PackageTimingSpec spec;
  spec.runs = runs;
  TESSERA_ASSIGN_OR_RETURN(rpc::MeasureResult r, measure(packages, std::move(spec)));
  if (r.call_medians_s.size() != packages.size())
    return Status(ErrorCode::kParseError, "the worker timed " + std::to_string(r.call_medians_s.size()) + " of " +
                                              std::to_string(packages.size()) + " packages");
  for (size_t p = 0; p < packages.size(); ++p)
    if (r.call_medians_s[p].size() != packages[p]->calls.size())
      return Status(ErrorCode::kParseError, "the worker timed " + std::to_string(r.call_medians_s[p].size()) +
                                                " calls of package " + std::to_string(p) + "'s " +
                                                std::to_string(packages[p]->calls.size()));
  return std::move(r.call_medians_s);
}

Result<runtime::AlternatingTimes> RunnerPackageTimer::time_alternately(
    const std::vector<const runtime::PackageContents*>& packages, const runtime::AlternatingRounds& rounds) {
  rpc::PackageTimingSpec spec;
  spec.whole_runs = true;
  spec.rounds = rounds;
  TESSERA_ASSIGN_OR_RETURN(rpc::MeasureResult r, measure(packages, std::move(spec)));
  const runtime::AlternatingTimes& w = r.whole;
  if (w.median_s.size() != packages.size() || w.ratio_to_first.size() != packages.size() ||
      w.rounds_slower.size() != packages.size())
    return Status(ErrorCode::kParseError, "the worker timed " + std::to_string(w.median_s.size()) + " of " +
                                              std::to_string(packages.size()) + " packages");
  return std::move(r.whole);
}

}  // namespace tessera::tuner
