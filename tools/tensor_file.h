// Tensors from and to files, for `tessera run` and the device's `tessera-run`:
// NumPy .npy always; serialized ONNX TensorProtos (.pb, ONNX's test data)
// when built with ONNX (TESSERA_WITH_ONNX; the device binary is not).
#pragma once

#include <string>

#include "base/status.h"
#include "runtime/ndarray.h"

namespace tessera::cli {

/// A tensor from a .npy file, or a .pb TensorProto where supported.
/// kInvalidArgument for another extension (or .pb without ONNX);
/// kNotFound / kParseError from the readers.
Result<runtime::NDArray> read_tensor_file(const std::string& path);

/// `name` made safe as a file name: every character outside [A-Za-z0-9._-]
/// becomes '_', and a leading '.' too.
std::string file_safe_name(const std::string& name);

}  // namespace tessera::cli
