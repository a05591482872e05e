// tessera.Module: a compiled model (a .tsr package) loaded for Python, run
// with numpy arrays. The graph executor underneath; inputs read in place where
// their layout allows, outputs in arrays of their own.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"

namespace tessera::python {

/// A numpy array of `dtype` and `shape` whose data is 64-byte aligned (what
/// the kernels need to read it in place), owning its memory; zero-filled
/// when `zero`, else uninitialized (for memory written whole at once).
pybind11::array aligned_empty(const pybind11::dtype& dtype, const std::vector<pybind11::ssize_t>& shape,
                              bool zero = true);

/// A loaded package. Runs are serialized (the executor runs one at a time)
/// and release the GIL while the kernels run.
class Module {
 public:
  /// Loads the package at `path` with `threads` threads (none: one per CPU).
  /// Errors: StatusError with GraphExecutor::load_file's message.
  Module(const std::string& path, std::optional<int> threads);

  /// [TensorInfo(name, shape, dtype)] of the inputs (outputs), in the package's order.
  pybind11::list inputs() const;
  pybind11::list outputs() const;
  /// The package's path, as given.
  const std::string& path() const { return path_; }

  /// Runs once on the arrays in `given` (input name to array-like) and
  /// returns {output name: numpy array}. ValueError: a missing or unknown
  /// input, a wrong shape; TypeError: a wrong dtype; StatusError: a kernel failed.
  pybind11::dict run(const pybind11::dict& given);

  /// Times `runs` runs on `given` after `warmup` untimed ones (the inputs
  /// read in place as run() reads them): {"median_ms", "mean_ms", "min_ms",
  /// "runs"}. ValueError: runs < 1 or warmup < 0, and run()'s errors.
  pybind11::dict benchmark(const pybind11::dict& given, int runs, int warmup);

  /// Where a run's time goes: each call's median milliseconds over `runs`
  /// runs on `given`, in call order, as {"call", "kernel", "ms", "name",
  /// "nodes"} (name and nodes from the package's metadata, empty without).
  pybind11::list profile(const pybind11::dict& given, int runs);

 private:
  struct Binding {
    std::string name;
    pybind11::str key;  // the dict key, made once
    pybind11::dtype dtype;
    std::vector<pybind11::ssize_t> shape;
    DType tessera_dtype;
  };
  pybind11::list describe(const std::vector<Binding>& bindings) const;
  /// The pointer the executor reads input `i` from: `value`'s data when it
  /// fits in place, else a copy kept alive in `keep`.
  const void* input_pointer(size_t i, const pybind11::handle& value, std::vector<pybind11::object>* keep);
  /// Every input's pointer for `given`: ValueError naming an unknown or a
  /// missing input first.
  std::vector<const void*> input_pointers(const pybind11::dict& given, std::vector<pybind11::object>* keep);
  [[noreturn]] void raise_input_error(const std::string& name, const pybind11::array& array);

  std::string path_;
  std::unique_ptr<runtime::GraphExecutor> exec_;
  std::mutex run_mutex_;
  std::vector<Binding> inputs_, outputs_;
};

/// Adds tessera.Module, tessera.TensorInfo and tessera.empty to `m`.
void register_module(pybind11::module_& m);

}  // namespace tessera::python
