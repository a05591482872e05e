#include "compiler/space/choose/generic_schedule.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/arith/linear.h"
#include "compiler/ir/functor.h"
#include "compiler/lower/lower.h"
#include "compiler/space/knob/template_util.h"

namespace tessera {
namespace {

using template_detail::Sched;

// Below this many loop iterations (spatial x reduction) a parallel launch
// costs more than it saves: the thread pool's wake-up is a few microseconds,
// about what 64k scalar iterations or 4k vector ones take.
constexpr int64_t kMinParallelWork = 1 << 16;

int64_t elements(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t->shape) n *= d;
  return n;
}

// A stage that reads only reductions' results and is much smaller than
// the DAG's output (a channels-last instance norm's inverse deviation, one
// per channel): inlined, every output vector would recompute it (a division
// and a square root each); at the root it is computed once an element.
bool of_statistics(const ComputeDAG& dag, const Tensor& t) {
  const std::vector<Tensor> inputs = input_tensors(t);
  const bool reads_statistics = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& in) {
    const ComputeOpNode* op = compute_op(in);
    return op && !op->reduce_axes.empty();
  });
  const bool reads_only_statistics = std::all_of(inputs.begin(), inputs.end(), [](const Tensor& in) {
    const ComputeOpNode* op = compute_op(in);
    return !op || !op->reduce_axes.empty();
  });
  int64_t largest_output = 0;
  for (const Tensor& out : dag.tensors())
    if (dag.is_output(out)) largest_output = std::max(largest_output, elements(out));
  return reads_statistics && reads_only_statistics && 16 * elements(t) <= largest_output;
}

bool inlinable(const ComputeDAG& dag, const Tensor& t) {
  const ComputeOpNode* op = compute_op(t);
  if (op == nullptr || dag.is_output(t) || !op->reduce_axes.empty() || of_statistics(dag, t)) return false;
  return op->pattern == OpPattern::kElementwise || op->pattern == OpPattern::kBroadcast ||
         op->pattern == OpPattern::kInjective;
}

// The vectorized width of an axis of `extent` (as the templates choose it),
// or 1 for an axis shorter than a few lanes, where a vector does not pay.
int64_t vector_width(int64_t extent, int64_t lanes) {
  if (extent < std::min<int64_t>(lanes, 4)) return 1;
  return template_detail::divisor_vector_width(extent, lanes);
}

// A root stage: [outer spatial loops, fused and parallel] [reduction loops]
// [the innermost spatial axis's vector part].
// How a root stage is scheduled: `probe` stops after the vector split (to
// read the accesses' strides); `contiguous_axis` names the loop that walks
// the input's contiguous axis where the vector reads across input rows.
struct RootOptions {
  bool probe = false;
  std::string contiguous_axis;
  int64_t line_elements = 16;  ///< elements of a 64-byte cache line
};

// A transpose: each lane of the vector reads another input row. The loop
// along the rows' contiguous axis (options.contiguous_axis, one of `outer`)
// is tiled by a cache line's elements and its tile goes last in `outer`,
// right outside the vector: a tile reads one line of each of the vector's
// rows and writes one line of each of its own rows, whole, and code
// generation loads the block as rows and transposes it in registers. (Only a vector
// of a whole line or more writes whole lines: with a narrower one a tile
// writes parts of many lines, and the caller keeps the plain order.)
// Whether it applied.
Result<bool> tile_contiguous_axis(Sched& s, const std::string& name, const RootOptions& options,
                                  std::vector<Var>& outer) {
  const Stage& stage = s.state().stage(s.state().stage_index(name));
  for (size_t i = 0; i + 1 < outer.size(); ++i) {
    if (outer[i].as<VarNode>()->name != options.contiguous_axis) continue;
    const int64_t extent = stage.iters[stage.iter_index(outer[i])].extent;
    // A tile that does not divide the axis splits it into whole tiles
    // and a guarded last one (lowering partitions the loop): the whole
    // ones transpose in registers (codegen's emit_transposed_tile).
    Var inner = outer[i];
    if (extent > options.line_elements) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<Var> parts, s.split(name, outer[i], {options.line_elements}));
      outer[i] = parts[0];
      inner = parts[1];
    } else {
      outer.erase(outer.begin() + static_cast<std::ptrdiff_t>(i));
    }
    outer.push_back(inner);
    return true;
  }
  return false;
}

Status schedule_root_stage(Sched& s, const std::string& name, int64_t lanes, const Target& target,
                           const RootOptions& options) {
  const Stage& stage = s.state().stage(s.state().stage_index(name));
  std::vector<Var> spatial, reduce;
  int64_t work = 1;
  int last = -1;  // the innermost spatial loop that is not trivial
  for (const Iter& it : stage.iters) {
    (it.kind == IterKind::kSpatial ? spatial : reduce).push_back(it.var);
    work *= it.extent;
    if (it.kind == IterKind::kSpatial && it.extent > 1) last = static_cast<int>(spatial.size()) - 1;
  }
  std::vector<Var> outer = spatial, vector;
  // A short power-of-two innermost axis (4 channels of an NHWC image) joins
  // the axis outside it, so that a vector holds several of its rows: one
  // vector every 4 elements was the input's channel pad and transpose at
  // 0.7 ns an element. Where an access splits the fused index again, its
  // division and remainder merge back (arith::linear_form) or are shifts.
  if (last >= 1 && last == static_cast<int>(spatial.size()) - 1) {
    const int64_t extent = stage.iters[stage.iter_index(spatial[last])].extent;
    const int64_t outside = stage.iters[stage.iter_index(spatial[last - 1])].extent;
    if (extent < lanes && (extent & (extent - 1)) == 0 && outside > 1) {
      TESSERA_ASSIGN_OR_RETURN(Var fused, s.fuse(name, {spatial[last - 1], spatial[last]}));
      spatial.erase(spatial.begin() + last);
      spatial[last - 1] = fused;
      --last;
      outer = spatial;
    }
  }
  int64_t vector_lanes = 1;
  if (last >= 0) {
    const int64_t extent = stage.iters[stage.iter_index(spatial[last])].extent;
    int64_t width = vector_width(extent, lanes);
    // A long axis that no vector divides (101 frames, 3199 samples): whole
    // vectors and a masked remainder, not a scalar loop.
    if (width == 1 && extent > 4 * lanes) width = lanes;
    if (width == extent) {
      vector = {spatial[last]};
      outer.erase(outer.begin() + last);
    } else if (width > 1) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<Var> parts, s.split(name, spatial[last], {width}));
      outer[last] = parts[0];
      vector = {parts[1]};
    }
    vector_lanes = std::min(width, extent);
  }
  if (options.probe) {
    if (!vector.empty()) TESSERA_RETURN_IF_ERROR(s.annotate(name, vector[0], IterAnnotation::kVectorize));
    return Status::ok();
  }
  bool moved = false;
  if (!options.contiguous_axis.empty() && !vector.empty() && reduce.empty() && vector_lanes >= options.line_elements) {
    TESSERA_ASSIGN_OR_RETURN(moved, tile_contiguous_axis(s, name, options, outer));
  }
  std::vector<Var> order = outer;
  order.insert(order.end(), reduce.begin(), reduce.end());
  order.insert(order.end(), vector.begin(), vector.end());
  if ((!reduce.empty() && !vector.empty()) || moved) TESSERA_RETURN_IF_ERROR(s.reorder(name, order));
  if (!vector.empty()) TESSERA_RETURN_IF_ERROR(s.annotate(name, vector[0], IterAnnotation::kVectorize));
  // A transpose costs several times a copy an element (each tile reads a
  // line of each of 16 rows): it pays for a launch at a quarter of the work.
  if (outer.empty() || work < (moved ? kMinParallelWork / 4 : kMinParallelWork)) return Status::ok();
  // The parallel loop fuses the outer loops, only as many as give every
  // thread several chunks: a loop left inside keeps its index plain, where
  // fusing it would split the fused index again by division and remainder
  // in every access (a transpose reads i / 3199 + i % 3199 * 512).
  size_t fused_count = 0;
  int64_t chunks = 1;
  while (fused_count < outer.size() && chunks < 8 * int64_t{target.num_cores}) {
    chunks *= stage.iters[stage.iter_index(outer[fused_count])].extent;
    ++fused_count;
  }
  if (fused_count == 1) return s.annotate(name, outer[0], IterAnnotation::kParallel);
  TESSERA_ASSIGN_OR_RETURN(Var fused, s.fuse(name, std::vector<Var>(outer.begin(), outer.begin() + fused_count)));
  return s.annotate(name, fused, IterAnnotation::kParallel);
}

// A reduction to one value (every spatial extent 1: a dynamic quantization's
// minimum and maximum, a loss) has no spatial loop to vectorize: a serial
// scalar loop over the whole tensor. Whether rfactor applies: the innermost
// reduce axis holds two vectors or more.
bool reduces_to_one_value(const Stage& stage, int64_t lanes) {
  if (stage.reduce_axes.empty() || lanes < 2 || stage.reduce_axes.back()->extent < 2 * lanes) return false;
  for (const IterVar& a : stage.axes)
    if (a->extent != 1) return false;
  return true;
}

// Then `lanes` partial results along the innermost reduce axis
// (name + ".rf", computed at the root), accumulated as one vector; the
// stage itself reduces the vector.
Status schedule_partial_results(Sched& s, const std::string& name, int64_t lanes) {
  const Stage& stage = s.state().stage(s.state().stage_index(name));
  TESSERA_RETURN_IF_ERROR(s.rfactor(name, static_cast<int>(stage.reduce_axes.size()) - 1, lanes));
  return s.vectorize_partial_results(name + ".rf");
}

// Where `f` stores whole vectors of contiguous elements read with a stride
// (a transpose's inner loop: each lane of such a load is another row of the
// input), the loop that walks the rows' contiguous axis: the variable whose
// coefficient in that load's index is 1. Empty where there is none.
std::string contiguous_axis_of_strided_reads(const PrimFunc& f) {
  struct Finder : IRVisitor {
    bool contiguous_store = false;
    std::string axis;
    void visit(const StoreNode* op) override {
      const auto* ramp = op->index.as<RampNode>();
      int64_t stride = 0;
      contiguous_store = contiguous_store || (ramp && is_const_int(ramp->stride, &stride) && stride == 1);
      IRVisitor::visit(op);
    }
    void visit(const LoadNode* op) override {
      const auto* ramp = op->index.as<RampNode>();
      int64_t stride = 0;
      if (ramp && is_const_int(ramp->stride, &stride) && stride > 1 && axis.empty())
        for (const auto& [atom, coef] : arith::linear_form(ramp->base).terms)
          if (const auto* v = atom.as<VarNode>(); v && coef == 1) axis = v->name;
      IRVisitor::visit(op);
    }
  } finder;
  finder(f.body);
  return finder.contiguous_store ? finder.axis : std::string();
}

Result<State> schedule(std::shared_ptr<const ComputeDAG> dag, const Target& target, const RootOptions& options) {
  State state(dag);
  Sched s(&state);
  for (const Tensor& t : dag->tensors())
    if (inlinable(*dag, t)) TESSERA_RETURN_IF_ERROR(s.compute_inline(t->name));
  for (const Tensor& t : dag->tensors()) {
    if (compute_op(t) == nullptr || inlinable(*dag, t)) continue;
    const int64_t lanes = target.vector_lanes(t->dtype);
    RootOptions stage_options = options;
    stage_options.line_elements = std::max<int64_t>(1, 64 / std::max<int64_t>(1, t->dtype.storage_bytes()));
    if (reduces_to_one_value(state.stage(state.stage_index(t->name)), lanes))
      TESSERA_RETURN_IF_ERROR(schedule_partial_results(s, t->name, lanes));
    else
      TESSERA_RETURN_IF_ERROR(schedule_root_stage(s, t->name, lanes, target, stage_options));
  }
  return state;
}

}  // namespace

Result<State> generic_schedule(std::shared_ptr<const ComputeDAG> dag, const Target& target) {
  if (!dag) return Status(ErrorCode::kInvalidArgument, "generic_schedule: no DAG");
  TESSERA_ASSIGN_OR_RETURN(State plain, schedule(dag, target, {}));
  // One stage that moves data across rows (a transpose, alone or with
  // elementwise work): its loops tiled around the input's contiguous axis.
  size_t stages = 0;
  for (const Tensor& t : dag->tensors()) stages += compute_op(t) != nullptr && !inlinable(*dag, t);
  if (stages != 1) return plain;
  RootOptions probe;
  probe.probe = true;
  TESSERA_ASSIGN_OR_RETURN(State probed, schedule(dag, target, probe));
  auto lowered = lower(probed, "probe");
  if (!lowered.is_ok()) return plain;
  RootOptions tiled;
  tiled.contiguous_axis = contiguous_axis_of_strided_reads(*lowered);
  if (tiled.contiguous_axis.empty()) return plain;
  return schedule(dag, target, tiled);
}

}  // namespace tessera
