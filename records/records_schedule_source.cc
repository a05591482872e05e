#include "records/records_schedule_source.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>

namespace tessera::records {
namespace {

// Whether a record's schedule tensorizes a loop (IterAnnotation::kTensorize).
bool uses_tiles(const Record& r) {
  return r.steps_json.find("\"tensorize\"") != std::string::npos;
}

// What sets `other` apart from `asked`, for the candidate's `why`.
std::string difference(const Target& asked, const Target& other) {
  if (asked.cpu != other.cpu) return "CPU " + other.cpu + ", not " + asked.cpu;
  if (asked.features != other.features) return "other -mattr features";
  if (asked.num_cores != other.num_cores)
    return std::to_string(other.num_cores) + " cores, not " + std::to_string(asked.num_cores);
  return "spelled differently";
}

std::string rank_text(size_t rank, int64_t of) {
  return (rank == 0 ? std::string("best") : "#" + std::to_string(rank + 1)) + " of " + std::to_string(of) +
         (of == 1 ? " record" : " records");
}

ScheduleCandidate to_candidate(const Record& r, TargetMatch match, std::string why, int64_t considered) {
  ScheduleCandidate c;
  c.steps_json = r.steps_json;
  c.cost_s = r.mean_cost();
  c.target = r.target;
  c.match = match;
  c.why = std::move(why);
  c.record_id = r.id;
  c.device_key = r.device_key;
  c.considered = considered;
  return c;
}

}  // namespace

Result<std::vector<ScheduleCandidate>> RecordsScheduleSource::candidates(const std::string& workload_key,
                                                                         const std::string& target) {
  if (!is_valid_workload_key(workload_key))
    return Status(ErrorCode::kInvalidArgument,
                  "workload key '" + workload_key + "' is not 32 lowercase hex characters");
  TESSERA_ASSIGN_OR_RETURN(std::vector<Record> best, store_.best_k(workload_key, target, k_));
  if (best.empty()) return compatible_candidates(workload_key, target);
  TESSERA_ASSIGN_OR_RETURN(std::optional<ModelCheck> lost, check_keeping_fallback(workload_key, target, best[0].id));
  if (lost) return std::vector<ScheduleCandidate>{};
  RecordFilter ok_here;
  ok_here.workload_key = workload_key;
  ok_here.target = target;
  ok_here.ok_only = true;
  TESSERA_ASSIGN_OR_RETURN(int64_t count, store_.count(ok_here));
  std::vector<ScheduleCandidate> out;
  for (size_t i = 0; i < best.size(); ++i)
    out.push_back(to_candidate(best[i], TargetMatch::kExact, rank_text(i, count) + " on this target", count));
  return out;
}

Result<std::optional<ModelCheck>> RecordsScheduleSource::check_keeping_fallback(const std::string& workload_key,
                                                                                const std::string& target,
                                                                                int64_t best_id) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<ModelCheck> check, store_.latest_model_check(workload_key, target));
  if (!check || !check->keeps_fallback || check->record_id != best_id) return std::optional<ModelCheck>();
  return check;
}

Result<std::string> RecordsScheduleSource::passed_over(const std::string& workload_key, const std::string& target) {
  if (!is_valid_workload_key(workload_key)) return std::string();
  TESSERA_ASSIGN_OR_RETURN(std::vector<Record> best, store_.best_k(workload_key, target, 1));
  if (best.empty()) return std::string();
  TESSERA_ASSIGN_OR_RETURN(std::optional<ModelCheck> lost, check_keeping_fallback(workload_key, target, best[0].id));
  if (!lost) return std::string();
  char text[200];
  std::snprintf(text, sizeof text, "the model ran %.4g ms with record %lld, %.4g ms with the fallback",
                lost->record_seconds * 1e3, static_cast<long long>(lost->record_id), lost->fallback_seconds * 1e3);
  std::string out = text;
  if (lost->session_id > 0) out += " (session " + std::to_string(lost->session_id) + ")";
  return out;
}

Result<std::vector<ScheduleCandidate>> RecordsScheduleSource::compatible_candidates(const std::string& workload_key,
                                                                                    const std::string& target) {
  // The targets this workload was measured on, with their ok counts (a
  // std::map: visited in string order, so the result does not depend on
  // insertion order).
  std::map<std::string, int64_t> counts;
  RecordFilter of_workload;
  of_workload.workload_key = workload_key;
  of_workload.ok_only = true;
  TESSERA_RETURN_IF_ERROR(store_.for_each(of_workload, [&](const Record& r) {
    ++counts[r.target];
    return Status::ok();
  }));
  const Result<Target> asked = Target::parse(target);
  if (!asked.is_ok()) return std::vector<ScheduleCandidate>{};  // compatible with nothing
  struct Ranked {
    Record record;
    size_t rank;
    int64_t count;
    std::string why;
  };
  std::vector<Ranked> pool;
  for (const auto& [other, count] : counts) {
    const Result<Target> measured_on = Target::parse(other);
    if (other == target || !measured_on.is_ok() || !asked->shares_schedules_with(*measured_on)) continue;
    TESSERA_ASSIGN_OR_RETURN(std::vector<Record> best, store_.best_k(workload_key, other, k_));
    // A schedule that runs its products on AMX tiles suits only a target
    // that has them (the rest of a tile machine's records suit any).
    if (!asked->amx_int8 && !asked->amx_bf16)
      best.erase(std::remove_if(best.begin(), best.end(), uses_tiles), best.end());
    const std::string why_there = "on a compatible target (same " + measured_on->triple + " triple and " +
                                  std::to_string(measured_on->vector_bits) + "-bit vectors; " +
                                  difference(*asked, *measured_on) + "): '" + other + "'";
    for (size_t i = 0; i < best.size(); ++i)
      pool.push_back({std::move(best[i]), i, count, rank_text(i, count) + " " + why_there});
  }
  std::stable_sort(pool.begin(), pool.end(), [](const Ranked& a, const Ranked& b) {
    const double ca = a.record.mean_cost(), cb = b.record.mean_cost();
    if (ca != cb) return ca < cb;
    if (a.record.target != b.record.target) return a.record.target < b.record.target;
    return a.record.id < b.record.id;
  });
  std::vector<ScheduleCandidate> out;
  for (size_t i = 0; i < pool.size() && static_cast<int64_t>(i) < k_; ++i)
    out.push_back(to_candidate(pool[i].record, TargetMatch::kCompatible, pool[i].why, pool[i].count));
  return out;
}

Result<std::optional<RegionMeasurement>> RecordsScheduleSource::region_measurement(const std::string& region_key,
                                                                                   const std::string& target,
                                                                                   const std::string& backend) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<RegionTime> stored, store_.latest_region_time(region_key, target, backend));
  if (!stored) return std::optional<RegionMeasurement>();
  return std::optional<RegionMeasurement>(RegionMeasurement{stored->backend_seconds, stored->tessera_seconds,
                                                            stored->tessera_basis, stored->on_backend,
                                                            stored->session_id, stored->timestamp});
}

}  // namespace tessera::records
