#include "compiler/space/knob/template_util.h"

#include <cmath>
#include <set>
#include <tuple>

#include "compiler/ir/functor.h"
#include "compiler/lower/infer_bounds.h"

namespace tessera::template_detail {
namespace {

Status template_error(const std::string& name, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, "template " + name + ": " + why);
}

// `from` broadcasts to `to` (same rank, each extent equal or 1) and differs.
bool broadcasts_to(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() != to.size() || from == to) return false;
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != to[d] && from[d] != 1) return false;
  return true;
}

}  // namespace

Result<OpStages> find_op_stages(const ComputeDAG& dag, OpPattern pattern, const std::string& name,
                                bool allow_broadcast) {
  const std::vector<Tensor>& tensors = dag.tensors();
  std::set<std::string> names;
  int main = -1;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!names.insert(tensors[i]->name).second)
      return template_error(name, "two tensors are named '" + tensors[i]->name +
                                      "' (templates find stages by the names the ops library gives)");
    const ComputeOpNode* op = compute_op(tensors[i]);
    if (!op || op->pattern != pattern) continue;
    if (main >= 0)
      return template_error(name, "stages " + tensors[main]->name + " and " + tensors[i]->name + " are both " +
                                      op_pattern_name(pattern) + "; the template schedules one");
    main = static_cast<int>(i);
  }
  if (main < 0) return template_error(name, std::string("the DAG has no ") + op_pattern_name(pattern) + " stage");
  OpStages st;
  const Tensor& m = tensors[main];
  st.main = m->name;
  st.shape = m->shape;
  st.dtype = m->dtype;
  for (const IterVar& r : compute_op(m)->reduce_axes) st.reduce.push_back(r->extent);
  for (const Tensor& in : input_tensors(m)) {
    st.inputs.push_back(in->name);
    const ComputeOpNode* op = compute_op(in);
    if (!op) continue;
    if (!st.pad.empty() || op->pattern != OpPattern::kInjective || !op->reduce_axes.empty())
      return template_error(
          name, st.main + " reads computed tensor " + in->name + "; only one injective producer (a pad) is supported");
    for (const Tensor& t : input_tensors(in))
      if (compute_op(t)) return template_error(name, "pad stage " + in->name + " reads computed tensor " + t->name);
    st.pad = in->name;
  }
  std::vector<Tensor> tail;  // stages of main's shape, then of the broadcast shape
  size_t of_main_shape = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const ComputeOpNode* op = compute_op(t);
    if (!op || static_cast<int>(i) == main || t->name == st.pad) continue;
    if (static_cast<int>(i) < main) return template_error(name, "unexpected stage " + t->name + " before " + st.main);
    const bool same_shape = t->shape == st.shape;
    const bool broadcast = allow_broadcast && broadcasts_to(st.shape, t->shape) &&
                           (of_main_shape == tail.size() || t->shape == tail.back()->shape);
    if (!op->reduce_axes.empty() || !(same_shape || broadcast))
      return template_error(
          name, "stage " + t->name + " after " + st.main + " must be elementwise over its shape to be fused");
    if (same_shape && of_main_shape != tail.size())
      return template_error(name, "stage " + t->name + " of " + st.main + "'s shape follows a broadcast stage");
    if (dag.is_output(t) && !st.output.empty()) return template_error(name, "the DAG has more than one output");
    if (dag.is_output(t)) st.output = t->name;
    tail.push_back(t);
    if (same_shape) ++of_main_shape;
  }
  if (of_main_shape == tail.size()) {
    for (const Tensor& t : tail)
      if (t->name != st.output) st.inlined.push_back(t->name);
    if (st.output.empty()) {
      if (!dag.is_output(m)) return template_error(name, "no output follows " + st.main);
      if (!st.inlined.empty()) return template_error(name, "stages after the output " + st.main);
      st.output = st.main;
    }
    return st;
  }
  // A broadcast tail: the last stage of main's shape (or main) is the
  // template's output, stored whole; the broadcast stages read it and end in
  // the DAG's output, scheduled on their own.
  if (st.output.empty() || st.output != tail.back()->name)
    return template_error(name, "the broadcast stages after " + st.main + " do not end in the DAG's output");
  st.broadcast = st.output;
  st.output = of_main_shape > 0 ? tail[of_main_shape - 1]->name : st.main;
  for (const Tensor& t : tail)
    if (t->name != st.output && t->name != st.broadcast) st.inlined.push_back(t->name);
  // The template computes main and the inlined stages only where its output
  // needs them: the broadcast stages may read that output, not those.
  for (size_t i = of_main_shape; i < tail.size(); ++i)
    for (const Tensor& in : input_tensors(tail[i]))
      if (compute_op(in) && in->shape == st.shape && in->name != st.output)
        return template_error(name, "broadcast stage " + tail[i]->name + " reads " + in->name + " besides " +
                                        st.output + ", the last stage of " + st.main + "'s shape");
  return st;
}

// ---------------------------------------------------------------------------
// Sched

Result<int> Sched::stage_index(const std::string& name) const {
  int i = state_->stage_index(name);
  if (i < 0) return Status(ErrorCode::kInvalidSchedule, "template: no stage named " + name);
  return i;
}

Result<int> Sched::loop_index(int stage, const Var& loop) const {
  int i = state_->stage(stage).iter_index(loop);
  if (i < 0)
    return Status(ErrorCode::kInvalidSchedule,
                  "template: stage " + state_->stage(stage).name() + " has no loop " + loop.name());
  return i;
}

std::vector<Var> Sched::loops(const std::string& stage) const {
  std::vector<Var> out;
  int s = state_->stage_index(stage);
  if (s < 0) return out;
  for (const Iter& it : state_->stage(s).iters) out.push_back(it.var);
  return out;
}

Result<std::vector<Var>> Sched::split(const std::string& stage, const Var& loop, std::vector<int64_t> factors) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  TESSERA_ASSIGN_OR_RETURN(int at, loop_index(s, loop));
  const size_t n = factors.size();
  TESSERA_RETURN_IF_ERROR(state_->split(s, at, std::move(factors)));
  std::vector<Var> out;
  for (size_t i = 0; i <= n; ++i) out.push_back(state_->stage(s).iters[at + i].var);
  return out;
}

Result<Var> Sched::fuse(const std::string& stage, const std::vector<Var>& loops) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  if (loops.size() == 1) return loops[0];
  std::vector<int> idx;
  for (const Var& v : loops) {
    TESSERA_ASSIGN_OR_RETURN(int i, loop_index(s, v));
    idx.push_back(i);
  }
  TESSERA_RETURN_IF_ERROR(state_->fuse(s, idx));
  return state_->stage(s).iters[idx[0]].var;
}

Status Sched::reorder(const std::string& stage, const std::vector<Var>& order) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  std::vector<int> idx;
  for (const Var& v : order) {
    TESSERA_ASSIGN_OR_RETURN(int i, loop_index(s, v));
    idx.push_back(i);
  }
  return state_->reorder(s, idx);
}

Status Sched::annotate(const std::string& stage, const Var& loop, IterAnnotation a) {
  if (a == IterAnnotation::kNone) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  TESSERA_ASSIGN_OR_RETURN(int i, loop_index(s, loop));
  return state_->annotate(s, i, a);
}

Status Sched::compute_at(const std::string& stage, const std::string& target, const Var& loop) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  TESSERA_ASSIGN_OR_RETURN(int t, stage_index(target));
  TESSERA_ASSIGN_OR_RETURN(int i, loop_index(t, loop));
  return state_->compute_at(s, t, i);
}

Status Sched::compute_inline(const std::string& stage) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  return state_->compute_inline(s);
}

Status Sched::cache_write(const std::string& stage) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  return state_->cache_write(s);
}

Status Sched::cache_read(const std::string& stage, const std::vector<std::string>& readers) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  std::vector<int> r;
  for (const std::string& name : readers) {
    TESSERA_ASSIGN_OR_RETURN(int i, stage_index(name));
    r.push_back(i);
  }
  return state_->cache_read(s, r);
}

Status Sched::pack_layout(const std::string& stage, int axis, int64_t factor, int inner) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  return state_->pack_layout(s, axis, factor, inner);
}

Status Sched::rfactor(const std::string& stage, int reduce_axis, int64_t factor) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  return state_->rfactor(s, reduce_axis, factor);
}

Status Sched::vectorize_partial_results(const std::string& rf) {
  const std::vector<Var> all = loops(rf);
  const size_t rank = state_->stage(state_->stage_index(rf)).axes.size();
  std::vector<Var> order(all.begin() + 1, all.begin() + static_cast<std::ptrdiff_t>(rank));
  order.insert(order.end(), all.begin() + static_cast<std::ptrdiff_t>(rank) + 1, all.end());
  order.push_back(all[rank]);
  order.push_back(all[0]);
  TESSERA_RETURN_IF_ERROR(reorder(rf, order));
  return annotate(rf, all[0], IterAnnotation::kVectorize);
}

Status Sched::pad_tile(const std::string& stage) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  return state_->pad_tile(s);
}

Status Sched::storage_order(const std::string& stage, std::vector<int> order) {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  return state_->storage_order(s, std::move(order));
}

int64_t divisor_vector_width(int64_t extent, int64_t lanes) {
  // The whole loop when it fits four registers; else the widest divisor
  // made of whole registers or a power-of-two part of one (odd widths such
  // as 14 or 29 become several partial registers).
  const int64_t max_lanes = std::min<int64_t>(kMaxVectorLanes, 4 * lanes);
  if (extent <= max_lanes) return extent;
  for (int64_t d = max_lanes; d > 1; --d)
    if (extent % d == 0 && (d % lanes == 0 || (d < lanes && (d & (d - 1)) == 0))) return d;
  return 1;
}

Status Sched::vectorize_by_divisor(const std::string& stage, const Var& loop, int64_t extent, int64_t lanes) {
  const int64_t v = divisor_vector_width(extent, lanes);
  if (v < 2) return Status::ok();
  if (v == extent) return annotate(stage, loop, IterAnnotation::kVectorize);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> parts, split(stage, loop, {v}));
  return annotate(stage, parts[1], IterAnnotation::kVectorize);
}

Result<int64_t> Sched::inferred_extent(const std::string& stage, const Var& loop) const {
  TESSERA_ASSIGN_OR_RETURN(int s, stage_index(stage));
  TESSERA_ASSIGN_OR_RETURN(int i, loop_index(s, loop));
  TESSERA_ASSIGN_OR_RETURN(State bounded, infer_bounds(*state_));
  return bounded.stage(s).iters[i].extent;
}

// ---------------------------------------------------------------------------
// Shared schedule shapes

Result<Var> tile_output_blocks(Sched& s, const std::string& stage, const std::vector<int64_t>& block, int64_t lanes,
                               const std::vector<int64_t>& block_order) {
  std::vector<Var> axes = s.loops(stage);
  if (axes.size() != block.size())
    return Status(ErrorCode::kInternal, "template: block of " + std::to_string(block.size()) + " sizes for " +
                                            std::to_string(axes.size()) + " loops of " + stage);
  std::vector<Var> outer, inner;
  for (size_t d = 0; d < axes.size(); ++d) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<Var> parts, s.split(stage, axes[d], {block[d]}));
    outer.push_back(parts[0]);
    inner.push_back(parts[1]);
  }
  if (!block_order.empty()) {
    if (block_order.size() != outer.size())
      return Status(ErrorCode::kInternal, "template: a block order of " + std::to_string(block_order.size()) +
                                              " axes for " + std::to_string(outer.size()) + " loops of " + stage);
    std::vector<Var> ordered;
    for (int64_t axis : block_order) ordered.push_back(outer.at(static_cast<size_t>(axis)));
    outer = std::move(ordered);
  }
  std::vector<Var> order = outer;
  order.insert(order.end(), inner.begin(), inner.end());
  TESSERA_RETURN_IF_ERROR(s.reorder(stage, order));
  TESSERA_ASSIGN_OR_RETURN(Var fused, s.fuse(stage, outer));
  // Work smaller than a launch (a 3 x 2 x 3 product: 0.3 us against 0.05
  // us alone) runs on the calling thread.
  if (s.state().dag().flop_count() >= kMinParallelFlops)
    TESSERA_RETURN_IF_ERROR(s.annotate(stage, fused, IterAnnotation::kParallel));
  TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(stage, inner.back(), block.back(), lanes));
  return fused;
}

Result<std::string> accumulator(Sched& s, const OpStages& stages) {
  for (const std::string& tail : stages.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(tail));
  if (stages.main != stages.output) return stages.main;
  TESSERA_RETURN_IF_ERROR(s.cache_write(stages.main));
  return stages.main + ".local";
}

Status schedule_broadcast(Sched& s, const OpStages& stages, int64_t lanes) {
  if (stages.broadcast.empty()) return Status::ok();
  const std::vector<Var> loops = s.loops(stages.broadcast);
  const int64_t last = s.state().stage(s.state().stage_index(stages.broadcast)).iters.back().extent;
  TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(stages.broadcast, loops.back(), last, lanes));
  if (loops.size() < 2) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(Var rows, s.fuse(stages.broadcast, std::vector<Var>(loops.begin(), loops.end() - 1)));
  return s.annotate(stages.broadcast, rows, IterAnnotation::kParallel);
}

Status define_pad_knob(KnobSpace* space, const OpStages& stages) {
  if (stages.pad.empty()) return Status::ok();
  return space->define_knob("pad", {kPadInline, kPadRoot, kPadAt});
}

Status place_pad(Sched& s, const OpStages& stages, const KnobConfig& config, const std::string& at_stage,
                 const Var& at_loop, int64_t lanes) {
  if (stages.pad.empty()) return Status::ok();
  switch (config.get_int("pad")) {
    case kPadInline: return s.compute_inline(stages.pad);
    case kPadAt: return s.compute_at(stages.pad, at_stage, at_loop);
    default: break;
  }
  // At the root: rows of the two outer axes in parallel, the innermost axis
  // (contiguous in memory) vectorized.
  std::vector<Var> loops = s.loops(stages.pad);
  const int64_t last = s.state().stage(s.state().stage_index(stages.pad)).iters.back().extent;
  TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(stages.pad, loops.back(), last, lanes));
  if (loops.size() >= 3) {
    TESSERA_ASSIGN_OR_RETURN(Var rows, s.fuse(stages.pad, {loops[0], loops[1]}));
    TESSERA_RETURN_IF_ERROR(s.annotate(stages.pad, rows, IterAnnotation::kParallel));
  }
  return Status::ok();
}

Result<KnobConfig> nearest_config(const KnobSpace& space,
                                  const std::vector<std::pair<std::string, std::vector<int64_t>>>& ideal) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> chosen;
  for (const Knob& k : space.knobs()) {
    const std::vector<int64_t>* want = nullptr;
    for (const auto& [name, value] : ideal)
      if (name == k.name) want = &value;
    const std::vector<int64_t>* best = &k.candidates.front();
    if (want && k.kind == KnobKind::kSplit) {
      double best_cost = INFINITY;
      for (const auto& c : k.candidates) {
        double cost = 0;
        for (size_t i = 1; i < c.size() && i < want->size(); ++i)
          if ((*want)[i] > 0)
            cost += static_cast<double>(i) * std::fabs(std::log2(double(c[i])) - std::log2(double((*want)[i])));
        if (cost < best_cost - 1e-9) {
          best_cost = cost;
          best = &c;
        }
      }
    } else if (want) {
      for (const auto& c : k.candidates)
        if (c == *want) best = &c;
    }
    chosen.emplace_back(k.name, *best);
  }
  return space.config_of(chosen);
}

SplitFilter vector_split_filter(int64_t extent, int64_t lanes) {
  const bool aligned = extent % lanes == 0;
  const int64_t max_lanes = std::min<int64_t>(kMaxVectorLanes, 4 * lanes);
  // Whole registers with a masked remainder only where nothing near a
  // register divides the extent (1009, 6625): 56 keeps its 8-lane vectors,
  // which measured 2.5x faster than 32 + a masked 24 on a depthwise conv.
  bool near_register_divides = extent <= max_lanes;
  for (int64_t d = std::max<int64_t>(1, lanes / 2); d <= lanes; d *= 2) near_register_divides |= extent % d == 0;
  const bool remainders = !aligned && !near_register_divides;
  return [=](const std::vector<int64_t>& s) {
    const int64_t v = s.back();
    if (v > max_lanes) return false;
    if (aligned) return v % lanes == 0;
    if (remainders && v % lanes == 0) return true;
    // Odd widths (7, 14, 28 of 56) become several partial registers per
    // row; keep whole registers' fractions, or the whole extent at once.
    return (v <= lanes && (v & (v - 1)) == 0) || v == extent;
  };
}

std::vector<int64_t> innermost_sizes(const Knob& knob) {
  std::set<int64_t> sizes;
  for (const auto& c : knob.candidates) sizes.insert(c.back());
  // A size that does not divide the extent is kept only where no divisor
  // comes within half of it: 14 keeps 7 (not 8 and a remainder of 6), a
  // prime keeps its powers of two.
  const auto divides = [&](int64_t s) { return knob.extent > 0 && knob.extent % s == 0; };
  std::vector<int64_t> out;
  for (int64_t s : sizes) {
    const bool near_divisor =
        std::any_of(sizes.begin(), sizes.end(), [&](int64_t d) { return divides(d) && 2 * d >= s && d <= s; });
    if (divides(s) || !near_divisor) out.push_back(s);
  }
  return out;
}

int64_t largest_at_most(const std::vector<int64_t>& sizes, int64_t limit) {
  int64_t best = sizes.front();
  for (int64_t v : sizes)
    if (v <= limit) best = v;
  return best;
}

int64_t unrolled_tile(const Knob& knob, int64_t extent, int64_t max) {
  int64_t best = 1, best_cost = INT64_MAX, best_padding = INT64_MAX;
  for (const std::vector<int64_t>& c : knob.candidates) {
    const int64_t size = c.back();
    if (size > max) continue;
    const int64_t tiles = (extent + size - 1) / size;
    const int64_t cost = tiles * (std::max(size, 3 * max / 4) + 1), padding = tiles * size - extent;
    if (std::tie(cost, padding) < std::tie(best_cost, best_padding) ||
        (cost == best_cost && padding == best_padding && size > best))
      best = size, best_cost = cost, best_padding = padding;
  }
  return best;
}

namespace {
class FindsCall : public IRVisitor {
 public:
  explicit FindsCall(CallOp call) : call_(call) {}
  bool found = false;

 protected:
  void visit(const CallNode* op) override {
    found = found || op->op == call_;
    IRVisitor::visit(op);
  }

 private:
  CallOp call_;
};

class ProductReader : public IRVisitor {
 public:
  ProductReader(const std::string& a, const std::string& b, const Var& i, const Var& j, const Var& k)
      : a_(a), b_(b), i_(i), j_(j), k_(k) {}
  ProductReads reads;

 protected:
  void visit(const TensorReadNode* op) override {
    if (op->tensor->name == a_)
      for (const Expr& index : op->indices)
        reads.a_windows = reads.a_windows || (uses_var(index, i_.node()) && uses_var(index, k_.node()));
    if (op->tensor->name == b_) {
      const size_t rank = op->indices.size();
      if (rank == 2 && op->indices[1].same_as(k_)) reads.b_is_nk = true;
      for (size_t d = 0; d < rank; ++d)
        if (uses_var(op->indices[d], j_.node())) reads.j_dim = static_cast<int>(d);
      reads.k_last =
          rank >= 2 && uses_var(op->indices[rank - 1], k_.node()) && !uses_var(op->indices[rank - 1], j_.node());
    }
    IRVisitor::visit(op);
  }

 private:
  const std::string& a_;
  const std::string& b_;
  const Var &i_, &j_, &k_;
};

}  // namespace

int64_t divisor_at_most(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

int64_t micro_kernel_rows(int64_t block, int64_t want) {
  const int64_t d = divisor_at_most(block, want), most = std::min(block, want);
  return 2 * d >= most ? d : most;
}

Status store_dimension_innermost(Sched& s, const std::string& stage, int dim) {
  const std::vector<Var> loops = s.loops(stage);
  std::vector<int> order;
  std::vector<Var> loop_order;
  for (size_t d = 0; d < loops.size(); ++d) {
    if (static_cast<int>(d) == dim) continue;
    order.push_back(static_cast<int>(d));
    loop_order.push_back(loops[d]);
  }
  order.push_back(dim);
  loop_order.push_back(loops[static_cast<size_t>(dim)]);
  TESSERA_RETURN_IF_ERROR(s.storage_order(stage, order));
  return s.reorder(stage, loop_order);
}

ProductReads product_reads(const ComputeOpNode& op, const std::string& a, const std::string& b, const Var& i,
                           const Var& j, const Var& k) {
  ProductReader reader(a, b, i, j, k);
  reader(op.body);
  return reader.reads;
}

namespace {
bool sums_calls(const ComputeDAG& dag, const OpStages& stages, CallOp call) {
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = t->name == stages.main ? compute_op(t) : nullptr;
    if (!op) continue;
    FindsCall finds(call);
    finds(op->body);
    return finds.found;
  }
  return false;
}
}  // namespace

bool sums_int8_dots(const ComputeDAG& dag, const OpStages& stages) {
  return sums_calls(dag, stages, CallOp::kDotU8S8);
}

bool sums_bf16_dots(const ComputeDAG& dag, const OpStages& stages) {
  return sums_calls(dag, stages, CallOp::kDotBf16);
}

int64_t preferred_vector_width(const std::vector<int64_t>& sizes, int64_t lanes) {
  std::vector<int64_t> whole;
  for (int64_t v : sizes)
    if (v % lanes == 0) whole.push_back(v);
  if (!whole.empty()) return nearest_size(whole, 2 * lanes);
  int64_t best = 1;
  for (int64_t v : sizes)
    if ((v & (v - 1)) == 0) best = std::max(best, v);
  return best;
}

int64_t nearest_size(const std::vector<int64_t>& sizes, int64_t want) {
  int64_t best = sizes.front();
  for (int64_t v : sizes)
    if (std::fabs(std::log2(double(v) / want)) < std::fabs(std::log2(double(best) / want)) - 1e-9) best = v;
  return best;
}

int64_t amx_tile_rows(int64_t m, int64_t min_rows) {
  for (int64_t r = kAmxTile; r >= min_rows; --r)
    if (m % r == 0) return r;
  return 0;
}

SplitFilter amx_split_filter(int64_t extent, int64_t tile, int64_t max_inner) {
  return [=](const std::vector<int64_t>& s) {
    int64_t product = 1;
    for (int64_t f : s) product *= f;
    return product == extent && s.back() % tile == 0 && s.back() <= max_inner;
  };
}

SplitFilter unrolled_split_filter(int64_t max) {
  return [=](const std::vector<int64_t>& s) { return s.back() <= max; };
}

std::vector<IterAnnotation> unroll_choices(int64_t extent, int64_t max_extent) {
  if (extent > 1 && extent <= max_extent) return {IterAnnotation::kNone, IterAnnotation::kUnroll};
  return {IterAnnotation::kNone};
}

}  // namespace tessera::template_detail
