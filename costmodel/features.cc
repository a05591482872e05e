#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

#include "compiler/lower/schedule_ops.h"
#include "compiler/lower/simplify.h"
#include "compiler/lower/vectorize_loops.h"
#include "costmodel/access_analysis.h"
#include "costmodel/feature_table.h"

namespace tessera::costmodel {
namespace {

// Indices into the three parts of the table.
enum ProgramFeature : int {
#define TESSERA_X(name, agg, scale, doc) kP_##name,
  TESSERA_PROGRAM_FEATURES(TESSERA_X)
#undef TESSERA_X
  kProgramEnd
};
enum StoreFeature : int {
#define TESSERA_X(name, agg, scale, doc) kS_##name,
  TESSERA_STORE_FEATURES(TESSERA_X)
#undef TESSERA_X
  kStoreEnd
};
enum BufferFeature : int {
#define TESSERA_X(name, agg, scale, doc) kB_##name,
  TESSERA_BUFFER_FEATURES(TESSERA_X)
#undef TESSERA_X
  kBufferEnd
};
static_assert(kProgramEnd == kProgramFeatureCount, "update kProgramFeatureCount in features.h");
static_assert(kStoreEnd == kStoreFeatureCount, "update kStoreFeatureCount in features.h");
static_assert(kBufferEnd == kBufferFeatureCount, "update kBufferFeatureCount in features.h");

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
struct Row {
  double store[kStoreFeatureCount] = {};
  double buffers[kMaxBuffers][kBufferFeatureCount] = {};
  double work = 0;        // scalar executions: the weight of kMean features
  double flops = 0;       // float ops executed
  double vector_ops = 0;  // lanes of the ops that ran as vector ops
};

struct LoopInfo {
  const VarNode* var;
  int64_t extent;
  LoopKind kind;
};

struct Access {
  const BufferNode* buffer;
  Expr index;
  bool is_write;
};

// Per-access results kept while a store's row is built.
struct AccessStats {
  double bytes = 0, lines = 0;
  Footprint whole;
  Footprint level[3];  // inside the 1, 2, 3 innermost loops (and the lanes)
  int reuse_loop = -1; // innermost loop that leaves the address unchanged
  double stride = 0, stride_moving = 0;
};

int64_t const_extent(const Expr& e) {
  int64_t v = 1;
  return is_const_int(e, &v) ? std::max<int64_t>(v, 0) : 1;
}

class Extractor {
 public:
  void run(const PrimFunc& func) {
    for (const Buffer& b : func.params) param_bytes_ += double(b->num_elements()) * b->dtype.storage_bytes();
    visit(func.body);
  }
  std::vector<float> finish() const;

 private:
  void visit(const Stmt& s);
  void visit_store(const StoreNode* op);
  void count(const Expr& e, Row& row, double weight);
  void loop_features(Row& row) const;
  void access_features(const StoreNode* op, Row& row, int lanes, double outer, double flops_per_exec);

  std::vector<LoopInfo> loops_;
  std::vector<const VarNode*> vars_;
  std::vector<int64_t> auto_unroll_;
  std::vector<std::pair<const BufferNode*, double>> allocs_;  // buffer -> times allocated
  int guarded_ = 0;
  std::vector<Row> rows_;
  double param_bytes_ = 0, alloc_bytes_ = 0;
  int num_allocs_ = 0;
  // Scratch reused across stores so that extraction allocates little.
  std::vector<Access> accesses_;
  std::vector<AccessStats> stats_;
  std::vector<double> coefs_;
  std::vector<std::vector<double>> access_coefs_;
  std::vector<int64_t> extents_;
  std::vector<int> loop_set_;
};

void Extractor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::kStore: return visit_store(s.as<StoreNode>());
    case StmtKind::kFor: {
      const auto* f = s.as<ForNode>();
      loops_.push_back({f->var.node(), const_extent(f->extent), f->loop_kind});
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
    case ExprKind::kVar:
      return;
    case ExprKind::kAdd:
    case ExprKind::kSub: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      if (is_float && e.kind() == ExprKind::kAdd) {
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
      return;
    }
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
      int slot;
      switch (e.kind()) {
        case ExprKind::kMul: slot = is_float ? kS_float_mul : kS_int_mul; break;
        case ExprKind::kDiv:
        case ExprKind::kMod: slot = is_float ? kS_float_divmod : kS_int_divmod; break;
        case ExprKind::kMin:
        case ExprKind::kMax: slot = is_float ? kS_float_minmax : kS_int_minmax; break;
        case ExprKind::kAnd:
        case ExprKind::kOr: slot = kS_bool_op; break;
        default: slot = operands_float ? kS_float_cmp : kS_int_cmp; break;
      }
      r[slot] += n;
      count(b->a, row, weight);
      count(b->b, row, weight);
      return;
    }
    case ExprKind::kNot:
      r[kS_bool_op] += n;
      return count(e.as<NotNode>()->a, row, weight);
    case ExprKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      r[kS_select_op] += n;
      count(s->cond, row, weight);
      count(s->true_value, row, weight);
      count(s->false_value, row, weight);
      return;
    }
    case ExprKind::kCast:
      r[kS_cast_op] += n;
      return count(e.as<CastNode>()->value, row, weight);
    case ExprKind::kCall: {
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
    case ExprKind::kBroadcast:
      return count(e.as<BroadcastNode>()->value, row, weight);
    case ExprKind::kTensorRead:
    case ExprKind::kReduce:
      return;  // not in lowered code
  }
}

void Extractor::loop_features(Row& row) const {
  double* r = row.store;
  const int depth = static_cast<int>(loops_.size());
  r[kS_depth] = depth;
  double par_prod = 1, unroll_prod = 1;
  for (int i = 0; i < depth; ++i) {
    const LoopInfo& l = loops_[i];
    const double e = double(l.extent);
    if (l.kind == LoopKind::kParallel) {
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
  r[kS_unroll_prod] = r[kS_unroll_num] > 0 ? unroll_prod : 0;
  if (depth > 0) {
    r[kS_innermost_len] = double(loops_.back().extent);
    r[kS_innermost_unrolled] = loops_.back().kind == LoopKind::kUnrolled ? 1 : 0;
  }
  r[kS_auto_unroll_max_step] = auto_unroll_.empty() ? 0 : double(*std::max_element(auto_unroll_.begin(), auto_unroll_.end()));
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
  row.flops = 2 * r[kS_float_mad] + r[kS_float_addsub] + r[kS_float_mul] + r[kS_float_divmod] +
              r[kS_float_minmax] + r[kS_float_cmp] + r[kS_float_math];
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

void Extractor::access_features(const StoreNode* op, Row& row, int lanes, double outer, double flops_per_exec) {
  double* r = row.store;
  const int depth = static_cast<int>(loops_.size());
  const int lane_slot = lanes > 1 ? depth : -1;
  extents_.resize(depth + (lanes > 1 ? 1 : 0));
  for (int i = 0; i < depth; ++i) extents_[i] = loops_[i].extent;
  if (lanes > 1) extents_[depth] = lanes;

  const int n = static_cast<int>(accesses_.size());
  stats_.assign(n, AccessStats{});
  if (access_coefs_.size() < size_t(n)) access_coefs_.resize(n);
  for (int a = 0; a < n; ++a) {
    const Access& acc = accesses_[a];
    AccessStats& st = stats_[a];
    std::vector<double>& coefs = access_coefs_[a];
    linear_coefficients(acc.index, vars_, lane_slot, &coefs);
    const int elem_bytes = acc.buffer->dtype.storage_bytes();
    const double cap = double(acc.buffer->num_elements());
    // A scalar load inside a vector store runs once per vector, not per lane.
    const bool vector_access = lanes > 1 && acc.index.dtype().lanes > 1;
    const double count = outer * (vector_access ? lanes : 1);
    st.bytes = count * elem_bytes;

    loop_set_.clear();
    for (int i = 0; i < depth; ++i) loop_set_.push_back(i);
    if (vector_access) loop_set_.push_back(depth);
    st.whole = footprint(coefs, extents_, loop_set_, elem_bytes, cap);
    if (!loop_set_.empty()) {
      const int inner = loop_set_.back();
      st.stride = coefs[inner];
      const Footprint one = footprint(coefs, extents_, {inner}, elem_bytes, cap);
      st.lines = count / double(std::max<int64_t>(1, extents_[inner])) * one.lines;
    } else {
      st.lines = 1;
    }
    for (int i = static_cast<int>(loop_set_.size()); i-- > 0;) {
      const int l = loop_set_[i];
      if (extents_[l] <= 1) continue;
      if (coefs[l] == 0) {
        if (st.reuse_loop < 0) st.reuse_loop = l;
      } else if (st.stride_moving == 0) {
        st.stride_moving = coefs[l];
      }
    }
    // Footprints inside the innermost 1, 2, 3 real loops (lanes always inside).
    for (int k = 0; k < 3; ++k) {
      loop_set_.clear();
      for (int i = std::max(0, depth - 1 - k); i < depth; ++i) loop_set_.push_back(i);
      if (vector_access) loop_set_.push_back(depth);
      st.level[k] = footprint(coefs, extents_, loop_set_, elem_bytes, cap);
    }
  }

  // Arithmetic intensity at each level: flops inside it / unique bytes inside it.
  double inner_prod = 1;
  for (int k = 0; k < 4; ++k) {
    const bool whole = k == 3;
    if (!whole && depth - 1 - k >= 0) inner_prod *= double(loops_[depth - 1 - k].extent);
    double bytes = 0;
    for (int a = 0; a < n; ++a) {
      const Footprint& f = whole ? stats_[a].whole : stats_[a].level[k];
      bytes += f.elements * accesses_[a].buffer->dtype.storage_bytes();
    }
    const double flops = flops_per_exec * (whole ? outer : inner_prod);
    r[kS_ai_1 + k] = bytes > 0 ? flops / bytes : 0;
  }
  const AccessStats& out = stats_[n - 1];
  r[kS_out_region_1] = out.level[0].elements;
  r[kS_out_region_2] = out.level[1].elements;
  r[kS_out_region_all] = out.whole.elements;
  r[kS_num_accesses] = n;

  // Group the accesses by buffer; reuse distance in bytes counts every
  // access's footprint inside the reuse loop.
  struct Group {
    const BufferNode* buffer;
    int reads = 0, writes = 0, rep = -1;
    double bytes = 0, lines = 0, unique_bytes = 0, unique_lines = 0;
  };
  Group groups[16];
  int num_groups = 0;
  double min_reuse_bytes = 0;
  for (int a = 0; a < n; ++a) {
    const AccessStats& st = stats_[a];
    r[kS_total_bytes] += st.bytes;
    r[kS_total_lines] += st.lines;
    int g = 0;
    while (g < num_groups && groups[g].buffer != accesses_[a].buffer) ++g;
    if (g == num_groups) {
      if (num_groups == 16) continue;
      groups[num_groups++] = Group{accesses_[a].buffer};
    }
    Group& gr = groups[g];
    (accesses_[a].is_write ? gr.writes : gr.reads) += 1;
    gr.bytes += st.bytes;
    gr.lines += st.lines;
    const int eb = accesses_[a].buffer->dtype.storage_bytes();
    gr.unique_bytes = std::max(gr.unique_bytes, st.whole.elements * eb);
    gr.unique_lines = std::max(gr.unique_lines, st.whole.lines);
    if (gr.rep < 0 || st.bytes > stats_[gr.rep].bytes) gr.rep = a;
  }
  r[kS_num_buffers] = num_groups;
  for (int g = 0; g < num_groups; ++g) r[kS_total_unique_lines] += groups[g].unique_lines;
  std::stable_sort(groups, groups + num_groups, [](const Group& x, const Group& y) { return x.bytes > y.bytes; });

  for (int g = 0; g < std::min(num_groups, kMaxBuffers); ++g) {
    const Group& gr = groups[g];
    const AccessStats& st = stats_[gr.rep];
    double* b = row.buffers[g];
    b[kB_is_read] = gr.writes == 0;
    b[kB_is_write] = gr.reads == 0;
    b[kB_is_read_write] = gr.reads > 0 && gr.writes > 0;
    b[kB_is_local] = gr.buffer->scope != MemoryScope::kGlobal;
    b[kB_bytes] = gr.bytes;
    b[kB_unique_bytes] = gr.unique_bytes;
    b[kB_lines] = gr.lines;
    b[kB_unique_lines] = gr.unique_lines;
    b[kB_stride] = st.stride;
    b[kB_stride_moving] = st.stride_moving;
    if (st.reuse_loop >= 0) {
      const int l = st.reuse_loop;
      double dis_iter = 1;
      for (int i = l + 1; i < static_cast<int>(extents_.size()); ++i) dis_iter *= double(extents_[i]);
      loop_set_.clear();
      for (int i = l + 1; i < static_cast<int>(extents_.size()); ++i) loop_set_.push_back(i);
      double dis_bytes = 0;
      for (int a = 0; a < n; ++a) {
        const BufferNode* buf = accesses_[a].buffer;
        dis_bytes += footprint(access_coefs_[a], extents_, loop_set_, buf->dtype.storage_bytes(),
                               double(buf->num_elements())).elements *
                     buf->dtype.storage_bytes();
      }
      b[kB_reuse_loop] = 1;
      b[kB_reuse_dis_iter] = dis_iter;
      b[kB_reuse_dis_bytes] = dis_bytes;
      b[kB_reuse_ct] = double(extents_[l]);
      min_reuse_bytes = min_reuse_bytes == 0 ? dis_bytes : std::min(min_reuse_bytes, dis_bytes);
    } else if (gr.reads + gr.writes > 1) {
      b[kB_reuse_serial] = 1;
      b[kB_reuse_ct] = gr.reads + gr.writes - 1;
    } else {
      b[kB_reuse_none] = 1;
    }
    b[kB_bytes_d_reuse_ct] = gr.bytes / std::max(1.0, b[kB_reuse_ct]);
  }
  r[kS_min_reuse_bytes] = min_reuse_bytes;
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

std::vector<FeatureInfo> make_table() {
  std::vector<FeatureInfo> t;
  t.reserve(kFeatureCount);
  for (const Spec& s : kProgramSpecs) t.push_back({std::string("program.") + s.name, s.doc});
  for (const Spec& s : kStoreSpecs) t.push_back({std::string("store.") + s.name, s.doc});
  for (int b = 0; b < kMaxBuffers; ++b) {
    for (const Spec& s : kBufferSpecs) {
      t.push_back({"buf" + std::to_string(b) + "." + s.name,
                   "buffer with the " + std::to_string(b + 1) + (b == 0 ? "st" : b == 1 ? "nd" : b == 2 ? "rd" : "th") +
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
  Extractor ex;
  ex.run(func);
  return ex.finish();
}

Result<PrimFunc> lower_for_features(const State& state) {
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, schedule_to_loops(state, "candidate"));
  func.body = vectorize_loops(simplify(func.body));
  return func;
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
