#include "compiler/lower/infer_bounds.h"

#include <algorithm>
#include <unordered_set>

#include "compiler/arith/linear.h"
#include "compiler/arith/sym_interval.h"
#include "compiler/ir/op.h"
#include "compiler/lower/inline_stages.h"
#include "compiler/lower/simplify.h"

namespace tessera {
namespace {

Status lowering_error(const std::string& what) {
  return Status(ErrorCode::kLoweringError, what);
}

// Every reader of an attached stage must run inside the loop it is attached at.
Status check_containment(const LoweringPlan& plan, int p) {
  const Stage& ps = plan.stage(p);
  const int c = ps.attach_stage;
  const int pos = plan.stage(c).iter_index(ps.attach_var);
  if (pos < 0) return lowering_error("stage " + ps.name() + " is attached at a loop its target no longer has");
  for (int x : plan.stages[p].consumers) {
    int cur = x;
    bool inside = false;
    while (true) {
      if (cur == c) {
        inside = true;
        break;
      }
      const Stage& cs = plan.stage(cur);
      if (cs.location != ComputeLocation::kAt) break;
      if (cs.attach_stage == c) {
        inside = plan.stage(c).iter_index(cs.attach_var) >= pos;
        break;
      }
      cur = cs.attach_stage;
    }
    if (!inside)
      return lowering_error("stage " + ps.name() + " is computed at " + plan.stage(c).name() + "." +
                            ps.attach_var.name() + " but stage " + plan.stage(x).name() +
                            " reads it outside that loop");
  }
  return Status::ok();
}

// Extents of every iter var of stage s from its root extents (the region for
// attached stages), passed down the relations.
void compute_extents(LoweringPlan& plan, int s) {
  const Stage& st = plan.stage(s);
  auto& ext = plan.stages[s].extent;
  for (size_t d = 0; d < st.axes.size(); ++d) ext[st.axes[d]->var.node()] = plan.stages[s].region_extent[d];
  for (const IterVar& r : st.reduce_axes) ext[r->var.node()] = r->extent;
  for (const Relation& rel : st.relations) {
    if (const auto* sp = std::get_if<SplitRelation>(&rel)) {
      int64_t parent = ext.at(sp->parent.node());
      ext[sp->outer.node()] = std::max<int64_t>(1, (parent + sp->factor - 1) / sp->factor);
      ext[sp->inner.node()] = sp->factor;
    } else {
      const auto& fu = std::get<FuseRelation>(rel);
      ext[fu.fused.node()] = ext.at(fu.outer.node()) * ext.at(fu.inner.node());
    }
  }
}

// Loop variables that enclose where stage s is computed.
std::vector<Var> enclosing_vars(const LoweringPlan& plan, int s) {
  std::vector<Var> vars;
  const Stage& st = plan.stage(s);
  if (st.location != ComputeLocation::kAt) return vars;
  vars = enclosing_vars(plan, st.attach_stage);
  const Stage& target = plan.stage(st.attach_stage);
  int pos = target.iter_index(st.attach_var);
  for (int i = 0; i <= pos; ++i) vars.push_back(target.iters[i].var);
  return vars;
}

// The region of attached stage p: the hull of its consumers' reads with the
// loops inside the attach point relaxed. `outer_bounds` bounds the leaf
// loops of the stages seen so far (its consumers), for simplification.
void infer_region(LoweringPlan& plan, int p, const BoundMap& outer_bounds) {
  const Stage& ps = plan.stage(p);
  const int ndim = static_cast<int>(ps.axes.size());
  std::unordered_set<const VarNode*> outside;
  for (const Var& v : enclosing_vars(plan, p)) outside.insert(v.node());
  // Every other loop variable ranges over its loop.
  arith::RelaxMap relax;
  for (const PlannedStage& sp : plan.stages) {
    for (const auto& [var, extent] : sp.extent) {
      if (!outside.count(var)) relax[var] = {make_int(0), make_int(extent - 1)};
    }
  }
  // Per dimension, the distinct lower and upper bounds of the reads. Reads of
  // one element repeat (an unrolled Winograd output transform reads each
  // tile 36 times), and a min of equal terms would hide a constant extent
  // from simplify.
  std::vector<std::vector<Expr>> los(ndim), his(ndim);
  auto add_bound = [](std::vector<Expr>* bounds, const Expr& e) {
    for (const Expr& b : *bounds)
      if (structural_equal(b, e)) return;
    bounds->push_back(e);
  };
  bool exact = true;
  bool padded = ps.pad_tile;  // the stage or a reader computes whole tiles
  for (int x : plan.stages[p].consumers) {
    padded |= plan.stage(x).pad_tile;
    VarMap values = root_values(plan, x, nullptr);
    for (const auto& indices : reads_of(plan.stages[x].body, ps.tensor.get())) {
      for (int d = 0; d < ndim; ++d) {
        std::optional<arith::SymInterval> iv = arith::eval_interval(substitute(indices[d], values), relax);
        if (!iv) {
          exact = false;
          continue;
        }
        // Canonical and simplified, so that one row reached by two paths of
        // attachment is one bound: ((i.0*16 + i.1) + 0) + 0 and
        // 0 + (i.0*16 + i.1); f / 750 % 6 and f / 750 where f < 4500.
        add_bound(&los[d], simplify(arith::canonical(iv->lo), outer_bounds));
        add_bound(&his[d], simplify(arith::canonical(iv->hi), outer_bounds));
      }
    }
  }
  PlannedStage& info = plan.stages[p];
  info.region_min.assign(ndim, make_int(0));
  info.region_extent = ps.tensor->shape;
  for (int d = 0; d < ndim; ++d) {
    if (!exact || los[d].empty()) continue;  // whole dimension
    Expr lo = los[d].front(), hi = his[d].front();
    for (size_t b = 1; b < los[d].size(); ++b) lo = min(lo, los[d][b]);
    for (size_t b = 1; b < his[d].size(); ++b) hi = max(hi, his[d][b]);
    Expr min_expr = simplify(lo, outer_bounds);
    Expr extent_expr = simplify(hi - lo + 1, outer_bounds);
    int64_t extent;
    if (!is_const_int(extent_expr, &extent)) {
      Interval b = bounds_of(extent_expr, outer_bounds);
      if (b.hi == Interval::kPosInf) continue;
      extent = b.hi;
    }
    // A tile as long as the tensor is the whole dimension, unless the stage
    // or a reader computes whole tiles: their reads past the edge must stay
    // inside the buffer.
    if (extent <= 0 || extent == ps.tensor->shape[d] || (extent > ps.tensor->shape[d] && !padded)) continue;
    info.region_min[d] = min_expr;
    info.region_extent[d] = extent;
  }
}

// Vectorized and unrolled loops whose inferred extent is too long.
Status check_annotated_extents(const LoweringPlan& plan, int s) {
  const Stage& st = plan.stage(s);
  for (const Iter& it : st.iters) {
    const int64_t extent = plan.stages[s].extent.at(it.var.node());
    if (it.annotation == IterAnnotation::kVectorize && extent > kMaxVectorLanes)
      return lowering_error("loop " + st.name() + "." + it.var.name() + " is vectorized over " +
                            std::to_string(extent) + " lanes (at most " + std::to_string(kMaxVectorLanes) + ")");
    if (it.annotation == IterAnnotation::kUnroll && extent > kMaxUnrollExtent)
      return lowering_error("loop " + st.name() + "." + it.var.name() + " is unrolled " + std::to_string(extent) +
                            " times (at most " + std::to_string(kMaxUnrollExtent) + ")");
  }
  return Status::ok();
}

}  // namespace

Result<LoweringPlan> infer_bounds(LoweringPlan plan) {
  const int n = static_cast<int>(plan.stages.size());
  for (int s = 0; s < n; ++s) {
    plan.stages[s].region_min.assign(plan.stage(s).tensor->shape.size(), make_int(0));
    plan.stages[s].region_extent = plan.stage(s).tensor->shape;
  }
  // Consumers before producers: an attached stage's region depends on the
  // loops of the stages that read it.
  BoundMap outer_bounds;
  for (int s = n - 1; s >= 0; --s) {
    if (!plan.is_computed(s)) continue;
    if (plan.stage(s).location == ComputeLocation::kAt) {
      TESSERA_RETURN_IF_ERROR(check_containment(plan, s));
      infer_region(plan, s, outer_bounds);
    }
    compute_extents(plan, s);
    for (const Iter& it : plan.stage(s).iters)
      outer_bounds[it.var.node()] = {0, plan.stages[s].extent.at(it.var.node()) - 1};
    TESSERA_RETURN_IF_ERROR(check_annotated_extents(plan, s));
  }
  return plan;
}

Result<State> infer_bounds(const State& state) {
  TESSERA_ASSIGN_OR_RETURN(LoweringPlan plan, inline_stages(state));
  TESSERA_ASSIGN_OR_RETURN(plan, infer_bounds(std::move(plan)));
  State out = state;
  for (int s = 0; s < static_cast<int>(state.stages().size()); ++s) {
    if (!plan.is_computed(s)) continue;
    std::vector<int64_t> extents;
    for (const Iter& it : state.stage(s).iters) {
      auto found = plan.stages[s].extent.find(it.var.node());
      extents.push_back(found == plan.stages[s].extent.end() ? it.extent : found->second);
    }
    out.set_loop_extents(s, std::move(extents));
  }
  return out;
}

}  // namespace tessera
