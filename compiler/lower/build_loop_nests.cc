#include "compiler/lower/build_loop_nests.h"

#include "compiler/ir/op.h"
#include "compiler/lower/flatten_storage.h"

namespace tessera {
namespace {

Stmt wrap_guards(Stmt body, const std::vector<Expr>& conds) {
  for (const Expr& c : conds) body = make_if(c, body);
  return body;
}

LoopKind loop_kind(IterAnnotation annotation) {
  switch (annotation) {
    case IterAnnotation::kParallel: return LoopKind::kParallel;
    case IterAnnotation::kVectorize: return LoopKind::kVectorized;
    case IterAnnotation::kUnroll: return LoopKind::kUnrolled;
    case IterAnnotation::kTensorize: return LoopKind::kTensorized;
    case IterAnnotation::kNone: break;
  }
  return LoopKind::kSerial;
}

// Leaf loop i of stage s around `body`, with its auto-unroll pragma.
Stmt make_loop(const LoweringPlan& plan, int s, int i, Stmt body) {
  const Stage& st = plan.stage(s);
  const Iter& it = st.iters[i];
  Stmt loop =
      make_for(it.var, make_int(0), make_int(plan.stages[s].extent.at(it.var.node())), loop_kind(it.annotation), body);
  for (const auto& [var, step] : st.pragmas)
    if (var.same_as(it.var)) loop = make_attr(AttrKind::kAutoUnrollMaxStep, step, loop);
  return loop;
}

Stmt build_stage(const LoweringPlan& plan, int s) {
  const Stage& st = plan.stage(s);
  const PlannedStage& info = plan.stages[s];
  const StageGuards& guards = plan.guards[s];
  std::vector<Expr> global;
  for (const IterVar& a : st.axes) global.push_back(guards.root_values.at(a->var.node()));
  Expr index = flat_index(plan, s, global);

  Stmt update, init;
  const auto* reduce = info.body.as<ReduceNode>();
  if (reduce) {
    Expr source = substitute(reduce->source, guards.root_values);
    Expr acc = make_load(info.buffer, index);
    update = make_store(info.buffer, reduce_combine(reduce->op, acc, source), index);
    init = make_store(info.buffer, reduce_identity(reduce->op, info.buffer->dtype), index);
  } else {
    update = make_store(info.buffer, substitute(info.body, guards.root_values), index);
  }

  const int n = static_cast<int>(st.iters.size());
  int first_reduce = n;
  for (int i = 0; i < n; ++i)
    if (st.iters[i].kind == IterKind::kReduce) {
      first_reduce = i;
      break;
    }
  Stmt body = wrap_guards(update, guards.guards_at[n]);
  for (int i = n - 1; i >= 0; --i) {
    // `body` runs inside loop i; stages attached at loop i come first.
    for (auto a = info.attached.rbegin(); a != info.attached.rend(); ++a) {
      if (!plan.stage(*a).attach_var.same_as(st.iters[i].var)) continue;
      Stmt produce = build_stage(plan, *a);
      body = make_allocate(plan.stages[*a].buffer, make_seq({produce, body}));
    }
    body = make_loop(plan, s, i, body);
    if (reduce && i == first_reduce) {
      // The accumulator is reset before the first reduce loop, over the
      // spatial loops nested below it.
      Stmt init_nest = wrap_guards(init, guards.init_guards);
      for (int j = n - 1; j > i; --j)
        if (st.iters[j].kind == IterKind::kSpatial) init_nest = make_loop(plan, s, j, init_nest);
      body = make_seq({init_nest, body});
    }
    body = wrap_guards(body, guards.guards_at[i]);
  }
  if (reduce && first_reduce == n) body = make_seq({init, body});  // no reduce loop left
  return body;
}

}  // namespace

PrimFunc build_loop_nests(const LoweringPlan& plan, const std::string& name) {
  PrimFunc func;
  func.name = name;
  func.params = plan.params;
  std::vector<Stmt> roots;
  std::vector<Buffer> root_allocs;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    if (!plan.is_computed(s) || plan.stage(s).location != ComputeLocation::kRoot) continue;
    roots.push_back(build_stage(plan, s));
    if (plan.stages[s].buffer->scope != MemoryScope::kGlobal) root_allocs.push_back(plan.stages[s].buffer);
  }
  Stmt body = make_seq(std::move(roots));
  for (auto b = root_allocs.rbegin(); b != root_allocs.rend(); ++b) body = make_allocate(*b, body);
  func.body = body;
  return func;
}

}  // namespace tessera
