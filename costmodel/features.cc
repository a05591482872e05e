#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

#include "compiler/lower/lower.h"
#include "costmodel/extractor.h"

namespace tessera::costmodel {
namespace detail {
namespace {

struct Spec {
  const char* name;
  Agg agg;
  Scale scale;
  const char* doc;
};
constexpr Spec kProgramSpecs[] = {
#define TESSERA_X(name, agg, scale, doc) {#name, Agg::agg, Scale::scale, doc},
    TESSERA_PROGRAM_FEATURES(TESSERA_X)
#undef TESSERA_X
};
constexpr Spec kStoreSpecs[] = {
#define TESSERA_X(name, agg, scale, doc) {#name, Agg::agg, Scale::scale, doc},
    TESSERA_STORE_FEATURES(TESSERA_X)
#undef TESSERA_X
};
constexpr Spec kBufferSpecs[] = {
#define TESSERA_X(name, agg, scale, doc) {#name, Agg::agg, Scale::scale, doc},
    TESSERA_BUFFER_FEATURES(TESSERA_X)
#undef TESSERA_X
};

float scaled(double x, Scale scale) {
  if (!std::isfinite(x)) x = 0;  // a defensive floor: the vector must stay finite
  switch (scale) {
    case Scale::kLog: return static_cast<float>(std::log2(1.0 + std::max(0.0, x)));
    case Scale::kSignedLog: return static_cast<float>(std::copysign(std::log2(1.0 + std::fabs(x)), x));
    case Scale::kRaw: return static_cast<float>(x);
  }
  return 0.f;
}

// One store's raw (unscaled) features.

// Statement instances a statement executes, as unroll_loops counts them to
// decide auto-unrolling (a loop of unknown extent counts as huge).
int64_t unroll_steps(const Stmt& s) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
    case StmtKind::kStore: return 1;
    case StmtKind::kFor: {
      const auto* f = s.as<ForNode>();
      int64_t extent = 0;
      if (!is_const_int(f->extent, &extent)) return int64_t(1) << 30;
      return std::min<int64_t>(extent * unroll_steps(f->body), int64_t(1) << 40);
    }
    case StmtKind::kSeq: {
      int64_t total = 0;
      for (const Stmt& st : s.as<SeqNode>()->stmts) total += unroll_steps(st);
      return std::min<int64_t>(total, int64_t(1) << 40);
    }
    case StmtKind::kIfThenElse: {
      const auto* i = s.as<IfThenElseNode>();
      return std::max(unroll_steps(i->then_case), unroll_steps(i->else_case)) + 1;
    }
    case StmtKind::kAllocate: return unroll_steps(s.as<AllocateNode>()->body);
    case StmtKind::kAttr: return unroll_steps(s.as<AttrNode>()->body);
  }
  return 0;
}

int64_t const_extent(const Expr& e) {
  int64_t v = 1;
  return is_const_int(e, &v) ? std::max<int64_t>(v, 0) : 1;
}

// The counter of a binary op other than + and -: by kind, and by the
// result's type (`is_float`) or, for comparisons, the operands' type.
int binary_slot(ExprKind kind, bool is_float, bool operands_float) {
  switch (kind) {
    case ExprKind::kMul: return is_float ? kS_float_mul : kS_int_mul;
    case ExprKind::kDiv:
    case ExprKind::kMod: return is_float ? kS_float_divmod : kS_int_divmod;
    case ExprKind::kMin:
    case ExprKind::kMax: return is_float ? kS_float_minmax : kS_int_minmax;
    case ExprKind::kAnd:
    case ExprKind::kOr: return kS_bool_op;
    default: return operands_float ? kS_float_cmp : kS_int_cmp;
  }
}

}  // namespace

void Extractor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::kStore: return visit_store(s.as<StoreNode>());
    case StmtKind::kFor: {
      const auto* f = s.as<ForNode>();
      int64_t extent = 0;
      const bool constant = is_const_int(f->extent, &extent);
      // The same rule as unroll_loops: the nearest hint unrolls a constant
      // serial loop whose executed statements stay within its limit.
      const bool auto_unrolled = f->loop_kind == LoopKind::kSerial && constant && !auto_unroll_.empty() &&
                                 auto_unroll_.back() > 0 && unroll_steps(s) <= auto_unroll_.back();
      const bool unrolled = auto_unrolled || (f->loop_kind == LoopKind::kUnrolled && constant);
      // A kTensorized loop heads a nest that the matrix unit runs whole.
      const bool tensorized = f->loop_kind == LoopKind::kTensorized || (!loops_.empty() && loops_.back().tensorized);
      loops_.push_back({f->var.node(), const_extent(f->extent), f->loop_kind, unrolled, auto_unrolled, tensorized});
      vars_.push_back(f->var.node());
      visit(f->body);
      loops_.pop_back();
      vars_.pop_back();
      return;
    }
    case StmtKind::kSeq:
      for (const Stmt& st : s.as<SeqNode>()->stmts) visit(st);
      return;
    case StmtKind::kIfThenElse: {
      const auto* i = s.as<IfThenElseNode>();
      ++guarded_;
      visit(i->then_case);
      visit(i->else_case);
      --guarded_;
      return;
    }
    case StmtKind::kAllocate: {
      const auto* a = s.as<AllocateNode>();
      double times = 1;
      for (const LoopInfo& l : loops_) times *= double(l.extent);
      ++num_allocs_;
      alloc_bytes_ += double(a->buffer->num_elements()) * a->buffer->dtype.storage_bytes();
      allocs_.push_back({a->buffer.get(), times});
      visit(a->body);
      allocs_.pop_back();
      return;
    }
    case StmtKind::kAttr: {
      const auto* a = s.as<AttrNode>();
      const bool unroll = a->attr == AttrKind::kAutoUnrollMaxStep;
      if (unroll) auto_unroll_.push_back(a->value);
      visit(a->body);
      if (unroll) auto_unroll_.pop_back();
      return;
    }
  }
}

// Counts the ops of `e` executed `weight` times (times each op's lanes) and
// collects its loads into accesses_.
void Extractor::count(const Expr& e, Row& row, double weight) {
  if (!e.defined()) return;
  double* r = row.store;
  const double n = weight * e.dtype().lanes;
  const bool is_float = e.dtype().is_float();
  // Counted ops are vector ops exactly when they have lanes.
  if (e.dtype().lanes > 1 && e.kind() != ExprKind::kLoad && e.kind() != ExprKind::kBroadcast &&
      e.kind() != ExprKind::kVar && e.kind() != ExprKind::kIntImm && e.kind() != ExprKind::kFloatImm) {
    row.vector_ops += n;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
    case ExprKind::kVar: return;
    case ExprKind::kAdd:
    case ExprKind::kSub:
      return count_addsub(static_cast<const BinaryNode*>(e.get()), e.kind() == ExprKind::kAdd, row, weight, n);
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      // Comparisons have bool type: classify by the operands' type.
      const bool operands_float = b->a.dtype().is_float();
      r[binary_slot(e.kind(), is_float, operands_float)] += n;
      count(b->a, row, weight);
      count(b->b, row, weight);
      return;
    }
    case ExprKind::kNot: r[kS_bool_op] += n; return count(e.as<NotNode>()->a, row, weight);
    case ExprKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      r[kS_select_op] += n;
      count(s->cond, row, weight);
      count(s->true_value, row, weight);
      count(s->false_value, row, weight);
      return;
    }
    case ExprKind::kCast: r[kS_cast_op] += n; return count(e.as<CastNode>()->value, row, weight);
    case ExprKind::kCall: {
      // A dot product of packed words is its multiply-adds (one
      // instruction a register where the target has one), not a math call.
      const CallOp op = e.as<CallNode>()->op;
      if (is_dot_product(op))
        r[kS_dot_mad] += n * (op == CallOp::kDotU8S8 ? 4 : 2);
      else if (op != CallOp::kPackBf16)
        r[kS_float_math] += n;
      for (const Expr& a : e.as<CallNode>()->args) count(a, row, weight);
      return;
    }
    case ExprKind::kLoad: {
      const auto* l = e.as<LoadNode>();
      accesses_.push_back({l->buffer.get(), l->index, false});
      return count(l->index, row, weight);
    }
    case ExprKind::kRamp: {
      // base + lane * stride: one vector multiply-add of index arithmetic.
      const auto* rp = e.as<RampNode>();
      r[kS_int_addsub] += n;
      return count(rp->base, row, weight);
    }
    case ExprKind::kBroadcast: return count(e.as<BroadcastNode>()->value, row, weight);
    case ExprKind::kTensorRead:
    case ExprKind::kReduce: return;  // not in lowered code
  }
}

// a + b or a - b executed `n` times in all (weight times lanes).
void Extractor::count_addsub(const BinaryNode* b, bool is_add, Row& row, double weight, double n) {
  double* r = row.store;
  const bool is_float = b->dtype.is_float();
  if (is_float && is_add) {
    // a*b + c is one fused multiply-add on every target we build for.
    const Expr* mul = b->a.kind() == ExprKind::kMul ? &b->a : b->b.kind() == ExprKind::kMul ? &b->b : nullptr;
    if (mul) {
      r[kS_float_mad] += n;
      const auto* m = static_cast<const BinaryNode*>(mul->get());
      count(m->a, row, weight);
      count(m->b, row, weight);
      count(mul == &b->a ? b->b : b->a, row, weight);
      return;
    }
  }
  r[is_float ? kS_float_addsub : kS_int_addsub] += n;
  count(b->a, row, weight);
  count(b->b, row, weight);
}

void Extractor::loop_features(Row& row) const {
  double* r = row.store;
  const int depth = static_cast<int>(loops_.size());
  r[kS_depth] = depth;
  double par_prod = 1, unroll_prod = 1, tensor_prod = 1;
  for (int i = 0; i < depth; ++i) {
    const LoopInfo& l = loops_[i];
    const double e = double(l.extent);
    if (l.tensorized) {
      r[kS_tensor_num] += 1;
      tensor_prod *= e;
    } else if (l.kind == LoopKind::kParallel) {
      if (r[kS_par_num] == 0) {
        r[kS_par_outer_len] = e;
        r[kS_par_outer_depth] = i;
      }
      r[kS_par_num] += 1;
      par_prod *= e;
      r[kS_par_inner_len] = e;
      r[kS_par_inner_depth] = i;
    } else if (l.kind == LoopKind::kUnrolled) {
      if (r[kS_unroll_num] == 0) {
        r[kS_unroll_outer_len] = e;
        r[kS_unroll_outer_depth] = i;
      }
      r[kS_unroll_num] += 1;
      unroll_prod *= e;
      r[kS_unroll_inner_len] = e;
      r[kS_unroll_inner_depth] = i;
    } else {
      r[kS_serial_num] += 1;
    }
  }
  r[kS_par_prod] = r[kS_par_num] > 0 ? par_prod : 0;
  r[kS_par_task_work] = r[kS_outer_prod] / par_prod;
  r[kS_unroll_prod] = r[kS_unroll_num] > 0 ? unroll_prod : 0;
  r[kS_tensor_prod] = r[kS_tensor_num] > 0 ? tensor_prod : 0;
  if (depth > 0) {
    r[kS_innermost_len] = double(loops_.back().extent);
    r[kS_innermost_unrolled] = loops_.back().kind == LoopKind::kUnrolled ? 1 : 0;
  }
  r[kS_auto_unroll_max_step] = auto_unroll_.empty() ? 0 : double(auto_unroll_.back());
  // After unrolling: how many copies of the store there are, and the loop
  // that stays innermost with the straight-line body it runs.
  double copies = 1, body = 1;
  int inner_loop = -1;
  for (int i = 0; i < depth; ++i) {
    const LoopInfo& l = loops_[i];
    if (l.auto_unrolled) r[kS_auto_unrolled_num] += 1;
    if (l.unrolled) {
      copies *= double(l.extent);
      body *= double(l.extent);
    } else {
      inner_loop = i;
      body = 1;
    }
  }
  r[kS_unrolled_copies] = copies;
  r[kS_loop_inner_len] = inner_loop >= 0 ? double(loops_[inner_loop].extent) : 0;
  r[kS_loop_inner_body] = body;
  r[kS_guarded] = guarded_ > 0 ? 1 : 0;
}

void Extractor::visit_store(const StoreNode* op) {
  Row& row = rows_.emplace_back();
  double* r = row.store;
  double outer = 1;
  for (const LoopInfo& l : loops_) outer *= double(l.extent);
  const int lanes = std::max<int>(op->value.dtype().lanes, op->index.dtype().lanes);

  accesses_.clear();
  count(op->value, row, outer);
  count(op->index, row, outer);
  accesses_.push_back({op->buffer.get(), op->index, true});

  double ops = 0;
  for (int f = kS_float_mad; f <= kS_cast_op; ++f) ops += r[f];
  row.flops = 2 * r[kS_float_mad] + r[kS_float_addsub] + r[kS_float_mul] + r[kS_float_divmod] + r[kS_float_minmax] +
              r[kS_float_cmp] + r[kS_float_math] + 2 * r[kS_dot_mad];
  r[kS_vec_lanes] = lanes;
  r[kS_vec_op_frac] = ops > 0 ? std::min(1.0, row.vector_ops / ops) : (lanes > 1 ? 1 : 0);
  r[kS_outer_prod] = outer;
  row.work = outer * lanes;
  loop_features(row);

  for (const auto& [buffer, times] : allocs_) {
    if (buffer == op->buffer.get()) {
      r[kS_alloc_bytes] = double(buffer->num_elements()) * buffer->dtype.storage_bytes();
      r[kS_alloc_outer_prod] = times;
    }
  }
  r[kS_writes_local] = op->buffer->scope != MemoryScope::kGlobal ? 1 : 0;
  access_features(op, row, lanes, outer, outer > 0 ? row.flops / outer : 0);
}

std::vector<float> Extractor::finish() const {
  std::vector<float> out(kFeatureCount, 0.f);
  double total_work = 0, max_work = 0, total_flops = 0, max_depth = 0;
  for (const Row& row : rows_) {
    total_work += row.work;
    max_work = std::max(max_work, row.work);
    total_flops += row.flops;
    max_depth = std::max(max_depth, row.store[kS_depth]);
  }
  double p[kProgramFeatureCount] = {};
  p[kP_num_stores] = double(rows_.size());
  p[kP_total_flops] = total_flops;
  p[kP_total_executions] = total_work;
  p[kP_max_depth] = max_depth;
  p[kP_dominant_share] = total_work > 0 ? max_work / total_work : 0;
  p[kP_num_allocs] = num_allocs_;
  p[kP_alloc_bytes] = alloc_bytes_;
  p[kP_compulsory_ai] = param_bytes_ > 0 ? total_flops / param_bytes_ : 0;
  for (int f = 0; f < kProgramFeatureCount; ++f) out[f] = scaled(p[f], kProgramSpecs[f].scale);

  auto fold = [&](const Spec& spec, auto value_of) {
    double acc = 0;
    for (const Row& row : rows_) {
      const double w = spec.agg == Agg::kSum ? 1.0 : (total_work > 0 ? row.work / total_work : 0);
      acc += w * value_of(row);
    }
    return scaled(acc, spec.scale);
  };
  float* store = out.data() + kProgramFeatureCount;
  for (int f = 0; f < kStoreFeatureCount; ++f) {
    store[f] = fold(kStoreSpecs[f], [f](const Row& row) { return row.store[f]; });
  }
  float* buffers = store + kStoreFeatureCount;
  for (int s = 0; s < kMaxBuffers; ++s) {
    for (int f = 0; f < kBufferFeatureCount; ++f) {
      buffers[s * kBufferFeatureCount + f] =
          fold(kBufferSpecs[f], [s, f](const Row& row) { return row.buffers[s][f]; });
    }
  }
  return out;
}

}  // namespace detail

namespace {

std::vector<FeatureInfo> make_table() {
  using namespace detail;
  std::vector<FeatureInfo> t;
  t.reserve(kFeatureCount);
  for (const Spec& s : kProgramSpecs) t.push_back({std::string("program.") + s.name, s.doc});
  for (const Spec& s : kStoreSpecs) t.push_back({std::string("store.") + s.name, s.doc});
  for (int b = 0; b < kMaxBuffers; ++b) {
    for (const Spec& s : kBufferSpecs) {
      t.push_back({"buf" + std::to_string(b) + "." + s.name, "buffer with the " + std::to_string(b + 1) +
                                                                 (b == 0   ? "st"
                                                                  : b == 1 ? "nd"
                                                                  : b == 2 ? "rd"
                                                                           : "th") +
                                                                 " most bytes: " + s.doc});
    }
  }
  return t;
}

}  // namespace

const std::vector<FeatureInfo>& feature_names() {
  static const std::vector<FeatureInfo> kTable = make_table();  // immutable, built once
  return kTable;
}

int feature_index(std::string_view name) {
  const auto& t = feature_names();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Result<std::vector<float>> extract_features(const PrimFunc& func) {
  if (!func.body.defined()) {
    return Status(ErrorCode::kInvalidArgument, "extract_features: function '" + func.name + "' has no body");
  }
  detail::Extractor ex;
  ex.run(func);
  return ex.finish();
}

Result<PrimFunc> lower_for_features(const State& state) {
  return lower(state, "candidate", LowerOptions{.stop_after = "vectorize_loops", .skip = {"partition_loops"}});
}

Result<std::vector<float>> extract_features(const State& state) {
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, lower_for_features(state));
  return extract_features(func);
}

std::vector<Result<std::vector<float>>> extract_features(const std::vector<State>& states) {
  std::vector<Result<std::vector<float>>> out;
  out.reserve(states.size());
  for (const State& s : states) out.push_back(extract_features(s));
  return out;
}

}  // namespace tessera::costmodel
