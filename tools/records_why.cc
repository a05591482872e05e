#include "tools/records_why.h"

#include <cstdio>
#include <map>

#include "base/target.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/external/backend.h"
#include "compiler/model/choose_byoc.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/space/choose/apply_best.h"
#include "driver/model_input.h"
#include "records/records_schedule_source.h"
#include "records/store.h"

namespace tessera::cli {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "tessera records why: %s\n", message.c_str());
  return 1;
}

std::string milliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g ms", seconds * 1e3);
  return buf;
}

// Why a kernel has no record to use, from what the database holds of its workload.
std::string why_no_record(records::Store& store, const std::vector<records::WorkloadStats>& stats,
                          const std::string& key, const std::string& target, const ScheduleChoice& choice) {
  const records::WorkloadStats* here = nullptr;
  std::vector<std::string> elsewhere;
  for (const auto& s : stats) {
    if (s.workload_key != key) continue;
    if (s.target == target)
      here = &s;
    else
      elsewhere.push_back(s.target + " (" + std::to_string(s.ok_count) + " ok)");
  }
  if (!here && elsewhere.empty()) return "no record of this workload";
  if (!here || here->count == 0) {
    std::string list;
    for (const auto& t : elsewhere) list += (list.empty() ? "" : "; ") + t;
    return "records only on other targets, none compatible: " + list;
  }
  if (here->ok_count == 0) {
    std::map<std::string, int> kinds;
    int infrastructure = 0;
    auto records = store.records_of(key, target);
    if (records.is_ok())
      for (const auto& r : *records) r.infrastructure ? ++infrastructure : ++kinds[r.error_kind];
    std::string list;
    for (const auto& [kind, n] : kinds) list += (list.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    if (infrastructure)
      list += (list.empty() ? "" : ", ") + std::to_string(infrastructure) +
              " infrastructure errors (measured again by the next tune)";
    return "none of its " + std::to_string(here->count) + " records on this target is ok: " + list;
  }
  return "its ok records did not replay or lower" +
         (choice.warnings.empty() ? std::string() : ": " + choice.warnings.front());
}

// The regions `compile --byoc auto` would hand the backend, and on what
// grounds: a time tune stored for the records as they are, or none (then
// Tessera runs the region: compile times nothing).
Status explain_regions(const model::PreparedModel& prepared, const Target& target, ScheduleSource* source) {
  const std::string name = model::auto_backend_name(target);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<external::Backend> backend, external::make_backend(name));
  if (!backend) {
    std::printf(
        "\nexternal backends (--byoc auto): none for this target (no runtime module installed, or "
        "another machine's target)\n");
    return Status::ok();
  }
  TESSERA_ASSIGN_OR_RETURN(model::RegionPlans plans, model::plan_regions(prepared, target, source, *backend));
  std::printf("\n%zu region%s %s can run (compile --byoc auto runs each the faster way):\n", plans.regions.size(),
              plans.regions.size() == 1 ? "" : "s", name.c_str());
  for (const model::RegionChoice& c : plans.regions) {
    std::printf("  %s  (%zu operator%s, from %s)\n", c.region.c_str(), c.nodes.size(), c.nodes.size() == 1 ? "" : "s",
                c.nodes.front().c_str());
    std::optional<RegionMeasurement> stored;
    if (source) {
      TESSERA_ASSIGN_OR_RETURN(stored, source->region_measurement(c.key, target.to_string(), name));
    }
    if (!stored) {
      std::printf("    not timed: Tessera runs it (tune MODEL times it both ways and stores the times)\n");
      continue;
    }
    const bool faster = stored->backend_s < stored->tessera_s;
    std::printf("    %s %s, tessera %s (tuning session %lld)\n", name.c_str(), milliseconds(stored->backend_s).c_str(),
                milliseconds(stored->tessera_s).c_str(), static_cast<long long>(stored->session_id));
    if (stored->tessera_basis == c.tessera_basis)
      std::printf("    runs on %s: it was faster\n", faster ? name.c_str() : "tessera");
    else
      std::printf(
          "    timed with other schedules than the records choose now: Tessera runs it until tune times it again\n");
  }
  return Status::ok();
}

}  // namespace

int explain_model_schedules(const WhyModelOptions& o) {
  Target target = host_target();
  if (o.target) {
    auto parsed = parse_target(*o.target);
    if (!parsed.is_ok()) return fail(parsed.status().message());
    target = *parsed;
  }
  // The model is imported once: its kernels, then its regions.
  auto graph = driver::import_model(o.model_path, o.input_shapes);
  if (!graph.is_ok()) return fail(graph.status().message());
  // The kernels of every tuning plan (both ways of a Winograd-able conv), as tune measures them.
  auto prepared = model::prepare_model(*graph);
  if (!prepared.is_ok()) return fail(o.model_path + ": " + prepared.status().message());
  auto model = driver::model_kernels(*prepared, o.model_path);
  if (!model.is_ok()) return fail(model.status().message());
  const std::vector<tuner::ModelKernel>* kernels = &model->kernels;
  records::OpenOptions open;
  open.read_only = true;
  open.create = false;
  auto store = records::Store::open(o.db, open);
  if (!store.is_ok() && store.status().code() != ErrorCode::kNotFound) return fail(store.status().message());
  std::vector<records::WorkloadStats> stats;
  if (store.is_ok()) {
    auto s = store->stats();
    if (!s.is_ok()) return fail(s.status().message());
    stats = std::move(*s);
  }
  std::optional<records::RecordsScheduleSource> source;
  if (store.is_ok()) source.emplace(*store, o.k);
  const std::string target_text = target.to_string();
  const std::string shown_target = o.full_target ? target_text : short_target_name(target_text);
  std::printf("model     %s\ntarget    %s\ndatabase  %s\n", o.model_path.c_str(), shown_target.c_str(),
              store.is_ok() ? o.db.c_str() : ("none (no file " + o.db + ")").c_str());
  int from_records = 0;
  for (size_t i = 0; i < kernels->size(); ++i) {
    const tuner::ModelKernel& k = (*kernels)[i];
    const int calls = static_cast<int>(k.weight);
    auto choice = choose_schedule(k.dag, k.op, target, source ? &*source : nullptr);
    if (!choice.is_ok()) return fail(k.label + ": " + choice.status().message());
    const std::string& key = k.dag->workload_key();
    std::printf("\n%zu/%zu  %s  (%s, %d call%s a run)\n", i + 1, kernels->size(), k.label.c_str(),
                k.op.empty() ? "no template" : k.op.c_str(), calls, calls == 1 ? "" : "s");
    std::printf("  workload  %s\n", key.c_str());
    if (choice->record) {
      ++from_records;
      const ScheduleCandidate& c = *choice->record;
      std::printf("  uses      record %lld (%s), %s\n  why       %s\n", static_cast<long long>(c.record_id),
                  schedule_source_name(choice->source), milliseconds(c.cost_s).c_str(), c.why.c_str());
    } else if (!choice->passed_over.empty()) {
      std::printf("  uses      %s (kept by tune's check in the model)\n  why not   %s\n",
                  schedule_source_name(choice->source), choice->passed_over.c_str());
    } else {
      const std::string why =
          store.is_ok() ? why_no_record(*store, stats, key, target_text, *choice) : "no records database";
      std::printf("  uses      %s (no record)\n  why not   %s\n", schedule_source_name(choice->source), why.c_str());
    }
  }
  std::printf("\n%zu kernels: %d from records, %zu on fallbacks\n", kernels->size(), from_records,
              kernels->size() - static_cast<size_t>(from_records));
  if (Status st = explain_regions(*prepared, target, source ? &*source : nullptr); !st.is_ok())
    return fail("the regions of an external backend: " + st.message());
  return 0;
}

}  // namespace tessera::cli
