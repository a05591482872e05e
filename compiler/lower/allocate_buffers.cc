#include "compiler/lower/allocate_buffers.h"

namespace tessera {

Result<LoweringPlan> allocate_buffers(LoweringPlan plan) {
  for (const Tensor& arg : plan.state->dag().args()) {
    const int s = plan.stage_of_tensor(arg.get());
    if (s < 0) return Status(ErrorCode::kLoweringError, "kernel argument " + arg->name + " has no stage");
    // A packed argument is stored in its layout's shape (padded blocks too).
    const std::optional<PackedLayout>& layout = plan.stage(s).layout;
    plan.stages[s].buffer = make_buffer(arg->name, arg->dtype, layout ? packed_shape(arg->shape, *layout) : arg->shape,
                                        MemoryScope::kGlobal);
    plan.params.push_back(plan.stages[s].buffer);
  }
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    PlannedStage& sp = plan.stages[s];
    if (sp.buffer.defined() || !plan.is_computed(s)) continue;
    const Stage& st = plan.stage(s);
    int64_t elements = 1;
    for (int64_t e : sp.region_extent) elements *= e;
    MemoryScope scope =
        elements * st.tensor->dtype.storage_bytes() <= kMaxLocalBytes ? MemoryScope::kLocal : MemoryScope::kWorkspace;
    sp.buffer = make_buffer(st.name(), st.tensor->dtype, sp.region_extent, scope);
  }
  return plan;
}

}  // namespace tessera
