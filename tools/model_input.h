// What the model commands (`compile`, `tune MODEL.onnx`) share: reading a
// model with its --input-shape bindings.
#pragma once

#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "base/status.h"

namespace tessera::cli {

/// True when `path` names an ONNX model (ends in ".onnx").
bool is_onnx_path(const std::string& path);

/// Imports the ONNX model at `path` with `input_shape_specs` ("name:d0,d1,..."
/// bindings of dynamic input dimensions). Errors: parse_input_shapes' and the
/// importer's (one line per offending node).
Result<graph::Graph> import_model(const std::string& path, const std::vector<std::string>& input_shape_specs);

}  // namespace tessera::cli
