#include "tools/compile_flow.h"

#include <sys/stat.h>

#include <algorithm>
#include <memory>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/backend.h"
#include "records/schedule_source.h"
#include "records/store.h"
#include "tools/model_input.h"

namespace tessera::cli {
namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

Status check_byoc(const std::string& byoc) {
  if (byoc == "auto") return Status::ok();
  return external::make_backend(byoc).status();
}

Result<ModelCompile> compile_model_file(const ModelCompileArgs& args) {
  ModelCompile out;
  out.target = args.target ? *args.target : host_target();
  out.byoc_auto = args.byoc == "auto";
  out.backend = out.byoc_auto ? model::auto_backend_name(out.target) : args.byoc;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<external::Backend> backend, external::make_backend(out.backend));
  auto graph = import_model(args.model, args.input_shapes, args.input_values);
  if (!graph.is_ok()) return Status(graph.status().code(), graph.status().to_string());

  // The records, read-only: compiling never changes the database. A missing
  // database is not an error: the model compiles from fallbacks, as noted.
  std::optional<records::Store> store;
  std::optional<records::RecordsScheduleSource> source;
  if (!args.use_records) {
    out.records_note = "ignoring the records (--no-records): every kernel from its fallback";
  } else if (!file_exists(args.db)) {
    out.records_note = "no records database at " + args.db + ": every kernel from its fallback";
  } else {
    records::OpenOptions oo;
    oo.read_only = true;
    auto opened = records::Store::open(args.db, oo);
    if (!opened.is_ok())
      return Status(opened.status().code(),
                    "cannot open the records database " + args.db + ": " + opened.status().to_string());
    store.emplace(std::move(opened).value());
    source.emplace(*store);
  }
  ScheduleSource* schedules = source ? &*source : nullptr;

  model::PlanOptions plan_options;
  plan_options.byoc = backend.get();
  // --byoc auto: each region the faster way, as tune timed it or timed now.
  std::unique_ptr<external::Backend> chosen;
  if (out.byoc_auto && backend) {
    auto regions = model::choose_regions(*graph, out.target, schedules, *backend, plan_options);
    if (!regions.is_ok()) return Status(regions.status().code(), "--byoc auto: " + regions.status().to_string());
    out.regions = std::move(regions).value();
    chosen = model::restrict_backend(*backend, out.regions);
    plan_options.byoc = chosen.get();
  }
  // Each convolution that can run by Winograd does when its records say it
  // is faster (compiler/model/choose_winograd.h).
  auto plan = model::plan_model_from_records(*graph, out.target, schedules, &out.winograd, plan_options);
  if (!plan.is_ok()) return Status(plan.status().code(), args.model + ": " + plan.status().to_string());
  out.plan = std::move(plan).value();

  model::CompileOptions co;
  co.source = schedules;
  co.jobs = args.jobs;
  auto compiled = model::compile_model(out.plan, out.target, co);
  if (!compiled.is_ok()) return Status(compiled.status().code(), args.model + ": " + compiled.status().to_string());
  out.compiled = std::move(compiled).value();
  return out;
}

std::string format_model_choices(const ModelCompile& result) {
  std::string text;
  if (!result.regions.empty())
    text += "regions " + result.backend + " can run, each the faster way (--byoc auto):\n" +
            model::format_region_choices(result.backend, result.regions);
  const auto winograd =
      std::count_if(result.winograd.begin(), result.winograd.end(), [](const auto& c) { return c.winograd; });
  if (winograd > 0)
    text += "convolutions by Winograd (" + std::to_string(winograd) + " of " + std::to_string(result.winograd.size()) +
            "; by the faster record, without records by channel count):\n" +
            model::format_winograd_choices(result.winograd);
  return text;
}

}  // namespace tessera::cli
