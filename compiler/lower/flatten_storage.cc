#include "compiler/lower/flatten_storage.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"

namespace tessera {
namespace {

// Reads occur only in stored values: build_loop_nests writes indices, guards
// and loop bounds from loop variables alone. Walking only the values keeps
// this pass as cheap as flattening was inside the loop-nest builder (the
// indices are most of the unsimplified IR); the verifier, run after this pass
// in tests, reports a read left anywhere else.
class ReadFlattener final : public IRMutator {
 public:
  explicit ReadFlattener(const LoweringPlan& plan) : plan_(plan) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const StoreNode* op, const Stmt& self) override {
    Expr value = mutate(op->value);
    return value.same_as(op->value) ? self : make_store(op->buffer, value, op->index);
  }
  Stmt visit(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    return body.same_as(op->body) ? self : make_for(op->var, op->min, op->extent, op->loop_kind, body);
  }
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    Stmt then_case = mutate(op->then_case), else_case = mutate(op->else_case);
    if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return self;
    return make_if(op->cond, then_case, else_case);
  }
  Expr visit(const TensorReadNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    const auto* r = e.as<TensorReadNode>();
    const int s = plan_.stage_of_tensor(r->tensor.get());
    return make_load(plan_.stages[s].buffer, flat_index(plan_, s, r->indices));
  }

 private:
  const LoweringPlan& plan_;
};

}  // namespace

Expr flat_index(const LoweringPlan& plan, int s, const std::vector<Expr>& global) {
  const PlannedStage& info = plan.stages[s];
  if (const std::optional<PackedLayout>& layout = plan.stage(s).layout) {
    // [d_axis / f, the other dims, d_axis % f] (layout.h); placeholders have
    // region_min 0 and their full shape as region_extent.
    const auto axis = static_cast<size_t>(layout->axis);
    const int64_t f = layout->factor;
    Expr rest = make_int(0);
    int64_t stride = 1;
    for (size_t d = global.size(); d-- > 0;) {
      if (d == axis) continue;
      rest = rest + global[d] * stride;
      stride *= info.region_extent[d];
    }
    return ((global[axis] / f) * stride + rest) * f + global[axis] % f;
  }
  Expr index = make_int(0);
  int64_t stride = 1;
  for (int d = static_cast<int>(global.size()) - 1; d >= 0; --d) {
    Expr local = is_const_value(info.region_min[d], 0) ? global[d] : global[d] - info.region_min[d];
    index = index + local * stride;
    stride *= info.region_extent[d];
  }
  return index;
}

Stmt flatten_storage(const Stmt& body, const LoweringPlan& plan) { return ReadFlattener(plan)(body); }

}  // namespace tessera
