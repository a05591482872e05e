// The gemm_pairs template: ops::matmul_u8s8_pairs, the int8 product in
// 2 x 2 tiles over eight bytes of K (AArch64's USMMLA takes one tile a
// register), and ops::conv2d_nhwc_u8s8_pairs, the convolution in tiles of
// pairs of output columns (its rows here) by pairs of output channels,
// whose window's loops (ry, rx) run just outside K's outer loop.
//
// Like the gemm template, the output is cut into mb x nb blocks that run in
// parallel, and each block's tiles T accumulate where the block is computed.
// T's loops are blocked by kb along the reduction and end in a micro-kernel
// of mr2 pairs of rows (unrolled) by nr2 pairs of columns, whose fused
// (column pair, row, column) loop is one vector: every four lanes are a
// tile, the accumulator of one matrix-multiply instruction, and T's storage
// ([m2, n2, r, c]) keeps that vector contiguous. The output's own loops read
// the tiles back in rows and apply the elementwise tail on the way.
//
// Knobs: tile_m [Mo, mb2/mr2, mr2] and tile_n [No, nb2/nr2, nr2] over the
// pairs of rows and columns, tile_k [Ko, kb] over steps of eight bytes,
// order (of k.0 i.0 j.0), unroll_rows (the micro-kernel's pairs of rows).
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

const char kName[] = "gemm_pairs";

struct PairsGemm {
  std::string tiles;                 // T[..., m2, n2, 2, 2], the reduction
  std::string output;                // the DAG's output, of C's shape
  std::string pad;                   // a convolution's padded input, or ""
  std::vector<std::string> inlined;  // C (T read back in rows) and the tail before the output
  int batch_dims = 0;
  int window_axes = 0;  // reduction axes before the bytes' (a convolution's ry, rx)
  int64_t m2 = 0, n2 = 0, k8 = 0;
  int64_t batch = 1;  // the product of the batch axes (a convolution's N x P)
};

Status error(const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, std::string("template ") + kName + ": " + why);
}

Result<PairsGemm> analyze(const ComputeDAG& dag) {
  PairsGemm g;
  std::vector<int64_t> shape;
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = compute_op(t);
    if (!op) continue;
    if (g.tiles.empty()) {
      // A convolution's padded input (the "pad" knob places it).
      if (g.pad.empty() && op->reduce_axes.empty() && op->pattern != OpPattern::kComplex && !dag.is_output(t)) {
        g.pad = t->name;
        continue;
      }
      if (op->pattern != OpPattern::kComplex || t->shape.size() < 4 || t->shape[t->shape.size() - 1] != 2 ||
          t->shape[t->shape.size() - 2] != 2 || op->reduce_axes.empty())
        return error("the first stage " + t->name + " is not the 2 x 2 tiles of a product (matmul_u8s8_pairs)");
      g.tiles = t->name;
      const size_t rank = t->shape.size();
      g.batch_dims = static_cast<int>(rank) - 4;
      g.window_axes = static_cast<int>(op->reduce_axes.size()) - 1;
      g.m2 = t->shape[rank - 4];
      g.n2 = t->shape[rank - 3];
      g.k8 = op->reduce_axes.back()->extent;
      for (int d = 0; d < g.batch_dims; ++d) g.batch *= t->shape[static_cast<size_t>(d)];
      continue;
    }
    // C's shape: the tiles' batch axes, then 2 m2 rows (2 m2 - 1 where the
    // last pair has one row of padding) by 2 n2 columns.
    if (shape.empty()) {
      shape = t->shape;
      const size_t rank = shape.size();
      const bool fits = rank == static_cast<size_t>(g.batch_dims) + 2 && shape[rank - 1] == 2 * g.n2 &&
                        (shape[rank - 2] == 2 * g.m2 || shape[rank - 2] == 2 * g.m2 - 1);
      if (!fits) return error("stage " + t->name + " does not read " + g.tiles + " back as rows and columns");
    }
    if (!op->reduce_axes.empty() || t->shape != shape)
      return error("stage " + t->name + " after " + g.tiles + " must be elementwise over the product's shape");
    if (dag.is_output(t)) {
      if (!g.output.empty()) return error("the DAG has more than one output");
      g.output = t->name;
    } else {
      g.inlined.push_back(t->name);
    }
  }
  if (g.output.empty()) return error("no output of the product's shape follows its tiles");
  return g;
}

}  // namespace

Result<KnobSpace> define_gemm_pairs(const ComputeDAG& dag, const Target&) {
  TESSERA_ASSIGN_OR_RETURN(PairsGemm g, analyze(dag));
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_m", g.m2, SplitPolicy::tiles(), 3, unrolled_split_filter(8)));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_n", g.n2, SplitPolicy::tiles(), 3, unrolled_split_filter(8)));
  const int64_t min_kb = std::min<int64_t>(g.k8, 8);
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_k", g.k8, SplitPolicy::tiles(), 2,
                                             [=](const std::vector<int64_t>& s) { return s[1] >= min_kb; }));
  TESSERA_RETURN_IF_ERROR(space.define_reorder_all("order", 3));
  TESSERA_RETURN_IF_ERROR(space.define_annotate(
      "unroll_rows", {std::vector<IterAnnotation>{IterAnnotation::kUnroll, IterAnnotation::kNone}}));
  // At the root, each row's eight bytes are one load; inlined, a select.
  if (!g.pad.empty()) TESSERA_RETURN_IF_ERROR(space.define_knob("pad", {kPadRoot, kPadInline}));
  return space;
}

Status apply_gemm_pairs(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(PairsGemm g, analyze(state->dag()));
  const int64_t lanes = target.vector_lanes(DType::i32());
  const std::vector<int64_t>& tm = cfg.get("tile_m");
  const std::vector<int64_t>& tn = cfg.get("tile_n");
  const int64_t mr2 = tm[2], nr2 = tn[2], kb = cfg.get("tile_k")[1];
  Sched s(state);
  for (const std::string& stage : g.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(stage));
  OpStages pad;
  pad.pad = g.pad;
  TESSERA_RETURN_IF_ERROR(place_pad(s, pad, cfg, g.tiles, Var(), lanes));
  std::vector<int64_t> block(static_cast<size_t>(g.batch_dims), 1);
  block.push_back(2 * tm[1] * mr2);
  block.push_back(2 * tn[1] * nr2);
  TESSERA_ASSIGN_OR_RETURN(Var tile, tile_output_blocks(s, g.output, block, lanes));
  TESSERA_RETURN_IF_ERROR(s.compute_at(g.tiles, g.output, tile));

  // tiles: batch.. m2 n2 r c window.. k -> batch.. <order of (window.. k.0)
  // i.0 j.0> k.1 i.1 (j.1 r c)
  std::vector<Var> loops = s.loops(g.tiles);
  const auto b = static_cast<size_t>(g.batch_dims);
  const auto w = static_cast<size_t>(g.window_axes);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> i, s.split(g.tiles, loops[b], {mr2}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> j, s.split(g.tiles, loops[b + 1], {nr2}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> k, s.split(g.tiles, loops[b + 4 + w], {kb}));
  std::vector<Var> reduction(loops.begin() + static_cast<std::ptrdiff_t>(b + 4),
                             loops.begin() + static_cast<std::ptrdiff_t>(b + 4 + w));
  reduction.push_back(k[0]);
  const std::vector<Var> outer[] = {reduction, {i[0]}, {j[0]}};
  std::vector<Var> order(loops.begin(), loops.begin() + g.batch_dims);
  for (int64_t o : cfg.get("order")) order.insert(order.end(), outer[o].begin(), outer[o].end());
  order.insert(order.end(), {k[1], i[1], j[1], loops[b + 2], loops[b + 3]});
  TESSERA_RETURN_IF_ERROR(s.reorder(g.tiles, order));
  TESSERA_RETURN_IF_ERROR(s.annotate(g.tiles, i[1], static_cast<IterAnnotation>(cfg.get("unroll_rows")[0])));
  TESSERA_ASSIGN_OR_RETURN(Var lane, s.fuse(g.tiles, {j[1], loops[b + 2], loops[b + 3]}));
  return s.annotate(g.tiles, lane, IterAnnotation::kVectorize);
}

Result<KnobConfig> fallback_gemm_pairs(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(PairsGemm g, analyze(dag));
  // Four pairs of rows by four pairs of columns: 16 tiles, one register
  // each on AArch64 (of 32), with 4 of A and 4 of B loaded per step of K.
  const int64_t mr2 = unrolled_tile(*space.find("tile_m"), g.m2, 4);
  const int64_t nr2 = unrolled_tile(*space.find("tile_n"), g.n2, 4);
  // Blocks of about 64 rows by 128 columns, and enough of them for every core.
  const int64_t cores = std::max(1, target.num_cores);
  int64_t mt = std::max<int64_t>(1, 32 / mr2), nt = std::max<int64_t>(1, 64 / nr2);
  while (mt > 1 && g.batch * ((g.m2 + mt * mr2 - 1) / (mt * mr2)) * ((g.n2 + nt * nr2 - 1) / (nt * nr2)) < cores)
    mt /= 2;
  return nearest_config(space, {{"tile_m", {0, mt, mr2}},
                                {"tile_n", {0, nt, nr2}},
                                {"tile_k", {0, 128}},
                                {"order", {0, 2, 1}},
                                {"unroll_rows", {static_cast<int64_t>(IterAnnotation::kUnroll)}},
                                {"pad", {kPadRoot}}});
}

}  // namespace tessera::template_detail
