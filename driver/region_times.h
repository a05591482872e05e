// After a model's tuning: the regions an external backend can run, timed
// both ways on this machine and stored with the tuning session, so that
// `tessera compile --byoc auto` takes each region's faster way from the
// records instead of timing it again (compiler/model/choose_byoc.h).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/target.h"
#include "compiler/graph/graph.h"
#include "compiler/model/choose_byoc.h"
#include "records/store.h"
#include "runtime/package_timing.h"
#include "tuner/job.h"

namespace tessera::driver {

/// What timing a model's regions did.
struct TunedRegions {
  std::string backend;                       ///< the backend timed ("dnnl"); "none" when none was
  std::vector<model::RegionChoice> regions;  ///< each region, both ways
  /// The whole model all Tessera's, all the backend's, each region its
  /// faster way (0: that is one of the two): model::RegionPlans'.
  double tessera_total_s = 0, backend_total_s = 0, mixed_total_s = 0;
  std::string skipped;  ///< why nothing was timed, for people; empty when timed
};

/// The backend `--byoc` names for timing regions on `target`: "auto" is
/// model::auto_backend_name's choice. Errors: kInvalidArgument for an
/// unknown name (listing the known ones).
Result<std::string> resolve_byoc(const std::string& byoc, const Target& target);

/// Times each region `backend` ("none": nothing) takes in `model` (planned
/// with `options`) both ways
/// (model::measure_regions, schedules from `store`'s records, packages
/// timed through `timer`) and stores
/// the times under `session_id`. Skipped, with the reason, when `target` is
/// not this machine's (a region is timed here, not on the device) or the
/// backend takes no region. Errors: the measurement's and the store's.
Result<TunedRegions> time_model_regions(const model::PreparedModel& model, const std::string& backend,
                                        const Target& target, records::Store& store, int64_t session_id,
                                        runtime::PackageTimer& timer, const model::PlanOptions& options = {});

/// "regions timed both ways (dnnl), stored for compile --byoc auto:", a
/// line per region that runs on the backend (every region with `all`), and
/// the whole model both ways; or the reason nothing was timed.
std::string format_tuned_regions(const TunedRegions& tuned, bool all = true);

}  // namespace tessera::driver
