// Bound inference (schedule level): the region each attached stage must
// compute and the extents of every stage's loops.
#pragma once

#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// The largest vector a vectorized loop may make, and the longest loop an
/// unroll annotation may copy out.
inline constexpr int64_t kMaxVectorLanes = 64;
inline constexpr int64_t kMaxUnrollExtent = 1024;

/// `plan` (after inline_stages) with regions and loop extents: root stages
/// compute their whole tensor; a stage computed at a consumer's loop covers
/// only what its readers inside that loop need (consumers first, by symbolic
/// intervals of the readers' indices with inner loops relaxed), and its loop
/// extents follow from that region. kLoweringError when a reader runs outside
/// the loop a stage is attached at, or a vectorized/unrolled loop grows past
/// kMaxVectorLanes/kMaxUnrollExtent.
Result<LoweringPlan> infer_bounds(LoweringPlan plan);

/// `state` with the loop extents of every stage as lowering will use them.
/// Search spaces call this before choosing split factors of attached stages.
Result<State> infer_bounds(const State& state);

}  // namespace tessera
