#include "compiler/space/sketch/sketch_rules.h"

#include <algorithm>

#include "compiler/ir/functor.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace {

using Kind = SketchStageRef::Kind;

// True when every read of `producer` in `body` is at exactly `axes`
// (out[i, j] = f(producer[i, j])), so a tile of the reader needs the same
// tile of the producer.
bool reads_at_identity(const Expr& body, const Tensor& producer, const std::vector<IterVar>& axes) {
  class Checker final : public IRVisitor {
   public:
    Checker(const TensorNode* t, const std::vector<IterVar>& a) : t_(t), axes_(a) {}
    bool ok = true;

   protected:
    using IRVisitor::visit;
    void visit(const TensorReadNode* op) override {
      if (op->tensor.get() == t_) {
        if (op->indices.size() != axes_.size()) ok = false;
        for (size_t d = 0; ok && d < axes_.size(); ++d) {
          // Broadcasting reads a dimension of one element at 0: the same point.
          const auto* v = op->indices[d].as<VarNode>();
          int64_t c = -1;
          const bool zero = axes_[d]->extent == 1 && is_const_int(op->indices[d], &c) && c == 0;
          if (v != axes_[d]->var.node() && !zero) ok = false;
        }
      }
      IRVisitor::visit(op);
    }

   private:
    const TensorNode* t_;
    const std::vector<IterVar>& axes_;
  } checker(producer.get(), axes);
  checker(body);
  return checker.ok;
}

// Inputs of stage t worth packing into a panel: a placeholder read once, at
// plain axes of t, whose last index is t's vector axis (its innermost axis of
// extent > 1) and which also runs along a reduce axis — matmul's B[k, j],
// conv NHWC's W[ry, rx, rc, k]. The tiled loops walk such an input across
// rows (a stride of a whole row per reduce step); a copy per tile makes the
// panel contiguous.
std::vector<int> packable_inputs(const ComputeDAG& dag, int t) {
  const ComputeOpNode* op = compute_op(dag.tensors()[t]);
  int last = -1;
  for (size_t d = 0; d < op->axes.size(); ++d)
    if (op->axes[d]->extent > 1) last = static_cast<int>(d);
  std::vector<int> out;
  if (last < 0) return out;
  for (const Tensor& in : input_tensors(dag.tensors()[t])) {
    if (!is_placeholder(in)) continue;
    const std::vector<std::vector<Expr>> reads = reads_of(op->body, in.get());
    if (reads.size() != 1 || reads[0].empty()) continue;
    const auto& idx = reads[0];
    bool plain = true, along_reduce = false;
    for (const Expr& e : idx) {
      const auto* v = e.as<VarNode>();
      bool found = false;
      for (const IterVar& a : op->axes) found = found || a->var.node() == v;
      for (const IterVar& r : op->reduce_axes) {
        if (r->var.node() != v) continue;
        found = true;
        along_reduce = along_reduce || r->extent > 1;
      }
      plain = plain && v != nullptr && found;
    }
    if (plain && along_reduce && idx.back().as<VarNode>() == op->axes[last]->var.node())
      out.push_back(dag.index_of(in));
  }
  return out;
}

// A matrix-vector-like stage t: no placeholder input is contiguous along t's
// vector axis (its innermost spatial axis of extent > 1), but one is along a
// reduce axis of at least `min_reduce` elements — dense with one row, W[j, k]
// read at Y[0, j]. Tiling vectorizes j and gathers W across rows; an rfactor
// of k makes the partial sums over contiguous k the vector instead.
bool gemv_like(const ComputeDAG& dag, int t, int64_t min_reduce) {
  const ComputeOpNode* op = compute_op(dag.tensors()[t]);
  int last = -1;
  for (size_t d = 0; d < op->axes.size(); ++d)
    if (op->axes[d]->extent > 1) last = static_cast<int>(d);
  if (last < 0 || op->reduce_axes.empty()) return false;
  class LastIndices final : public IRVisitor {
   public:
    std::vector<const VarNode*> vars;  // the last index of each placeholder read (null: not a variable)

   protected:
    using IRVisitor::visit;
    void visit(const TensorReadNode* op) override {
      if (is_placeholder(op->tensor) && !op->indices.empty()) vars.push_back(op->indices.back().as<VarNode>());
      IRVisitor::visit(op);
    }
  } reads;
  reads(op->body);
  bool along_reduce = false;
  for (const VarNode* v : reads.vars) {
    if (v == op->axes[last]->var.node()) return false;
    for (const IterVar& r : op->reduce_axes)
      along_reduce = along_reduce || (r->var.node() == v && r->extent >= min_reduce);
  }
  return along_reduce;
}

// Rule application state: one partially built sketch.
struct Partial {
  Sketch sketch;
  std::vector<int> plan_of;   // per DAG tensor: its kTensor plan, or -1
  std::vector<bool> inlined;  // per DAG tensor
  std::vector<std::string> notes;
};

class RuleEngine {
 public:
  RuleEngine(const ComputeDAG& dag, const Target& target, const SketchOptions& options)
      : dag_(dag), target_(target), options_(options), readers_(dag.tensors().size()) {
    const auto& ts = dag.tensors();
    for (size_t r = 0; r < ts.size(); ++r)
      if (compute_op(ts[r]))
        for (const Tensor& in : input_tensors(ts[r])) {
          int p = dag.index_of(in);
          if (p >= 0) readers_[p].push_back(static_cast<int>(r));
        }
  }

  std::vector<Sketch> run();

 private:
  // Non-inlined stages that read tensor t, directly or through inlined ones.
  void effective_consumers(const Partial& s, int t, std::vector<int>* out) const;
  // Every read on the way from t to its non-inlined consumers is at identity.
  bool identity_chain(const Partial& s, int t) const;
  // The consumer that a complex stage t may be fused into, or -1.
  int fusible_consumer(const Partial& s, int t) const;
  bool needs_rfactor(int t) const;

  // A tile variable of stage t (its dtype gives the vector lanes).
  int add_tile(Partial& s, int t, const std::string& name, int levels, bool vector_inner, bool reduce = false) const;
  int add_plan(Partial& s, SketchStageRef ref, StageRule rule) const;
  void add_simple(Partial& s, int t, Kind kind, int vector_axis, bool movable) const;
  // Tile variables of a tiled stage: 4 levels per spatial axis, 2 per reduce axis.
  void add_tiling(Partial& s, int plan, int t, const std::string& name) const;

  void apply_inline(Partial& s, int t) const;
  Partial apply_fusion(const Partial& s, int t, int consumer, const std::vector<int>& pack) const;
  Partial apply_cache_write(const Partial& s, int t, const std::vector<int>& pack) const;
  Partial apply_plain_tiling(const Partial& s, int t, const std::vector<int>& pack) const;
  std::string pack_note(const std::vector<int>& pack) const;
  // rfactor of t's longest reduce axis. `gemv`: for a gemv_like complex
  // stage — the final sum is not vectorized and the partial sums may be
  // computed at its loops, so that they stay a small contiguous vector.
  Partial apply_rfactor(const Partial& s, int t, bool gemv = false) const;

  const ComputeDAG& dag_;
  const Target& target_;
  const SketchOptions& options_;
  std::vector<std::vector<int>> readers_;
};

void RuleEngine::effective_consumers(const Partial& s, int t, std::vector<int>* out) const {
  for (int r : readers_[t]) {
    if (s.inlined[r]) {
      effective_consumers(s, r, out);
    } else if (std::find(out->begin(), out->end(), r) == out->end()) {
      out->push_back(r);
    }
  }
}

bool RuleEngine::identity_chain(const Partial& s, int t) const {
  const Tensor& producer = dag_.tensors()[t];
  for (int r : readers_[t]) {
    const Tensor& reader = dag_.tensors()[r];
    const ComputeOpNode* op = compute_op(reader);
    if (reader->shape != producer->shape || !op->reduce_axes.empty()) return false;
    if (!reads_at_identity(op->body, producer, op->axes)) return false;
    if (s.inlined[r] && !identity_chain(s, r)) return false;
  }
  return true;
}

int RuleEngine::fusible_consumer(const Partial& s, int t) const {
  std::vector<int> consumers;
  effective_consumers(s, t, &consumers);
  // An output stays at the root, so it cannot be computed at its consumer.
  if (consumers.size() != 1 || dag_.tensors()[t]->shape.empty() || dag_.is_output(dag_.tensors()[t])) return -1;
  const int c = consumers[0];
  const int plan = s.plan_of[c];
  // A consumer already fused with another producer keeps that one.
  if (plan < 0 || s.sketch.plans[plan].rule != StageRule::kSimple) return -1;
  return identity_chain(s, t) ? c : -1;
}

bool RuleEngine::needs_rfactor(int t) const {
  const ComputeOpNode* op = compute_op(dag_.tensors()[t]);
  if (op->reduce_axes.empty() || op->body.as<ReduceNode>() == nullptr) return false;
  int64_t spatial = 1, reduce = 1;
  for (int64_t e : dag_.tensors()[t]->shape) spatial *= e;
  for (const IterVar& r : op->reduce_axes) reduce *= r->extent;
  // Too few outputs to keep the cores busy, and enough work in each.
  return spatial <= static_cast<int64_t>(options_.rfactor_max_spatial_per_core) * target_.num_cores &&
         reduce >= options_.rfactor_min_reduce;
}

int RuleEngine::add_tile(Partial& s, int t, const std::string& name, int levels, bool vector_inner, bool reduce) const {
  const int lanes = target_.vector_lanes(dag_.tensors()[t]->dtype);
  s.sketch.tiles.push_back(TileVar{name, levels, vector_inner, reduce, lanes});
  return static_cast<int>(s.sketch.tiles.size()) - 1;
}

int RuleEngine::add_plan(Partial& s, SketchStageRef ref, StageRule rule) const {
  StagePlan p;
  p.stage = ref;
  p.rule = rule;
  s.sketch.plans.push_back(p);
  const int index = static_cast<int>(s.sketch.plans.size()) - 1;
  if (ref.kind == Kind::kTensor) s.plan_of[ref.tensor] = index;
  return index;
}

void RuleEngine::add_simple(Partial& s, int t, Kind kind, int vector_axis, bool movable) const {
  const Tensor& tensor = dag_.tensors()[t];
  const ComputeOpNode* op = compute_op(tensor);
  int plan = add_plan(s, {t, kind}, StageRule::kSimple);
  StagePlan& p = s.sketch.plans[plan];
  p.movable = movable;
  p.unrolls = !op->reduce_axes.empty();
  if (vector_axis >= 0) {
    p.vector_axis = vector_axis;
    std::string suffix = kind == Kind::kRfactor ? ".rf" : "";
    std::string axis = kind == Kind::kRfactor && vector_axis == 0 ? "f" : op->axes[vector_axis]->var.name();
    int var = add_tile(s, t, tensor->name + suffix + "." + axis + ".vec", 2, true);
    s.sketch.plans[plan].tiles.push_back(var);
  }
}

void RuleEngine::add_tiling(Partial& s, int plan, int t, const std::string& name) const {
  const ComputeOpNode* op = compute_op(dag_.tensors()[t]);
  std::vector<int> vars;
  // The innermost axis of extent > 1 carries the vector loop.
  int last = -1;
  for (size_t d = 0; d < op->axes.size(); ++d)
    if (op->axes[d]->extent > 1) last = static_cast<int>(d);
  for (size_t d = 0; d < op->axes.size(); ++d)
    vars.push_back(op->axes[d]->extent > 1
                       ? add_tile(s, t, name + "." + op->axes[d]->var.name(), 4, static_cast<int>(d) == last)
                       : -1);
  for (const IterVar& r : op->reduce_axes)
    vars.push_back(r->extent > 1 ? add_tile(s, t, name + "." + r->var.name(), 2, false, /*reduce=*/true) : -1);
  StagePlan& p = s.sketch.plans[plan];
  p.tiles = vars;
  p.unrolls = true;
}

void RuleEngine::apply_inline(Partial& s, int t) const {
  s.inlined[t] = true;
  s.sketch.structure.push_back({SketchStructureStep::Kind::kInline, {t, Kind::kTensor}, 0, -1});
}

std::string RuleEngine::pack_note(const std::vector<int>& pack) const {
  std::string note;
  for (int p : pack) note += ", " + dag_.tensors()[p]->name + " packed per tile";
  return note;
}

Partial RuleEngine::apply_fusion(const Partial& in, int t, int consumer, const std::vector<int>& pack) const {
  Partial s = in;
  int producer = add_plan(s, {t, Kind::kTensor}, StageRule::kFusedProducer);
  add_tiling(s, producer, t, dag_.tensors()[t]->name);
  s.sketch.plans[producer].packed = pack;
  int c = s.plan_of[consumer];
  s.sketch.plans[c].rule = StageRule::kFusedConsumer;
  s.sketch.plans[c].partner = producer;
  s.sketch.plans[c].tiles.clear();
  s.sketch.plans[c].vector_axis = -1;
  s.sketch.plans[c].movable = false;
  s.sketch.plans[producer].partner = c;
  s.notes.push_back(dag_.tensors()[t]->name + " tiled and fused into " + dag_.tensors()[consumer]->name +
                    pack_note(pack));
  return s;
}

Partial RuleEngine::apply_cache_write(const Partial& in, int t, const std::vector<int>& pack) const {
  Partial s = in;
  const std::string name = dag_.tensors()[t]->name;
  s.sketch.structure.push_back({SketchStructureStep::Kind::kCacheWrite, {t, Kind::kTensor}, 0, -1});
  int consumer = add_plan(s, {t, Kind::kTensor}, StageRule::kFusedConsumer);
  int producer = add_plan(s, {t, Kind::kLocal}, StageRule::kFusedProducer);
  add_tiling(s, producer, t, name + ".local");
  s.sketch.plans[producer].packed = pack;
  s.sketch.plans[consumer].partner = producer;
  s.sketch.plans[producer].partner = consumer;
  s.notes.push_back(name + " cache_write, " + name + ".local tiled and fused into " + name + pack_note(pack));
  return s;
}

Partial RuleEngine::apply_plain_tiling(const Partial& in, int t, const std::vector<int>& pack) const {
  Partial s = in;
  int plan = add_plan(s, {t, Kind::kTensor}, StageRule::kTiled);
  add_tiling(s, plan, t, dag_.tensors()[t]->name);
  s.sketch.plans[plan].packed = pack;
  s.notes.push_back(dag_.tensors()[t]->name + " tiled SSRSRS" + pack_note(pack));
  return s;
}

Partial RuleEngine::apply_rfactor(const Partial& in, int t, bool gemv) const {
  Partial s = in;
  const Tensor& tensor = dag_.tensors()[t];
  const ComputeOpNode* op = compute_op(tensor);
  // The longest reduce axis (the innermost on ties) gives the parallel partial sums.
  int axis = 0;
  for (size_t r = 1; r < op->reduce_axes.size(); ++r)
    if (op->reduce_axes[r]->extent >= op->reduce_axes[axis]->extent) axis = static_cast<int>(r);
  int var = add_tile(s, t, tensor->name + "." + op->reduce_axes[axis]->var.name() + ".rf", 2, false);
  s.sketch.structure.push_back({SketchStructureStep::Kind::kRfactor, {t, Kind::kTensor}, axis, var});
  int last = -1;
  for (size_t d = 0; d < op->axes.size(); ++d)
    if (op->axes[d]->extent > 1) last = static_cast<int>(d);
  add_simple(s, t, Kind::kTensor, gemv ? -1 : last, !dag_.is_output(tensor));
  // The partial sums: parallel and vectorized over the factor axis (axis 0).
  // Computed at a loop of the final sum, they cover only its outputs there:
  // rf[f, 0, 0] for one output is contiguous in f.
  add_simple(s, t, Kind::kRfactor, 0, gemv);
  s.sketch.plans.back().unrolls = true;
  s.notes.push_back(tensor->name + (gemv ? " rfactor (matrix-vector: partial sums along the reduction)" : " rfactor"));
  return s;
}

std::vector<Sketch> RuleEngine::run() {
  const auto& ts = dag_.tensors();
  Partial start;
  start.plan_of.assign(ts.size(), -1);
  start.inlined.assign(ts.size(), false);
  std::vector<Partial> partials = {start};
  for (int t = static_cast<int>(ts.size()) - 1; t >= 0; --t) {
    const ComputeOpNode* op = compute_op(ts[t]);
    if (op == nullptr) continue;
    const bool output = dag_.is_output(ts[t]);
    const bool injective = op->pattern == OpPattern::kElementwise || op->pattern == OpPattern::kBroadcast ||
                           op->pattern == OpPattern::kInjective;
    std::vector<Partial> next;
    for (Partial& s : partials) {
      std::vector<Partial> alternatives;
      if (!output && injective && op->reduce_axes.empty()) {
        apply_inline(s, t);
        alternatives.push_back(std::move(s));
      } else if (op->pattern == OpPattern::kComplex && !op->reduce_axes.empty()) {
        // Each structure with and without packing the inputs worth packing.
        const int consumer = fusible_consumer(s, t);
        const std::vector<int> pack = packable_inputs(dag_, t);
        std::vector<std::vector<int>> packs = {{}};
        if (!pack.empty()) packs.push_back(pack);
        for (const auto& p : packs) {
          if (consumer >= 0)
            alternatives.push_back(apply_fusion(s, t, consumer, p));
          else if (!ts[t]->shape.empty())
            alternatives.push_back(apply_cache_write(s, t, p));
        }
        for (const auto& p : packs) alternatives.push_back(apply_plain_tiling(s, t, p));
        if (gemv_like(dag_, t, options_.rfactor_min_reduce)) alternatives.push_back(apply_rfactor(s, t, /*gemv=*/true));
      } else {
        if (needs_rfactor(t)) alternatives.push_back(apply_rfactor(s, t));
        int last = -1;
        for (size_t d = 0; d < op->axes.size(); ++d)
          if (op->axes[d]->extent > 1) last = static_cast<int>(d);
        add_simple(s, t, Kind::kTensor, last, !output);
        alternatives.push_back(std::move(s));
      }
      for (Partial& a : alternatives) {
        // Past the cap only the first (preferred) alternative survives.
        if (&a != &alternatives.front() && static_cast<int>(next.size()) >= options_.max_sketches) break;
        next.push_back(std::move(a));
      }
    }
    partials = std::move(next);
  }
  std::vector<Sketch> out;
  for (Partial& s : partials) {
    std::string d;
    for (auto n = s.notes.rbegin(); n != s.notes.rend(); ++n) d += (d.empty() ? "" : "; ") + *n;
    s.sketch.description = d.empty() ? "loops kept" : d;
    out.push_back(std::move(s.sketch));
  }
  return out;
}

}  // namespace

Result<std::vector<Sketch>> generate_sketches(const ComputeDAG& dag, const Target& target,
                                              const SketchOptions& options) {
  bool any_compute = false;
  for (const Tensor& t : dag.tensors()) any_compute = any_compute || compute_op(t) != nullptr;
  if (!any_compute) return Status(ErrorCode::kInvalidArgument, "sketch generation: the DAG has no compute stage");
  return RuleEngine(dag, target, options).run();
}

}  // namespace tessera
