// `--byoc auto`: which regions an external backend runs, by measurement.
//
// A backend's code is not faster everywhere: oneDNN's convolutions may beat
// Tessera's untuned kernels and lose to its tuned ones, and a region's
// boundary reorders cost what a small region saves. So each region the
// backend takes is measured both ways on this machine — the model compiled
// with the backend and all Tessera's (from the records), each call profiled —
// and runs where it was faster. `tessera tune` measures them after tuning
// and stores the times (records' region_times). Compile times nothing: it
// takes a stored time while the schedules behind Tessera's side are still
// the ones the records choose (the region's basis), and leaves a region
// without one to Tessera (stored_region_choices).
//
//   auto choices = stored_region_choices(model, target, &records, *backend).value();
//   auto chosen = restrict_backend(*backend, choices);   // takes only the regions it won
//   options.byoc = chosen.get();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/external/backend.h"
#include "compiler/model/compile_model.h"
#include "compiler/schedule/schedule_source.h"
#include "runtime/package_timing.h"

namespace tessera::model {

/// How one region was decided.
struct RegionChoice {
  std::string region;              ///< "dnnl_region0"
  std::string key;                 ///< 32 lowercase hex: the backend and its code for the region
  std::vector<std::string> nodes;  ///< its operators, by name
  std::string tessera_basis;       ///< 32 lowercase hex: the schedules of Tessera's calls for its operators
  double backend_s = 0;            ///< median of its call through the backend
  double tessera_s = 0;            ///< sum of the medians of Tessera's calls that compute its operators
  bool backend = false;            ///< the backend runs it (it was faster, or the whole model was)
  /// Decided by the whole model's time against its own: every region one
  /// way ran faster than each region its faster way.
  bool by_whole_model = false;
  bool stored = false;     ///< the times are the records' (RegionMeasurement), not measured now
  int64_t session_id = 0;  ///< stored: the tuning session that measured them
  /// Non-empty: the backend refused to build the region (its module's
  /// message), so Tessera runs it whatever the times.
  std::string refused;
  /// No stored time held and nothing was timed (stored_region_choices):
  /// Tessera runs it.
  bool untimed = false;
};

/// A model planned both ways, and the regions the backend takes, untimed.
struct RegionPlans {
  ModelPlan with_backend;             ///< the backend's regions as external groups
  ModelPlan without_backend;          ///< every operator Tessera's
  std::vector<RegionChoice> regions;  ///< in the order of with_backend's external groups, then the refused
  // What plan_regions was given, for planning the mixed model; they must
  // outlive the plans.
  const PreparedModel* model = nullptr;
  const external::Backend* backend = nullptr;
  PlanOptions options;
  /// measure_regions: the whole model's time (sum of its calls' medians)
  /// all Tessera's, all the backend's, and each region its faster way (0
  /// when that is one of the other two).
  double tessera_total_s = 0, backend_total_s = 0, mixed_total_s = 0;
};

/// The backend `--byoc auto` uses for `target`: "dnnl" when `target` runs
/// on this machine (x86-64) and its runtime module (libtessera_dnnl.so)
/// loads, else "none".
std::string auto_backend_name(const Target& target);

/// Plans `model` with `backend` and without it (Winograd by the records, as
/// plan_model_from_records decides) and names each region: its key, its
/// operators, and the basis of Tessera's side (the record each of its
/// kernels would use from `source`). Nothing is compiled or timed.
Result<RegionPlans> plan_regions(const PreparedModel& model, const Target& target, ScheduleSource* source,
                                 const external::Backend& backend, const PlanOptions& options = {});

/// Compiles both plans (schedules from `source`), runs each package on
/// random inputs and profiles every call over `runs` runs (through `timer`:
/// in this process, or on a worker); a region goes to
/// the backend when its call took less than the Tessera calls that compute
/// its operators (each call counted for the region most of its fused
/// operators belong to). A region's time leaves out what changes around
/// it (layout changes, a fusion it splits), so the whole model is timed
/// too, with each region so decided: when all Tessera's or all the
/// backend's is faster than that, every region goes that way
/// (RegionChoice::by_whole_model). A region the backend's module refuses
/// to build at load is Tessera's (RegionChoice::refused, listed after the
/// others) and the model is planned again without it: the default compile
/// never fails where the backend does. Errors: compiling, loading and
/// running's.
Status measure_regions(RegionPlans& plans, const Target& target, ScheduleSource* source, runtime::PackageTimer& timer,
                       int runs = 10);

/// `--byoc auto` as compile decides it, timing nothing: each region as its
/// stored measurement decides it (`source`'s region_measurement, taken
/// while the basis behind Tessera's side is the one it was timed on), and a
/// region with none that still holds is Tessera's (RegionChoice::untimed).
/// `tessera tune` times the regions and stores the times.
Result<std::vector<RegionChoice>> stored_region_choices(const PreparedModel& model, const Target& target,
                                                        ScheduleSource* source, const external::Backend& backend,
                                                        const PlanOptions& options = {});

/// `backend` taking only the operators of the regions `choices` gave it:
/// the operators of the others are not supported, so they stay Tessera's
/// (and their convolutions may run by Winograd). `backend` must outlive it.
std::unique_ptr<external::Backend> restrict_backend(const external::Backend& backend,
                                                    const std::vector<RegionChoice>& choices);

/// One line per region for people: "dnnl_region0  dnnl     (47 operators;
/// dnnl 21.3 ms, tessera 35.1 ms; measured now)" — or "; tuning session 3"
/// for a stored time, "not timed" for an untimed one — then a warning for
/// each region the backend refused to build, with its module's message.
std::string format_region_choices(const std::string& backend, const std::vector<RegionChoice>& choices);

}  // namespace tessera::model
