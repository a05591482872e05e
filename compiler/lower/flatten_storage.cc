#include "compiler/lower/flatten_storage.h"

#include <unordered_set>

#include "compiler/arith/interval.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace {

// The elements stage s's buffer holds along dimension d: the tensor's extent,
// or the whole blocks of a packed (padded) axis.
int64_t stored_extent(const LoweringPlan& plan, int s, size_t d) {
  const Stage& st = plan.stage(s);
  const int64_t extent = st.tensor->shape[d];
  if (st.layout && static_cast<size_t>(st.layout->axis) == d)
    return packed_shape(st.tensor->shape, *st.layout).front() * st.layout->factor;
  return extent;
}

// Reads occur only in stored values: build_loop_nests writes indices, guards
// and loop bounds from loop variables alone. Walking only the values keeps
// this pass as cheap as flattening was inside the loop-nest builder (the
// indices are most of the unsimplified IR); the verifier, run after this pass
// in tests, reports a read left anywhere else.
class ReadFlattener final : public IRMutator {
 public:
  explicit ReadFlattener(const LoweringPlan& plan) : plan_(plan) {
    for (size_t s = 0; s < plan.stages.size(); ++s)
      if (plan.stage(static_cast<int>(s)).pad_tile && plan.stages[s].buffer.defined())
        padded_buffers_.insert(plan.stages[s].buffer.get());
  }

 protected:
  using IRMutator::visit;
  Stmt visit(const StoreNode* op, const Stmt& self) override {
    in_padded_tile_ = padded_buffers_.count(op->buffer.get()) > 0;
    Expr value = mutate(op->value);
    in_padded_tile_ = false;
    return value.same_as(op->value) ? self : make_store(op->buffer, value, op->index);
  }
  Stmt visit(const ForNode* op, const Stmt& self) override {
    int64_t min = 0, extent = 0;
    if (is_const_int(op->min, &min) && is_const_int(op->extent, &extent) && extent > 0)
      loops_[op->var.node()] = {min, min + extent - 1};
    if (op->loop_kind == LoopKind::kVectorized) vector_loops_.insert(op->var.node());
    Stmt body = mutate(op->body);
    loops_.erase(op->var.node());
    vector_loops_.erase(op->var.node());
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
    if (!in_padded_tile_ || plan_.stage(s).location == ComputeLocation::kAt)
      return make_load(plan_.stages[s].buffer, flat_index(plan_, s, r->indices));
    // A padded tile reads a whole tensor past its edge (PadTileStep): those
    // values reach only points that are never stored, so an index is clamped
    // to the edge, or masked where it varies along a vectorized loop (a
    // clamped vector would not be contiguous).
    std::vector<Expr> indices = r->indices;
    Expr predicate;
    for (size_t d = 0; d < indices.size(); ++d) {
      const int64_t hi = stored_extent(plan_, s, d) - 1;
      const arith::Interval range = arith::bounds_of(indices[d], loops_);
      const bool below = range.lo<0, above = range.hi> hi;
      if (!below && !above) continue;
      const bool vector = uses_any_var(indices[d], [&](const VarNode* v) { return vector_loops_.count(v) > 0; });
      if (vector) {
        const Expr& x = indices[d];
        Expr in = below && above ? (x >= make_int(0) && x <= make_int(hi))
                  : below        ? x >= make_int(0)
                                 : x <= make_int(hi);
        predicate = predicate.defined() ? (predicate && in) : in;
        continue;
      }
      if (above) indices[d] = min(indices[d], make_int(hi));
      if (below) indices[d] = max(indices[d], make_int(0));
    }
    return make_load(plan_.stages[s].buffer, flat_index(plan_, s, indices), predicate);
  }

 private:
  const LoweringPlan& plan_;
  std::unordered_set<const BufferNode*> padded_buffers_;  // stages computing whole tiles
  arith::BoundMap loops_;                                 // enclosing loops with constant bounds
  std::unordered_set<const VarNode*> vector_loops_;
  bool in_padded_tile_ = false;
};

}  // namespace

Expr flat_index(const LoweringPlan& plan, int s, const std::vector<Expr>& global) {
  const PlannedStage& info = plan.stages[s];
  if (const std::optional<PackedLayout>& layout = plan.stage(s).layout) {
    // [d_axis / f, the other dims, d_axis % f, the last `inner` dims]
    // (layout.h); placeholders have region_min 0 and their full shape as
    // region_extent.
    const auto axis = static_cast<size_t>(layout->axis);
    const int64_t f = layout->factor;
    const size_t first_trailing = global.size() - static_cast<size_t>(layout->inner);
    Expr rest = make_int(0), trailing = make_int(0);
    int64_t stride = 1, trailing_size = 1;
    for (size_t d = global.size(); d-- > first_trailing;) {
      trailing = trailing + global[d] * trailing_size;
      trailing_size *= info.region_extent[d];
    }
    for (size_t d = first_trailing; d-- > 0;) {
      if (d == axis) continue;
      rest = rest + global[d] * stride;
      stride *= info.region_extent[d];
    }
    Expr packed = ((global[axis] / f) * stride + rest) * f + global[axis] % f;
    return layout->inner == 0 ? packed : packed * trailing_size + trailing;
  }
  // Row-major over the dimensions in storage order (StorageOrderStep), the
  // tensor's own by default.
  const std::vector<int>& order = plan.stage(s).storage_order;
  Expr index = make_int(0);
  int64_t stride = 1;
  for (int i = static_cast<int>(global.size()) - 1; i >= 0; --i) {
    const size_t d = order.empty() ? static_cast<size_t>(i) : static_cast<size_t>(order[static_cast<size_t>(i)]);
    Expr local = is_const_value(info.region_min[d], 0) ? global[d] : global[d] - info.region_min[d];
    index = index + local * stride;
    stride *= info.region_extent[d];
  }
  return index;
}

Stmt flatten_storage(const Stmt& body, const LoweringPlan& plan) {
  return ReadFlattener(plan)(body);
}

}  // namespace tessera
