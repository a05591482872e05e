// Shared machinery of the knob templates (internal to compiler/space):
// finding an operator's stages in its DAG, scheduling by stage name and loop
// variable instead of by index, the common "tile the output, compute the
// product at the tile" shape, and fallback configurations chosen as the
// candidates nearest a hand-picked ideal.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/target.h"
#include "compiler/schedule/state.h"
#include "compiler/space/knob/knob_space.h"

namespace tessera::template_detail {

/// The stages of one operator as the ops library builds it: the main
/// computation, its optional "pad" producer, and the elementwise tail
/// (bias, ReLU, the average's division) that ends in the DAG's output.
struct OpStages {
  std::string main;                  ///< the reduction (kComplex or kReduction) stage
  std::string pad;                   ///< the compute producer main reads (kInjective), or ""
  std::string output;                ///< the DAG's output: main itself or the tail's last stage
  std::vector<std::string> inlined;  ///< tail stages inlined into output (or into broadcast)
  /// The DAG's output when the tail ends in stages of a larger shape that
  /// main's broadcasts to (x * hardsigmoid(conv(...)) of a squeeze-excite
  /// block), else "". `output` is then the last stage of main's shape,
  /// stored whole; schedule_broadcast schedules this stage after it.
  std::string broadcast;
  std::vector<std::string> inputs;  ///< main's input tensors in order of first read
  std::vector<int64_t> shape;       ///< main's (and the output's) shape
  std::vector<int64_t> reduce;      ///< main's reduce extents, in order
  DType dtype = DType::f32();       ///< main's element type (sets the vector lanes)
};

/// Finds the stages of `dag` for template `name`: exactly one compute with
/// `pattern`, at most one compute producer of it (a pad), a tail of
/// non-reductions of main's shape ending in the only output -- or, with
/// `allow_broadcast`, continuing in stages of one larger shape that main's
/// broadcasts to (OpStages::broadcast). Anything else is kInvalidArgument
/// naming the template.
Result<OpStages> find_op_stages(const ComputeDAG& dag, OpPattern pattern, const std::string& name,
                                bool allow_broadcast = false);

/// Whether `stages.main` sums int8 dot products of packed words
/// (CallOp::kDotU8S8): the int8 gemm's micro-kernel takes fewer rows and
/// more vectors than the float one (template_gemm.cc).
bool sums_int8_dots(const ComputeDAG& dag, const OpStages& stages);
/// Whether the main stage sums bfloat16 dot products (CallOp::kDotBf16).
bool sums_bf16_dots(const ComputeDAG& dag, const OpStages& stages);

/// How a product stage `op` (output axes i, j; reduce axis k) reads its
/// operands `a` and `b`.
struct ProductReads {
  bool b_is_nk = false;    ///< b is read b[j, k], rank 2 (dense's W)
  int j_dim = -1;          ///< the dimension of b whose index uses j
  bool k_last = false;     ///< b's last dimension is indexed by k, not j: a transposed
                           ///< operand read in place (attention's K^T), its columns strided
  bool a_windows = false;  ///< some dimension of a is indexed by both i and k (windows)
};
ProductReads product_reads(const ComputeOpNode& op, const std::string& a, const std::string& b, const Var& i,
                           const Var& j, const Var& k);

/// Schedules one State by stage names and loop variables. Stage indices
/// move when cache stages are inserted and loop positions move with every
/// split; names and Vars do not.
class Sched {
 public:
  explicit Sched(State* state) : state_(state) {}
  State& state() { return *state_; }

  /// The current leaf loops of `stage`, outermost first.
  std::vector<Var> loops(const std::string& stage) const;
  /// Loops `loop` produced, outer to inner ([outer, f1, ...] of the knob).
  Result<std::vector<Var>> split(const std::string& stage, const Var& loop, std::vector<int64_t> factors);
  /// The fused loop of consecutive `loops`.
  Result<Var> fuse(const std::string& stage, const std::vector<Var>& loops);
  /// Reorders to `order`, which lists every loop of the stage.
  Status reorder(const std::string& stage, const std::vector<Var>& order);
  Status annotate(const std::string& stage, const Var& loop, IterAnnotation a);
  Status compute_at(const std::string& stage, const std::string& target, const Var& loop);
  Status compute_inline(const std::string& stage);
  Status cache_write(const std::string& stage);                                          ///< adds stage + ".local"
  Status cache_read(const std::string& stage, const std::vector<std::string>& readers);  ///< adds stage + ".local"
  /// Stores input `stage` packed on `axis` by `factor`, its last `inner`
  /// dimensions innermost (compiler/schedule/layout.h).
  Status pack_layout(const std::string& stage, int axis, int64_t factor, int inner = 0);
  /// Partial reductions of `stage` over `factor` slices of its reduce axis
  /// `reduce_axis` (RfactorStep): adds stage + ".rf", [factor, stage's shape...].
  Status rfactor(const std::string& stage, int reduce_axis, int64_t factor);
  /// The partial results `rf` (a stage rfactor added: [kf, axes..., ko,
  /// other reduce axes...]) accumulated as one vector: its loops reordered to
  /// [axes..., others..., ko, kf], innermost reads contiguous, kf vectorized.
  Status vectorize_partial_results(const std::string& rf);
  /// Computes `stage` (computed at a tile) over its whole tile (PadTileStep).
  Status pad_tile(const std::string& stage);
  /// Stores `stage` (a local copy) with its dimensions in `order` (StorageOrderStep).
  Status storage_order(const std::string& stage, std::vector<int> order);
  /// Vectorizes `loop` of `extent` (known to the caller): the whole loop
  /// when it fits four vectors, else the inner part of a split by the widest
  /// divisor of whole vectors (or a power-of-two part of one).
  Status vectorize_by_divisor(const std::string& stage, const Var& loop, int64_t extent, int64_t lanes);
  /// Extent of `loop` once bound inference has run (attached stages cover
  /// only their region).
  Result<int64_t> inferred_extent(const std::string& stage, const Var& loop) const;

 private:
  Result<int> stage_index(const std::string& name) const;
  Result<int> loop_index(int stage, const Var& loop) const;

  State* state_;
};

/// Floating-point operations below which a template's blocks run serially:
/// a parallel launch (a few microseconds when the workers sleep) would cost
/// more than the work.
inline constexpr double kMinParallelFlops = 65536;

/// The largest divisor of `n` not above `limit` (1 when none is larger).
int64_t divisor_at_most(int64_t n, int64_t limit);

/// A micro-kernel's rows for a block of `block` rows, near `want`: the
/// largest divisor of the block up to `want` when it is at least half of
/// min(block, want) (no remainder), else min(block, want) with a remainder
/// chunk, guarded. A block of 19 Winograd tiles ran a one-tile micro-kernel
/// at 130-140 GFLOP/s, 8 tiles and a chunk of 3 at 200-220; an attention
/// block of 11 rows runs 8 and 3, not 11 of 1.
int64_t micro_kernel_rows(int64_t block, int64_t want);

/// Stores `stage` (a copy of a transposed operand) with its dimension `dim`
/// (the one a micro-kernel's vectors run along) innermost, and runs the copy
/// along it too (gathering, storing whole vectors): the micro-kernel's loads
/// are then contiguous.
Status store_dimension_innermost(Sched& s, const std::string& stage, int dim);

/// Tiles `stage` (an output of main's shape) into blocks of `block` (one size
/// per axis), runs the fused block loops in parallel (unless the DAG does
/// fewer than kMinParallelFlops) and vectorizes the
/// innermost axis of the block. The blocks run in `block_order` (a
/// permutation of the axes, outermost first; empty: the axes' order), so
/// consecutive blocks of one thread share what the order keeps fixed.
/// Returns the fused block loop, where the computation of the block is
/// attached.
Result<Var> tile_output_blocks(Sched& s, const std::string& stage, const std::vector<int64_t>& block, int64_t lanes,
                               const std::vector<int64_t>& block_order = {});

/// Inlines the elementwise tail of `stages` and returns the stage the
/// reduction accumulates in: main itself when a tail copies it out, else
/// main's cache_write copy (main + ".local"), the output copying it out.
Result<std::string> accumulator(Sched& s, const OpStages& stages);

/// Schedules the broadcast tail of `stages` (if any): its inlined stages are
/// already inlined; the output runs its outer axes fused in parallel and its
/// innermost axis vectorized, like an elementwise kernel.
Status schedule_broadcast(Sched& s, const OpStages& stages, int64_t lanes);

/// Where a pad stage is computed (the "pad" knob's values).
enum PadLocation : int64_t { kPadInline = 0, kPadRoot = 1, kPadAt = 2 };
/// Defines the "pad" knob when the operator has a pad stage.
Status define_pad_knob(KnobSpace* space, const OpStages& stages);
/// Places the pad stage per the "pad" knob: inlined into its reader, at the
/// root (parallel rows, vectorized innermost axis), or at `at_stage`'s `at_loop`.
Status place_pad(Sched& s, const OpStages& stages, const KnobConfig& config, const std::string& at_stage,
                 const Var& at_loop, int64_t lanes);

/// The configuration whose knobs are nearest `ideal` (knob name -> value).
/// Split knobs compare inner sizes by log distance (innermost weighted most;
/// a 0 in the ideal means "any"); other knobs take the equal candidate, else
/// their first. Knobs absent from `ideal` take their first candidate.
Result<KnobConfig> nearest_config(const KnobSpace& space,
                                  const std::vector<std::pair<std::string, std::vector<int64_t>>>& ideal);

/// The vector width `Sched::vectorize_by_divisor` gives a loop of `extent`:
/// the whole loop when it fits four registers, else its widest divisor made
/// of whole registers or a power-of-two part of one; 1 when none divides it.
int64_t divisor_vector_width(int64_t extent, int64_t lanes);

/// Filter of a split whose innermost size is one vectorized loop: at most
/// four vectors and the lowering's lane limit; whole vectors when `extent` is
/// a multiple of `lanes`, else a power of two up to one vector, or the whole
/// extent, and also whole vectors (a masked remainder) when neither half a
/// vector nor a vector divides it and it is longer than four vectors.
SplitFilter vector_split_filter(int64_t extent, int64_t lanes);
/// AMX's tile: 16 rows, 16 int32 columns, 16 words of the reduction.
inline constexpr int64_t kAmxTile = 16;
/// The rows of the AMX tiles of a product of `m` rows: the most, up to 16,
/// that divide m, and at least `min_rows`; 0 where none does.
int64_t amx_tile_rows(int64_t m, int64_t min_rows = 8);
/// Filter of a split of a product onto AMX tiles: the micro-kernel whole
/// tiles (of `tile` rows, columns or words), `max_inner` at most, and the
/// split exact (no block past the edge).
SplitFilter amx_split_filter(int64_t extent, int64_t tile, int64_t max_inner);

/// Filter of a split whose innermost size is an unrolled loop (at most `max`).
SplitFilter unrolled_split_filter(int64_t max = 16);

/// The distinct innermost sizes of split knob `knob`, ascending, for the
/// fallbacks to choose from: every divisor of the extent, and the sizes that
/// do not divide it where no divisor comes within half of them.
std::vector<int64_t> innermost_sizes(const Knob& knob);
/// The largest of ascending `sizes` not above `limit` (the smallest if none is).
int64_t largest_at_most(const std::vector<int64_t>& sizes, int64_t limit);
/// The one of ascending `sizes` nearest `want` by ratio (the smaller on a tie).
int64_t nearest_size(const std::vector<int64_t>& sizes, int64_t want);
/// The unrolled micro-kernel size a fallback takes for a loop of `extent`,
/// among the innermost sizes of split knob `knob` up to `max`: the fewest
/// iterations computed, a remainder padded to a whole tile included,
/// counting one more per tile (the loads the tile's unrolled copies share)
/// and at least three quarters of `max` per tile (fewer leave too few
/// accumulator chains to cover the FMA latency: 19 columns of a conv ran at
/// 92 GFLOP/s in tiles of 4, 209 in tiles of 8); on a tie the less padding,
/// then the larger size. 77 takes tiles of 7 where 8 left a tile of 5; 3
/// takes 3; 197 (prime) takes 8 and pads the last tile.
int64_t unrolled_tile(const Knob& knob, int64_t extent, int64_t max);
/// The vector width a fallback uses among a vectorized split's innermost
/// `sizes`: whole registers, nearest two of them; else the widest power of
/// two (a 56-wide row runs faster as 8-wide pieces than as 3.5 registers).
int64_t preferred_vector_width(const std::vector<int64_t>& sizes, int64_t lanes);

/// Annotation choices for a loop that may be unrolled: {none, unroll} when
/// `extent` is small enough to copy out, else {none}.
std::vector<IterAnnotation> unroll_choices(int64_t extent, int64_t max_extent = 16);

}  // namespace tessera::template_detail
