// What the model commands (`compile`, `run`, `tune model.onnx`) share: reading
// a model with its --input-shape bindings, and reading tensors from files.
#pragma once

#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "runtime/ndarray.h"
#include "runtime/status.h"

namespace tessera::cli {

/// True when `path` names an ONNX model (ends in ".onnx").
bool is_onnx_path(const std::string& path);

/// Imports the ONNX model at `path` with `input_shape_specs` ("name:d0,d1,..."
/// bindings of dynamic input dimensions). Errors: parse_input_shapes' and the
/// importer's (one line per offending node).
Result<graph::Graph> import_model(const std::string& path, const std::vector<std::string>& input_shape_specs);

/// A tensor from a file: NumPy .npy, or a serialized ONNX TensorProto (.pb,
/// the format of ONNX's test data). kInvalidArgument for another extension;
/// kNotFound / kParseError from the readers.
Result<runtime::NDArray> read_tensor_file(const std::string& path);

/// `name` made safe as a file name: every character outside [A-Za-z0-9._-] becomes '_'.
std::string file_safe_name(const std::string& name);

}  // namespace tessera::cli
