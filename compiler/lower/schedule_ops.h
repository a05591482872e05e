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

/// `state` with the loop extents of every stage as lowering will use them:
/// stages computed at a consumer's loop cover only the region it needs.
/// Search spaces call this before choosing split factors of such stages.
Result<State> infer_bounds(const State& state);

/// The largest vector a vectorized loop may make, and the longest loop an
/// unroll annotation may copy out.
inline constexpr int64_t kMaxVectorLanes = 64;
inline constexpr int64_t kMaxUnrollExtent = 1024;

}  // namespace tessera
