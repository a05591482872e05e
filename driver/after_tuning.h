// What `tessera tune MODEL` (and tessera.tune) does once the tuning has
// ended, on this machine: the graph the tuning imported, its records checked in
// the model against its untuned compile (compiler/model/check_records.h,
// stored as records::ModelCheck rows, which compile reads), then the
// regions an external backend can run timed both ways (region_times.h).
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/target.h"
#include "compiler/graph/graph.h"
#include "compiler/model/check_records.h"
#include "compiler/model/compile_model.h"
#include "records/store.h"
#include "runtime/package_timing.h"
#include "tuner/job.h"

namespace tessera::driver {

/// Checks `g`'s records in the model (on `target`, which must be this
/// machine's: the reason is returned otherwise, nothing checked), the
/// packages timed through `timer`, and stores
/// a ModelCheck per kernel taken from a record under `session_id`. Returns
/// the check, or in `skipped` why there was none. Errors: the check's and
/// the store's.
Result<model::ModelRecordsCheck> check_and_store_records(const model::PreparedModel& model, const Target& target,
                                                         const model::PlanOptions& options, records::Store& store,
                                                         int64_t session_id, runtime::PackageTimer& timer,
                                                         std::string* skipped);

/// `g` (the model the tuning imported, as it bound it) checked and its
/// regions timed through `backend` (a name resolve_byoc gave; "none": not
/// timed), both stored with `job`'s session, a report written to `out`
/// (null: nothing; `verbose`: every region). A failure is a warning on
/// stderr, not an error: the tuning's records are stored either way. The
/// packages are timed on `job`'s workers; `interrupt` set (a Ctrl-C; null:
/// never) cancels the timing in flight and skips the rest, said on `out`.
void after_model_tuning(const model::PreparedModel& model, const model::PlanOptions& options,
                        const std::string& backend, tuner::TuneJob& job, FILE* out, bool verbose,
                        const std::atomic<bool>* interrupt = nullptr);

}  // namespace tessera::driver
