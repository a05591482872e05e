#include "python/compile.h"

#include <pybind11/pybind11.h>
#include <sys/stat.h>

#include <cstdio>
#include <optional>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/backend.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/model/compile_model.h"
#include "python/errors.h"
#include "records/schedule_source.h"
#include "records/store.h"
#include "tools/model_input.h"

namespace tessera::python {

namespace py = pybind11;

namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The work itself, run without the GIL: errors as `tessera compile` words them.
Status compile_package(const CompileArgs& args, const Target& target, const external::Backend* byoc) {
  auto graph = cli::import_model(args.model, args.input_shapes);
  if (!graph.is_ok()) return Status(graph.status().code(), graph.status().to_string());
  // The records, read-only: compiling never changes the database.
  std::optional<records::Store> store;
  std::optional<records::RecordsScheduleSource> source;
  if (!args.use_records) {
    if (args.verbose) std::printf("ignoring the records: every kernel from its fallback\n");
  } else if (!file_exists(args.db)) {
    if (args.verbose) std::printf("no records database at %s: every kernel from its fallback\n", args.db.c_str());
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
  model::PlanOptions plan_options;
  plan_options.byoc = byoc;
  auto plan = model::plan_model_from_records(*graph, target, source ? &*source : nullptr, nullptr, plan_options);
  if (!plan.is_ok()) return Status(plan.status().code(), args.model + ": " + plan.status().to_string());
  model::CompileOptions co;
  co.source = source ? &*source : nullptr;
  co.jobs = args.jobs;
  auto compiled = model::compile_model(*plan, target, co);
  if (!compiled.is_ok()) return Status(compiled.status().code(), args.model + ": " + compiled.status().to_string());
  TESSERA_RETURN_IF_ERROR(runtime::write_package(compiled->package, args.output));
  if (args.verbose) {
    for (const std::string& warning : plan->warnings) std::printf("warning: %s\n", warning.c_str());
    std::printf("%swrote %s\n", model::format_compile_summary(*compiled).c_str(), args.output.c_str());
    std::fflush(stdout);
  }
  return Status::ok();
}

}  // namespace

void compile(const CompileArgs& args) {
  if (!cli::is_onnx_path(args.model)) throw py::value_error(args.model + ": expected an .onnx model");
  Target target = host_target();
  if (!args.target.empty()) {
    auto parsed = parse_target(args.target);
    if (!parsed.is_ok()) throw py::value_error(parsed.status().message());
    target = *parsed;
  }
  if (args.jobs < 0) throw py::value_error("jobs must be non-negative");
  auto byoc = external::make_backend(args.byoc);
  if (!byoc.is_ok()) throw py::value_error("byoc: " + byoc.status().message());
  Status status;
  {
    py::gil_scoped_release release;
    status = compile_package(args, target, byoc->get());
  }
  check(status);
}

}  // namespace tessera::python
