// Storage flattening (IR): reads of tensors in global coordinates become
// loads of the buffers that hold them.
#pragma once

#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// The flat index into stage s's buffer of the element at global coordinates
/// `global`: row-major over the stage's region (offset by its region min), or
/// the packed order of a placeholder stored with a layout (layout.h).
Expr flat_index(const LoweringPlan& plan, int s, const std::vector<Expr>& global);

/// `body` (as build_loop_nests makes it: reads only in stored values) with
/// every TensorRead of a planned stage replaced by a Load of that stage's
/// buffer at flat_index. `plan` must have buffers (allocate_buffers); after
/// this pass the IR has no TensorRead left.
Stmt flatten_storage(const Stmt& body, const LoweringPlan& plan);

}  // namespace tessera
