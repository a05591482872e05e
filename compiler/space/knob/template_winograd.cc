// The Winograd convolution template (conv2d_winograd_nhwc, ops/winograd.h).
//
// The output is cut into blocks of tiles (part of a row of tiles, or whole
// rows). The "stages" knob chooses between two shapes:
//
// fused (big images, few channels): blocks run in parallel, each computing
//  input transform  V[e, v, t, c] of tr tiles: the 4 x 4 transform unrolled
//                   (its +-1 coefficients fold away), channels vectorized;
//  gemm             M[e, v, t, k] of its tiles, tr tiles at a time: V of
//                   those tiles first, then per (e, v) a tr x kv register
//                   micro-kernel (tiles unrolled, output channels
//                   vectorized) under the input channel loop;
//  output transform Y[n, y, x, k] of its tiles with the tail (bias,
//                   residual, ReLU) inlined: each tile's 2 x 2 outputs
//                   unrolled (so y % 2 and x % 2 fold), channels vectorized;
// so V and M stay in the core's caches (at the root they are megabytes
// each, 3.2 MB apiece for a 56 x 56 x 64 layer, and the transforms become
// memory bound);
//
// staged (small images, many channels): V at the root, tiles in parallel;
// M at the root in parallel blocks of (e, v, tiles, kv channels), the same
// micro-kernel accumulating in a local buffer; the output transform by rows
// of tiles. Each U[e, v] slice is then read once per block of tiles, not
// once per block of the output (a 14 x 14 x 256 layer's U is 4 MiB).
//
// Either way U is stored packed by kv like the direct NHWC conv's weights.
//
// Knobs: block (tiles per block), rows (of the micro-kernel: the largest
// divisor of the block up to it), tile_k [Ko, kv], tile_c [Co, cb], order
// (of k.0 t.0 rc.0; fused puts t.0 first, staged has one k.0), stages, pad
// (inlined into the input transform or computed at the root).
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

const char kName[] = "conv2d_winograd_nhwc";

// The "stages" knob: V and M per block of the output (small, cached), or
// each at the root (the weights reused across all tiles).
enum Stages : int64_t { kFused = 0, kStaged = 1 };

struct Winograd {
  std::string pad;                   // "" without padding
  std::string input, gemm, weights;  // V, M and U
  std::string transform;             // Y, the output transform
  std::string output;                // Y or the tail's last stage
  std::vector<std::string> inlined;  // tail stages before the output
  int64_t tiles = 0, c = 0, k = 0, p = 0, q = 0;
  DType dtype = DType::f32();
};

Status error(const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, std::string("template ") + kName + ": " + why);
}

// The one reader of `t` among `dag`'s computes, or null.
const Tensor* only_reader(const ComputeDAG& dag, const Tensor& t) {
  const Tensor* found = nullptr;
  for (const Tensor& s : dag.tensors()) {
    if (!compute_op(s)) continue;
    for (const Tensor& in : input_tensors(s))
      if (in.same_as(t)) {
        if (found) return nullptr;
        found = &s;
      }
  }
  return found;
}

Result<Winograd> analyze(const ComputeDAG& dag) {
  Winograd w;
  const Tensor* gemm = nullptr;
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = compute_op(t);
    if (!op || op->pattern != OpPattern::kComplex) continue;
    if (gemm) return error("two kComplex stages, " + (*gemm)->name + " and " + t->name);
    gemm = &t;
  }
  if (!gemm || (*gemm)->shape.size() != 4 || compute_op(*gemm)->reduce_axes.size() != 1 ||
      input_tensors(*gemm).size() != 2)
    return error("no batched product M[e, v, t, k] = sum over c of V[e, v, t, c] * U[e, v, c, k]");
  const Tensor v = input_tensors(*gemm)[0], u = input_tensors(*gemm)[1];
  const ComputeOpNode* vop = compute_op(v);
  if (!vop || vop->pattern != OpPattern::kInjective || compute_op(u))
    return error(v->name + " must be the input transform and " + u->name + " the transformed weights");
  w.gemm = (*gemm)->name;
  w.input = v->name;
  w.weights = u->name;
  for (const Tensor& t : input_tensors(v)) {
    if (!compute_op(t)) continue;
    if (!w.pad.empty()) return error("the input transform reads two computed tensors");
    w.pad = t->name;
  }
  const Tensor* y = only_reader(dag, *gemm);
  if (!y || compute_op(*y)->pattern != OpPattern::kInjective || (*y)->shape.size() != 4)
    return error("the product must be read by the output transform alone");
  w.transform = (*y)->name;
  w.tiles = (*gemm)->shape[2];
  w.k = (*gemm)->shape[3];
  w.c = compute_op(*gemm)->reduce_axes[0]->extent;
  w.p = (*y)->shape[1];
  w.q = (*y)->shape[2];
  w.dtype = (*gemm)->dtype;
  bool after = false;
  for (const Tensor& t : dag.tensors()) {
    if (t.same_as(*y)) after = true;
    if (!after || !compute_op(t)) continue;
    if (!compute_op(t)->reduce_axes.empty() || t->shape != (*y)->shape)
      return error("stage " + t->name + " after the output transform must be elementwise over its shape");
    if (dag.is_output(t)) {
      if (!w.output.empty()) return error("the DAG has more than one output");
      w.output = t->name;
    } else if (!t.same_as(*y)) {
      w.inlined.push_back(t->name);
    }
  }
  if (w.output.empty()) return error("no output follows " + w.transform);
  return w;
}

// The tiles per block the "block" knob offers: a divisor of a row of tiles
// (tq of them), or whole rows (a divisor of tp rows). With an odd output
// size the output is not cut into tiles: one block is everything.
std::vector<int64_t> block_choices(const Winograd& w) {
  if (w.p % 2 || w.q % 2) return {w.tiles};
  const int64_t tp = w.p / 2, tq = w.q / 2;
  std::vector<int64_t> out;
  for (int64_t b = 1; b <= tq; ++b)
    if (tq % b == 0) out.push_back(b);
  for (int64_t r = 2; r <= tp; ++r)
    if (tp % r == 0) out.push_back(r * tq);
  return out;
}

// The micro-kernel's rows (tiles) the "rows" knob offers: for each block and
// each count up to 16, micro_kernel_tiles.
std::vector<int64_t> row_choices(const std::vector<int64_t>& blocks) {
  std::vector<int64_t> out;
  for (int64_t b : blocks)
    for (int64_t m = 1; m <= 16; ++m) out.push_back(micro_kernel_rows(b, m));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The output (with Y and the tail inlined), cut into blocks of tiles that
// run in parallel; each tile's 2 x 2 outputs unrolled, channels vectorized.
// Returns the block loop, where V and M are computed.
Result<Var> schedule_output(Sched& s, const Winograd& w, int64_t block, int64_t lanes) {
  for (const std::string& t : w.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(t));
  if (w.transform != w.output) TESSERA_RETURN_IF_ERROR(s.compute_inline(w.transform));
  const std::vector<Var> l = s.loops(w.output);  // n y x k
  TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(w.output, l[3], w.k, lanes));
  if (w.p % 2 || w.q % 2) {  // one block; rows in sequence
    TESSERA_ASSIGN_OR_RETURN(Var all, s.fuse(w.output, {l[0], l[1]}));
    return all;
  }
  const int64_t tq = w.q / 2, rows = block > tq ? block / tq : 1, cols = std::min(block, tq);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> y, s.split(w.output, l[1], {rows, 2}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> x, s.split(w.output, l[2], {cols, 2}));
  std::vector<Var> order = {l[0], y[0], x[0], y[1], y[2], x[1], x[2]};
  for (const Var& v : s.loops(w.output))
    if (std::none_of(order.begin(), order.end(), [&](const Var& o) { return o.same_as(v); })) order.push_back(v);
  TESSERA_RETURN_IF_ERROR(s.reorder(w.output, order));
  TESSERA_RETURN_IF_ERROR(s.annotate(w.output, y[2], IterAnnotation::kUnroll));
  TESSERA_RETURN_IF_ERROR(s.annotate(w.output, x[2], IterAnnotation::kUnroll));
  // Not fused: bound inference sizes V and M by the block only when the
  // tile indices are plain loop variables.
  TESSERA_RETURN_IF_ERROR(s.annotate(w.output, y[0], IterAnnotation::kParallel));
  return x[0];
}

// V of a block: tiles, then blocks of channels, the unrolled 4 x 4
// transform and a vector of channels.
Status schedule_input(Sched& s, const Winograd& w, int64_t lanes) {
  const std::vector<Var> l = s.loops(w.input);  // e v t c
  const int64_t cv = divisor_vector_width(w.c, lanes);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> c, s.split(w.input, l[3], {cv}));
  TESSERA_RETURN_IF_ERROR(s.reorder(w.input, {l[2], c[0], l[0], l[1], c[1]}));
  TESSERA_RETURN_IF_ERROR(s.annotate(w.input, l[0], IterAnnotation::kUnroll));
  TESSERA_RETURN_IF_ERROR(s.annotate(w.input, l[1], IterAnnotation::kUnroll));
  return s.annotate(w.input, c[1], IterAnnotation::kVectorize);
}

// V of the block's tr-tile chunk at `at` (fused), or of every tile at the
// root with tiles in parallel (staged).
Status place_input(Sched& s, const Winograd& w, const KnobConfig& cfg, const Var* at, int64_t lanes) {
  if (at) TESSERA_RETURN_IF_ERROR(s.compute_at(w.input, w.gemm, *at));
  TESSERA_RETURN_IF_ERROR(schedule_input(s, w, lanes));
  if (!at) TESSERA_RETURN_IF_ERROR(s.annotate(w.input, s.loops(w.input).front(), IterAnnotation::kParallel));
  if (w.pad.empty()) return Status::ok();
  if (cfg.get_int("pad") == kPadInline) return s.compute_inline(w.pad);
  OpStages pad_only;
  pad_only.pad = w.pad;
  return place_pad(s, pad_only, cfg, w.input, Var(), lanes);
}

}  // namespace

Result<KnobSpace> define_winograd(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Winograd w, analyze(dag));
  const int64_t lanes = target.vector_lanes(w.dtype);
  KnobSpace space;
  const std::vector<int64_t> blocks = block_choices(w);
  TESSERA_RETURN_IF_ERROR(space.define_knob("block", blocks));
  TESSERA_RETURN_IF_ERROR(space.define_knob("rows", row_choices(blocks)));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_k", w.k, SplitPolicy::tiles(), 2, vector_split_filter(w.k, lanes)));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_c", w.c, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(space.define_reorder_all("order", 3));
  TESSERA_RETURN_IF_ERROR(space.define_knob("stages", {kFused, kStaged}));
  if (!w.pad.empty()) TESSERA_RETURN_IF_ERROR(space.define_knob("pad", {kPadInline, kPadRoot}));
  return space;
}

Status apply_winograd(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(Winograd w, analyze(state->dag()));
  const int64_t lanes = target.vector_lanes(w.dtype);
  const int64_t block = cfg.get_int("block"), tr = micro_kernel_rows(block, cfg.get_int("rows"));
  const int64_t kv = cfg.get("tile_k")[1], cb = cfg.get("tile_c")[1];
  const bool fused = cfg.get_int("stages") == kFused;
  Sched s(state);
  // Staged, the output transform runs by rows of tiles.
  TESSERA_ASSIGN_OR_RETURN(Var at, schedule_output(s, w, fused ? block : std::min(block, w.q / 2), lanes));
  if (kv > 1 && kv < w.k && w.k % kv == 0) TESSERA_RETURN_IF_ERROR(s.pack_layout(w.weights, 3, kv));

  // The product of a block, in a tr x kv register micro-kernel (tiles
  // unrolled, output channels vectorized) under the input channel loop.
  // Fused: M of the block, tr tiles at a time, V of those tiles first (all
  // 16 (e, v), so the transform unrolls). Staged: blocks of (e, v, tiles,
  // kv channels) in parallel, accumulated in a local buffer.
  std::string m = w.gemm;
  if (fused) {
    TESSERA_RETURN_IF_ERROR(s.compute_at(w.gemm, w.output, at));
  } else {
    TESSERA_RETURN_IF_ERROR(s.cache_write(w.gemm));
    m = w.gemm + ".local";
    TESSERA_ASSIGN_OR_RETURN(Var tile, tile_output_blocks(s, w.gemm, {1, 1, block, kv}, lanes));
    TESSERA_RETURN_IF_ERROR(s.compute_at(m, w.gemm, tile));
  }
  const std::vector<Var> l = s.loops(m);  // e v t k rc (t and k cover the block)
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> t, s.split(m, l[2], {tr}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> k, s.split(m, l[3], {kv}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> rc, s.split(m, l[4], {cb}));
  const Var outer[] = {k[0], t[0], rc[0]};
  // Fused, the tile chunk comes first (V is computed at it); staged, a block
  // has one chunk of kv channels.
  const Var& placed = fused ? t[0] : k[0];
  std::vector<Var> order = fused ? std::vector<Var>{t[0], l[0], l[1]} : std::vector<Var>{l[0], l[1], k[0]};
  for (int64_t o : cfg.get("order"))
    if (!outer[o].same_as(placed)) order.push_back(outer[o]);
  order.insert(order.end(), {rc[1], t[1], k[1]});
  TESSERA_RETURN_IF_ERROR(s.reorder(m, order));
  TESSERA_RETURN_IF_ERROR(s.annotate(m, t[1], IterAnnotation::kUnroll));
  TESSERA_RETURN_IF_ERROR(s.annotate(m, k[1], IterAnnotation::kVectorize));
  return place_input(s, w, cfg, fused ? &t[0] : nullptr, lanes);
}

Result<KnobConfig> fallback_winograd(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Winograd w, analyze(dag));
  const int64_t lanes = target.vector_lanes(w.dtype);
  // The direct NHWC conv's micro-kernel (about 8 tiles x 2 vectors on
  // AVX-512), blocks of about 16 tiles, the input channels whole up to 256,
  // the pad at the root. Fused, every block reads all of U: past 1 MiB of it
  // (a ResNet's 14x14x256 layer: 4 MiB) the stages run at the root instead
  // (screened on the ResNet-18 layers: 1.01 ms fused, 0.35 staged).
  const std::vector<int64_t> vec_sizes = innermost_sizes(*space.find("tile_k"));
  const int64_t vec = preferred_vector_width(vec_sizes, lanes);
  const int64_t regs_per_row = (vec + lanes - 1) / lanes;
  const int64_t rows = std::max<int64_t>(1, target.vector_registers() / 2 / regs_per_row);
  const std::vector<int64_t> blocks = block_choices(w);
  const int64_t block = nearest_size(blocks, std::max<int64_t>(16, w.tiles / (16 * std::max(1, target.num_cores))));
  const int64_t u_bytes = 16 * w.c * w.k * w.dtype.storage_bytes();
  return nearest_config(space, {{"block", {block}},
                                {"rows", {largest_at_most(row_choices(blocks), rows)}},
                                {"tile_k", {0, vec}},
                                {"tile_c", {0, std::min<int64_t>(w.c, 256)}},
                                {"order", {0, 1, 2}},
                                {"stages", {u_bytes > (int64_t{1} << 20) ? kStaged : kFused}},
                                {"pad", {kPadRoot}}});
}

}  // namespace tessera::template_detail
