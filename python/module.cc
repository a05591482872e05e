#include "python/module.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "python/errors.h"

namespace tessera::python {

namespace py = pybind11;

namespace {

// "float32[1, 3]", as the runtime's messages write a tensor.
std::string describe_tensor(const std::string& dtype, const std::vector<py::ssize_t>& shape) {
  std::string s = dtype + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % runtime::NDArray::kAlignment == 0;
}

}  // namespace

py::array aligned_empty(const py::dtype& dtype, const std::vector<py::ssize_t>& shape, bool zero) {
  size_t bytes = static_cast<size_t>(dtype.itemsize());
  for (py::ssize_t d : shape) bytes *= static_cast<size_t>(d);
  constexpr size_t kAlign = runtime::NDArray::kAlignment;
  const size_t rounded = std::max<size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  void* data = std::aligned_alloc(kAlign, rounded);
  if (!data) throw std::bad_alloc();
  if (zero) std::memset(data, 0, rounded);
  py::capsule owner(data, [](void* p) { std::free(p); });
  return py::array(dtype, shape, data, owner);
}

namespace {

// numpy's dtype of the same name; TypeError for one numpy lacks (bfloat16).
py::dtype numpy_dtype(const std::string& tensor, DType dtype) {
  try {
    return py::dtype(dtype.to_string());
  } catch (const py::error_already_set&) {
    throw py::type_error("'" + tensor + "' is " + dtype.to_string() + ", which numpy does not have");
  }
}

}  // namespace

Module::Module(const std::string& path, std::optional<int> threads) : path_(path) {
  runtime::ExecutorOptions options;
  options.num_threads = threads.value_or(0);
  Result<std::unique_ptr<runtime::GraphExecutor>> loaded = Status(ErrorCode::kInternal, "not loaded");
  {
    py::gil_scoped_release release;
    loaded = runtime::GraphExecutor::load_file(path, options);
  }
  exec_ = take(std::move(loaded));
  for (auto [infos, bindings] :
       {std::pair{exec_->input_info(), &inputs_}, std::pair{exec_->output_info(), &outputs_}}) {
    for (const runtime::TensorInfo& t : infos) {
      Binding b{t.name, py::str(t.name), numpy_dtype(t.name, t.dtype), {}, t.dtype};
      b.shape.assign(t.shape.begin(), t.shape.end());
      bindings->push_back(std::move(b));
    }
  }
}

py::list Module::describe(const std::vector<Binding>& bindings) const {
  py::object tensor_info = py::module_::import("tessera._tessera").attr("TensorInfo");
  py::list out;
  for (const Binding& b : bindings) {
    py::tuple shape(b.shape.size());
    for (size_t i = 0; i < b.shape.size(); ++i) shape[i] = b.shape[i];
    out.append(tensor_info(b.name, shape, b.tessera_dtype.to_string()));
  }
  return out;
}

py::list Module::inputs() const {
  return describe(inputs_);
}
py::list Module::outputs() const {
  return describe(outputs_);
}

// The executor's own message for a wrong dtype or shape (set_input checks
// both), raised as TypeError (dtype) or ValueError (shape).
void Module::raise_input_error(const std::string& name, const py::array& array) {
  const Binding& b = *std::find_if(inputs_.begin(), inputs_.end(), [&](const Binding& x) { return x.name == name; });
  std::vector<py::ssize_t> shape(array.shape(), array.shape() + array.ndim());
  const std::string dtype_name = py::str(array.dtype().attr("name"));
  DType dtype;
  if (!DType::parse(dtype_name, &dtype))
    throw py::type_error("input '" + name + "' must be " + describe_tensor(b.tessera_dtype.to_string(), b.shape) +
                         ", got " + describe_tensor(dtype_name, shape) + " (a dtype Tessera does not have)");
  auto probe = runtime::NDArray::create(std::vector<int64_t>(shape.begin(), shape.end()), dtype);
  check(probe.status());
  const Status st = exec_->set_input(name, *probe);
  if (dtype != b.tessera_dtype) throw py::type_error(st.message());
  throw py::value_error(st.message());
}

const void* Module::input_pointer(size_t i, const py::handle& value, std::vector<py::object>* keep) {
  const Binding& b = inputs_[i];
  py::array array = py::array::ensure(value);
  if (!array) {
    PyErr_Clear();
    throw py::type_error("input '" + b.name + "' must be a numpy array (or what numpy.asarray takes), got " +
                         std::string(py::str(value.get_type().attr("__name__"))));
  }
  bool fits = array.dtype().equal(b.dtype) && array.ndim() == static_cast<py::ssize_t>(b.shape.size());
  for (size_t d = 0; fits && d < b.shape.size(); ++d) fits = array.shape(d) == b.shape[d];
  if (!fits) raise_input_error(b.name, array);
  if ((array.flags() & py::array::c_style) && aligned(array.data())) {
    keep->push_back(array);
    return array.data();
  }
  // numpy's 16-byte alignment, or another layout: one copy into an aligned array.
  py::array copy = aligned_empty(b.dtype, b.shape, /*zero=*/false);
  if (array.flags() & py::array::c_style)
    std::memcpy(copy.mutable_data(), array.data(), static_cast<size_t>(array.nbytes()));
  else
    py::module_::import("numpy").attr("copyto")(copy, array);
  keep->push_back(copy);
  return copy.data();
}

std::vector<const void*> Module::input_pointers(const py::dict& given, std::vector<py::object>* keep) {
  // An unknown name first: `run(y=a)` on a model whose input is x is a
  // misspelled name, not a missing x.
  for (auto [key, value] : given) {
    const std::string name = py::str(key);
    if (std::none_of(inputs_.begin(), inputs_.end(), [&](const Binding& b) { return b.name == name; }))
      throw py::value_error(exec_->set_input(name, runtime::NDArray()).message());
  }
  std::vector<const void*> in(inputs_.size(), nullptr);
  keep->reserve(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    PyObject* value = PyDict_GetItemWithError(given.ptr(), inputs_[i].key.ptr());
    if (!value) {
      if (PyErr_Occurred()) throw py::error_already_set();
      std::string names;
      for (const Binding& b : inputs_) names += (names.empty() ? "'" : ", '") + b.name + "'";
      throw py::value_error("input '" + inputs_[i].name + "' is missing (its inputs: " + names + ")");
    }
    in[i] = input_pointer(i, value, keep);
  }
  return in;
}

py::dict Module::run(const py::dict& given) {
  std::vector<py::object> keep;
  const std::vector<const void*> in = input_pointers(given, &keep);
  // Each run writes into new arrays: no result is ever overwritten by a later run.
  py::dict result;
  std::vector<void*> out(outputs_.size(), nullptr);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    // Not zero-filled: the kernels write every element of an output.
    py::array array = aligned_empty(outputs_[i].dtype, outputs_[i].shape, /*zero=*/false);
    out[i] = array.mutable_data();
    result[outputs_[i].key] = array;
  }
  Status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(run_mutex_);
    status = exec_->run_with(in, out);
  }
  check(status);
  return result;
}

py::dict Module::benchmark(const py::dict& given, int runs, int warmup) {
  if (runs < 1 || warmup < 0)
    throw py::value_error("benchmark needs runs >= 1 and warmup >= 0, got " + std::to_string(runs) + " and " +
                          std::to_string(warmup));
  std::vector<py::object> keep;
  const std::vector<const void*> in = input_pointers(given, &keep);
  std::vector<py::array> arrays;
  std::vector<void*> out;
  for (const Binding& b : outputs_) {
    arrays.push_back(aligned_empty(b.dtype, b.shape, /*zero=*/false));
    out.push_back(arrays.back().mutable_data());
  }
  std::vector<double> ms;
  Status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(run_mutex_);
    for (int i = 0; i < warmup + runs && status.is_ok(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      status = exec_->run_with(in, out);
      const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
      if (i >= warmup) ms.push_back(elapsed.count());
    }
  }
  check(status);
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  double mean = 0;
  for (double t : ms) mean += t / static_cast<double>(n);
  py::dict result;
  result["median_ms"] = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  result["mean_ms"] = mean;
  result["min_ms"] = sorted.front();
  result["runs"] = runs;
  return result;
}

py::list Module::profile(const py::dict& given, int runs) {
  if (runs < 1) throw py::value_error("profile needs runs >= 1, got " + std::to_string(runs));
  std::vector<py::object> keep;
  const std::vector<const void*> in = input_pointers(given, &keep);
  Result<std::vector<runtime::GraphExecutor::CallProfile>> calls = Status(ErrorCode::kInternal, "not profiled");
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(run_mutex_);
    // The profile runs on the executor's own buffers: the inputs are copied in.
    Status st;
    for (size_t i = 0; i < inputs_.size() && st.is_ok(); ++i) {
      auto array = runtime::NDArray::create(std::vector<int64_t>(inputs_[i].shape.begin(), inputs_[i].shape.end()),
                                            inputs_[i].tessera_dtype);
      st = array.is_ok() ? Status::ok() : array.status();
      if (st.is_ok()) {
        std::memcpy(array->raw_data(), in[i], static_cast<size_t>(array->nbytes()));
        st = exec_->set_input(inputs_[i].name, *array);
      }
    }
    calls = st.is_ok() ? exec_->profile(runs) : Result<std::vector<runtime::GraphExecutor::CallProfile>>(st);
  }
  check(calls.status());
  py::list result;
  const auto& descriptions = exec_->call_descriptions();
  for (size_t i = 0; i < calls->size(); ++i) {
    py::dict row;
    row["call"] = i;
    row["kernel"] = (*calls)[i].symbol;
    row["ms"] = (*calls)[i].median_s * 1e3;
    const auto& info = descriptions[i].info;
    row["name"] = info ? info->name : std::string();
    row["nodes"] = info ? info->nodes : std::vector<std::string>();
    result.append(row);
  }
  return result;
}

void register_module(py::module_& m) {
  // Kernel libraries find the runtime's parallel-launch ABI (runtime/c_abi.h)
  // in the process's global symbols; Python loaded the runtime library
  // locally, with this extension. Promote it.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&runtime::plan_graph_memory), &info) != 0 && info.dli_fname)
    ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  m.attr("TensorInfo") = py::module_::import("collections").attr("namedtuple")("TensorInfo", "name shape dtype");
  m.attr("TensorInfo").attr("__module__") = "tessera";
  m.attr("TensorInfo").attr("__doc__") =
      "An input or output of a Module: its name, shape (a tuple) and dtype (\"float32\").";

  py::class_<Module>(m, "Module",
                     R"doc(A compiled model (a .tsr package from tessera.compile or `tessera compile`), loaded to run.

Module(path, threads=None): threads for the kernels, the caller's included (None: one per CPU).
Raises tessera.Error when the package cannot be loaded (Tessera's message: a missing file,
a corrupt package, one built for another architecture).)doc")
      .def(py::init<const std::string&, std::optional<int>>(), py::arg("path"), py::arg("threads") = py::none())
      .def_property_readonly("inputs", &Module::inputs, "[TensorInfo(name, shape, dtype)] of the inputs, in order.")
      .def_property_readonly("outputs", &Module::outputs, "[TensorInfo(name, shape, dtype)] of the outputs, in order.")
      .def_property_readonly("path", &Module::path, "The package's path.")
      .def(
          "run",
          [](Module& self, std::optional<py::dict> inputs, const py::kwargs& kwargs) {
            if (!inputs) return self.run(kwargs);
            if (kwargs.empty()) return self.run(*inputs);
            py::dict merged(*inputs);
            for (auto [key, value] : kwargs) merged[key] = value;
            return self.run(merged);
          },
          py::arg("inputs") = py::none(), py::pos_only(),
          R"doc(Runs the model once: run(x=array, ...) or run({"x": array, ...}).

Returns {output name: numpy array}; every call returns new arrays (their memory is their own).
An input is read in place, without a copy, when it is a C-contiguous numpy array of the
input's dtype and shape whose data is 64-byte aligned, as the kernels need: arrays from
tessera.empty() and the outputs of run() are. Any other array of the right dtype and shape
(numpy's allocator aligns to 16 bytes only, or a strided view) is copied once.
Raises ValueError for a missing or unknown input or a wrong shape, TypeError for a wrong
dtype (Tessera's message, "input 'x' must be float32[1, 3], got float64[1, 3]"), and
tessera.Error when a kernel fails. The GIL is released while the kernels run.)doc")
      .def("benchmark", &Module::benchmark, py::arg("inputs"), py::arg("runs") = 100, py::arg("warmup") = 3,
           R"doc(Times runs of the model on `inputs` ({name: array}, as run() takes them).

Returns {"median_ms", "mean_ms", "min_ms", "runs"} over `runs` timed runs after `warmup` untimed
ones, as `tessera run --bench` does.)doc")
      .def("profile", &Module::profile, py::arg("inputs"), py::arg("runs") = 10,
           R"doc(Where a run's time goes: each call's median over `runs` runs on `inputs`.

Returns [{"call", "kernel", "ms", "name", "nodes"}] in call order, as `tessera run --profile`
lists them (a call inside a loop counts all its iterations).)doc")
      .def("__repr__", [](const Module& self) { return "tessera.Module('" + self.path() + "')"; });

  m.def(
      "empty",
      [](const std::vector<py::ssize_t>& shape, const py::object& dtype) {
        return aligned_empty(py::dtype::from_args(dtype), shape);
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "A zero-filled numpy array whose data is 64-byte aligned: Module.run reads it in place.");
}

}  // namespace tessera::python
