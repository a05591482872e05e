// `--byoc auto`: which regions an external backend runs, by measurement.
//
// A backend's code is not faster everywhere: oneDNN's convolutions may beat
// Tessera's untuned kernels and lose to its tuned ones, and a region's
// boundary reorders cost what a small region saves. So each region the
// backend takes is measured both ways on this machine — the model compiled
// with the backend and all Tessera's (from the records), each call profiled —
// and runs where it was faster.
//
//   auto choices = choose_regions(g, target, &records, *backend).value();
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

namespace tessera::model {

/// How one region was decided.
struct RegionChoice {
  std::string region;               ///< "dnnl_region0"
  std::vector<std::string> nodes;   ///< its operators, by name
  double backend_s = 0;             ///< median of its call through the backend
  double tessera_s = 0;             ///< sum of the medians of Tessera's calls anchored in it
  bool backend = false;             ///< the backend runs it (it was faster)
};

/// The backend `--byoc auto` uses on this machine: "dnnl" when its runtime
/// module (libtessera_dnnl.so) loads, else "none".
std::string auto_backend_name();

/// Compiles `g` with `backend` and without it (both from `source`, Winograd
/// by the records as plan_model_from_records decides), runs each package
/// on random inputs and profiles every call over `runs` runs; a region goes
/// to the backend when its call took less than the Tessera calls whose
/// anchors are among its operators. Errors: planning, compiling, loading
/// and running's.
Result<std::vector<RegionChoice>> choose_regions(const graph::Graph& g, const Target& target, ScheduleSource* source,
                                                 const external::Backend& backend, const PlanOptions& options = {},
                                                 int runs = 10);

/// `backend` taking only the operators of the regions `choices` gave it:
/// the operators of the others are not supported, so they stay Tessera's
/// (and their convolutions may run by Winograd). `backend` must outlive it.
std::unique_ptr<external::Backend> restrict_backend(const external::Backend& backend,
                                                    const std::vector<RegionChoice>& choices);

/// One line per region for people: "dnnl_region0  dnnl     (47 operators;
/// dnnl 21.3 ms, tessera 35.1 ms)".
std::string format_region_choices(const std::string& backend, const std::vector<RegionChoice>& choices);

}  // namespace tessera::model
