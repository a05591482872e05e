// Guards (schedule level): where each stage's iteration domain is checked.
#pragma once

#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// `plan` (after infer_bounds) with each computed stage's root values and
/// guards. A split that does not divide its parent guards `parent < extent`,
/// and an attached stage whose region hangs over its tensor's edge guards
/// `0 <= index < size`. Each guard goes just inside the innermost leaf loop
/// it depends on (guards_at[loop + 1]); a reduction's reset also checks, at
/// its innermost, the spatial guards that sit below the first reduce loop.
Result<LoweringPlan> place_guards(LoweringPlan plan);

}  // namespace tessera
