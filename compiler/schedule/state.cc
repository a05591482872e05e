#include "compiler/schedule/state.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace {

constexpr int kMaxVectorLanes = 64;
constexpr int64_t kMaxUnrollExtent = 1024;

Status step_error(const Step& s, const std::string& why) {
  return Status(ErrorCode::kInvalidSchedule, s.to_string() + ": " + why);
}

// Replaces reads of one tensor by reads of another (same indices).
class TensorReplacer final : public IRMutator {
 public:
  TensorReplacer(const TensorNode* from, Tensor to) : from_(from), to_(std::move(to)) {}

 protected:
  using IRMutator::visit;
  Expr visit(const TensorReadNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    const auto* r = e.as<TensorReadNode>();
    if (r->tensor.get() != from_) return e;
    return make_tensor_read(to_, r->indices);
  }

 private:
  const TensorNode* from_;
  Tensor to_;
};

class ReadsTensor final : public IRVisitor {
 public:
  explicit ReadsTensor(const TensorNode* t) : t_(t) {}
  bool found = false;

 protected:
  using IRVisitor::visit;
  void visit(const TensorReadNode* op) override {
    found = found || op->tensor.get() == t_;
    IRVisitor::visit(op);
  }

 private:
  const TensorNode* t_;
};

bool body_reads(const Stage& st, const Tensor& t) {
  if (st.is_placeholder()) return false;
  ReadsTensor r(t.get());
  r(st.body);
  return r.found;
}

// A new tensor (with a compute op, so compute_op() stays meaningful).
Tensor make_stage_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype,
                         const std::vector<IterVar>& axes, const std::vector<IterVar>& reduce_axes, const Expr& body,
                         OpPattern pattern) {
  Ref<const Object> op(new ComputeOpNode(name, axes, reduce_axes, body, pattern));
  return make_ref<const TensorNode>(name, std::move(shape), dtype, op);
}

std::vector<IterVar> fresh_axes(const std::vector<IterVar>& axes, VarMap* vmap) {
  std::vector<IterVar> out;
  for (const IterVar& a : axes) {
    out.push_back(make_iter_var(a->var.name(), a->extent, a->kind));
    if (vmap) (*vmap)[a->var.node()] = out.back()->var;
  }
  return out;
}

std::vector<Iter> iters_of(const std::vector<IterVar>& axes, const std::vector<IterVar>& reduce_axes) {
  std::vector<Iter> iters;
  for (const IterVar& a : axes) iters.push_back({a->var, a->extent, IterKind::kSpatial, IterAnnotation::kNone});
  for (const IterVar& a : reduce_axes) iters.push_back({a->var, a->extent, IterKind::kReduce, IterAnnotation::kNone});
  return iters;
}

}  // namespace

int Stage::iter_index(const Var& var) const {
  for (size_t i = 0; i < iters.size(); ++i)
    if (iters[i].var.same_as(var)) return static_cast<int>(i);
  return -1;
}

int Stage::iter_index(const std::string& name) const {
  for (size_t i = 0; i < iters.size(); ++i)
    if (iters[i].var.name() == name) return static_cast<int>(i);
  return -1;
}

State::State(std::shared_ptr<const ComputeDAG> dag) : dag_(std::move(dag)) {
  for (const Tensor& t : dag_->tensors()) {
    Stage st;
    st.tensor = t;
    if (const ComputeOpNode* op = compute_op(t)) {
      st.axes = op->axes;
      st.reduce_axes = op->reduce_axes;
      st.body = op->body;
      st.pattern = op->pattern;
      st.iters = iters_of(st.axes, st.reduce_axes);
    }
    stages_.push_back(std::move(st));
  }
}

int State::stage_index(const Tensor& t) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].tensor == t) return static_cast<int>(i);
  return -1;
}

int State::stage_index(const std::string& name) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].name() == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> consumers_of(const State& state, int i) {
  std::vector<int> out;
  const Tensor& t = state.stage(i).tensor;
  for (size_t j = 0; j < state.stages().size(); ++j)
    if (body_reads(state.stage(static_cast<int>(j)), t)) out.push_back(static_cast<int>(j));
  return out;
}

Status State::check_stage(const Step& s, int stage, bool allow_placeholder) const {
  if (stage < 0 || stage >= static_cast<int>(stages_.size()))
    return step_error(s,
                      "no stage " + std::to_string(stage) + " (the state has " + std::to_string(stages_.size()) + ")");
  if (!allow_placeholder && stages_[stage].is_placeholder())
    return step_error(s, "stage " + stages_[stage].name() + " is an input and has no loops");
  if (stages_[stage].location == ComputeLocation::kInline)
    return step_error(s, "stage " + stages_[stage].name() + " is inlined");
  return Status::ok();
}

Status State::check_iter(const Step& s, int stage, int iter) const {
  const Stage& st = stages_[stage];
  if (iter < 0 || iter >= static_cast<int>(st.iters.size()))
    return step_error(s, "stage " + st.name() + " has no loop " + std::to_string(iter) + " (it has " +
                             std::to_string(st.iters.size()) + ")");
  return Status::ok();
}

bool State::has_attached(int stage, const Var& var) const {
  for (const Stage& other : stages_)
    if (other.location == ComputeLocation::kAt && other.attach_stage == stage && other.attach_var.same_as(var))
      return true;
  return false;
}

bool State::runs_inside(int stage, int target, int loop) const {
  int current = stage;
  while (current >= 0) {
    const Stage& st = stages_[current];
    if (st.location != ComputeLocation::kAt) return false;
    if (st.attach_stage == target) return stages_[target].iter_index(st.attach_var) >= loop;
    current = st.attach_stage;
  }
  return false;
}

bool State::is_untransformed(int stage) const {
  const Stage& st = stages_[stage];
  if (!st.relations.empty() || !st.pragmas.empty()) return false;
  for (const Iter& it : st.iters)
    if (it.annotation != IterAnnotation::kNone) return false;
  std::vector<Iter> initial = iters_of(st.axes, st.reduce_axes);
  if (initial.size() != st.iters.size()) return false;
  for (size_t i = 0; i < initial.size(); ++i)
    if (!initial[i].var.same_as(st.iters[i].var)) return false;
  for (int i = 0; i < static_cast<int>(st.iters.size()); ++i)
    if (has_attached(stage, st.iters[i].var)) return false;
  return true;
}

Status State::apply(const Step& step) {
  Status st = std::visit(
      [&](const auto& s) -> Status {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, SplitStep>)
          return apply_split(step, s);
        else if constexpr (std::is_same_v<T, FuseStep>)
          return apply_fuse(step, s);
        else if constexpr (std::is_same_v<T, ReorderStep>)
          return apply_reorder(step, s);
        else if constexpr (std::is_same_v<T, AnnotateStep>)
          return apply_annotate(step, s);
        else if constexpr (std::is_same_v<T, ComputeAtStep>)
          return apply_compute_at(step, s);
        else if constexpr (std::is_same_v<T, ComputeInlineStep>)
          return apply_compute_inline(step, s);
        else if constexpr (std::is_same_v<T, ComputeRootStep>)
          return apply_compute_root(step, s);
        else if constexpr (std::is_same_v<T, CacheReadStep>)
          return apply_cache_read(step, s);
        else if constexpr (std::is_same_v<T, CacheWriteStep>)
          return apply_cache_write(step, s);
        else if constexpr (std::is_same_v<T, RfactorStep>)
          return apply_rfactor(step, s);
        else if constexpr (std::is_same_v<T, PragmaStep>)
          return apply_pragma(step, s);
        else if constexpr (std::is_same_v<T, PackLayoutStep>)
          return apply_pack_layout(step, s);
        else if constexpr (std::is_same_v<T, PadTileStep>)
          return apply_pad_tile(step, s);
        else
          return apply_storage_order(step, s);
      },
      step.variant());
  if (st.is_ok()) steps_.push_back(canonical_step(step));
  return st;
}

Status State::apply_split(const Step& step, const SplitStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  TESSERA_RETURN_IF_ERROR(check_iter(step, s.stage, s.iter));
  Stage& st = stages_[s.stage];
  const Iter parent = st.iters[s.iter];
  if (has_attached(s.stage, parent.var))
    return step_error(step, "loop " + parent.var.name() + " has stages computed at it");
  std::vector<int64_t> factors = s.factors;
  if (s.nparts != 0) {
    if (s.nparts < 0) return step_error(step, "nparts must be positive");
    if (!factors.empty()) return step_error(step, "give factors or nparts, not both");
    factors = {(parent.extent + s.nparts - 1) / s.nparts};
  }
  if (factors.empty()) return step_error(step, "no factors");
  for (int64_t f : factors)
    if (f <= 0) return step_error(step, "factor " + std::to_string(f) + " must be positive");

  // A chain of binary splits: parent -> (p.0, rest) -> (p.1, rest') -> ... -> p.n.
  std::vector<Iter> produced;
  Var current = parent.var;
  int64_t current_extent = parent.extent;
  for (size_t level = 0; level < factors.size(); ++level) {
    int64_t inner_product = 1;
    for (size_t j = level; j < factors.size(); ++j) inner_product *= factors[j];
    Var outer(parent.var.name() + "." + std::to_string(level));
    bool last = level + 1 == factors.size();
    Var inner(last ? parent.var.name() + "." + std::to_string(level + 1)
                   : parent.var.name() + ".r" + std::to_string(level));
    int64_t outer_extent = (current_extent + inner_product - 1) / inner_product;
    st.relations.push_back(SplitRelation{current, outer, inner, inner_product});
    produced.push_back({outer, outer_extent, parent.kind, IterAnnotation::kNone});
    current = inner;
    current_extent = inner_product;
    if (last) produced.push_back({inner, inner_product, parent.kind, IterAnnotation::kNone});
  }
  st.iters.erase(st.iters.begin() + s.iter);
  st.iters.insert(st.iters.begin() + s.iter, produced.begin(), produced.end());
  return Status::ok();
}

Status State::apply_fuse(const Step& step, const FuseStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  Stage& st = stages_[s.stage];
  if (s.iters.size() < 2) return step_error(step, "fuse needs at least two loops");
  for (size_t i = 0; i < s.iters.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(check_iter(step, s.stage, s.iters[i]));
    if (i > 0 && s.iters[i] != s.iters[i - 1] + 1) return step_error(step, "loops to fuse must be consecutive");
    const Iter& it = st.iters[s.iters[i]];
    if (it.kind != st.iters[s.iters[0]].kind) return step_error(step, "cannot fuse spatial and reduce loops");
    if (has_attached(s.stage, it.var)) return step_error(step, "loop " + it.var.name() + " has stages computed at it");
  }
  Iter fused = st.iters[s.iters[0]];
  fused.annotation = IterAnnotation::kNone;
  for (size_t i = 1; i < s.iters.size(); ++i) {
    const Iter& inner = st.iters[s.iters[i]];
    Var v(fused.var.name() + "@" + inner.var.name());
    st.relations.push_back(FuseRelation{fused.var, inner.var, v, inner.extent});
    fused.var = v;
    fused.extent *= inner.extent;
  }
  st.iters.erase(st.iters.begin() + s.iters.front(), st.iters.begin() + s.iters.back() + 1);
  st.iters.insert(st.iters.begin() + s.iters.front(), fused);
  return Status::ok();
}

Status State::apply_reorder(const Step& step, const ReorderStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  Stage& st = stages_[s.stage];
  size_t n = st.iters.size();
  if (s.order.size() != n)
    return step_error(step, "order lists " + std::to_string(s.order.size()) + " loops but stage " + st.name() +
                                " has " + std::to_string(n) + "; a reorder may not drop or add loops");
  std::vector<bool> seen(n, false);
  for (int i : s.order) {
    if (i < 0 || i >= static_cast<int>(n)) return step_error(step, "no loop " + std::to_string(i));
    if (seen[i]) return step_error(step, "loop " + std::to_string(i) + " appears twice");
    seen[i] = true;
  }
  std::vector<Iter> reordered;
  for (int i : s.order) reordered.push_back(st.iters[i]);
  st.iters = std::move(reordered);
  return Status::ok();
}

Status State::apply_annotate(const Step& step, const AnnotateStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  TESSERA_RETURN_IF_ERROR(check_iter(step, s.stage, s.iter));
  Iter& it = stages_[s.stage].iters[s.iter];
  switch (s.annotation) {
    case IterAnnotation::kParallel:
      if (it.kind == IterKind::kReduce) return step_error(step, "a reduce loop cannot run in parallel");
      break;
    case IterAnnotation::kVectorize:
      // An attached stage's extents are known after bound inference; lowering
      // checks those.
      if (it.extent > kMaxVectorLanes && stages_[s.stage].location != ComputeLocation::kAt)
        return step_error(step, "vectorized extent " + std::to_string(it.extent) + " exceeds " +
                                    std::to_string(kMaxVectorLanes) + " lanes");
      break;
    case IterAnnotation::kUnroll:
      if (it.extent > kMaxUnrollExtent)
        return step_error(
            step, "unrolled extent " + std::to_string(it.extent) + " exceeds " + std::to_string(kMaxUnrollExtent));
      break;
    case IterAnnotation::kTensorize:
    case IterAnnotation::kNone: break;
  }
  it.annotation = s.annotation;
  return Status::ok();
}

Status State::apply_compute_at(const Step& step, const ComputeAtStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.target_stage));
  TESSERA_RETURN_IF_ERROR(check_iter(step, s.target_stage, s.target_iter));
  if (s.stage == s.target_stage) return step_error(step, "a stage cannot be computed at itself");
  const Stage& st = stages_[s.stage];
  if (dag_->is_output(st.tensor)) return step_error(step, "output " + st.name() + " must stay at the root");
  // The target must read the stage, directly or through inlined stages.
  std::vector<int> frontier = consumers_of(*this, s.stage);
  bool reads = false;
  std::unordered_set<int> visited;
  while (!frontier.empty() && !reads) {
    int c = frontier.back();
    frontier.pop_back();
    if (!visited.insert(c).second) continue;
    if (c == s.target_stage) reads = true;
    if (stages_[c].location == ComputeLocation::kInline)
      for (int cc : consumers_of(*this, c)) frontier.push_back(cc);
  }
  if (!reads)
    return step_error(step, "stage " + stages_[s.target_stage].name() + " does not read " + st.name() +
                                ", so its loops do not enclose " + st.name() + "'s uses");
  // Every other reader must already run inside the chosen loop, or the
  // stage's region would not cover its reads.
  // Readers through inlined stages count as readers.
  std::vector<int> readers, pending = consumers_of(*this, s.stage);
  std::unordered_set<int> expanded;
  while (!pending.empty()) {
    int r = pending.back();
    pending.pop_back();
    if (!expanded.insert(r).second) continue;
    if (stages_[r].location != ComputeLocation::kInline) {
      readers.push_back(r);
      continue;
    }
    for (int rr : consumers_of(*this, r)) pending.push_back(rr);
  }
  for (int reader : readers) {
    if (reader == s.target_stage) continue;
    if (!runs_inside(reader, s.target_stage, s.target_iter))
      return step_error(step, "stage " + stages_[reader].name() + " also reads " + st.name() + " outside loop " +
                                  stages_[s.target_stage].iters[s.target_iter].var.name() + " of " +
                                  stages_[s.target_stage].name());
  }
  Stage& mut = stages_[s.stage];
  mut.location = ComputeLocation::kAt;
  mut.attach_stage = s.target_stage;
  mut.attach_var = stages_[s.target_stage].iters[s.target_iter].var;
  return Status::ok();
}

Status State::apply_compute_inline(const Step& step, const ComputeInlineStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  const Stage& st = stages_[s.stage];
  if (!st.reduce_axes.empty()) return step_error(step, "a reduction cannot be inlined");
  if (dag_->is_output(st.tensor)) return step_error(step, "output " + st.name() + " cannot be inlined");
  for (const Stage& other : stages_)
    if (other.location == ComputeLocation::kAt && other.attach_stage == s.stage)
      return step_error(step, "stages are computed at " + st.name() + "'s loops");
  stages_[s.stage].location = ComputeLocation::kInline;
  stages_[s.stage].pad_tile = false;
  stages_[s.stage].storage_order.clear();
  return Status::ok();
}

Status State::apply_compute_root(const Step& step, const ComputeRootStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  // At the root the stage would read a producer computed inside another
  // stage's loop outside that loop (a cache_read copy of an attached stage).
  for (const Stage& p : stages_)
    if (p.location == ComputeLocation::kAt && p.attach_stage != s.stage && body_reads(stages_[s.stage], p.tensor))
      return step_error(step, "stage " + stages_[s.stage].name() + " reads " + p.name() + ", which is computed at " +
                                  stages_[p.attach_stage].name() + "." + p.attach_var.name() + "; move " + p.name() +
                                  " first");
  Stage& st = stages_[s.stage];
  st.location = ComputeLocation::kRoot;
  st.attach_stage = -1;
  st.attach_var = Var();
  st.pad_tile = false;  // a root stage covers its tensor exactly
  st.storage_order.clear();
  return Status::ok();
}

void State::reindex_after_insert(int position) {
  for (Stage& st : stages_)
    if (st.attach_stage >= position) ++st.attach_stage;
}

Status State::apply_cache_read(const Step& step, const CacheReadStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage, /*allow_placeholder=*/true));
  if (s.readers.empty()) return step_error(step, "no reader stages");
  const Tensor source = stages_[s.stage].tensor;
  for (int r : s.readers) {
    if (r < 0 || r >= static_cast<int>(stages_.size())) return step_error(step, "no stage " + std::to_string(r));
    if (!body_reads(stages_[r], source))
      return step_error(step, "stage " + stages_[r].name() + " does not read " + source->name);
  }
  Stage cache;
  VarMap unused;
  std::vector<IterVar> axes;
  for (size_t d = 0; d < source->shape.size(); ++d)
    axes.push_back(make_iter_var("ax" + std::to_string(d), source->shape[d], IterKind::kSpatial));
  std::vector<Expr> idx;
  for (const IterVar& a : axes) idx.push_back(a->var);
  cache.body = read(source, idx);
  cache.axes = axes;
  cache.pattern = OpPattern::kInjective;
  cache.tensor =
      make_stage_tensor(source->name + ".local", source->shape, source->dtype, axes, {}, cache.body, cache.pattern);
  cache.iters = iters_of(axes, {});
  cache.scope = MemoryScope::kLocal;
  TensorReplacer replace(source.get(), cache.tensor);
  for (int r : s.readers) stages_[r].body = replace(stages_[r].body);
  int position = s.stage + 1;
  reindex_after_insert(position);
  // A source computed at a reader's loop keeps its place; the copy is made
  // at the same loop (indices as after the insertion), so it still covers
  // what the reader needs.
  const Stage& src = stages_[s.stage];
  if (src.location == ComputeLocation::kAt) {
    cache.location = ComputeLocation::kAt;
    cache.attach_stage = src.attach_stage;
    cache.attach_var = src.attach_var;
  }
  stages_.insert(stages_.begin() + position, std::move(cache));
  return Status::ok();
}

Status State::apply_cache_write(const Step& step, const CacheWriteStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  if (!is_untransformed(s.stage))
    return step_error(step, "cache_write must come before any loop transform of " + stages_[s.stage].name());
  Stage& st = stages_[s.stage];
  Stage local;
  local.axes = st.axes;
  local.reduce_axes = st.reduce_axes;
  local.body = st.body;
  local.pattern = st.pattern;
  local.iters = st.iters;
  local.scope = MemoryScope::kLocal;
  local.tensor = make_stage_tensor(st.name() + ".local", st.tensor->shape, st.tensor->dtype, local.axes,
                                   local.reduce_axes, local.body, local.pattern);
  std::vector<IterVar> axes = fresh_axes(st.axes, nullptr);
  std::vector<Expr> idx;
  for (const IterVar& a : axes) idx.push_back(a->var);
  st.axes = axes;
  st.reduce_axes.clear();
  st.body = read(local.tensor, idx);
  st.pattern = OpPattern::kElementwise;
  st.iters = iters_of(st.axes, {});
  int position = s.stage;
  reindex_after_insert(position);
  stages_.insert(stages_.begin() + position, std::move(local));
  return Status::ok();
}

Status State::apply_rfactor(const Step& step, const RfactorStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  Stage& st = stages_[s.stage];
  const auto* reduce = st.body.as<ReduceNode>();
  if (!reduce) return step_error(step, "stage " + st.name() + " is not a reduction");
  if (s.axis < 0 || s.axis >= static_cast<int>(st.reduce_axes.size()))
    return step_error(step, "stage " + st.name() + " has no reduce axis " + std::to_string(s.axis));
  if (s.factor <= 0) return step_error(step, "factor must be positive");
  if (!is_untransformed(s.stage))
    return step_error(step, "rfactor must come before any loop transform of " + st.name());
  const IterVar k = st.reduce_axes[s.axis];
  const int64_t f = s.factor, outer_extent = (k->extent + f - 1) / f;
  // rf[kf, axes...] = reduce over (ko, other reduce axes) of source[k <- ko*f + kf].
  IterVar kf = make_iter_var(k->var.name() + ".f", f, IterKind::kSpatial);
  IterVar ko = make_iter_var(k->var.name() + ".o", outer_extent, IterKind::kReduce);
  VarMap vmap;
  std::vector<IterVar> rf_axes = {kf};
  for (const IterVar& a : fresh_axes(st.axes, &vmap)) rf_axes.push_back(a);
  Expr k_value = ko->var * f + kf->var;
  vmap[k->var.node()] = k_value;
  Expr source = substitute(reduce->source, vmap);
  if (k->extent % f != 0) source = select(k_value < k->extent, source, reduce_identity(reduce->op, source.dtype()));
  std::vector<IterVar> rf_reduce = {ko};
  for (size_t i = 0; i < st.reduce_axes.size(); ++i)
    if (static_cast<int>(i) != s.axis) rf_reduce.push_back(st.reduce_axes[i]);
  Stage rf;
  rf.axes = rf_axes;
  rf.reduce_axes = rf_reduce;
  rf.body = make_reduce(reduce->op, source, rf_reduce);
  rf.pattern = st.pattern;
  rf.iters = iters_of(rf.axes, rf.reduce_axes);
  std::vector<int64_t> rf_shape = {f};
  rf_shape.insert(rf_shape.end(), st.tensor->shape.begin(), st.tensor->shape.end());
  rf.tensor =
      make_stage_tensor(st.name() + ".rf", rf_shape, st.tensor->dtype, rf.axes, rf.reduce_axes, rf.body, rf.pattern);
  // st[axes...] = reduce over kf' of rf[kf', axes...].
  IterVar kr = make_iter_var(k->var.name() + ".f", f, IterKind::kReduce);
  std::vector<Expr> idx = {kr->var};
  for (const IterVar& a : st.axes) idx.push_back(a->var);
  st.reduce_axes = {kr};
  st.body = make_reduce(reduce->op, read(rf.tensor, idx), {kr});
  st.iters = iters_of(st.axes, st.reduce_axes);
  int position = s.stage;
  reindex_after_insert(position);
  stages_.insert(stages_.begin() + position, std::move(rf));
  return Status::ok();
}

Status State::apply_pragma(const Step& step, const PragmaStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  TESSERA_RETURN_IF_ERROR(check_iter(step, s.stage, s.iter));
  if (s.auto_unroll_max_step < 0) return step_error(step, "auto_unroll_max_step must be >= 0");
  Stage& st = stages_[s.stage];
  const Var& v = st.iters[s.iter].var;
  for (auto& p : st.pragmas) {
    if (p.first.same_as(v)) {
      p.second = s.auto_unroll_max_step;
      return Status::ok();
    }
  }
  st.pragmas.emplace_back(v, s.auto_unroll_max_step);
  return Status::ok();
}

Status State::apply_pack_layout(const Step& step, const PackLayoutStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage, /*allow_placeholder=*/true));
  Stage& st = stages_[s.stage];
  if (!st.is_placeholder()) return step_error(step, "stage " + st.name() + " is computed; only inputs are packed");
  const std::vector<int64_t>& shape = st.tensor->shape;
  if (s.axis < 0 || s.axis >= static_cast<int>(shape.size()))
    return step_error(step, "input " + st.name() + " has no dimension " + std::to_string(s.axis));
  const int64_t extent = shape[static_cast<size_t>(s.axis)];
  // A factor that does not divide pads the last block (layout.h); at most
  // half of the stored dimension may be padding.
  if (s.factor < 2 || s.factor > 2 * extent)
    return step_error(step, "factor " + std::to_string(s.factor) + " must be at least 2 and at most twice dimension " +
                                std::to_string(s.axis) + " of " + st.name() + " (" + std::to_string(extent) + ")");
  if (s.inner < 0 || s.axis >= static_cast<int>(shape.size()) - s.inner)
    return step_error(step, "inner " + std::to_string(s.inner) + " must leave dimension " + std::to_string(s.axis) +
                                " of " + st.name() + " outside the last dimensions it keeps innermost");
  if (st.layout) return step_error(step, "input " + st.name() + " is packed already");
  st.layout = PackedLayout{s.axis, s.factor, s.inner};
  return Status::ok();
}

Status State::apply_pad_tile(const Step& step, const PadTileStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  Stage& st = stages_[s.stage];
  if (st.location != ComputeLocation::kAt)
    return step_error(step, "stage " + st.name() + " is not computed at another stage's loop; only a tile is padded");
  st.pad_tile = true;
  return Status::ok();
}

Status State::apply_storage_order(const Step& step, const StorageOrderStep& s) {
  TESSERA_RETURN_IF_ERROR(check_stage(step, s.stage));
  Stage& st = stages_[s.stage];
  if (st.location != ComputeLocation::kAt)
    return step_error(
        step, "stage " + st.name() + " is not computed at another stage's loop; only a local copy is reordered");
  std::vector<int> sorted = s.order;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = sorted.size() == st.tensor->shape.size();
  for (size_t d = 0; permutation && d < sorted.size(); ++d) permutation = sorted[d] == static_cast<int>(d);
  if (!permutation)
    return step_error(step, "the order is not a permutation of the " + std::to_string(st.tensor->shape.size()) +
                                " dimensions of " + st.name());
  st.storage_order = s.order;
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Conveniences

Status State::split(int stage, int iter, std::vector<int64_t> factors) {
  return apply(SplitStep{.stage = stage, .iter = iter, .factors = std::move(factors)});
}
Status State::split_nparts(int stage, int iter, int64_t nparts) {
  return apply(SplitStep{.stage = stage, .iter = iter, .factors = {}, .nparts = nparts});
}
Status State::fuse(int stage, std::vector<int> iters) {
  return apply(FuseStep{stage, std::move(iters)});
}
Status State::reorder(int stage, std::vector<int> order) {
  return apply(ReorderStep{stage, std::move(order)});
}
Status State::annotate(int stage, int iter, IterAnnotation annotation) {
  return apply(AnnotateStep{stage, iter, annotation});
}
Status State::compute_at(int stage, int target_stage, int target_iter) {
  return apply(ComputeAtStep{stage, target_stage, target_iter});
}
Status State::compute_inline(int stage) {
  return apply(ComputeInlineStep{stage});
}
Status State::compute_root(int stage) {
  return apply(ComputeRootStep{stage});
}
Status State::cache_read(int stage, std::vector<int> readers) {
  return apply(CacheReadStep{stage, std::move(readers)});
}
Status State::cache_write(int stage) {
  return apply(CacheWriteStep{stage});
}
Status State::rfactor(int stage, int reduce_axis, int64_t factor) {
  return apply(RfactorStep{stage, reduce_axis, factor});
}
Status State::pragma_auto_unroll(int stage, int iter, int64_t max_step) {
  return apply(PragmaStep{stage, iter, max_step});
}

Status State::pack_layout(int stage, int axis, int64_t factor, int inner) {
  return apply(PackLayoutStep{stage, axis, factor, inner});
}
Status State::pad_tile(int stage) {
  return apply(PadTileStep{stage});
}
Status State::storage_order(int stage, std::vector<int> order) {
  return apply(StorageOrderStep{stage, std::move(order)});
}

Status State::tile(int stage, std::vector<int> iters, std::vector<std::vector<int64_t>> factors) {
  if (iters.size() != factors.size()) return Status(ErrorCode::kInvalidSchedule, "tile: one factor list per loop");
  if (stage < 0 || stage >= static_cast<int>(stages_.size()))
    return Status(ErrorCode::kInvalidSchedule, "tile: no stage " + std::to_string(stage));
  // Split from the last loop so earlier indices stay valid, then gather the
  // pieces level by level.
  std::vector<Var> vars;
  for (int i : iters) {
    if (i < 0 || i >= static_cast<int>(stages_[stage].iters.size()))
      return Status(ErrorCode::kInvalidSchedule, "tile: no loop " + std::to_string(i));
    vars.push_back(stages_[stage].iters[i].var);
  }
  std::vector<std::vector<Var>> pieces(iters.size());
  for (size_t n = 0; n < iters.size(); ++n) {
    int at = stages_[stage].iter_index(vars[n]);
    TESSERA_RETURN_IF_ERROR(split(stage, at, factors[n]));
    for (size_t l = 0; l <= factors[n].size(); ++l) pieces[n].push_back(stages_[stage].iters[at + l].var);
  }
  // New order: untouched loops before the first tiled one keep their place;
  // the tiled pieces follow level by level; the rest keep their order.
  std::unordered_set<const VarNode*> tiled;
  for (const auto& p : pieces)
    for (const Var& v : p) tiled.insert(v.node());
  const Stage& st = stages_[stage];
  std::vector<int> order;
  size_t levels = 0;
  for (const auto& p : pieces) levels = std::max(levels, p.size());
  bool placed = false;
  for (size_t i = 0; i < st.iters.size(); ++i) {
    if (!tiled.count(st.iters[i].var.node())) {
      order.push_back(static_cast<int>(i));
      continue;
    }
    if (placed) continue;
    placed = true;
    for (size_t l = 0; l < levels; ++l)
      for (const auto& p : pieces)
        if (l < p.size()) order.push_back(st.iter_index(p[l]));
  }
  return reorder(stage, order);
}

void State::set_loop_extents(int stage, const std::vector<int64_t>& extents) {
  Stage& st = stages_[stage];
  for (size_t i = 0; i < st.iters.size() && i < extents.size(); ++i) st.iters[i].extent = extents[i];
}

std::string State::to_string() const {
  std::string out;
  for (size_t i = 0; i < stages_.size(); ++i) {
    const Stage& st = stages_[i];
    out += "stage " + std::to_string(i) + " " + st.name();
    if (st.is_placeholder()) {
      out += ": input";
      if (st.layout) {
        out += ", stored as [";
        for (int64_t d : packed_shape(st.tensor->shape, *st.layout))
          out += (out.back() == '[' ? "" : ", ") + std::to_string(d);
        out += "]";
      }
      out += "\n";
      continue;
    }
    switch (st.location) {
      case ComputeLocation::kRoot: out += " (root)"; break;
      case ComputeLocation::kInline: out += " (inlined)"; break;
      case ComputeLocation::kAt:
        out += " (at " + stages_[st.attach_stage].name() + "." + st.attach_var.name() +
               (st.pad_tile ? ", padded" : "") + ")";
        break;
    }
    out += ":";
    for (const Iter& it : st.iters) {
      out += " " + it.var.name() + "[" + std::to_string(it.extent) + "]";
      if (it.kind == IterKind::kReduce) out += "r";
      if (it.annotation != IterAnnotation::kNone) out += std::string("@") + annotation_name(it.annotation);
    }
    out += "\n";
  }
  return out;
}

Result<State> replay(std::shared_ptr<const ComputeDAG> dag, const std::vector<Step>& steps) {
  State state(std::move(dag));
  for (size_t i = 0; i < steps.size(); ++i) {
    Status st = state.apply(steps[i]);
    if (!st.is_ok()) return st.with_context("step " + std::to_string(i));
  }
  return state;
}

}  // namespace tessera
