#include "compiler/codegen/build.h"

#include <chrono>

#include "compiler/codegen/link.h"
#include "compiler/codegen/llvm_codegen.h"
#include "compiler/lower/lower.h"

namespace tessera {
namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

Result<BuiltLibrary> build_kernel(const State& state, const Target& target, const std::string& name) {
  BuiltLibrary lib;
  lib.symbol = name;
  auto t0 = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, lower(state, name));
  auto t1 = std::chrono::steady_clock::now();
  lib.lower_seconds = seconds_since(t0);
  TESSERA_ASSIGN_OR_RETURN(std::string object, emit_object({func}, target));
  auto t2 = std::chrono::steady_clock::now();
  lib.codegen_seconds = std::chrono::duration<double>(t2 - t1).count();
  TESSERA_ASSIGN_OR_RETURN(lib.bytes, link_shared_library({object}, target));
  lib.link_seconds = seconds_since(t2);
  return lib;
}

Result<std::string> build_library(const std::vector<PrimFunc>& funcs, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(std::string object, emit_object(funcs, target));
  return link_shared_library({object}, target);
}

}  // namespace tessera
