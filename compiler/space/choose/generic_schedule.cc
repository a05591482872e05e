#include "compiler/space/choose/generic_schedule.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/space/knob/template_util.h"

namespace tessera {
namespace {

using template_detail::Sched;

// Below this many loop iterations (spatial x reduction) a parallel launch
// costs more than it saves: the thread pool's wake-up is a few microseconds,
// about what 64k scalar iterations or 4k vector ones take.
constexpr int64_t kMinParallelWork = 1 << 16;

bool inlinable(const ComputeDAG& dag, const Tensor& t) {
  const ComputeOpNode* op = compute_op(t);
  if (op == nullptr || dag.is_output(t) || !op->reduce_axes.empty()) return false;
  return op->pattern == OpPattern::kElementwise || op->pattern == OpPattern::kBroadcast ||
         op->pattern == OpPattern::kInjective;
}

// The vectorized width of an axis of `extent` (as the templates choose it),
// or 1 for an axis shorter than a few lanes, where a vector does not pay.
int64_t vector_width(int64_t extent, int64_t lanes) {
  if (extent < std::min<int64_t>(lanes, 4)) return 1;
  return template_detail::divisor_vector_width(extent, lanes);
}

// A root stage: [outer spatial loops, fused and parallel] [reduction loops]
// [the innermost spatial axis's vector part].
Status schedule_root_stage(Sched& s, const std::string& name, int64_t lanes) {
  const Stage& stage = s.state().stage(s.state().stage_index(name));
  std::vector<Var> spatial, reduce;
  int64_t work = 1;
  int last = -1;  // the innermost spatial loop that is not trivial
  for (const Iter& it : stage.iters) {
    (it.kind == IterKind::kSpatial ? spatial : reduce).push_back(it.var);
    work *= it.extent;
    if (it.kind == IterKind::kSpatial && it.extent > 1) last = static_cast<int>(spatial.size()) - 1;
  }
  std::vector<Var> outer = spatial, vector;
  // A short power-of-two innermost axis (4 channels of an NHWC image) joins
  // the axis outside it, so that a vector holds several of its rows: one
  // vector every 4 elements was the input's channel pad and transpose at
  // 0.7 ns an element. Where an access splits the fused index again, its
  // division and remainder merge back (arith::linear_form) or are shifts.
  if (last >= 1 && last == static_cast<int>(spatial.size()) - 1) {
    const int64_t extent = stage.iters[stage.iter_index(spatial[last])].extent;
    const int64_t outside = stage.iters[stage.iter_index(spatial[last - 1])].extent;
    if (extent < lanes && (extent & (extent - 1)) == 0 && outside > 1) {
      TESSERA_ASSIGN_OR_RETURN(Var fused, s.fuse(name, {spatial[last - 1], spatial[last]}));
      spatial.erase(spatial.begin() + last);
      spatial[last - 1] = fused;
      --last;
      outer = spatial;
    }
  }
  if (last >= 0) {
    const int64_t extent = stage.iters[stage.iter_index(spatial[last])].extent;
    const int64_t width = vector_width(extent, lanes);
    if (width == extent) {
      vector = {spatial[last]};
      outer.erase(outer.begin() + last);
    } else if (width > 1) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<Var> parts, s.split(name, spatial[last], {width}));
      outer[last] = parts[0];
      vector = {parts[1]};
    }
  }
  std::vector<Var> order = outer;
  order.insert(order.end(), reduce.begin(), reduce.end());
  order.insert(order.end(), vector.begin(), vector.end());
  if (!reduce.empty() && !vector.empty()) TESSERA_RETURN_IF_ERROR(s.reorder(name, order));
  if (!vector.empty()) TESSERA_RETURN_IF_ERROR(s.annotate(name, vector[0], IterAnnotation::kVectorize));
  if (outer.empty() || work < kMinParallelWork) return Status::ok();
  if (outer.size() == 1) return s.annotate(name, outer[0], IterAnnotation::kParallel);
  TESSERA_ASSIGN_OR_RETURN(Var fused, s.fuse(name, outer));
  return s.annotate(name, fused, IterAnnotation::kParallel);
}

// A reduction to one value (every spatial extent 1: a dynamic quantization's
// minimum and maximum, a loss) has no spatial loop to vectorize: a serial
// scalar loop over the whole tensor. Whether rfactor applies: the innermost
// reduce axis holds two vectors or more.
bool reduces_to_one_value(const Stage& stage, int64_t lanes) {
  if (stage.reduce_axes.empty() || lanes < 2 || stage.reduce_axes.back()->extent < 2 * lanes) return false;
  for (const IterVar& a : stage.axes)
    if (a->extent != 1) return false;
  return true;
}

// Then `lanes` partial results along the innermost reduce axis
// (name + ".rf", computed at the root), accumulated as one vector; the
// stage itself reduces the vector.
Status schedule_partial_results(Sched& s, const std::string& name, int64_t lanes) {
  const Stage& stage = s.state().stage(s.state().stage_index(name));
  TESSERA_RETURN_IF_ERROR(s.rfactor(name, static_cast<int>(stage.reduce_axes.size()) - 1, lanes));
  return s.vectorize_partial_results(name + ".rf");
}

}  // namespace

Result<State> generic_schedule(std::shared_ptr<const ComputeDAG> dag, const Target& target) {
  if (!dag) return Status(ErrorCode::kInvalidArgument, "generic_schedule: no DAG");
  State state(dag);
  Sched s(&state);
  for (const Tensor& t : dag->tensors())
    if (inlinable(*dag, t)) TESSERA_RETURN_IF_ERROR(s.compute_inline(t->name));
  for (const Tensor& t : dag->tensors()) {
    if (compute_op(t) == nullptr || inlinable(*dag, t)) continue;
    const int64_t lanes = target.vector_lanes(t->dtype);
    if (reduces_to_one_value(state.stage(state.stage_index(t->name)), lanes))
      TESSERA_RETURN_IF_ERROR(schedule_partial_results(s, t->name, lanes));
    else
      TESSERA_RETURN_IF_ERROR(schedule_root_stage(s, t->name, lanes));
  }
  return state;
}

}  // namespace tessera
