#include "tools/model_input.h"

#include "compiler/frontend/onnx_import.h"

namespace tessera::cli {

bool is_onnx_path(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

Result<graph::Graph> import_model(const std::string& path, const std::vector<std::string>& input_shape_specs) {
  frontend::ImportOptions options;
  TESSERA_ASSIGN_OR_RETURN(options.input_shapes, frontend::parse_input_shapes(input_shape_specs));
  return frontend::import_onnx_file(path, options);
}

}  // namespace tessera::cli
