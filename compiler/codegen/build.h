// The one build sequence, from lowered loop IR (or from a schedule, lowered
// first) to a loadable shared library: generate an object per function,
// then link them. The tuner's builder, the model compiler and the
// benchmarks all build through here.
#pragma once

#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/ir/stmt.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// A built library of kernels.
struct BuiltLibrary {
  std::string bytes;   ///< the shared library; empty when built from no functions
  std::string symbol;  ///< the first function's name (the kernel's entry point when there is one)
  double lower_seconds = 0, codegen_seconds = 0, link_seconds = 0;
};

/// How build() compiles.
struct BuildOptions {
  /// Functions compiled at once (one object each); <= 0: the machine's cores.
  int jobs = 1;
  /// Objects made elsewhere (an external backend's compiled C), linked in
  /// after the functions' objects.
  std::vector<std::string> extra_objects;
  /// Shared libraries those objects need, as `-l` names ("openblas").
  std::vector<std::string> libraries;
};

/// Compiles already-lowered functions (the output of lower()) for `target`,
/// one object per function on `options.jobs` threads, and links them into
/// one shared library exporting each function by its name. A code
/// generation error names the function ("compiling NAME: ..."). With no
/// functions and no extra objects the library is empty.
Result<BuiltLibrary> build(const std::vector<PrimFunc>& funcs, const Target& target, BuildOptions options = {});

/// Lowers `state` to a function named `name`, then build()s it alone.
Result<BuiltLibrary> build(const State& state, const Target& target, const std::string& name = "kernel");

}  // namespace tessera
