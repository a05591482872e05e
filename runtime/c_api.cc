// The C interface (tessera_runtime.h) over the graph executor. C++ inside,
// `extern "C"` outside: every entry point catches whatever the C++ side
// throws (memory exhaustion) and turns Status into a TesseraStatus and a
// thread-local message, so no exception or C++ type crosses the boundary.
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/tessera_runtime.h"

struct TesseraModel {
  std::unique_ptr<tessera::runtime::GraphExecutor> exec;
  std::vector<tessera::runtime::TensorInfo> inputs;
  std::vector<tessera::runtime::TensorInfo> outputs;
  std::vector<std::string> input_dtypes;
  std::vector<std::string> output_dtypes;
  std::vector<tessera::runtime::NDArray> fetched;  // per output: the last get_output's copy
};

namespace {

using tessera::ErrorCode;
using tessera::Status;
using tessera::runtime::TensorInfo;

thread_local std::string last_error;

TesseraStatus to_c(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return TESSERA_OK;
    case ErrorCode::kInvalidArgument: return TESSERA_ERROR_INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return TESSERA_ERROR_NOT_FOUND;
    case ErrorCode::kParseError: return TESSERA_ERROR_PARSE;
    case ErrorCode::kIOError: return TESSERA_ERROR_IO;
    case ErrorCode::kRuntimeError: return TESSERA_ERROR_RUNTIME;
    default: return TESSERA_ERROR_INTERNAL;
  }
}

TesseraStatus fail(TesseraStatus code, std::string message) {
  last_error = std::move(message);
  return code;
}

TesseraStatus report(const Status& st) {
  if (st.is_ok()) return TESSERA_OK;
  return fail(to_c(st.code()), st.to_string());
}

// Runs `body` (returning TesseraStatus) with exceptions turned into statuses.
template <typename F>
TesseraStatus guarded(const char* fn, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(TESSERA_ERROR_IO, std::string(fn) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(TESSERA_ERROR_INTERNAL, std::string(fn) + ": " + e.what());
  } catch (...) {
    return fail(TESSERA_ERROR_INTERNAL, std::string(fn) + ": unknown error");
  }
}

TesseraStatus null_argument(const char* fn, const char* what) {
  return fail(TESSERA_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + what + " is NULL");
}

void fill_info(const TensorInfo& t, const std::string& dtype, TesseraTensorInfo* out) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  out->name = t.name.c_str();
  out->dtype = dtype.c_str();
  out->element_bytes = t.dtype.storage_bytes();
  out->ndim = static_cast<int32_t>(t.shape.size());
  out->shape = t.shape.data();
  out->nbytes = static_cast<size_t>(n * t.dtype.storage_bytes());
}

std::string names_of(const std::vector<TensorInfo>& list) {
  std::string s;
  for (const TensorInfo& t : list) s += (s.empty() ? "'" : ", '") + t.name + "'";
  return s.empty() ? "none" : s;
}

// The index of `name` in `list`, or -1 after setting the error.
int find_tensor(const char* fn, const char* kind, const std::vector<TensorInfo>& list, const char* name) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return static_cast<int>(i);
  fail(TESSERA_ERROR_NOT_FOUND,
       std::string(fn) + ": the model has no " + kind + " '" + name + "'; its " + kind + "s: " + names_of(list));
  return -1;
}

TesseraStatus info_at(const char* fn, const TesseraModel* model, int32_t index, bool input, TesseraTensorInfo* out) {
  if (model == nullptr) return null_argument(fn, "the model");
  if (out == nullptr) return null_argument(fn, "the info pointer");
  const auto& list = input ? model->inputs : model->outputs;
  if (index < 0 || static_cast<size_t>(index) >= list.size())
    return fail(TESSERA_ERROR_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) +
                                                    " is out of range; the model has " + std::to_string(list.size()) +
                                                    (input ? " inputs" : " outputs"));
  fill_info(list[index], (input ? model->input_dtypes : model->output_dtypes)[index], out);
  return TESSERA_OK;
}

std::string size_mismatch(const char* fn, const char* kind, const TensorInfo& t, size_t expected, size_t given) {
  std::string shape;
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  return std::string(fn) + ": " + kind + " '" + t.name + "' is " + t.dtype.to_string() + "[" + shape + "], " +
         std::to_string(expected) + " bytes; the buffer has " + std::to_string(given);
}

}  // namespace

extern "C" {

const char* tessera_last_error(void) {
  return last_error.c_str();
}

const char* tessera_status_name(TesseraStatus status) {
  switch (status) {
    case TESSERA_OK: return "ok";
    case TESSERA_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case TESSERA_ERROR_NOT_FOUND: return "not found";
    case TESSERA_ERROR_PARSE: return "parse error";
    case TESSERA_ERROR_IO: return "i/o error";
    case TESSERA_ERROR_RUNTIME: return "runtime error";
    case TESSERA_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

TesseraStatus tessera_model_load(const char* path, int32_t num_threads, TesseraModel** out) {
  constexpr const char* fn = "tessera_model_load";
  return guarded(fn, [&]() -> TesseraStatus {
    if (out == nullptr) return null_argument(fn, "the out pointer");
    *out = nullptr;
    if (path == nullptr) return null_argument(fn, "the path");
    if (num_threads < 0) return fail(TESSERA_ERROR_INVALID_ARGUMENT, std::string(fn) + ": num_threads is negative");
    tessera::runtime::ExecutorOptions options;
    options.num_threads = num_threads;
    auto exec = tessera::runtime::GraphExecutor::load_file(path, options);
    if (!exec.is_ok()) return report(exec.status());
    auto model = std::make_unique<TesseraModel>();
    model->exec = std::move(exec).value();
    model->inputs = model->exec->input_info();
    model->outputs = model->exec->output_info();
    for (const TensorInfo& t : model->inputs) model->input_dtypes.push_back(t.dtype.to_string());
    for (const TensorInfo& t : model->outputs) model->output_dtypes.push_back(t.dtype.to_string());
    model->fetched.resize(model->outputs.size());
    *out = model.release();
    return TESSERA_OK;
  });
}

void tessera_model_free(TesseraModel* model) {
  delete model;
}

TesseraStatus tessera_model_num_inputs(const TesseraModel* model, int32_t* out) {
  if (model == nullptr) return null_argument("tessera_model_num_inputs", "the model");
  if (out == nullptr) return null_argument("tessera_model_num_inputs", "the out pointer");
  *out = static_cast<int32_t>(model->inputs.size());
  return TESSERA_OK;
}

TesseraStatus tessera_model_num_outputs(const TesseraModel* model, int32_t* out) {
  if (model == nullptr) return null_argument("tessera_model_num_outputs", "the model");
  if (out == nullptr) return null_argument("tessera_model_num_outputs", "the out pointer");
  *out = static_cast<int32_t>(model->outputs.size());
  return TESSERA_OK;
}

TesseraStatus tessera_model_input_info(const TesseraModel* model, int32_t index, TesseraTensorInfo* out) {
  return guarded("tessera_model_input_info",
                 [&] { return info_at("tessera_model_input_info", model, index, true, out); });
}

TesseraStatus tessera_model_output_info(const TesseraModel* model, int32_t index, TesseraTensorInfo* out) {
  return guarded("tessera_model_output_info",
                 [&] { return info_at("tessera_model_output_info", model, index, false, out); });
}

TesseraStatus tessera_model_set_input(TesseraModel* model, const char* name, const void* data, size_t nbytes) {
  constexpr const char* fn = "tessera_model_set_input";
  return guarded(fn, [&]() -> TesseraStatus {
    if (model == nullptr) return null_argument(fn, "the model");
    if (name == nullptr) return null_argument(fn, "the input name");
    if (data == nullptr) return null_argument(fn, "the data pointer");
    const int i = find_tensor(fn, "input", model->inputs, name);
    if (i < 0) return TESSERA_ERROR_NOT_FOUND;
    const TensorInfo& t = model->inputs[static_cast<size_t>(i)];
    auto array = tessera::runtime::NDArray::create(t.shape, t.dtype);
    if (!array.is_ok()) return report(array.status());
    if (nbytes != static_cast<size_t>(array->nbytes()))
      return fail(TESSERA_ERROR_INVALID_ARGUMENT,
                  size_mismatch(fn, "input", t, static_cast<size_t>(array->nbytes()), nbytes));
    std::memcpy(array->raw_data(), data, nbytes);
    return report(model->exec->set_input(t.name, *array));
  });
}

TesseraStatus tessera_model_run(TesseraModel* model) {
  if (model == nullptr) return null_argument("tessera_model_run", "the model");
  return guarded("tessera_model_run", [&] { return report(model->exec->run()); });
}

TesseraStatus tessera_model_carry(TesseraModel* model, const char* output, const char* input) {
  constexpr const char* fn = "tessera_model_carry";
  return guarded(fn, [&]() -> TesseraStatus {
    if (model == nullptr) return null_argument(fn, "the model");
    if (output == nullptr) return null_argument(fn, "the output name");
    if (input == nullptr) return null_argument(fn, "the input name");
    return report(model->exec->carry(output, input));
  });
}

TesseraStatus tessera_model_get_output(TesseraModel* model, const char* name, const void** data,
                                       TesseraTensorInfo* info) {
  constexpr const char* fn = "tessera_model_get_output";
  return guarded(fn, [&]() -> TesseraStatus {
    if (model == nullptr) return null_argument(fn, "the model");
    if (name == nullptr) return null_argument(fn, "the output name");
    if (data == nullptr) return null_argument(fn, "the data pointer");
    const int i = find_tensor(fn, "output", model->outputs, name);
    if (i < 0) return TESSERA_ERROR_NOT_FOUND;
    auto array = model->exec->get_output(name);
    if (!array.is_ok()) return report(array.status());
    model->fetched[static_cast<size_t>(i)] = std::move(array).value();
    *data = model->fetched[static_cast<size_t>(i)].raw_data();
    if (info != nullptr)
      fill_info(model->outputs[static_cast<size_t>(i)], model->output_dtypes[static_cast<size_t>(i)], info);
    return TESSERA_OK;
  });
}

TesseraStatus tessera_model_copy_output(TesseraModel* model, const char* name, void* buffer, size_t nbytes) {
  constexpr const char* fn = "tessera_model_copy_output";
  return guarded(fn, [&]() -> TesseraStatus {
    if (model == nullptr) return null_argument(fn, "the model");
    if (name == nullptr) return null_argument(fn, "the output name");
    if (buffer == nullptr) return null_argument(fn, "the buffer");
    const int i = find_tensor(fn, "output", model->outputs, name);
    if (i < 0) return TESSERA_ERROR_NOT_FOUND;
    auto array = model->exec->get_output(name);
    if (!array.is_ok()) return report(array.status());
    const size_t size = static_cast<size_t>(array->nbytes());
    if (nbytes != size)
      return fail(TESSERA_ERROR_INVALID_ARGUMENT,
                  size_mismatch(fn, "output", model->outputs[static_cast<size_t>(i)], size, nbytes));
    std::memcpy(buffer, array->raw_data(), size);
    return TESSERA_OK;
  });
}

}  // extern "C"
