// The direct conv2d templates, NCHW and NHWC.
//
// Both have the gemm template's shape: output blocks run in parallel, each
// block's sums accumulate in a local buffer computed at the block, and the
// innermost loops form a register micro-kernel over two output axes while the
// reduction (input channels, window rows, window columns) runs around it.
//
//  NCHW  out[n, k, p, q]: kr output channels (unrolled) x qv output columns
//        (vectorized: the input rows are contiguous along q when stride is 1,
//        the weights are broadcast).
//  NHWC  out[n, p, q, k]: qr output columns (unrolled) x kv output channels
//        (vectorized: the weights are contiguous along k, the input is
//        broadcast) -- a gemm with R*S*C as its reduction.
//
// The pad stage is inlined (reads guarded by selects), computed at the root,
// or computed per block of input channels (the "pad" knob). The elementwise
// tail (bias, activations, a residual add) is inlined into the output; a tail
// that broadcasts the result over a larger tensor (a squeeze-excite block's
// x * hardsigmoid(conv(...))) runs after it as an elementwise loop.
//
// Grouped convolutions (and depthwise ones in NHWC) fit as they are: each
// output channel's reduction reads the input channels of its group.
//
// NHWC stores the weights packed by the vector width of the micro-kernel
// (layout.h), so each block of output channels reads them sequentially.
//
// On a target with AMX, an ungrouped NHWC conv of int8 words (AMX-INT8) or of
// bfloat16 pairs (AMX-BF16) whose channels are whole tiles (K a multiple of
// 16, C of 16 words) runs its micro-kernel on the matrix unit: the nest
// ry rx rc.1 p.1 q.1 k.1 is tensorized (LoopKind::kTensorized), a tile's
// rows being output columns (A's rows the input pixels a stride apart in the
// pad stage, computed at the root), its columns output channels, and its
// reduction the window and the input channels, C's tiles kept in the unit
// across all of them (compiler/codegen/llvm_tile.cc); p.1, up to 8 output
// rows, is a second loop of rows. Its splits are exact and whole tiles: q.1
// one or two tiles of the most rows (up to 16, at least 8 for int8, 7 for
// bfloat16) that divide Q (14 for 56, 28 and 14), k.1 up to four tiles.
//
// Knobs: tile_k, tile_p, tile_q, tile_c (input channels [Co, cb]), order (of
// the block loops rc.0, p and the two micro-kernel outer loops), unroll (the
// unrolled micro-kernel axis, window rows, window columns), pad, and with
// AMX tensorize (1: the micro-kernel on tiles).
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

struct Conv {
  OpStages stages;
  int64_t k = 0, p = 0, q = 0, c = 0, r = 0, s = 0;  // output channels, rows, columns; reduction
};

// The rows of the AMX tiles the conv runs on (see the top of the file), 0
// where it does not: NHWC, u8 x s8 words or bfloat16 pairs of bfloat16 X,
// ungrouped (C input channels reduced by every output channel), whole tiles
// of channels, and tiles of enough rows. A 7 x 7 output's int8 tiles of 7
// rows ran slower than the vector unit (3 x 3 x 512 channels, Sapphire
// Rapids: 555-1238 against 1093-1320 GOP/s; a strided 1 x 1 into 7 columns
// 557-663 against 753-1119): each B tile, loaded for one A tile of 7 rows,
// bounds the loop. Its bfloat16 tiles of 7 rows ran at 338-487 GFLOP/s
// against the vector unit's 127-140.
int64_t amx_conv_tile_rows(const Conv& cv, const ComputeDAG& dag, const Target& target, bool nhwc) {
  if (!nhwc || cv.k % kAmxTile || cv.c % kAmxTile) return 0;
  const bool int8 = target.amx_int8 && sums_int8_dots(dag, cv.stages);
  const bool bf16 = target.amx_bf16 && sums_bf16_dots(dag, cv.stages);
  for (const Tensor& t : dag.tensors()) {
    if (t->name != cv.stages.inputs[0] || t->shape.size() != 4) continue;
    const int64_t channels = cv.c * (int8 ? 4 : 2);
    const bool unit = int8 || (bf16 && t->dtype == DType::bf16());
    return unit && t->shape[3] == channels ? amx_tile_rows(cv.q, int8 ? 8 : 7) : 0;
  }
  return 0;
}

Result<KnobSpace> define_amx_conv(const Conv& cv, int64_t rows) {
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(
      space.define_split("tile_q", cv.q, SplitPolicy::tiles(), 3, amx_split_filter(cv.q, rows, 2 * rows)));
  TESSERA_RETURN_IF_ERROR(
      space.define_split("tile_k", cv.k, SplitPolicy::tiles(), 3, amx_split_filter(cv.k, kAmxTile, 4 * kAmxTile)));
  // Output rows in the nest: up to 8 (each a step of its second loop of rows).
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_p", cv.p, SplitPolicy::tiles(), 3, amx_split_filter(cv.p, 1, 8)));
  TESSERA_RETURN_IF_ERROR(
      space.define_split("tile_c", cv.c, SplitPolicy::tiles(), 2, amx_split_filter(cv.c, kAmxTile, cv.c)));
  TESSERA_RETURN_IF_ERROR(space.define_reorder_all("order", 4));
  const std::vector<IterAnnotation> none = {IterAnnotation::kNone};
  TESSERA_RETURN_IF_ERROR(space.define_annotate("unroll", {none, none, none}));
  if (!cv.stages.pad.empty()) TESSERA_RETURN_IF_ERROR(space.define_knob("pad", {kPadRoot}));
  TESSERA_RETURN_IF_ERROR(space.define_knob("tensorize", {1}));
  return space;
}

// The AMX fallback: a block is one micro-kernel (two tiles of rows where
// they divide Q, 32 channels where they divide K) over all the input
// channels, so that the block's zeros come right before its tile product,
// which then starts from zeroed tiles (CodeGen::emit_zeroed_tile_product).
// Output rows in the micro-kernel (each B tile loaded serving two A tiles)
// measured no faster: 14 x 14 x 256 int8 with two rows of one 14-row tile
// 1,354-2,556 GOP/s against one row's 2,081-3,170 in turn; 7 x 7 x 512 bf16
// with all 7 rows 219-355 GFLOP/s against 193-369, its 4.7 MB of weights
// streamed at each call being most of its time (545 GFLOP/s warm).
Result<KnobConfig> fallback_amx_conv(const KnobSpace& space, const Conv& cv, int64_t rows) {
  const int64_t qr = cv.q % (2 * rows) == 0 ? 2 * rows : rows, kv = cv.k % 32 == 0 ? 32 : kAmxTile;
  return nearest_config(space, {{"tile_p", {0, 1, 1}},
                                {"tile_q", {0, 1, qr}},
                                {"tile_k", {0, 1, kv}},
                                {"tile_c", {0, cv.c}},
                                {"order", {1, 2, 3, 0}},
                                {"unroll", {0, 0, 0}},
                                {"pad", {kPadRoot}},
                                {"tensorize", {1}}});
}

Result<Conv> analyze(const ComputeDAG& dag, bool nhwc) {
  Conv cv;
  const std::string name = nhwc ? "conv2d_nhwc" : "conv2d_nchw";
  TESSERA_ASSIGN_OR_RETURN(cv.stages, find_op_stages(dag, OpPattern::kComplex, name, /*allow_broadcast=*/true));
  const OpStages& st = cv.stages;
  if (st.shape.size() != 4 || st.reduce.size() != 3 || st.inputs.size() != 2)
    return Status(ErrorCode::kInvalidArgument,
                  "template " + name + ": " + st.main + " is not a 2-D convolution (rank 4, three reduce axes)");
  if (nhwc) {
    cv.p = st.shape[1], cv.q = st.shape[2], cv.k = st.shape[3];
    cv.r = st.reduce[0], cv.s = st.reduce[1], cv.c = st.reduce[2];
  } else {
    cv.k = st.shape[1], cv.p = st.shape[2], cv.q = st.shape[3];
    cv.c = st.reduce[0], cv.r = st.reduce[1], cv.s = st.reduce[2];
  }
  return cv;
}

Result<KnobSpace> define_conv(const ComputeDAG& dag, const Target& target, bool nhwc) {
  TESSERA_ASSIGN_OR_RETURN(Conv cv, analyze(dag, nhwc));
  if (const int64_t rows = amx_conv_tile_rows(cv, dag, target, nhwc)) return define_amx_conv(cv, rows);
  const int64_t lanes = target.vector_lanes(cv.stages.dtype);
  KnobSpace space;
  // The vectorized axis: q for NCHW, k for NHWC; the other is unrolled.
  const int64_t vec_extent = nhwc ? cv.k : cv.q, unrolled_extent = nhwc ? cv.q : cv.k;
  TESSERA_RETURN_IF_ERROR(space.define_split(nhwc ? "tile_q" : "tile_k", unrolled_extent, SplitPolicy::tiles(), 3,
                                             unrolled_split_filter()));
  TESSERA_RETURN_IF_ERROR(space.define_split(nhwc ? "tile_k" : "tile_q", vec_extent, SplitPolicy::tiles(), 3,
                                             vector_split_filter(vec_extent, lanes)));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_p", cv.p, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_c", cv.c, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_reorder_all("order", 4));
  TESSERA_RETURN_IF_ERROR(space.define_annotate(
      "unroll", {{IterAnnotation::kUnroll, IterAnnotation::kNone}, unroll_choices(cv.r), unroll_choices(cv.s)}));
  TESSERA_RETURN_IF_ERROR(define_pad_knob(&space, cv.stages));
  return space;
}

Status apply_conv(const KnobConfig& cfg, const Target& target, State* state, bool nhwc) {
  TESSERA_ASSIGN_OR_RETURN(Conv cv, analyze(state->dag(), nhwc));
  const int64_t lanes = target.vector_lanes(cv.stages.dtype);
  const std::vector<int64_t>& tk = cfg.get("tile_k");
  const std::vector<int64_t>& tq = cfg.get("tile_q");
  const std::vector<int64_t>& tp = cfg.get("tile_p");
  const bool tensorize = cfg.find("tensorize") && cfg.get_int("tensorize") == 1;
  const int64_t pb = tensorize ? tp[1] * tp[2] : tp[1], cb = cfg.get("tile_c")[1];
  const std::vector<int64_t>& unroll = cfg.get("unroll");
  Sched s(state);
  TESSERA_ASSIGN_OR_RETURN(std::string local, accumulator(s, cv.stages));
  const std::string& out = cv.stages.output;
  const int64_t kb = tk[1] * tk[2], qb = tq[1] * tq[2];
  std::vector<int64_t> block = nhwc ? std::vector<int64_t>{1, pb, qb, kb} : std::vector<int64_t>{1, kb, pb, qb};
  TESSERA_ASSIGN_OR_RETURN(Var tile, tile_output_blocks(s, out, block, lanes));
  TESSERA_RETURN_IF_ERROR(s.compute_at(local, out, tile));

  // NCHW local: n k p q rc ry rx -> n <order of rc.0 p k.0 q.0> rc.1 ry rx k.1 q.1
  // NHWC local: n p q k ry rx rc -> n <order of rc.0 p q.0 k.0> ry rx rc.1 q.1 k.1
  // (on tiles: n <order of rc.0 p.0 q.0 k.0> ry rx rc.1 p.1 q.1 k.1)
  const std::vector<Var> loops = s.loops(local);
  const Var& n = loops[0];
  const Var& p = loops[nhwc ? 1 : 2];
  const Var& ry = loops[nhwc ? 4 : 5];
  const Var& rx = loops[nhwc ? 5 : 6];
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> k, s.split(local, loops[nhwc ? 3 : 1], {tk[2]}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> q, s.split(local, loops[nhwc ? 2 : 3], {tq[2]}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> rc, s.split(local, loops[nhwc ? 6 : 4], {cb}));
  // On tiles, p.1 (tp[2] output rows) joins the nest: a second loop of rows.
  std::vector<Var> rows = {p};
  if (tensorize) {
    TESSERA_ASSIGN_OR_RETURN(rows, s.split(local, p, {tp[2]}));
  }
  const Var& unrolled = nhwc ? q[1] : k[1];
  const Var& vectorized = nhwc ? k[1] : q[1];
  const Var outer[] = {rc[0], rows[0], nhwc ? q[0] : k[0], nhwc ? k[0] : q[0]};
  std::vector<Var> order = {n};
  for (int64_t o : cfg.get("order")) order.push_back(outer[o]);
  if (nhwc && tensorize)
    order.insert(order.end(), {ry, rx, rc[1], rows[1], unrolled, vectorized});
  else if (nhwc)
    order.insert(order.end(), {ry, rx, rc[1], unrolled, vectorized});
  else
    order.insert(order.end(), {rc[1], ry, rx, unrolled, vectorized});
  TESSERA_RETURN_IF_ERROR(s.reorder(local, order));
  if (tensorize) {
    // The nest ry rx rc.1 p.1 q.1 k.1, headed by its first loop of more than
    // one step (a loop of one step is lowered away, its annotation with it).
    const Var& head = cv.r > 1 ? ry : cv.s > 1 ? rx : rc[1];
    TESSERA_RETURN_IF_ERROR(s.annotate(local, head, IterAnnotation::kTensorize));
  } else {
    TESSERA_RETURN_IF_ERROR(s.annotate(local, unrolled, static_cast<IterAnnotation>(unroll[0])));
    TESSERA_RETURN_IF_ERROR(s.annotate(local, ry, static_cast<IterAnnotation>(unroll[1])));
    TESSERA_RETURN_IF_ERROR(s.annotate(local, rx, static_cast<IterAnnotation>(unroll[2])));
    TESSERA_RETURN_IF_ERROR(s.annotate(local, vectorized, IterAnnotation::kVectorize));
  }
  TESSERA_RETURN_IF_ERROR(place_pad(s, cv.stages, cfg, local, rc[0], lanes));
  TESSERA_RETURN_IF_ERROR(schedule_broadcast(s, cv.stages, lanes));
  if (!nhwc) return Status::ok();
  // The weights in the micro-kernel's order, [K/kv][R][S][C][kv]: each
  // block of output channels streams its weights once, sequentially, where
  // HWIO gives kv values every C x K elements (the late ResNet layers read
  // 9 MB of weights that way, 1.4x slower cold). Same layout when kv = K.
  // BFloat16 weights (R x S x C/2 x K x 2) keep each pair innermost,
  // [K/kv][R][S][C/2][kv][2]: a pair is one word (a tile's row of B is 16
  // whole pairs; a vector of them one load).
  const int64_t kv = tk[2];
  const std::string& weights = cv.stages.inputs[1];
  const int pairs = sums_bf16_dots(state->dag(), cv.stages) ? 1 : 0;
  if (weights != cv.stages.pad && kv > 1 && kv < cv.k && cv.k % kv == 0)
    TESSERA_RETURN_IF_ERROR(s.pack_layout(weights, 3, kv, pairs));
  return Status::ok();
}

Result<KnobConfig> fallback_conv(const KnobSpace& space, const ComputeDAG& dag, const Target& target, bool nhwc) {
  TESSERA_ASSIGN_OR_RETURN(Conv cv, analyze(dag, nhwc));
  if (const int64_t rows = amx_conv_tile_rows(cv, dag, target, nhwc)) return fallback_amx_conv(space, cv, rows);
  const int64_t lanes = target.vector_lanes(cv.stages.dtype);
  // The gemm fallback's micro-kernel: about two vectors wide, as many
  // unrolled rows as keep the accumulators in half the registers (8 x 2 on
  // AVX-512). Blocks are small (one vector of columns, two rows, two
  // micro-kernels of channels for NCHW; one micro-kernel of channels for
  // NHWC), input channels in blocks of up to 64, window rows unrolled but
  // not columns, the pad computed once at the root. Screened on the ResNet
  // 56x56x64 layer; NHWC blocks of two micro-kernels (64 channels) ran the
  // 7x7x512 layers at 135-140 GFLOP/s, of one (32) at 270-285.
  const std::vector<int64_t> vec_sizes = innermost_sizes(*space.find(nhwc ? "tile_k" : "tile_q"));
  const std::vector<int64_t> unrolled_sizes = innermost_sizes(*space.find(nhwc ? "tile_q" : "tile_k"));
  const int64_t vec = preferred_vector_width(vec_sizes, lanes);
  const int64_t regs_per_row = (vec + lanes - 1) / lanes;
  const int64_t unrolled =
      largest_at_most(unrolled_sizes, std::max<int64_t>(1, target.vector_registers() / 2 / regs_per_row));
  const int64_t unroll = static_cast<int64_t>(IterAnnotation::kUnroll);
  std::vector<std::pair<std::string, std::vector<int64_t>>> ideal = {
      {"tile_p", {0, nhwc ? 1 : 2}},
      {"tile_c", {0, std::min<int64_t>(cv.c, 64)}},
      {"order", {0, 1, 2, 3}},
      {"unroll", {unroll, cv.r <= 16 ? unroll : 0, 0}},  // all three: a 2x slower NCHW body
      {"pad", {kPadRoot}}};
  if (nhwc) {
    // Where the weights of 64 output channels (R x S x C x 64) outgrow 256
    // KiB (the late layers of a ResNet, 7x7 or 14x14 outputs of 256-512
    // channels), a block takes whole output rows, so that its weights are
    // streamed once per block of channels, not once per row.
    const bool big_weights =
        cv.r * cv.s * cv.c * std::min<int64_t>(cv.k, 64) * cv.stages.dtype.storage_bytes() > 256 * 1024;
    ideal[0] = {"tile_p", {0, big_weights ? cv.p : 1}};
    ideal.push_back({"tile_q", {0, big_weights ? std::max<int64_t>(1, cv.q / unrolled) : 1, unrolled}});
    ideal.push_back({"tile_k", {0, 1, vec}});
  } else {
    ideal.push_back({"tile_k", {0, 2, unrolled}});
    ideal.push_back({"tile_q", {0, 1, vec}});
  }
  return nearest_config(space, ideal);
}

}  // namespace

Result<KnobSpace> define_conv_nchw(const ComputeDAG& dag, const Target& target) {
  return define_conv(dag, target, false);
}
Status apply_conv_nchw(const KnobConfig& config, const Target& target, State* state) {
  return apply_conv(config, target, state, false);
}
Result<KnobConfig> fallback_conv_nchw(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  return fallback_conv(space, dag, target, false);
}

Result<KnobSpace> define_conv_nhwc(const ComputeDAG& dag, const Target& target) {
  return define_conv(dag, target, true);
}
Status apply_conv_nhwc(const KnobConfig& config, const Target& target, State* state) {
  return apply_conv(config, target, state, true);
}
Result<KnobConfig> fallback_conv_nhwc(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  return fallback_conv(space, dag, target, true);
}

}  // namespace tessera::template_detail
