// The depthwise conv2d template over NHWC.
//
// Channels are contiguous in NHWC, and a depthwise conv keeps them apart, so
// the micro-kernel is the NHWC conv's without its channel reduction: qr
// output columns (unrolled) x kv output channels (vectorized), accumulated in
// registers across the window taps (ry, rx), which run around it. Each tap
// loads kv/lanes weight vectors and one input vector per column: the
// contiguous channel vector is the same whatever the stride, so stride 2
// costs no gathers (where NCHW vectorizes along the strided columns).
//
// out[n, p, q, k]: blocks of [pb rows x qb columns x kb channels] run in
// parallel; the sums accumulate in a local buffer computed at the block:
//   local: n p q k ry rx -> n p <order of q.0 k.0> ry rx q.1 k.1
// The elementwise tail (bias, ReLU / Clip, HardSigmoid·x, HardSwish, a
// residual add) is inlined into the output's copy; a tail that broadcasts
// over a larger tensor runs after it.
//
// Knobs: tile_k [Ko, kb/kv, kv], tile_q [Qo, qb/qr, qr], tile_p [Po, pb],
// order (q.0 k.0 or k.0 q.0), blocks (the blocks' order: n p q k, or k n p
// q, a thread walking down the rows of one channel block, whose input rows
// stay in L1), unroll (q.1, ry, rx), pad (inline, root, or per block).
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

struct DepthwiseNhwc {
  OpStages stages;
  int64_t p = 0, q = 0, k = 0, r = 0, s = 0;
};

Result<DepthwiseNhwc> analyze(const ComputeDAG& dag) {
  DepthwiseNhwc d;
  TESSERA_ASSIGN_OR_RETURN(d.stages,
                           find_op_stages(dag, OpPattern::kComplex, "depthwise_conv2d_nhwc", /*allow_broadcast=*/true));
  const OpStages& st = d.stages;
  if (st.shape.size() != 4 || st.reduce.size() != 2)
    return Status(ErrorCode::kInvalidArgument, "template depthwise_conv2d_nhwc: " + st.main +
                                                   " is not a 2-D window over NHWC (rank 4; reduce axes ry, rx)");
  d.p = st.shape[1], d.q = st.shape[2], d.k = st.shape[3];
  d.r = st.reduce[0], d.s = st.reduce[1];
  return d;
}

}  // namespace

Result<KnobSpace> define_depthwise_nhwc(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(DepthwiseNhwc d, analyze(dag));
  const int64_t lanes = target.vector_lanes(d.stages.dtype);
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_k", d.k, SplitPolicy::tiles(), 3, vector_split_filter(d.k, lanes)));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_q", d.q, SplitPolicy::tiles(), 3, unrolled_split_filter()));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_p", d.p, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_reorder("order", {{0, 1}, {1, 0}}));
  TESSERA_RETURN_IF_ERROR(space.define_reorder("blocks", {{0, 1, 2, 3}, {3, 0, 1, 2}}));
  TESSERA_RETURN_IF_ERROR(space.define_annotate(
      "unroll", {{IterAnnotation::kUnroll, IterAnnotation::kNone}, unroll_choices(d.r), unroll_choices(d.s)}));
  TESSERA_RETURN_IF_ERROR(define_pad_knob(&space, d.stages));
  return space;
}

Status apply_depthwise_nhwc(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(DepthwiseNhwc d, analyze(state->dag()));
  const int64_t lanes = target.vector_lanes(d.stages.dtype);
  const std::vector<int64_t>& tk = cfg.get("tile_k");
  const std::vector<int64_t>& tq = cfg.get("tile_q");
  const std::vector<int64_t>& unroll = cfg.get("unroll");
  Sched s(state);
  TESSERA_ASSIGN_OR_RETURN(const std::string local, accumulator(s, d.stages));
  const std::string& out = d.stages.output;
  const std::vector<int64_t> block = {1, cfg.get("tile_p")[1], tq[1] * tq[2], tk[1] * tk[2]};
  TESSERA_ASSIGN_OR_RETURN(Var tile, tile_output_blocks(s, out, block, lanes, cfg.get("blocks")));
  TESSERA_RETURN_IF_ERROR(s.compute_at(local, out, tile));

  // local: n p q k ry rx -> n p <order of q.0 k.0> ry rx q.1 k.1
  const std::vector<Var> loops = s.loops(local);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> q, s.split(local, loops[2], {tq[2]}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> k, s.split(local, loops[3], {tk[2]}));
  const Var outer[] = {q[0], k[0]};
  std::vector<Var> order = {loops[0], loops[1]};
  for (int64_t o : cfg.get("order")) order.push_back(outer[o]);
  order.insert(order.end(), {loops[4], loops[5], q[1], k[1]});
  TESSERA_RETURN_IF_ERROR(s.reorder(local, order));
  TESSERA_RETURN_IF_ERROR(s.annotate(local, q[1], static_cast<IterAnnotation>(unroll[0])));
  TESSERA_RETURN_IF_ERROR(s.annotate(local, loops[4], static_cast<IterAnnotation>(unroll[1])));
  TESSERA_RETURN_IF_ERROR(s.annotate(local, loops[5], static_cast<IterAnnotation>(unroll[2])));
  TESSERA_RETURN_IF_ERROR(s.annotate(local, k[1], IterAnnotation::kVectorize));
  TESSERA_RETURN_IF_ERROR(place_pad(s, d.stages, cfg, local, loops[0], lanes));
  if (!d.stages.pad.empty() && cfg.get_int("pad") == kPadAt) {
    // The block's padded input, copied with the channels vectorized.
    const Var channels = s.loops(d.stages.pad).back();
    TESSERA_ASSIGN_OR_RETURN(int64_t extent, s.inferred_extent(d.stages.pad, channels));
    TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(d.stages.pad, channels, extent, lanes));
  }
  return schedule_broadcast(s, d.stages, lanes);
}

Result<KnobConfig> fallback_depthwise_nhwc(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(DepthwiseNhwc d, analyze(dag));
  const int64_t lanes = target.vector_lanes(d.stages.dtype);
  // One vector of channels per block, a block one whole output row, and the
  // blocks walking down the rows of one channel block in a thread (blocks =
  // k n p q): the input rows a window reads stay in L1, where blocks of
  // every channel (n p q k) re-read them from L2. The columns are unrolled
  // by a quarter of the vector registers; the window around them. The pad is
  // read in place: a tap's load outside the input is guarded by its address
  // (the row and column conditions are the same for every channel lane), so
  // the window costs no copy. MobileNet's 144 x 56 x 56 on AVX-512 against
  // oneDNN: 0.96 and 1.02 at stride 1 and 2 (48 channels a block, every
  // channel block before the next row: 0.83 and 0.72; with the pad computed
  // once at the root: 0.50 and 0.36).
  const std::vector<int64_t> channel_sizes = innermost_sizes(*space.find("tile_k"));
  const int64_t kv = std::find(channel_sizes.begin(), channel_sizes.end(), lanes) != channel_sizes.end()
                         ? lanes
                         : preferred_vector_width(channel_sizes, lanes);
  const int64_t regs_per_column = (kv + lanes - 1) / lanes;
  const int64_t qr = largest_at_most(innermost_sizes(*space.find("tile_q")),
                                     std::max<int64_t>(1, target.vector_registers() / 8 / regs_per_column));
  const int64_t unroll = static_cast<int64_t>(IterAnnotation::kUnroll);
  return nearest_config(space, {{"tile_k", {0, 1, kv}},
                                {"tile_q", {1, (d.q + qr - 1) / qr, qr}},
                                {"tile_p", {0, 1}},
                                {"order", {0, 1}},
                                {"blocks", {3, 0, 1, 2}},
                                {"unroll", {unroll, d.r <= 16 ? unroll : 0, d.s <= 16 ? unroll : 0}},
                                {"pad", {kPadInline}}});
}

}  // namespace tessera::template_detail
