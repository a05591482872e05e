// Loop nests (first IR pass): the plan of a schedule becomes a PrimFunc.
#pragma once

#include <string>

#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// The kernel `name` of `plan` (after place_guards): the buffers of the
/// DAG's arguments as parameters, and per root stage its loop nest from its
/// leaf loops, with the stages attached at a loop allocated and computed
/// first inside it, the planned guards, and reductions reset before their
/// first reduce loop. Loops keep their annotations (parallel, vectorized,
/// unrolled) for later passes. A stage stores to its own buffer at its flat
/// index; what it reads stays TensorRead in global coordinates until
/// flatten_storage.
PrimFunc build_loop_nests(const LoweringPlan& plan, const std::string& name);

}  // namespace tessera
