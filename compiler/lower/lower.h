// The lowering pipeline: schedule state -> loop IR ready for code generation.
#pragma once

#include <string>

#include "compiler/ir/stmt.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// Lowers `state` to a PrimFunc named `name`:
///   schedule_to_loops -> simplify -> vectorize_loops (simplifies each vector body) -> unroll_loops
Result<PrimFunc> lower(const State& state, const std::string& name = "kernel");

}  // namespace tessera
