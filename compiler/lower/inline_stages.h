// First lowering pass (schedule level): substitutes inlined stages into
// their readers and records who reads and who is attached to whom.
#pragma once

#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// A plan of `state` with every stage's body (inlined producers substituted,
/// producers first), its consumers (computed stages that read it) and the
/// stages attached at its loops. Does not fail today; returns a Result so
/// the pass list is uniform.
Result<LoweringPlan> inline_stages(const State& state);

}  // namespace tessera
