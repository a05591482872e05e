// From a schedule to a loadable library: lower, generate code, link.
#pragma once

#include <string>

#include "compiler/codegen/target.h"
#include "compiler/ir/stmt.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// A built kernel library.
struct BuiltLibrary {
  std::string bytes;   ///< the shared library
  std::string symbol;  ///< the kernel's entry point
  double lower_seconds = 0, codegen_seconds = 0, link_seconds = 0;
};

/// Lowers `state`, compiles it for `target` and links a shared library that
/// exports `name`.
Result<BuiltLibrary> build_kernel(const State& state, const Target& target, const std::string& name = "kernel");

/// Compiles and links already-lowered functions into one library.
Result<std::string> build_library(const std::vector<PrimFunc>& funcs, const Target& target);

}  // namespace tessera
