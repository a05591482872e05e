#include "driver/after_tuning.h"

#include "compiler/codegen/llvm_target.h"
#include "driver/region_times.h"
#include "records/records_schedule_source.h"
#include "tuner/measure/package_timer.h"

namespace tessera::driver {

Result<model::ModelRecordsCheck> check_and_store_records(const model::PreparedModel& model, const Target& target,
                                                         const model::PlanOptions& options, records::Store& store,
                                                         int64_t session_id, runtime::PackageTimer& timer,
                                                         std::string* skipped) {
  const std::string target_text = target.to_string();
  if (target_text != host_target().to_string()) {
    *skipped = "the target is not this machine (" + host_target().to_string() + ")";
    return model::ModelRecordsCheck{};
  }
  records::RecordsScheduleSource source(store);
  TESSERA_ASSIGN_OR_RETURN(model::ModelRecordsCheck check,
                           model::check_records_in_model(model, target, source, timer, options));
  for (const model::RecordCheck& r : check.records) {
    records::ModelCheck row;
    row.workload_key = r.workload_key;
    row.target = target_text;
    row.record_id = r.record_id;
    row.record_seconds = r.model_with_record_s;
    row.fallback_seconds = r.model_with_fallback_s;
    row.keeps_fallback = r.keeps_fallback;
    row.session_id = session_id;
    TESSERA_RETURN_IF_ERROR(store.add_model_check(row));
  }
  return check;
}

namespace {

// The runner cancels its jobs while `*interrupt` is set, for as long as this
// lives.
class CancelWhile {
 public:
  CancelWhile(rpc::Runner& runner, const std::atomic<bool>* interrupt) : runner_(runner) {
    runner_.set_cancel(interrupt);
  }
  ~CancelWhile() { runner_.set_cancel(nullptr); }
  CancelWhile(const CancelWhile&) = delete;
  CancelWhile& operator=(const CancelWhile&) = delete;

 private:
  rpc::Runner& runner_;
};

bool interrupted(const std::atomic<bool>* interrupt, FILE* out, const char* what) {
  if (!interrupt || !interrupt->load()) return false;
  if (out) std::fprintf(out, "stopped by Ctrl-C: %s (the tuning's records are stored)\n", what);
  return true;
}

}  // namespace

void after_model_tuning(const model::PreparedModel& model, const model::PlanOptions& options,
                        const std::string& backend, tuner::TuneJob& job, FILE* out, bool verbose,
                        const std::atomic<bool>* interrupt) {
  const char* skipped_all = backend == "none" ? "the records were not checked in the model"
                                              : "the records were not checked in the model, nor the regions timed";
  if (interrupted(interrupt, out, skipped_all)) return;
  if (out) {
    std::fprintf(out, "\nchecking the records in the model, against its untuned compile...\n");
    std::fflush(out);
  }
  std::string skipped;
  // Timed where the tuning measured, in the workers' sandbox.
  CancelWhile cancel(job.runner(), interrupt);
  tuner::RunnerPackageTimer timer(job.runner());
  auto check =
      check_and_store_records(model, job.config().target, options, job.store(), job.session_id(), timer, &skipped);
  if (interrupted(interrupt, out, skipped_all)) return;
  if (!check.is_ok()) {
    std::fprintf(stderr, "tessera tune: warning: the records were not checked in the model: %s\n",
                 check.status().message().c_str());
  } else if (out) {
    std::fprintf(out, "%s",
                 skipped.empty() ? model::format_records_check(*check).c_str()
                                 : ("records not checked in the model: " + skipped + "\n").c_str());
  }
  if (backend == "none") return;
  if (out) {
    std::fprintf(out, "\ntiming the regions %s can run, both ways (for compile --byoc auto)...\n", backend.c_str());
    std::fflush(out);
  }
  Result<TunedRegions> tuned =
      time_model_regions(model, backend, job.config().target, job.store(), job.session_id(), timer, options);
  if (interrupted(interrupt, out, "the regions were not timed")) return;
  if (!tuned.is_ok()) {
    std::fprintf(stderr, "tessera tune: warning: the regions were not timed: %s\n", tuned.status().message().c_str());
    return;
  }
  if (out) std::fprintf(out, "%s", format_tuned_regions(*tuned, verbose).c_str());
}

}  // namespace tessera::driver
