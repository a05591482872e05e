// Schedule -> loop nest: bound inference for attached stages, loop nests from
// leaf iterators, guards for non-dividing splits, and flat buffer accesses.
#pragma once

#include "compiler/ir/stmt.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// The kernel of `state`: one buffer parameter per DAG argument (in the DAG's
/// argument order) and a loop nest with flat loads and stores. Loops keep
/// their annotations (parallel, vectorized, unrolled) for the later passes.
Result<PrimFunc> schedule_to_loops(const State& state, const std::string& name);

}  // namespace tessera
