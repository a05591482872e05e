#include "tools/tensor_file.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#ifdef TESSERA_WITH_ONNX
#include "compiler/frontend/onnx_context.h"
#include "compiler/graph/graph.h"
#endif

namespace tessera::cli {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

#ifdef TESSERA_WITH_ONNX
Result<runtime::NDArray> read_tensor_proto(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, path + ": cannot open");
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes.str())) return Status(ErrorCode::kParseError, path + ": not an ONNX TensorProto");
  auto constant = frontend::detail::constant_of_tensor(proto);
  if (!constant.is_ok()) return constant.status().with_context(path);
  TESSERA_ASSIGN_OR_RETURN(runtime::NDArray array, runtime::NDArray::create(constant->shape, constant->dtype));
  if (static_cast<int64_t>(constant->bytes.size()) != array.nbytes())
    return Status(ErrorCode::kParseError, path + ": holds " + std::to_string(constant->bytes.size()) +
                                              " bytes for shape " + graph::shape_string(constant->shape));
  if (array.nbytes() > 0) std::memcpy(array.raw_data(), constant->bytes.data(), constant->bytes.size());
  return array;
}
#endif

}  // namespace

Result<runtime::NDArray> read_tensor_file(const std::string& path) {
  if (ends_with(path, ".npy")) return runtime::load_npy(path);
#ifdef TESSERA_WITH_ONNX
  if (ends_with(path, ".pb")) return read_tensor_proto(path);
  return Status(ErrorCode::kInvalidArgument, path + ": expected a .npy or .pb (ONNX TensorProto) file");
#else
  return Status(ErrorCode::kInvalidArgument, path + ": expected a .npy file (this build reads no ONNX .pb)");
#endif
}

std::string file_safe_name(const std::string& name) {
  std::string out = name.empty() ? "output" : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (out[0] == '.') out[0] = '_';
  return out;
}

}  // namespace tessera::cli
