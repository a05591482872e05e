// Storage (schedule level): a buffer for every stage that is stored.
#pragma once

#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// Intermediate buffers up to this size live on the stack; larger ones come
/// from the runtime's workspace.
inline constexpr int64_t kMaxLocalBytes = 256 * 1024;

/// `plan` (after infer_bounds) with buffers: one global buffer per DAG
/// argument, in the DAG's argument order (the kernel's parameters), and one
/// per other computed stage, shaped like its region, kLocal when it fits in
/// kMaxLocalBytes and kWorkspace otherwise. kLoweringError when a DAG
/// argument has no stage.
Result<LoweringPlan> allocate_buffers(LoweringPlan plan);

}  // namespace tessera
