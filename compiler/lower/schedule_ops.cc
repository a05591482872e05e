#include "compiler/lower/schedule_ops.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"
#include "compiler/lower/simplify.h"

namespace tessera {
namespace {

// Intermediate buffers up to this size live on the stack; larger ones come
// from the runtime's workspace.
constexpr int64_t kMaxLocalBytes = 256 * 1024;

Status lowering_error(const std::string& what) { return Status(ErrorCode::kLoweringError, what); }

// What lowering knows about one stage.
struct StageInfo {
  Expr body;                                  // with inlined producers substituted
  Buffer buffer;
  std::vector<Expr> region_min;               // per spatial dim; 0 for root stages
  std::vector<int64_t> region_extent;         // per spatial dim
  std::unordered_map<const VarNode*, int64_t> extent;  // every iter var (root, inner, leaf)
  std::vector<int> consumers;
  std::vector<int> attached;                  // stages computed at one of its loops, in order
};

// Symbolic interval [lo, hi] of an expression when some variables range.
struct SymInterval {
  Expr lo, hi;
};
using RelaxMap = std::unordered_map<const VarNode*, SymInterval>;

bool eval_interval(const Expr& e, const RelaxMap& relax, SymInterval* out) {
  if (!uses_any_var(e, [&](const VarNode* v) { return relax.count(v) > 0; })) {
    *out = {e, e};
    return true;
  }
  if (const auto* v = e.as<VarNode>()) {
    *out = relax.at(v);
    return true;
  }
  int64_t c;
  if (is_binary(e.kind())) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    SymInterval x, y;
    switch (e.kind()) {
      case ExprKind::kAdd:
        if (!eval_interval(b->a, relax, &x) || !eval_interval(b->b, relax, &y)) return false;
        *out = {x.lo + y.lo, x.hi + y.hi};
        return true;
      case ExprKind::kSub:
        if (!eval_interval(b->a, relax, &x) || !eval_interval(b->b, relax, &y)) return false;
        *out = {x.lo - y.hi, x.hi - y.lo};
        return true;
      case ExprKind::kMul:
        if (is_const_int(b->b, &c) && eval_interval(b->a, relax, &x)) {
          *out = c >= 0 ? SymInterval{x.lo * c, x.hi * c} : SymInterval{x.hi * c, x.lo * c};
          return true;
        }
        if (is_const_int(b->a, &c) && eval_interval(b->b, relax, &x)) {
          *out = c >= 0 ? SymInterval{x.lo * c, x.hi * c} : SymInterval{x.hi * c, x.lo * c};
          return true;
        }
        return false;
      case ExprKind::kDiv:
        if (is_const_int(b->b, &c) && c > 0 && eval_interval(b->a, relax, &x)) {
          *out = {x.lo / c, x.hi / c};
          return true;
        }
        return false;
      case ExprKind::kMod:
        if (is_const_int(b->b, &c) && c > 0) {
          *out = {make_int(0), make_int(c - 1)};
          return true;
        }
        return false;
      case ExprKind::kMin: case ExprKind::kMax:
        if (!eval_interval(b->a, relax, &x) || !eval_interval(b->b, relax, &y)) return false;
        *out = e.kind() == ExprKind::kMin ? SymInterval{min(x.lo, y.lo), min(x.hi, y.hi)}
                                          : SymInterval{max(x.lo, y.lo), max(x.hi, y.hi)};
        return true;
      default:
        return false;
    }
  }
  if (const auto* s = e.as<SelectNode>()) {
    SymInterval x, y;
    if (!eval_interval(s->true_value, relax, &x) || !eval_interval(s->false_value, relax, &y)) return false;
    *out = {min(x.lo, y.lo), max(x.hi, y.hi)};
    return true;
  }
  return false;
}

// Collects every read of one tensor.
class ReadCollector final : public IRVisitor {
 public:
  explicit ReadCollector(const TensorNode* t) : t_(t) {}
  std::vector<std::vector<Expr>> reads;

 protected:
  using IRVisitor::visit;
  void visit(const TensorReadNode* op) override {
    if (op->tensor.get() == t_) reads.push_back(op->indices);
    IRVisitor::visit(op);
  }

 private:
  const TensorNode* t_;
};

class Lowerer {
 public:
  explicit Lowerer(const State& state) : state_(state), stages_(state.stages()) {}

  Result<PrimFunc> run(const std::string& name);
  /// Inlining, consumers, bound inference and loop extents.
  Status prepare();
  /// Extents of stage s's leaf loops after prepare().
  std::vector<int64_t> leaf_extents(int s) const;

 private:
  Status inline_bodies();
  Status find_consumers();
  Status check_containment(int p);
  void compute_extents(int s);
  Status infer_region(int p);
  Expr root_value_map(int s, VarMap* values, std::vector<Expr>* guards);
  Stmt build_stage(int s);
  Expr lower_reads(const Expr& e);
  Expr flat_index(int s, const std::vector<Expr>& global_indices);
  std::vector<Var> enclosing_vars(int s);
  int stage_of_tensor(const TensorNode* t) const;

  const State& state_;
  const std::vector<Stage>& stages_;
  std::vector<StageInfo> info_;
  std::unordered_map<const TensorNode*, int> tensor_stage_;
  BoundMap outer_bounds_;  // bounds of every leaf var, for simplification
};

int Lowerer::stage_of_tensor(const TensorNode* t) const {
  auto it = tensor_stage_.find(t);
  return it == tensor_stage_.end() ? -1 : it->second;
}

// Substitutes inlined producers into their readers, producers first.
Status Lowerer::inline_bodies() {
  for (size_t i = 0; i < stages_.size(); ++i) {
    const Stage& st = stages_[i];
    if (st.is_placeholder()) continue;
    class Inliner final : public IRMutator {
     public:
      Inliner(const Lowerer& l) : l_(l) {}
      using IRMutator::visit;
      Expr visit(const TensorReadNode* op, const Expr& self) override {
        Expr e = IRMutator::visit(op, self);
        const auto* r = e.as<TensorReadNode>();
        int s = l_.stage_of_tensor(r->tensor.get());
        if (s < 0 || l_.stages_[s].location != ComputeLocation::kInline) return e;
        VarMap vmap;
        for (size_t d = 0; d < r->indices.size(); ++d) vmap[l_.stages_[s].axes[d]->var.node()] = r->indices[d];
        return substitute(l_.info_[s].body, vmap);
      }
      const Lowerer& l_;
    } inliner(*this);
    info_[i].body = inliner(st.body);
  }
  return Status::ok();
}

Status Lowerer::find_consumers() {
  for (size_t p = 0; p < stages_.size(); ++p) {
    if (stages_[p].location == ComputeLocation::kInline) continue;
    for (size_t x = 0; x < stages_.size(); ++x) {
      if (stages_[x].is_placeholder() || stages_[x].location == ComputeLocation::kInline) continue;
      ReadCollector rc(stages_[p].tensor.get());
      rc(info_[x].body);
      if (!rc.reads.empty()) info_[p].consumers.push_back(static_cast<int>(x));
    }
  }
  for (size_t s = 0; s < stages_.size(); ++s)
    if (stages_[s].location == ComputeLocation::kAt) info_[stages_[s].attach_stage].attached.push_back(static_cast<int>(s));
  return Status::ok();
}

// Every reader of an attached stage must run inside the loop it is attached at.
Status Lowerer::check_containment(int p) {
  const Stage& ps = stages_[p];
  const int c = ps.attach_stage;
  const int pos = stages_[c].iter_index(ps.attach_var);
  if (pos < 0) return lowering_error("stage " + ps.name() + " is attached at a loop its target no longer has");
  for (int x : info_[p].consumers) {
    int cur = x;
    bool inside = false;
    while (true) {
      if (cur == c) {
        inside = true;
        break;
      }
      const Stage& cs = stages_[cur];
      if (cs.location != ComputeLocation::kAt) break;
      if (cs.attach_stage == c) {
        inside = stages_[c].iter_index(cs.attach_var) >= pos;
        break;
      }
      cur = cs.attach_stage;
    }
    if (!inside)
      return lowering_error("stage " + ps.name() + " is computed at " + stages_[c].name() + "." +
                            ps.attach_var.name() + " but stage " + stages_[x].name() + " reads it outside that loop");
  }
  return Status::ok();
}

// Extents of every iter var of stage s from its root extents (the region for
// attached stages), passed down the relations.
void Lowerer::compute_extents(int s) {
  const Stage& st = stages_[s];
  auto& ext = info_[s].extent;
  for (size_t d = 0; d < st.axes.size(); ++d) ext[st.axes[d]->var.node()] = info_[s].region_extent[d];
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
std::vector<Var> Lowerer::enclosing_vars(int s) {
  std::vector<Var> vars;
  const Stage& st = stages_[s];
  if (st.location != ComputeLocation::kAt) return vars;
  vars = enclosing_vars(st.attach_stage);
  const Stage& target = stages_[st.attach_stage];
  int pos = target.iter_index(st.attach_var);
  for (int i = 0; i <= pos; ++i) vars.push_back(target.iters[i].var);
  return vars;
}

// Values of the root axes of stage s in terms of its leaf loop variables:
// spatial axes map to global coordinates (region min + local), and `guards`
// receives the conditions under which a point is inside the iteration domain.
Expr Lowerer::root_value_map(int s, VarMap* values, std::vector<Expr>* guards) {
  const Stage& st = stages_[s];
  const auto& ext = info_[s].extent;
  VarMap v;
  for (const Iter& it : st.iters) v[it.var.node()] = it.var;
  for (auto rel = st.relations.rbegin(); rel != st.relations.rend(); ++rel) {
    if (const auto* sp = std::get_if<SplitRelation>(&*rel)) {
      Expr value = v.at(sp->outer.node()) * sp->factor + v.at(sp->inner.node());
      v[sp->parent.node()] = value;
      int64_t parent_extent = ext.at(sp->parent.node());
      if (ext.at(sp->outer.node()) * sp->factor != parent_extent) guards->push_back(value < parent_extent);
    } else {
      const auto& fu = std::get<FuseRelation>(*rel);
      Expr fused = v.at(fu.fused.node());
      int64_t inner_extent = ext.at(fu.inner.node());
      v[fu.outer.node()] = fused / inner_extent;
      v[fu.inner.node()] = fused % inner_extent;
    }
  }
  for (size_t d = 0; d < st.axes.size(); ++d) {
    const VarNode* axis = st.axes[d]->var.node();
    Expr global = info_[s].region_min[d] + v.at(axis);
    (*values)[axis] = global;
    // A region may hang over the tensor's edge; points outside are skipped.
    if (st.location == ComputeLocation::kAt) {
      guards->push_back(global < st.tensor->shape[d]);
      guards->push_back(global >= 0);
    }
  }
  for (const IterVar& r : st.reduce_axes) (*values)[r->var.node()] = v.at(r->var.node());
  return Expr();
}

Status Lowerer::infer_region(int p) {
  const Stage& ps = stages_[p];
  const int ndim = static_cast<int>(ps.axes.size());
  std::unordered_set<const VarNode*> outside;
  for (const Var& v : enclosing_vars(p)) outside.insert(v.node());
  // Every other loop variable ranges over its loop.
  RelaxMap relax;
  for (size_t s = 0; s < stages_.size(); ++s) {
    for (const auto& [var, extent] : info_[s].extent) {
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
  for (int x : info_[p].consumers) {
    VarMap values;
    std::vector<Expr> unused_guards;
    root_value_map(x, &values, &unused_guards);
    ReadCollector rc(ps.tensor.get());
    rc(info_[x].body);
    for (const auto& indices : rc.reads) {
      for (int d = 0; d < ndim; ++d) {
        SymInterval iv;
        if (!eval_interval(substitute(indices[d], values), relax, &iv)) {
          exact = false;
          continue;
        }
        add_bound(&los[d], iv.lo);
        add_bound(&his[d], iv.hi);
      }
    }
  }
  auto& info = info_[p];
  info.region_min.assign(ndim, make_int(0));
  info.region_extent = ps.tensor->shape;
  for (int d = 0; d < ndim; ++d) {
    if (!exact || los[d].empty()) continue;  // whole dimension
    Expr lo = los[d].front(), hi = his[d].front();
    for (size_t b = 1; b < los[d].size(); ++b) lo = min(lo, los[d][b]);
    for (size_t b = 1; b < his[d].size(); ++b) hi = max(hi, his[d][b]);
    Expr min_expr = simplify(lo, outer_bounds_);
    Expr extent_expr = simplify(hi - lo + 1, outer_bounds_);
    int64_t extent;
    if (!is_const_int(extent_expr, &extent)) {
      Interval b = bounds_of(extent_expr, outer_bounds_);
      if (b.hi == Interval::kPosInf) continue;
      extent = b.hi;
    }
    if (extent >= ps.tensor->shape[d] || extent <= 0) continue;
    info.region_min[d] = min_expr;
    info.region_extent[d] = extent;
  }
  return Status::ok();
}

Expr Lowerer::flat_index(int s, const std::vector<Expr>& global) {
  const auto& info = info_[s];
  if (const std::optional<PackedLayout>& layout = stages_[s].layout) {
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

// TensorRead -> Load from the producer's buffer.
Expr Lowerer::lower_reads(const Expr& e) {
  class ReadLowerer final : public IRMutator {
   public:
    explicit ReadLowerer(Lowerer& l) : l_(l) {}
    using IRMutator::visit;
    Expr visit(const TensorReadNode* op, const Expr& self) override {
      Expr e = IRMutator::visit(op, self);
      const auto* r = e.as<TensorReadNode>();
      int s = l_.stage_of_tensor(r->tensor.get());
      return make_load(l_.info_[s].buffer, l_.flat_index(s, r->indices));
    }
    Lowerer& l_;
  } lowerer(*this);
  return lowerer(e);
}

Stmt Lowerer::build_stage(int s) {
  const Stage& st = stages_[s];
  const StageInfo& info = info_[s];
  VarMap values;
  std::vector<Expr> guards;
  root_value_map(s, &values, &guards);
  std::vector<Expr> global;
  for (const IterVar& a : st.axes) global.push_back(values.at(a->var.node()));
  Expr index = flat_index(s, global);

  Stmt update, init;
  const auto* reduce = info.body.as<ReduceNode>();
  if (reduce) {
    Expr source = lower_reads(substitute(reduce->source, values));
    Expr acc = make_load(info.buffer, index);
    update = make_store(info.buffer, reduce_combine(reduce->op, acc, source), index);
    init = make_store(info.buffer, reduce_identity(reduce->op, info.buffer->dtype), index);
  } else {
    update = make_store(info.buffer, lower_reads(substitute(info.body, values)), index);
  }

  const int n = static_cast<int>(st.iters.size());
  std::unordered_map<const VarNode*, int> position;
  for (int i = 0; i < n; ++i) position[st.iters[i].var.node()] = i;
  // A guard goes just inside the innermost loop it depends on (-1: outside all).
  auto depth_of = [&](const Expr& g) {
    int depth = -1;
    for (int i = 0; i < n; ++i)
      if (uses_var(g, st.iters[i].var.node())) depth = i;
    return depth;
  };
  int first_reduce = n;
  for (int i = 0; i < n; ++i)
    if (st.iters[i].kind == IterKind::kReduce) {
      first_reduce = i;
      break;
    }
  std::vector<std::vector<Expr>> guards_at(n + 1);
  std::vector<Expr> init_guards;  // spatial guards on loops below the first reduce loop
  for (const Expr& g : guards) {
    int depth = depth_of(g);
    guards_at[depth + 1].push_back(g);
    bool uses_reduce = false;
    for (const Iter& it : st.iters)
      if (it.kind == IterKind::kReduce && uses_var(g, it.var.node())) uses_reduce = true;
    if (!uses_reduce && depth >= first_reduce) init_guards.push_back(g);
  }
  auto wrap_guards = [](Stmt body, const std::vector<Expr>& conds) {
    for (const Expr& c : conds) body = make_if(c, body);
    return body;
  };
  auto make_loop = [&](int i, Stmt body) {
    const Iter& it = st.iters[i];
    LoopKind kind = LoopKind::kSerial;
    switch (it.annotation) {
      case IterAnnotation::kParallel: kind = LoopKind::kParallel; break;
      case IterAnnotation::kVectorize: kind = LoopKind::kVectorized; break;
      case IterAnnotation::kUnroll: kind = LoopKind::kUnrolled; break;
      case IterAnnotation::kNone: break;
    }
    Stmt loop = make_for(it.var, make_int(0), make_int(info.extent.at(it.var.node())), kind, body);
    for (const auto& [var, step] : st.pragmas)
      if (var.same_as(it.var)) loop = make_attr(AttrKind::kAutoUnrollMaxStep, step, loop);
    return loop;
  };

  Stmt body = wrap_guards(update, guards_at[n]);
  for (int i = n - 1; i >= 0; --i) {
    // `body` runs inside loop i; stages attached at loop i come first.
    for (auto a = info.attached.rbegin(); a != info.attached.rend(); ++a) {
      if (!stages_[*a].attach_var.same_as(st.iters[i].var)) continue;
      Stmt produce = build_stage(*a);
      body = make_allocate(info_[*a].buffer, make_seq({produce, body}));
    }
    body = make_loop(i, body);
    if (reduce && i == first_reduce) {
      // The accumulator is reset before the first reduce loop, over the
      // spatial loops nested below it.
      Stmt init_nest = wrap_guards(init, init_guards);
      for (int j = n - 1; j > i; --j)
        if (st.iters[j].kind == IterKind::kSpatial) init_nest = make_loop(j, init_nest);
      body = make_seq({init_nest, body});
    }
    body = wrap_guards(body, guards_at[i]);
  }
  if (reduce && first_reduce == n) body = make_seq({init, body});  // no reduce loop left
  return body;
}

std::vector<int64_t> Lowerer::leaf_extents(int s) const {
  std::vector<int64_t> out;
  for (const Iter& it : stages_[s].iters) {
    auto found = info_[s].extent.find(it.var.node());
    out.push_back(found == info_[s].extent.end() ? it.extent : found->second);
  }
  return out;
}

Status Lowerer::prepare() {
  const size_t n = stages_.size();
  info_.resize(n);
  for (size_t i = 0; i < n; ++i) tensor_stage_[stages_[i].tensor.get()] = static_cast<int>(i);
  TESSERA_RETURN_IF_ERROR(inline_bodies());
  TESSERA_RETURN_IF_ERROR(find_consumers());
  for (size_t s = 0; s < n; ++s) {
    const Stage& st = stages_[s];
    info_[s].region_min.assign(st.tensor->shape.size(), make_int(0));
    info_[s].region_extent = st.tensor->shape;
  }
  // Bound inference, consumers before producers: an attached stage's region
  // depends on the loops of the stages that read it.
  for (int s = static_cast<int>(n) - 1; s >= 0; --s) {
    const Stage& st = stages_[s];
    if (st.is_placeholder() || st.location == ComputeLocation::kInline) continue;
    if (st.location == ComputeLocation::kAt) {
      TESSERA_RETURN_IF_ERROR(check_containment(s));
      TESSERA_RETURN_IF_ERROR(infer_region(s));
    }
    compute_extents(s);
    for (const Iter& it : st.iters) {
      int64_t extent = info_[s].extent.at(it.var.node());
      outer_bounds_[it.var.node()] = {0, extent - 1};
      if (it.annotation == IterAnnotation::kVectorize && extent > kMaxVectorLanes)
        return lowering_error("loop " + st.name() + "." + it.var.name() + " is vectorized over " +
                              std::to_string(extent) + " lanes (at most " + std::to_string(kMaxVectorLanes) + ")");
      if (it.annotation == IterAnnotation::kUnroll && extent > kMaxUnrollExtent)
        return lowering_error("loop " + st.name() + "." + it.var.name() + " is unrolled " + std::to_string(extent) +
                              " times (at most " + std::to_string(kMaxUnrollExtent) + ")");
    }
  }
  return Status::ok();
}

Result<PrimFunc> Lowerer::run(const std::string& name) {
  const size_t n = stages_.size();
  PrimFunc func;
  func.name = name;
  const ComputeDAG& dag = state_.dag();
  for (const Tensor& arg : dag.args()) {
    auto found = tensor_stage_.find(arg.get());
    int s = found == tensor_stage_.end() ? -1 : found->second;
    if (s < 0) return lowering_error("kernel argument " + arg->name + " has no stage");
    info_[s].buffer = make_buffer(arg->name, arg->dtype, arg->shape, MemoryScope::kGlobal);
    func.params.push_back(info_[s].buffer);
  }
  for (size_t s = 0; s < n; ++s) {
    const Stage& st = stages_[s];
    if (info_[s].buffer.defined() || st.is_placeholder() || st.location == ComputeLocation::kInline) continue;
    int64_t elements = 1;
    for (int64_t e : info_[s].region_extent) elements *= e;
    MemoryScope scope = elements * st.tensor->dtype.storage_bytes() <= kMaxLocalBytes ? MemoryScope::kLocal
                                                                                     : MemoryScope::kWorkspace;
    info_[s].buffer = make_buffer(st.name(), st.tensor->dtype, info_[s].region_extent, scope);
  }

  std::vector<Stmt> roots;
  std::vector<Buffer> root_allocs;
  for (size_t s = 0; s < n; ++s) {
    const Stage& st = stages_[s];
    if (st.is_placeholder() || st.location != ComputeLocation::kRoot) continue;
    roots.push_back(build_stage(static_cast<int>(s)));
    if (info_[s].buffer->scope != MemoryScope::kGlobal) root_allocs.push_back(info_[s].buffer);
  }
  Stmt body = make_seq(std::move(roots));
  for (auto b = root_allocs.rbegin(); b != root_allocs.rend(); ++b) body = make_allocate(*b, body);
  func.body = body;
  return func;
}

}  // namespace

Result<PrimFunc> schedule_to_loops(const State& state, const std::string& name) {
  Lowerer lowerer(state);
  TESSERA_RETURN_IF_ERROR(lowerer.prepare());
  return lowerer.run(name);
}

Result<State> infer_bounds(const State& state) {
  Lowerer lowerer(state);
  TESSERA_RETURN_IF_ERROR(lowerer.prepare());
  State out = state;
  for (size_t s = 0; s < state.stages().size(); ++s) {
    const Stage& st = state.stage(static_cast<int>(s));
    if (st.is_placeholder() || st.location == ComputeLocation::kInline) continue;
    out.set_loop_extents(static_cast<int>(s), lowerer.leaf_extents(static_cast<int>(s)));
  }
  return out;
}

}  // namespace tessera
