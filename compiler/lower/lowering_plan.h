// The schedule-level form of lowering: what the passes before
// build_loop_nests learn about each stage of a schedule. Each of those passes
// fills in its part of the plan; build_loop_nests turns it into loop IR.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/util.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// What lowering knows about one stage, field groups in the order of the
/// passes that fill them. Placeholders and inlined stages get only a body
/// (placeholders: none) and a region; placeholders that are kernel arguments
/// get a buffer.
struct PlannedStage {
  // inline_stages
  Expr body;                   ///< the stage's body with inlined producers substituted
  std::vector<int> consumers;  ///< computed stages whose bodies read this stage
  std::vector<int> attached;   ///< stages computed at one of this stage's loops, in order
  // infer_bounds
  std::vector<Expr> region_min;        ///< per spatial dim: first global index computed (0 for root stages)
  std::vector<int64_t> region_extent;  ///< per spatial dim: elements computed (the tensor's shape for root stages)
  std::unordered_map<const VarNode*, int64_t> extent;  ///< every iter var (root, inner, leaf) of a computed stage
  // allocate_buffers
  Buffer buffer;  ///< where the stage's region lives (row-major region_extent)
};

/// Where a computed stage's iteration domain is checked (place_guards).
struct StageGuards {
  VarMap root_values;                        ///< root axis var -> its value in leaf loop vars (global coordinates)
  std::vector<std::vector<Expr>> guards_at;  ///< [d]: guards just inside leaf loop d-1 ([0]: outside all)
  std::vector<Expr> init_guards;             ///< guards of a reduction's reset, innermost in its loop nest
};

/// The plan of a whole schedule; `state` must outlive it.
struct LoweringPlan {
  const State* state = nullptr;
  std::vector<PlannedStage> stages;  ///< parallel to state->stages()
  /// Parallel to stages once place_guards ran. Kept apart from PlannedStage so
  /// that neither array reaches glibc's large-request size (1 KiB) for usual
  /// stage counts: such a request consolidates the allocator's fast bins and
  /// cost 5% of lowering.
  std::vector<StageGuards> guards;
  std::unordered_map<const TensorNode*, int> stage_of;  ///< tensor -> its stage
  std::vector<Buffer> params;                           ///< kernel parameters, in the DAG's argument order

  const Stage& stage(int s) const { return state->stage(s); }
  /// True for stages that get a loop nest (neither placeholders nor inlined).
  bool is_computed(int s) const;
  /// The stage of `tensor`, or -1 when it is not in the schedule.
  int stage_of_tensor(const TensorNode* tensor) const;
  /// Readable summary, one stage a line: what a trace shows after a schedule-level pass.
  std::string to_string() const;
};

/// The values of stage s's root axes in terms of its leaf loop variables:
/// spatial axes map to global coordinates (region min + local), reduce axes
/// to their local value. `guards` (when not null) receives the conditions
/// under which a point is inside the iteration domain, in the order the
/// relations and axes produce them. Needs the stage's extents (infer_bounds).
VarMap root_values(const LoweringPlan& plan, int s, std::vector<Expr>* guards);

}  // namespace tessera
