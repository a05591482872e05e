// The `tessera._tessera` extension: Module, compile and tune for the Python
// package (python/tessera/__init__.py gives them their Python signatures).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "base/version.h"
#include "python/compile.h"
#include "python/errors.h"
#include "python/module.h"
#include "python/tune.h"

namespace py = pybind11;
using namespace tessera::python;

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera's compiled models, compiler and tuner (the tessera package's engine).";
  m.attr("__version__") = tessera::kProjectVersion;
  m.attr("build") = tessera::kToolVersion;
  register_errors(m);
  register_module(m);
  m.def(
      "compile",
      [](const std::string& model, const std::string& output, const std::vector<std::string>& input_shapes,
         const std::vector<std::string>& input_values, const std::string& db, bool use_records,
         const std::string& target, const std::string& byoc, int jobs, bool verbose, const std::string& precision) {
        compile({model, output, input_shapes, input_values, db, use_records, target, byoc, jobs, verbose, precision});
      },
      py::arg("model"), py::arg("output"), py::arg("input_shapes"), py::arg("input_values"), py::arg("db"),
      py::arg("use_records"), py::arg("target"), py::arg("byoc"), py::arg("jobs"), py::arg("verbose"),
      py::arg("precision"), "tessera.compile's engine: every argument given (see tessera.compile).");
  m.def("tune", &tune, py::arg("model"), py::arg("options"), py::arg("command_line"), py::arg("progress"),
        py::arg("verbose"),
        "tessera.tune's engine: `tessera tune`'s options by name, without \"--\" (see tessera.tune).");
}
