// The gemm template: matmul, dense (with its bias/ReLU tail) and
// batch_matmul.
//
// The shape follows the hand-written matmul of bench/bench_core.cc. The
// output is cut into mb x nb blocks that run in parallel; each block's
// product accumulates in a local buffer computed at the block, whose loops
// are blocked by kb along k and end in an mr x nr micro-kernel (mr rows
// unrolled, nr columns vectorized) that keeps its accumulators in
// registers while k.1 runs. Optionally a kb x nr panel of B is copied to a
// contiguous buffer and reused by every row of the block. The output's own
// loops copy the block out, applying the elementwise tail on the way.
//
// Where a block hangs over the output's edge, the `tail` knob either guards
// the block's points (a guarded remainder, partitioned off by the lowering)
// or pads the block (PadTileStep): the micro-kernel computes whole mr x nr
// tiles everywhere, the weights are packed with a zero-padded last block,
// and only the copy out is guarded.
//
// A GEMV (M == 1, batch-1 dense) is memory-bound: its space keeps the
// schedules that stream the weights at full width (whole-register columns,
// padded blocks, a block per core, no panel copy); see gemm_n_filter.
//
// Where B is known to be constant weights -- the int8 product's words
// (matmul_u8s8: four bytes of K to a word, packed when the model was
// compiled), the bfloat16 product's pairs (matmul_bf16, the weights
// --precision bf16 converts), or a window product's taps (an STFT's 1-D
// conv) -- `cache_b` also offers B stored packed by blocks of nr columns
// ([N/nr][K][nr]), which the micro-kernel streams with no panel copy at run
// time. A copied panel per block was a fifth of the int8 kernel's time at
// 1024^3 and 2 MB a call of the STFT's; a bfloat16 GEMV read in place
// gathered its pairs under a mask (ResNet-18's 512 x 1000 classifier: 0.25
// ms, 16 us packed). The int8 fallback also leaves the broadcast-heavy 8
// rows x 2 vectors for 4 x 4 vectors, which stream fewer loads a product.
//
// On a target with AMX, an int8 product (AMX-INT8) or a bfloat16 product of
// bfloat16 A (AMX-BF16) of whole tiles (N a multiple of 16, K of 64 bytes,
// M of tiles of 8 to 16 rows) runs its micro-kernel on the matrix unit:
// `tensorize` marks k.1 (LoopKind::kTensorized), and the code generator runs
// the mr x nr x kb nest as tile products (16 x 16 int32 of C a tile, 2 x 2
// tiles at once). Its blocks, micro-kernel and k blocks are then whole tiles
// that divide the product exactly: the nest has no edges to guard or pad.
//
// Knobs: tile_m [Mo, mb/mr, mr], tile_n [No, nb/nr, nr], tile_k [Ko, kb >= 16],
// order (of k.0 i.0 j.0), unroll_rows (i.1), cache_b (0 B as it is, 1 a
// panel copied per block, 2 B packed), tail (0 guard, 1 pad), and with AMX
// tensorize (1: the micro-kernel on tiles).
#include <algorithm>
#include <cmath>

#include "base/int_div.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/util.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

// The `tail` knob's values (PadTileStep for kTailPad).
enum TailPolicy : int64_t { kTailGuard = 0, kTailPad = 1 };
// The `cache_b` knob's values.
enum PanelPolicy : int64_t { kReadB = 0, kCopyPanel = 1, kPackedB = 2 };

struct Gemm {
  OpStages stages;
  int batch_dims = 0;  // leading spatial axes before i, j
  int64_t m = 0, n = 0, k = 0;
  std::string b;         // the operand read along j: B of matmul, W of dense
  bool b_is_nk = false;  // read b[j, k] (dense's W), not b[k, j]
  // The dimension of b whose index is j, and whether b's last dimension is
  // indexed by k and not j (a transposed operand read in place, attention's
  // K^T): its columns are then strided in memory.
  int b_j_dim = -1;
  bool b_k_last = false;
  // B is constant weights the model stores in whatever layout the kernel
  // reads: int8 words (K/4 x N, dot_u8s8's signed operand), bfloat16 pairs
  // (K/2 x N x 2, the graph's convert_bf16), or the taps of
  // a window product (A's rows are overlapping windows of a signal, row i
  // and reduction k in one dimension's index: the 1-D conv of an STFT,
  // which the graph makes of constant weights only, convert_window_products).
  bool b_is_weights = false;
  bool int8_words = false;
  // A bfloat16 product of bfloat16 A (dot_bf16 of words of neighbouring
  // elements of A and of B's pairs), which AMX-BF16 takes as it is.
  bool bf16_words = false;
};

Result<Gemm> analyze(const ComputeDAG& dag) {
  Gemm g;
  TESSERA_ASSIGN_OR_RETURN(g.stages, find_op_stages(dag, OpPattern::kComplex, "gemm"));
  const OpStages& st = g.stages;
  if (st.shape.size() < 2 || st.reduce.size() != 1 || st.inputs.size() != 2 || !st.pad.empty())
    return Status(ErrorCode::kInvalidArgument,
                  "template gemm: " + st.main + " is not a matrix product (one reduce axis, two inputs, rank >= 2)");
  g.batch_dims = static_cast<int>(st.shape.size()) - 2;
  g.m = st.shape[g.batch_dims];
  g.n = st.shape[g.batch_dims + 1];
  g.k = st.reduce[0];
  g.b = st.inputs[1];  // the ops library reads A (or X) first, then B (or W)
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = t->name == st.main ? compute_op(t) : nullptr;
    if (!op) continue;
    const ProductReads reads =
        product_reads(*op, st.inputs[0], g.b, op->axes[static_cast<size_t>(g.batch_dims)]->var,
                      op->axes[static_cast<size_t>(g.batch_dims) + 1]->var, op->reduce_axes[0]->var);
    g.b_is_nk = reads.b_is_nk;
    g.b_j_dim = reads.j_dim;
    g.b_k_last = reads.k_last && reads.j_dim >= 0;
    g.int8_words = sums_int8_dots(dag, st);
    for (const Tensor& input : dag.args())
      if (input->name == st.inputs[0]) g.bf16_words = input->dtype == DType::bf16() && sums_bf16_dots(dag, st);
    g.b_is_weights = reads.j_dim == 1 && !reads.k_last && (g.int8_words || g.bf16_words || reads.a_windows);
  }
  return g;
}

// Whether the product runs on AMX tiles: u8 x s8 words (AMX-INT8) or
// bfloat16 pairs (AMX-BF16) with B read B[k, j] (its columns contiguous
// words), in whole tiles.
// Rows that no tile of 16 divides take tiles of fewer rows (100: tiles of
// 10), down to 8; fewer run on the vector unit.
bool amx_tiles(const Gemm& g, const Target& target) {
  const bool unit = (target.amx_int8 && g.int8_words) || (target.amx_bf16 && g.bf16_words);
  return unit && !g.b_is_nk && !g.b_k_last && amx_tile_rows(g.m) > 0 && g.n % kAmxTile == 0 && g.k % kAmxTile == 0;
}

// The most columns a GEMV's micro-kernel holds: its accumulators are its
// only independent chains (one output row), and 4 of them cover the FMA
// latency of a load-bound loop.
int64_t gemv_max_nr(int64_t lanes) {
  return std::min<int64_t>(kMaxVectorLanes, 4 * lanes);
}

// tile_n's filter. A GEMV (M == 1) has one output row: the micro-kernel's
// columns are its only independent accumulator chains, so it takes whole
// registers, up to gemv_max_nr, whether or not they divide N (1000 = 62.5 x
// 16: the divisors alone left it 8 columns, one chain), and half a register
// where that divides N (no padded weights; whether one chain keeps up with
// the memory is the tuner's to measure); its padded last
// block and the packed weights' zero-padded last block keep every block
// whole. Its blocks are its only parallel loop: unless a batch gives every
// core work, there are blocks for every core, or one core streams all the
// weights.
SplitFilter gemm_n_filter(const Gemm& g, int64_t lanes, const Target& target) {
  SplitFilter usual = vector_split_filter(g.n, lanes);
  if (g.m != 1) return usual;
  const int64_t max_nr = gemv_max_nr(lanes);
  int64_t batch = 1;
  for (int d = 0; d < g.batch_dims; ++d) batch *= g.stages.shape[static_cast<size_t>(d)];
  const int64_t cores = target.num_cores;
  const int64_t min_blocks = batch >= cores || g.n < cores * lanes ? 1 : (cores + batch - 1) / batch;
  const bool whole_registers = g.n >= lanes;
  return [=](const std::vector<int64_t>& s) {
    const int64_t nr = s.back();
    if (s[0] < min_blocks) return false;
    // Half a register that divides N streams no padded weights: 1000 = 125
    // x 8 read 1000 rows of W where 16 read 1008 and 64 read 1024, and ran
    // 1-3% faster on a bandwidth-bound GEMV.
    const bool unpadded_half = 2 * nr == lanes && g.n % nr == 0;
    return whole_registers ? (nr % lanes == 0 && nr <= max_nr) || unpadded_half : usual(s);
  };
}

// A block's size in micro-kernel tiles.
struct Blocks {
  int64_t row_tiles = 1, column_tiles = 1;
};

// The time of the busiest core when the blocks of `b` run round-robin on
// `cores` (task t on core t % cores, thread_pool.h), in micro-kernel tiles:
// a block's tiles, the copy of its panels of B when it packs them (about
// four rows of tiles per column: the panel's rows are read across B's rows,
// from L2 or beyond), and a tile's worth of setting up and copying out each
// block. A padded block (`padded`, the tail knob's pad) computes all its
// tiles even past the product's edge: the mel front end's 101 x 257 STFT
// product in blocks of 64 x 128 computed 128 x 384, 1.9 times its work.
double busiest_core(const Gemm& g, int64_t mr, int64_t nr, const Blocks& b, bool packs_b, bool padded, int64_t cores) {
  const int64_t rows = ceil_div(g.m, mr), cols = ceil_div(g.n, nr);
  const int64_t row_blocks = ceil_div(rows, b.row_tiles), col_blocks = ceil_div(cols, b.column_tiles);
  int64_t batch = 1;
  for (int d = 0; d < g.batch_dims; ++d) batch *= g.stages.shape[static_cast<size_t>(d)];
  auto work = [&](int64_t block) {
    const int64_t r = block / col_blocks, c = block % col_blocks;
    const double block_cols =
        static_cast<double>(padded ? b.column_tiles : std::min(b.column_tiles, cols - c * b.column_tiles));
    const double block_rows = static_cast<double>(padded ? b.row_tiles : std::min(b.row_tiles, rows - r * b.row_tiles));
    return block_rows * block_cols + (packs_b ? 4.0 * block_cols / static_cast<double>(mr) : 0.0) + 1.0;
  };
  const int64_t per_batch = row_blocks * col_blocks, tasks = batch * per_batch;
  // Many blocks balance themselves: the mean plus the largest block.
  if (tasks > 4096) {
    double total = 0, largest = 0;
    for (int64_t t = 0; t < per_batch; ++t) total += work(t), largest = std::max(largest, work(t));
    return total * static_cast<double>(batch) / static_cast<double>(cores) + largest;
  }
  std::vector<double> load(static_cast<size_t>(cores), 0.0);
  for (int64_t t = 0; t < tasks; ++t) load[static_cast<size_t>(t % cores)] += work(t % per_batch);
  return *std::max_element(load.begin(), load.end());
}

// The fallback's blocks of mr x nr tiles, among the sizes the space offers:
// those whose busiest core does the least work (uneven blocks leave a core
// idle: 77 x 384 in blocks of 64 x 256 gave one core two thirds of the
// work, where 77 x 192 gives each half), then the fewest blocks. A block has
// at most the hand schedule's 64 x 256 accumulators and 128 rows, 64 where
// the reduction is short, and rows of at least 128 columns (or all of
// them, or a core's share of them). Measured on the fallbacks of random
// shapes: with 128 rows 1024^3 ran at 0.96 of OpenBLAS where 64 x 256 ran at
// 0.86, but 1802 x 865 x 5 at 0.74 against 1.28, and rows of 64 columns lost
// 30-40% at K <= 31.
// Work below a parallel launch's cost runs on one core (tile_output_blocks).
Blocks fallback_blocks(const KnobSpace& space, const Gemm& g, int64_t mr, int64_t nr, bool packs_b, bool padded,
                       const ComputeDAG& dag, const Target& target) {
  constexpr int64_t kMaxAccumulators = 64 * 256, kMinColumns = 128;
  const int64_t max_rows = g.k < 64 ? 64 : 128;
  const int64_t cores = dag.flop_count() >= kMinParallelFlops ? std::max(1, target.num_cores) : 1;
  const int64_t min_cols = std::min(kMinColumns, ceil_div(ceil_div(g.n, nr), cores) * nr);
  auto middles = [](const Knob& knob, int64_t inner) {
    std::vector<int64_t> sizes;
    for (const std::vector<int64_t>& c : knob.candidates)
      if (c.back() == inner && std::find(sizes.begin(), sizes.end(), c[1]) == sizes.end()) sizes.push_back(c[1]);
    return sizes;
  };
  Blocks best;
  double best_work = INFINITY;
  int64_t best_blocks = INT64_MAX;
  for (int64_t mt : middles(*space.find("tile_m"), mr)) {
    for (int64_t nt : middles(*space.find("tile_n"), nr)) {
      const int64_t rows = std::min(mt * mr, ceil_div(g.m, mr) * mr);
      const int64_t cols = std::min(nt * nr, ceil_div(g.n, nr) * nr);
      if ((rows > max_rows && mt > 1) || (rows * cols > kMaxAccumulators && mt * nt > 1) || cols < min_cols) continue;
      const Blocks b{mt, nt};
      const double work = busiest_core(g, mr, nr, b, packs_b, padded, cores);
      const int64_t blocks = ceil_div(g.m, mt * mr) * ceil_div(g.n, nt * nr);
      if (work < best_work * (1 - 1e-9) || (work <= best_work * (1 + 1e-9) && blocks < best_blocks))
        best = b, best_work = work, best_blocks = blocks;
    }
  }
  return best;
}

// The fallback's blocks where B is stored packed: one micro-kernel column
// (nr columns) each, whose kb x nr panels of B every row tile of the block
// reads from L1, and as many rows as keep the busiest core least loaded, up
// to 256 rows whose A (rows x K words) fits in half of L2. At 1024^3 on
// Sapphire Rapids, blocks of 256 x 64 ran at 0.89 of oneDNN where 16 x 1024
// (the rule above, made for copied panels) ran at 0.6: each of its row tiles
// read the whole of B.
Blocks packed_weight_blocks(const KnobSpace& space, const Gemm& g, int64_t mr, int64_t nr, bool padded,
                            const ComputeDAG& dag, const Target& target) {
  constexpr int64_t kMaxRows = 256;
  const int64_t cores = dag.flop_count() >= kMinParallelFlops ? std::max(1, target.num_cores) : 1;
  const int64_t max_rows = std::max(mr, std::min(kMaxRows, target.l2_bytes / 2 / (4 * g.k)));
  Blocks best;
  double best_work = INFINITY;
  for (const std::vector<int64_t>& c : space.find("tile_m")->candidates) {
    if (c.back() != mr || c[1] * mr > max_rows) continue;
    const Blocks b{c[1], 1};
    const double work = busiest_core(g, mr, nr, b, /*packs_b=*/false, padded, cores);
    if (work < best_work * (1 - 1e-9) || (work <= best_work * (1 + 1e-9) && b.row_tiles > best.row_tiles))
      best = b, best_work = work;
  }
  return best;
}

}  // namespace

Result<KnobSpace> define_gemm(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Gemm g, analyze(dag));
  const int64_t lanes = target.vector_lanes(g.stages.dtype);
  KnobSpace space;
  if (amx_tiles(g, target)) {
    // Up to 2 x 4 tiles of C a micro-kernel (the code generator walks them
    // 2 x 2 at a time), k blocks of whole tiles of K.
    const int64_t rows = amx_tile_rows(g.m);
    TESSERA_RETURN_IF_ERROR(
        space.define_split("tile_m", g.m, SplitPolicy::tiles(), 3, amx_split_filter(g.m, rows, 2 * rows)));
    TESSERA_RETURN_IF_ERROR(
        space.define_split("tile_n", g.n, SplitPolicy::tiles(), 3, amx_split_filter(g.n, kAmxTile, 64)));
    TESSERA_RETURN_IF_ERROR(
        space.define_split("tile_k", g.k, SplitPolicy::tiles(), 2, amx_split_filter(g.k, kAmxTile, g.k)));
    TESSERA_RETURN_IF_ERROR(space.define_reorder_all("order", 3));
    TESSERA_RETURN_IF_ERROR(space.define_knob("cache_b", g.b_is_weights
                                                             ? std::vector<int64_t>{kPackedB, kReadB, kCopyPanel}
                                                             : std::vector<int64_t>{kReadB, kCopyPanel}));
    TESSERA_RETURN_IF_ERROR(space.define_knob("tensorize", {1}));
    return space;
  }
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_m", g.m, SplitPolicy::tiles(), 3, unrolled_split_filter()));
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_n", g.n, SplitPolicy::tiles(), 3, gemm_n_filter(g, lanes, target)));
  // A k block shorter than 16 reloads the accumulators for too little work.
  const int64_t min_kb = std::min<int64_t>(g.k, 16);
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_k", g.k, SplitPolicy::tiles(), 2,
                                             [=](const std::vector<int64_t>& s) { return s[1] >= min_kb; }));
  TESSERA_RETURN_IF_ERROR(space.define_reorder_all("order", 3));
  // A GEMV has a single row (nothing to unroll), uses each column of B once
  // (a panel of it is a copy of B at every call) and pads its last block (a
  // guarded one would read the unpacked weights across their rows).
  const bool gemv = g.m == 1;
  TESSERA_RETURN_IF_ERROR(space.define_annotate(
      "unroll_rows", {gemv ? std::vector<IterAnnotation>{IterAnnotation::kNone}
                           : std::vector<IterAnnotation>{IterAnnotation::kUnroll, IterAnnotation::kNone}}));
  std::vector<int64_t> panels = gemv ? std::vector<int64_t>{kReadB} : std::vector<int64_t>{kCopyPanel, kReadB};
  if (g.b_is_weights) panels.push_back(kPackedB);
  TESSERA_RETURN_IF_ERROR(space.define_knob("cache_b", panels));
  TESSERA_RETURN_IF_ERROR(
      space.define_knob("tail", gemv ? std::vector<int64_t>{kTailPad} : std::vector<int64_t>{kTailGuard, kTailPad}));
  return space;
}

Status apply_gemm(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(Gemm g, analyze(state->dag()));
  const int64_t lanes = target.vector_lanes(g.stages.dtype);
  const std::vector<int64_t>& tm = cfg.get("tile_m");
  const std::vector<int64_t>& tn = cfg.get("tile_n");
  const int64_t mr = tm[2], nr = tn[2], kb = cfg.get("tile_k")[1];
  const bool tensorize = cfg.find("tensorize") && cfg.get_int("tensorize") == 1;
  Sched s(state);

  // The product accumulates in `local`; `out` writes blocks of it out.
  std::string local = g.stages.main;
  const std::string& out = g.stages.output;
  if (local == out) {
    TESSERA_RETURN_IF_ERROR(s.cache_write(local));
    local += ".local";
  }
  for (const std::string& tail : g.stages.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(tail));
  std::vector<int64_t> block(g.batch_dims, 1);
  block.push_back(tm[1] * mr);
  block.push_back(tn[1] * nr);
  TESSERA_ASSIGN_OR_RETURN(Var tile, tile_output_blocks(s, out, block, lanes));
  TESSERA_RETURN_IF_ERROR(s.compute_at(local, out, tile));
  const bool pad = !tensorize && cfg.get_int("tail") == kTailPad;
  if (pad) TESSERA_RETURN_IF_ERROR(s.pad_tile(local));

  // local: batch.. i j k -> batch.. <order of k.0 i.0 j.0> k.1 i.1 j.1
  std::vector<Var> loops = s.loops(local);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> i, s.split(local, loops[g.batch_dims], {mr}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> j, s.split(local, loops[g.batch_dims + 1], {nr}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> k, s.split(local, loops[g.batch_dims + 2], {kb}));
  const Var outer[] = {k[0], i[0], j[0]};
  std::vector<Var> order(loops.begin(), loops.begin() + g.batch_dims);
  for (int64_t o : cfg.get("order")) order.push_back(outer[o]);
  order.insert(order.end(), {k[1], i[1], j[1]});
  TESSERA_RETURN_IF_ERROR(s.reorder(local, order));
  if (tensorize) {
    TESSERA_RETURN_IF_ERROR(s.annotate(local, k[1], IterAnnotation::kTensorize));
  } else {
    TESSERA_RETURN_IF_ERROR(s.annotate(local, i[1], static_cast<IterAnnotation>(cfg.get("unroll_rows")[0])));
    TESSERA_RETURN_IF_ERROR(s.annotate(local, j[1], IterAnnotation::kVectorize));
  }

  const int64_t panel_policy = cfg.get_int("cache_b");
  if (panel_policy == kCopyPanel) {
    // The panel is copied where both k.0 and j.0 enclose it: kb x nr.
    TESSERA_RETURN_IF_ERROR(s.cache_read(g.b, {local}));
    const std::string panel = g.b + ".local";
    auto pos = [&](const Var& v) {
      return std::find_if(order.begin(), order.end(), [&](const Var& o) { return o.same_as(v); });
    };
    const Var& at = pos(k[0]) > pos(j[0]) ? k[0] : j[0];
    TESSERA_RETURN_IF_ERROR(s.compute_at(panel, local, at));
    if (pad) TESSERA_RETURN_IF_ERROR(s.pad_tile(panel));
    if (g.b_k_last) TESSERA_RETURN_IF_ERROR(store_dimension_innermost(s, panel, g.b_j_dim));
    const Var last = s.loops(panel).back();
    TESSERA_ASSIGN_OR_RETURN(int64_t extent, s.inferred_extent(panel, last));
    TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(panel, last, extent, lanes));
  }
  // Dense reads W[n, k]: the micro-kernel's nr columns are K floats apart.
  // Stored [N/nr][K][nr] (layout.h), each block of columns streams its
  // weights sequentially (a batch-1 classifier's 512 x 1000 FC: 4-lane
  // gathers before). A padded block reads the zeros of a padded last block.
  if (g.b_is_nk && nr > 1 && nr < g.n && (g.n % nr == 0 || pad)) TESSERA_RETURN_IF_ERROR(s.pack_layout(g.b, 0, nr));
  // Constant weights read B[k, j] (int8 words, a window product's taps):
  // stored [N/nr][K][nr] likewise; bfloat16 pairs [N/nr][K/2][nr][2], each
  // pair one word still.
  if (panel_policy == kPackedB && nr > 1 && (g.n % nr == 0 || pad))
    TESSERA_RETURN_IF_ERROR(s.pack_layout(g.b, g.b_j_dim, nr, g.bf16_words ? 1 : 0));
  return Status::ok();
}

// The AMX fallback: 2 x 2 tiles of C (32 x 32, or two tiles of fewer rows),
// the whole of K (up to 256
// words) a block, B packed by 32 columns, blocks of rows as for packed
// weights. The k blocks innermost of the outer loops: where one covers K,
// the accumulator's zeros are stored right before the tile product, whose
// tiles then start at zero instead (CodeGen::emit_zeroed_tile_product).
Result<KnobConfig> fallback_amx(const KnobSpace& space, const Gemm& g, const ComputeDAG& dag, const Target& target) {
  const int64_t rows = amx_tile_rows(g.m);
  const int64_t mr = g.m % (2 * rows) == 0 ? 2 * rows : rows, nr = g.n % 32 == 0 ? 32 : 16;
  int64_t kb = kAmxTile;
  for (int64_t d = kAmxTile; d <= std::min<int64_t>(g.k, 256); d += kAmxTile)
    if (g.k % d == 0) kb = d;
  const Blocks blocks = packed_weight_blocks(space, g, mr, nr, /*padded=*/false, dag, target);
  return nearest_config(space, {{"tile_m", {0, blocks.row_tiles, mr}},
                                {"tile_n", {0, 1, nr}},
                                {"tile_k", {0, kb}},
                                {"order", {1, 2, 0}},
                                {"cache_b", {g.b_is_weights ? kPackedB : kReadB}},
                                {"tensorize", {1}}});
}

Result<KnobConfig> fallback_gemm(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Gemm g, analyze(dag));
  if (amx_tiles(g, target)) return fallback_amx(space, g, dag, target);
  const int64_t lanes = target.vector_lanes(g.stages.dtype);
  // bench_core's hand schedule: an 8 x 2-vector micro-kernel (4 rows with
  // 16 registers), blocks of about 64 x 256, k blocked by 256, B panels
  // packed. Weights read W[n, k] are packed in blocks of nr columns
  // (apply_gemm) instead.
  // A GEMV (M == 1) is the same micro-kernel with one row: it takes the
  // widest one (four registers of independent sums, gemv_max_nr), a block
  // each, so that the blocks share the weights' stream between the cores.
  //
  // Int8 weight words are stored packed, and the micro-kernel is 4 rows x
  // 4 vectors (2 with 16 registers): per word of K, 4 broadcasts and 4 loads
  // feed 16 dot products, where 8 x 2 took 10 for 16 and ran at 0.75 of
  // 4 x 4's speed (1024^3, Sapphire Rapids). Its k block keeps the kb x nr
  // panel of B in half of L1, each row tile of the block reading it.
  const bool gemv = g.m == 1;
  const bool words = g.b_is_weights && g.int8_words;
  const int vector_registers = target.vector_registers();
  const int64_t want_nr = gemv ? gemv_max_nr(lanes) : (words && vector_registers >= 32 ? 4 : 2) * lanes;
  // The micro-kernel's columns as the space has them (4 of N = 3).
  TESSERA_ASSIGN_OR_RETURN(KnobConfig columns, nearest_config(space, {{"tile_n", {0, 1, want_nr}}}));
  const int64_t nr = columns.get("tile_n").back();
  const int64_t mr = gemv ? 1 : unrolled_tile(*space.find("tile_m"), g.m, !words && vector_registers >= 32 ? 8 : 4);
  const int64_t kb = words ? std::max<int64_t>(16, target.l1_bytes / 2 / (4 * nr)) : 256;
  // Packed weights already stream; a panel of them would be read across its
  // rows. A GEMV uses each column of B once: a panel of it would copy B at
  // every call.
  // Constant weights are stored packed instead (a window product's taps:
  // the STFT's 512 x 257 taps were copied by each of its blocks, 2 MB a call).
  const PanelPolicy panel = g.b_is_weights ? kPackedB : gemv || (g.b_is_nk && nr < g.n) ? kReadB : kCopyPanel;
  // Where the micro-kernel's rows or columns do not divide the product the
  // blocks are padded, so that the accumulators are whole vectors in
  // registers, the panel of B is copied with zeros past its edge and only
  // the copy out is guarded. Guarded columns made every accumulator a masked
  // load and store in memory at each step of k (71 x 3 x 159: 50x
  // OpenBLAS); guarded rows, a branch around each row's (77 x 384 x 384:
  // 0.2x the padded blocks' speed).
  const bool pad = gemv || g.n % nr != 0 || g.m % mr != 0;
  // A GEMV's blocks are a tile of columns each: every core streams a share
  // of the weights.
  const Blocks blocks = gemv    ? Blocks{}
                        : words ? packed_weight_blocks(space, g, mr, nr, pad, dag, target)
                                : fallback_blocks(space, g, mr, nr, panel == kCopyPanel, pad, dag, target);
  return nearest_config(space, {{"tile_m", {0, blocks.row_tiles, mr}},
                                {"tile_n", {0, blocks.column_tiles, nr}},
                                {"tile_k", {0, kb}},
                                {"order", {0, 2, 1}},
                                {"unroll_rows", {static_cast<int64_t>(IterAnnotation::kUnroll)}},
                                {"cache_b", {panel}},
                                {"tail", {pad ? kTailPad : kTailGuard}}});
}

}  // namespace tessera::template_detail
