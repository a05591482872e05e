#include "driver/region_times.h"

#include <cstdio>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/backend.h"
#include "records/records_schedule_source.h"

namespace tessera::driver {

Result<std::string> resolve_byoc(const std::string& byoc, const Target& target) {
  if (byoc == "auto") return model::auto_backend_name(target);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<external::Backend> backend, external::make_backend(byoc));
  return backend ? backend->name() : std::string("none");
}

Result<TunedRegions> time_model_regions(const model::PreparedModel& model, const std::string& backend_name,
                                        const Target& target, records::Store& store, int64_t session_id,
                                        runtime::PackageTimer& timer, const model::PlanOptions& options) {
  TunedRegions tuned;
  tuned.backend = backend_name;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<external::Backend> backend, external::make_backend(backend_name));
  if (!backend) {
    tuned.skipped = "no external backend (--byoc none)";
    return tuned;
  }
  const std::string target_text = target.to_string();
  if (target_text != host_target().to_string()) {
    tuned.skipped =
        "the target is not this machine (" + host_target().to_string() + "): regions are timed where compile runs";
    return tuned;
  }
  records::RecordsScheduleSource source(store);
  TESSERA_ASSIGN_OR_RETURN(model::RegionPlans plans, model::plan_regions(model, target, &source, *backend, options));
  if (plans.regions.empty()) {
    tuned.skipped = backend_name + " takes no region of this model";
    return tuned;
  }
  TESSERA_RETURN_IF_ERROR(model::measure_regions(plans, target, &source, timer));
  for (const model::RegionChoice& c : plans.regions) {
    records::RegionTime t;
    t.region_key = c.key;
    t.backend = backend_name;
    t.target = target_text;
    for (const std::string& node : c.nodes) t.operators += (t.operators.empty() ? "" : ",") + node;
    t.backend_seconds = c.backend_s;
    t.tessera_seconds = c.tessera_s;
    t.tessera_basis = c.tessera_basis;
    t.on_backend = c.backend;
    t.session_id = session_id;
    TESSERA_RETURN_IF_ERROR(store.add_region_time(t));
  }
  tuned.regions = std::move(plans.regions);
  tuned.tessera_total_s = plans.tessera_total_s;
  tuned.backend_total_s = plans.backend_total_s;
  tuned.mixed_total_s = plans.mixed_total_s;
  return tuned;
}

std::string format_tuned_regions(const TunedRegions& tuned, bool all) {
  if (!tuned.skipped.empty()) return "regions not timed both ways: " + tuned.skipped + "\n";
  char whole[240];
  const int n = std::snprintf(whole, sizeof whole, "the whole model: all tessera %.3f ms, all %s %.3f ms",
                              tuned.tessera_total_s * 1e3, tuned.backend.c_str(), tuned.backend_total_s * 1e3);
  if (tuned.mixed_total_s > 0 && n > 0 && static_cast<size_t>(n) < sizeof whole)
    std::snprintf(whole + n, sizeof whole - static_cast<size_t>(n), ", each region its faster way %.3f ms",
                  tuned.mixed_total_s * 1e3);
  std::vector<model::RegionChoice> shown;
  for (const model::RegionChoice& c : tuned.regions)
    if (all || c.backend || !c.refused.empty()) shown.push_back(c);
  std::string hidden;
  if (shown.size() < tuned.regions.size())
    hidden = "  " + std::to_string(tuned.regions.size() - shown.size()) + " of " +
             std::to_string(tuned.regions.size()) + " regions run on Tessera (--verbose lists them)\n";
  return "regions timed both ways (" + tuned.backend + "), stored for compile --byoc auto:\n" +
         model::format_region_choices(tuned.backend, shown) + hidden + "  " + whole + "\n";
}

}  // namespace tessera::driver
