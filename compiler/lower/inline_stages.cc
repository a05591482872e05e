#include "compiler/lower/inline_stages.h"

#include "compiler/ir/functor.h"

namespace tessera {
namespace {

// Replaces reads of inlined stages by their (already inlined) bodies.
class Inliner final : public IRMutator {
 public:
  explicit Inliner(const LoweringPlan& plan) : plan_(plan) {}

 protected:
  using IRMutator::visit;
  Expr visit(const TensorReadNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    const auto* r = e.as<TensorReadNode>();
    const int s = plan_.stage_of_tensor(r->tensor.get());
    if (s < 0 || plan_.stage(s).location != ComputeLocation::kInline) return e;
    VarMap vmap;
    for (size_t d = 0; d < r->indices.size(); ++d) vmap[plan_.stage(s).axes[d]->var.node()] = r->indices[d];
    return substitute(plan_.stages[s].body, vmap);
  }

 private:
  const LoweringPlan& plan_;
};

}  // namespace

Result<LoweringPlan> inline_stages(const State& state) {
  LoweringPlan plan;
  plan.state = &state;
  const std::vector<Stage>& stages = state.stages();
  const int n = static_cast<int>(stages.size());
  plan.stages.resize(n);
  for (int i = 0; i < n; ++i) plan.stage_of[stages[i].tensor.get()] = i;
  // Stages are in topological order, so a reader sees its producers inlined.
  for (int i = 0; i < n; ++i) {
    if (stages[i].is_placeholder()) continue;
    plan.stages[i].body = Inliner(plan)(stages[i].body);
  }
  for (int p = 0; p < n; ++p) {
    if (stages[p].location == ComputeLocation::kInline) continue;
    for (int x = 0; x < n; ++x) {
      if (!plan.is_computed(x)) continue;
      if (!reads_of(plan.stages[x].body, stages[p].tensor.get()).empty()) plan.stages[p].consumers.push_back(x);
    }
  }
  for (int s = 0; s < n; ++s)
    if (stages[s].location == ComputeLocation::kAt) plan.stages[stages[s].attach_stage].attached.push_back(s);
  return plan;
}

}  // namespace tessera
