#include "python/compile.h"

#include <pybind11/pybind11.h>

#include <cstdio>

#include "compiler/model/compile_model.h"
#include "driver/compile.h"
#include "driver/model_input.h"
#include "python/errors.h"
#include "runtime/package.h"

namespace tessera::python {

namespace py = pybind11;

void compile(const CompileArgs& args) {
  if (!driver::is_onnx_path(args.model)) throw py::value_error(args.model + ": expected an .onnx model");
  driver::ModelCompileArgs request;
  request.model = args.model;
  request.input_shapes = args.input_shapes;
  request.input_values = args.input_values;
  request.db = args.db;
  request.use_records = args.use_records;
  if (!args.target.empty()) {
    auto parsed = parse_target(args.target);
    if (!parsed.is_ok()) throw py::value_error(parsed.status().message());
    request.target = *parsed;
  }
  if (args.jobs < 0) throw py::value_error("jobs must be non-negative");
  if (Status st = driver::check_byoc(args.byoc); !st.is_ok()) throw py::value_error("byoc: " + st.message());
  request.byoc = args.byoc;
  request.jobs = args.jobs;
  request.precision = args.precision;
  {
    const Target target = request.target ? *request.target : host_target();
    if (auto p = driver::parse_precision(args.precision, target); !p.is_ok())
      throw py::value_error(p.status().message());
  }
  Status status;
  {
    // The work itself, without the GIL: errors as `tessera compile` words them.
    py::gil_scoped_release release;
    auto result = driver::compile_model_file(request);
    status = result.status();
    if (result.is_ok()) status = runtime::write_package(result->compiled.package, args.output);
    if (status.is_ok() && args.verbose) {
      if (!result->records_note.empty()) std::printf("%s\n", result->records_note.c_str());
      for (const std::string& warning : result->plan.warnings) std::printf("warning: %s\n", warning.c_str());
      std::printf("%s%swrote %s\n", driver::format_model_choices(*result).c_str(),
                  model::format_compile_summary(result->compiled).c_str(), args.output.c_str());
      if (args.precision != "fp32") {
        auto difference = driver::difference_from_float32(request, *result);
        std::printf("%s", difference.is_ok() ? difference->c_str() : (difference.status().message() + "\n").c_str());
      }
      std::fflush(stdout);
    }
  }
  check(status);
}

}  // namespace tessera::python
