// Templates of the window operators without channel reduction: depthwise
// conv2d (NCHW) and pooling (max, average, global average).
//
// The depthwise conv takes the operator library's form and a model's grouped
// conv with one input channel per group (a channel multiplier above 1), with
// the elementwise tail a model fuses into it (bias, ReLU / Clip,
// HardSigmoid, HardSwish, a residual add) inlined into the output stage.
//
// Both slide a small window over rows and columns, so they vectorize along
// the output columns (contiguous in NCHW) and unroll the window loops; they
// are memory-bound, so the knobs are mostly about parallel granularity and
// the vector width.
//
// depthwise: output blocks [cb channels x pb rows x qb columns] run in
// parallel; the sums accumulate in a local buffer computed at the block,
// with qv columns vectorized inside or outside the window loops.
// Knobs: tile_c [Co, cb], tile_p [Po, pb], tile_q [Qo, qb/qv, qv], order (of
// q.0 ry rx), unroll (ry, rx), pad.
//
// pooling: max pooling reduces straight into the output; average pooling
// computes its window sum (the ".sum" stage) per qv columns of the output
// row that divides it. Rows of pb run in parallel with the channels.
// Knobs: tile_p [Po, pb], tile_q [Qo, qv], unroll (ry, rx), pad.
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

struct Window {
  OpStages stages;
  int64_t c = 0, p = 0, q = 0, r = 0, s = 0;
  bool unit_channel = false;  // a grouped conv's reduction over one input channel precedes ry, rx
};

Result<Window> analyze(const ComputeDAG& dag, OpPattern pattern, const std::string& name, bool allow_broadcast) {
  Window w;
  TESSERA_ASSIGN_OR_RETURN(w.stages, find_op_stages(dag, pattern, name, allow_broadcast));
  const OpStages& st = w.stages;
  // A model's depthwise conv with a channel multiplier above 1 is a grouped
  // conv2d (compiler/graph/build_node.cc): reduce axes rc (extent 1), ry, rx.
  w.unit_channel = pattern == OpPattern::kComplex && st.reduce.size() == 3 && st.reduce[0] == 1;
  if (st.shape.size() != 4 || st.reduce.size() != (w.unit_channel ? 3u : 2u))
    return Status(ErrorCode::kInvalidArgument,
                  "template " + name + ": " + st.main +
                      " is not a 2-D window over NCHW (rank 4; reduce axes ry, rx, or rc of one channel, ry, rx)");
  const size_t r0 = w.unit_channel ? 1 : 0;
  w.c = st.shape[1], w.p = st.shape[2], w.q = st.shape[3];
  w.r = st.reduce[r0], w.s = st.reduce[r0 + 1];
  return w;
}

Result<Window> depthwise(const ComputeDAG& dag) {
  return analyze(dag, OpPattern::kComplex, "depthwise_conv2d_nchw", /*allow_broadcast=*/true);
}
Result<Window> pool(const ComputeDAG& dag) {
  return analyze(dag, OpPattern::kReduction, "pool2d", false);
}

// The vector of output columns for an untuned schedule: whole registers
// where they divide the row; a row of at most two registers that they do
// not divide (28 columns of a stride-2 layer) at once, unmasked: 16 lanes
// and a masked 12 measured 2.3-3x slower on the 144 x 56^2 stride-2 depthwise
// conv, the accumulator's masked stores feeding the next tap's loads.
int64_t row_vector_width(const KnobSpace& space, int64_t q, int64_t lanes) {
  const std::vector<int64_t> sizes = innermost_sizes(*space.find("tile_q"));
  const int64_t vec = preferred_vector_width(sizes, lanes);
  if (q % vec != 0 && q <= 2 * lanes && std::find(sizes.begin(), sizes.end(), q) != sizes.end()) return q;
  return vec;
}

Status define_window_unroll(KnobSpace* space, const Window& w) {
  return space->define_annotate("unroll", {unroll_choices(w.r), unroll_choices(w.s)});
}

Status annotate_window(Sched& s, const std::string& stage, const KnobConfig& cfg, const Var& ry, const Var& rx) {
  const std::vector<int64_t>& unroll = cfg.get("unroll");
  TESSERA_RETURN_IF_ERROR(s.annotate(stage, ry, static_cast<IterAnnotation>(unroll[0])));
  return s.annotate(stage, rx, static_cast<IterAnnotation>(unroll[1]));
}

}  // namespace

// ---------------------------------------------------------------------------
// depthwise conv2d

Result<KnobSpace> define_depthwise(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Window w, depthwise(dag));
  const int64_t lanes = target.vector_lanes(w.stages.dtype);
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_c", w.c, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_p", w.p, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_q", w.q, SplitPolicy::tiles(), 3, vector_split_filter(w.q, lanes)));
  TESSERA_RETURN_IF_ERROR(space.define_reorder("order", {{0, 1, 2}, {1, 2, 0}}));
  TESSERA_RETURN_IF_ERROR(define_window_unroll(&space, w));
  TESSERA_RETURN_IF_ERROR(define_pad_knob(&space, w.stages));
  return space;
}

Status apply_depthwise(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(Window w, depthwise(state->dag()));
  const int64_t lanes = target.vector_lanes(w.stages.dtype);
  const std::vector<int64_t>& tq = cfg.get("tile_q");
  Sched s(state);
  TESSERA_ASSIGN_OR_RETURN(const std::string local, accumulator(s, w.stages));
  const std::string& out = w.stages.output;
  const std::vector<int64_t> block = {1, cfg.get("tile_c")[1], cfg.get("tile_p")[1], tq[1] * tq[2]};
  TESSERA_ASSIGN_OR_RETURN(Var tile, tile_output_blocks(s, out, block, lanes));
  TESSERA_RETURN_IF_ERROR(s.compute_at(local, out, tile));

  // local: n c p q [rc] ry rx -> n c p [rc] <order of q.0 ry rx> q.1
  const std::vector<Var> loops = s.loops(local);
  const size_t ry = w.unit_channel ? 5 : 4;
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> q, s.split(local, loops[3], {tq[2]}));
  const Var inner[] = {q[0], loops[ry], loops[ry + 1]};
  std::vector<Var> order = {loops[0], loops[1], loops[2]};
  if (w.unit_channel) order.push_back(loops[4]);
  for (int64_t o : cfg.get("order")) order.push_back(inner[o]);
  order.push_back(q[1]);
  TESSERA_RETURN_IF_ERROR(s.reorder(local, order));
  TESSERA_RETURN_IF_ERROR(annotate_window(s, local, cfg, loops[ry], loops[ry + 1]));
  TESSERA_RETURN_IF_ERROR(s.annotate(local, q[1], IterAnnotation::kVectorize));
  TESSERA_RETURN_IF_ERROR(place_pad(s, w.stages, cfg, local, loops[1], lanes));
  return schedule_broadcast(s, w.stages, lanes);
}

Result<KnobConfig> fallback_depthwise(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Window w, depthwise(dag));
  const int64_t lanes = target.vector_lanes(w.stages.dtype);
  // Whole rows of a few channels per task, one vector of columns kept in
  // registers across the unrolled window, the pad computed once at the root.
  const int64_t unroll = static_cast<int64_t>(IterAnnotation::kUnroll);
  const int64_t vec = row_vector_width(space, w.q, lanes);
  return nearest_config(space, {{"tile_c", {0, 4}},
                                {"tile_p", {0, 8}},
                                {"tile_q", {0, w.q / vec, vec}},
                                {"order", {0, 1, 2}},
                                {"unroll", {w.r <= 16 ? unroll : 0, w.s <= 16 ? unroll : 0}},
                                {"pad", {kPadRoot}}});
}

// ---------------------------------------------------------------------------
// pooling

Result<KnobSpace> define_pool(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Window w, pool(dag));
  const int64_t lanes = target.vector_lanes(w.stages.dtype);
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_p", w.p, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_q", w.q, SplitPolicy::tiles(), 2, vector_split_filter(w.q, lanes)));
  TESSERA_RETURN_IF_ERROR(define_window_unroll(&space, w));
  TESSERA_RETURN_IF_ERROR(define_pad_knob(&space, w.stages));
  return space;
}

Status apply_pool(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(Window w, pool(state->dag()));
  const int64_t lanes = target.vector_lanes(w.stages.dtype);
  const int64_t pb = cfg.get("tile_p")[1], qv = cfg.get("tile_q")[1];
  const IterAnnotation vector = qv > 1 ? IterAnnotation::kVectorize : IterAnnotation::kNone;
  Sched s(state);
  for (const std::string& tail : w.stages.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(tail));
  const std::string& main = w.stages.main;
  const std::string& out = w.stages.output;

  // out: n c p q [ry rx] -> (n c p.0) p.1 q.0 [ry rx] q.1, rows in parallel.
  const std::vector<Var> loops = s.loops(out);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> p, s.split(out, loops[2], {pb}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> q, s.split(out, loops[3], {qv}));
  std::vector<Var> order = {loops[0], loops[1], p[0], p[1], q[0]};
  if (main == out) order.insert(order.end(), {loops[4], loops[5]});
  order.push_back(q[1]);
  TESSERA_RETURN_IF_ERROR(s.reorder(out, order));
  TESSERA_ASSIGN_OR_RETURN(Var rows, s.fuse(out, {loops[0], loops[1], p[0]}));
  TESSERA_RETURN_IF_ERROR(s.annotate(out, rows, IterAnnotation::kParallel));
  TESSERA_RETURN_IF_ERROR(s.annotate(out, q[1], vector));
  if (main == out) {
    TESSERA_RETURN_IF_ERROR(annotate_window(s, out, cfg, loops[4], loops[5]));
    return place_pad(s, w.stages, cfg, out, rows, lanes);
  }

  // The window sum of qv columns, computed where the output needs them:
  // n c p q ry rx -> n c p ry rx q, q (qv wide) vectorized.
  TESSERA_RETURN_IF_ERROR(s.compute_at(main, out, q[0]));
  const std::vector<Var> sum = s.loops(main);
  TESSERA_RETURN_IF_ERROR(s.reorder(main, {sum[0], sum[1], sum[2], sum[4], sum[5], sum[3]}));
  TESSERA_RETURN_IF_ERROR(annotate_window(s, main, cfg, sum[4], sum[5]));
  TESSERA_RETURN_IF_ERROR(s.annotate(main, sum[3], vector));
  return place_pad(s, w.stages, cfg, main, sum[0], lanes);
}

Result<KnobConfig> fallback_pool(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Window w, pool(dag));
  const int64_t lanes = target.vector_lanes(w.stages.dtype);
  // A vector of output columns per step, the window unrolled, a few rows per
  // parallel task; the pad (a select) inlined, as pooling reads each input
  // element only a few times.
  const int64_t unroll = static_cast<int64_t>(IterAnnotation::kUnroll);
  return nearest_config(space, {{"tile_p", {0, 4}},
                                {"tile_q", {0, row_vector_width(space, w.q, lanes)}},
                                {"unroll", {w.r <= 16 ? unroll : 0, w.s <= 16 ? unroll : 0}},
                                {"pad", {kPadInline}}});
}

}  // namespace tessera::template_detail
