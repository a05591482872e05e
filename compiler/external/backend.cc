#include "compiler/external/backend.h"

#include "compiler/external/cblas.h"
#include "compiler/external/dnnl.h"

namespace tessera::external {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCSource: return "c-source";
    case BackendKind::kGraphPayload: return "graph-payload";
  }
  return "?";
}

std::vector<std::string> backend_names() {
  return {"cblas", "dnnl"};
}

Result<std::unique_ptr<Backend>> make_backend(const std::string& name) {
  if (name == "none") return std::unique_ptr<Backend>();
  if (name == "cblas") return make_cblas_backend();
  if (name == "dnnl") return make_dnnl_backend();
  std::string known = "none";
  for (const std::string& n : backend_names()) known += ", " + n;
  return Status(ErrorCode::kInvalidArgument, "unknown backend '" + name + "' (known: " + known + ")");
}

}  // namespace tessera::external
