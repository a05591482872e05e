#include "python/errors.h"

namespace tessera::python {

namespace py = pybind11;

void register_errors(py::module_& m) {
  // Created once and kept for the process: the translator below outlives any
  // particular call, as the module itself does.
  static py::handle error_type = PyErr_NewExceptionWithDoc(
      "tessera.Error",
      "An error from Tessera: the message is Tessera's; `code` names its kind (\"not-found\", "
      "\"invalid-argument\", \"parse-error\", ...).",
      PyExc_RuntimeError, nullptr);
  m.add_object("Error", error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object error = py::reinterpret_borrow<py::object>(error_type)(e.status().message());
      error.attr("code") = error_code_name(e.status().code());
      PyErr_SetObject(error_type.ptr(), error.ptr());
    }
  });
}

}  // namespace tessera::python
