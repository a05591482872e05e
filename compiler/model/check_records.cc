#include "compiler/model/check_records.h"

#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "compiler/model/choose_winograd.h"
#include "runtime/package.h"

namespace tessera::model {
namespace {

// `inner` with the records of some workloads withheld: those kernels take
// their fallback, as in an untuned compile.
class WithoutRecordsOf final : public ScheduleSource {
 public:
  WithoutRecordsOf(ScheduleSource& inner, std::set<std::string> withheld)
      : inner_(inner), withheld_(std::move(withheld)) {}
  Result<std::vector<ScheduleCandidate>> candidates(const std::string& workload_key,
                                                    const std::string& target) override {
    if (withheld_.count(workload_key)) return std::vector<ScheduleCandidate>{};
    return inner_.candidates(workload_key, target);
  }
  Result<std::optional<RegionMeasurement>> region_measurement(const std::string& region_key, const std::string& target,
                                                              const std::string& backend) override {
    return inner_.region_measurement(region_key, target, backend);
  }

 private:
  ScheduleSource& inner_;
  std::set<std::string> withheld_;
};

// The model planned and compiled from `source` (null: untuned).
struct Compiled {
  ModelPlan plan;
  CompiledModel model;
};

Result<Compiled> compile_from(const PreparedModel& model, const Target& target, ScheduleSource* source,
                              const PlanOptions& options) {
  Compiled c;
  TESSERA_ASSIGN_OR_RETURN(c.plan, plan_model_from_records(model, target, source, nullptr, options));
  CompileOptions co;
  co.source = source;
  TESSERA_ASSIGN_OR_RETURN(c.model, compile_model(c.plan, target, co));
  return c;
}

// Each kernel of `tuned` taken from a record, with its calls' mean time in
// the model (a profile of the tuned package).
Result<std::vector<RecordCheck>> kernels_from_records(const Compiled& tuned, runtime::PackageTimer& timer) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::vector<double>> calls,
                           timer.profile_alternately({&tuned.model.package}, 5));
  std::map<std::string, std::pair<double, int>> time_of_symbol;  // total seconds, calls
  const std::vector<runtime::KernelCall>& layout = tuned.model.package.calls;
  for (size_t i = 0; i < calls[0].size() && i < layout.size(); ++i) {
    auto& [seconds, count] = time_of_symbol[layout[i].symbol];
    seconds += calls[0][i];
    ++count;
  }
  std::vector<RecordCheck> out;
  for (size_t t = 0; t < tuned.model.kernels.size(); ++t) {
    const KernelInfo& k = tuned.model.kernels[t];
    if (k.source != ScheduleChoice::Source::kRecord || k.record_id <= 0) continue;
    RecordCheck r;
    r.workload_key = tuned.plan.tasks[t].dag->workload_key();
    r.label = k.label;
    r.record_id = k.record_id;
    const auto it = time_of_symbol.find(k.symbol);
    if (it != time_of_symbol.end() && it->second.second > 0) r.call_s = it->second.first / it->second.second;
    out.push_back(std::move(r));
  }
  return out;
}

// Whether package `p` of `times` is slower than packages[0] (kNoSlowerThan,
// kNoSlowerBy_s).
bool slower(const runtime::AlternatingTimes& times, size_t p) {
  return times.ratio_to_first[p] > kNoSlowerThan && times.rounds_slower[p] >= times.rounds - 1 &&
         times.median_s[p] - times.median_s[0] > kNoSlowerBy_s;
}

// The workloads of `records` whose calls take under `below` seconds.
std::set<std::string> smaller_than(const std::vector<RecordCheck>& records, double below) {
  std::set<std::string> keys;
  for (const RecordCheck& r : records)
    if (r.call_s < below) keys.insert(r.workload_key);
  return keys;
}

}  // namespace

Result<ModelRecordsCheck> check_records_in_model(const PreparedModel& model, const Target& target,
                                                 ScheduleSource& source, runtime::PackageTimer& timer,
                                                 const PlanOptions& options) {
  ModelRecordsCheck check;
  TESSERA_ASSIGN_OR_RETURN(Compiled tuned, compile_from(model, target, &source, options));
  TESSERA_ASSIGN_OR_RETURN(check.records, kernels_from_records(tuned, timer));
  if (check.records.empty()) return check;
  TESSERA_ASSIGN_OR_RETURN(Compiled untuned, compile_from(model, target, nullptr, options));
  TESSERA_ASSIGN_OR_RETURN(runtime::AlternatingTimes first,
                           timer.time_alternately({&untuned.model.package, &tuned.model.package}, {}));
  check.untuned_s = first.median_s[0];
  check.tuned_s = check.chosen_s = first.median_s[1];
  check.chosen_vs_untuned = first.ratio_to_first[1];
  check.chosen_slower = slower(first, 1);
  for (RecordCheck& r : check.records) {
    r.model_with_record_s = check.tuned_s;
    r.model_with_fallback_s = check.untuned_s;
  }
  // Drop the records of ever larger kernels while the model is slower.
  std::set<std::string> dropped;
  for (double below : {10e-6, 100e-6, 0.0}) {
    if (!check.chosen_slower) break;
    std::set<std::string> drop = below > 0 ? smaller_than(check.records, below) : std::set<std::string>{};
    if (below == 0)
      for (const RecordCheck& r : check.records) drop.insert(r.workload_key);
    if (drop.size() == dropped.size()) continue;  // no kernel of that size: nothing new to try
    const double before_s = check.chosen_s;
    double after_s = check.untuned_s, ratio = 1;
    bool still_slower = false;
    if (drop.size() < check.records.size()) {
      WithoutRecordsOf withheld(source, drop);
      TESSERA_ASSIGN_OR_RETURN(Compiled candidate, compile_from(model, target, &withheld, options));
      TESSERA_ASSIGN_OR_RETURN(runtime::AlternatingTimes times,
                               timer.time_alternately({&untuned.model.package, &candidate.model.package}, {}));
      ++check.packages_timed;
      after_s = times.median_s[1];
      ratio = times.ratio_to_first[1];
      still_slower = slower(times, 1);
      if (ratio > check.chosen_vs_untuned) continue;  // no better: try larger kernels
    }
    for (RecordCheck& r : check.records) {
      if (!drop.count(r.workload_key) || dropped.count(r.workload_key)) continue;
      r.keeps_fallback = true;
      r.model_with_record_s = before_s;
      r.model_with_fallback_s = after_s;
    }
    dropped = std::move(drop);
    check.chosen_s = after_s;
    check.chosen_vs_untuned = ratio;
    check.chosen_slower = still_slower;
  }
  for (RecordCheck& r : check.records)
    if (!r.keeps_fallback) r.model_with_record_s = check.chosen_s;
  return check;
}

std::string format_records_check(const ModelRecordsCheck& check) {
  if (check.records.empty()) return "the model takes no kernel from a record: nothing to check\n";
  char line[320];
  std::snprintf(line, sizeof line,
                "the model from the records %.4g ms, its untuned compile %.4g ms (alternating runs)\n",
                check.tuned_s * 1e3, check.untuned_s * 1e3);
  std::string out = line;
  int kept = 0;
  for (const RecordCheck& r : check.records) kept += r.keeps_fallback ? 1 : 0;
  if (kept == 0) {
    std::snprintf(line, sizeof line, "  every record holds in the model (%zu kernel%s from records)\n",
                  check.records.size(), check.records.size() == 1 ? "" : "s");
    return out + line;
  }
  std::snprintf(line, sizeof line,
                "  slower than untuned: %d of %zu kernels keep their fallback (their records won "
                "alone, not in the model)\n  the model now %.4g ms, %.2fx untuned's time\n",
                kept, check.records.size(), check.chosen_s * 1e3, check.chosen_vs_untuned);
  out += line;
  for (const RecordCheck& r : check.records)
    if (r.keeps_fallback) {
      std::snprintf(line, sizeof line, "    %s (record %lld, %.3g us a call)\n", r.label.c_str(),
                    static_cast<long long>(r.record_id), r.call_s * 1e6);
      out += line;
    }
  return out;
}

}  // namespace tessera::model
