// Sketches: template-free schedule skeletons generated from a ComputeDAG by
// rules (as in TVM's auto-scheduler, Ansor), and the decisions that turn a
// sketch into one complete, replayable step list.
//
// Representation. A sketch is not a step list with holes but a small program
// over the DAG's stages:
//   - `structure`: steps that change the set of stages or their bodies
//     (cache_write, rfactor, compute_inline), emitted first;
//   - `plans`: one per stage that keeps loops, in the order they are
//     scheduled (consumers before producers, so that a consumer's loops are
//     final before a producer is computed at one of them);
//   - `tiles`: the tile-size "holes": each a factorization of one loop extent
//     into levels, shared by every split that depends on it (a fused consumer
//     and its producer split one axis with one variable).
// Annotation (annotation.h) walks this program, reads or samples every
// decision (tile sizes, parallel granularity, auto-unroll, compute
// locations) and emits the steps on a live State. The holes cannot be plain
// placeholder factors in a finished step list because our fuse refuses loops
// that have stages computed at them: the parallel fuse (an annotation
// decision) must be emitted before the compute_at that the sketch implies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// Knobs of sketch generation and random annotation.
struct SketchOptions {
  int max_sketches = 16;              ///< sketches per DAG at most (rule alternatives beyond it are dropped)
  std::vector<int64_t> unroll_steps;  ///< auto-unroll max steps to draw from; empty: the target's set
  double vector_bias = 0.8;           ///< chance that a vectorized tile level is drawn among lane multiples
  double nondividing_chance = 0.05;   ///< chance of tile sizes that need not divide a friendly extent
  double unfriendly_nondividing_chance =
      0.8;  ///< ... and an extent without such divisors (6625 = 5^3 x 53; primes above 16 always, unless 0)
  int64_t rfactor_min_reduce = 64;       ///< rfactor needs at least this many reduced elements per output ...
  int rfactor_max_spatial_per_core = 2;  ///< ... and at most this many outputs per core
};

/// The auto-unroll values annotation draws from for `target` when
/// SketchOptions::unroll_steps is empty: {0, 16, 64, 512} on CPUs.
std::vector<int64_t> default_unroll_steps(const Target& target);

/// A stage of the state being scheduled: a tensor of the DAG, the stage that
/// cache_write (".local") or rfactor (".rf") inserted just before it, or the
/// one cache_read (".local" of an input) inserted just after it. Tensors are
/// addressed by their index in dag.tensors(), never by name, so DAGs with
/// repeated names still schedule correctly.
struct SketchStageRef {
  enum class Kind : uint8_t { kTensor, kLocal, kRfactor, kCacheRead };
  int tensor = -1;
  Kind kind = Kind::kTensor;
  bool operator==(const SketchStageRef& o) const { return tensor == o.tensor && kind == o.kind; }
};

/// What the sketch does with one stage.
enum class StageRule : uint8_t {
  kInline,         ///< compute_inline (a structure step); no plan of its own
  kSimple,         ///< loops kept; one spatial axis split for vectors; parallel at the root; may move
  kTiled,          ///< multi-level tiling "SSRSRS" at the root
  kFusedConsumer,  ///< tiled "SS" + inner loops; its producer is computed at its last S loop
  kFusedProducer,  ///< tiled "RSRS" inside its consumer's tile (cache_write stages too)
};
const char* stage_rule_name(StageRule rule);

/// A structure step: changes the stages before any loop is scheduled.
struct SketchStructureStep {
  enum class Kind : uint8_t { kCacheWrite, kRfactor, kInline };
  Kind kind = Kind::kInline;
  SketchStageRef stage;
  int axis = 0;   ///< rfactor: the reduce axis
  int tile = -1;  ///< rfactor: the tile variable whose innermost level is the factor
};

/// One tile-size hole: a factorization of a loop extent into `levels`
/// factors, outer to inner. Annotation samples it; mutation moves factors
/// between its levels.
struct TileVar {
  std::string name;  ///< "C.local.i" for messages and printing
  int levels = 2;
  bool vector_inner = false;  ///< the innermost level is vectorized: favour lane multiples <= 64
  /// A reduce axis' k block (inner level): a tile that need not divide the
  /// extent may be up to kMaxReduceTile long, not 64 as a spatial tile.
  bool reduce = false;
  /// Lanes of one vector register for the stage's dtype on the target: the
  /// sizes of a vector level that need not divide are multiples of it.
  int lanes = 1;
};

/// The longest k block of a reduce axis whose tiles need not divide it: a
/// panel of 256 x 32 floats still fits L1, and the accumulators are reloaded
/// once per block (the prime matmul: 256 ran 3-5% faster than 64 or 499).
inline constexpr int64_t kMaxReduceTile = 512;

/// How one stage that keeps loops is scheduled.
struct StagePlan {
  SketchStageRef stage;
  StageRule rule = StageRule::kSimple;
  int partner = -1;      ///< fused pair: index of the other plan
  bool movable = false;  ///< kSimple: its compute location is a decision
  bool unrolls = false;  ///< has an auto-unroll decision (reductions and tiled stages)
  int vector_axis = -1;  ///< kSimple: the root spatial axis split for vectors (-1: none)
  /// kTiled/kFusedProducer: one variable per spatial axis (4 levels) then one
  /// per reduce axis (2 levels), -1 for axes of extent 1; kSimple: the
  /// vector split (2 levels) or nothing.
  std::vector<int> tiles;
  /// kTiled/kFusedProducer: inputs (DAG tensor indices) packed into a panel
  /// by cache_read at the vector axis' S2 loop, which then comes first in S2.
  std::vector<int> packed;
};

/// A schedule skeleton of a DAG; see the file comment.
struct Sketch {
  std::string description;  ///< e.g. "C: cache_write, C.local tiled SSRSRS fused into C"
  std::vector<SketchStructureStep> structure;
  std::vector<StagePlan> plans;
  std::vector<TileVar> tiles;
  /// Readable form: the description, the structure steps and the plans.
  std::string to_string(const ComputeDAG& dag) const;
};

/// Every choice that completes a sketch. A negative value (or an empty
/// factor list) is unset: annotation samples it. Annotation also records how
/// many options each choice had, which mutations use.
struct SketchDecisions {
  std::vector<std::vector<int64_t>> tiles;  ///< per tile variable: level factors, outer to inner
  std::vector<int64_t> tile_extents;        ///< the extent each factorization covers
  std::vector<int> parallel;                ///< per plan: leading loops fused into the parallel loop
  std::vector<int> parallel_options;        ///< per plan: the largest valid `parallel` (0: none)
  std::vector<int64_t> unroll;              ///< per plan: auto_unroll_max_step (0: no pragma)
  std::vector<int> location;                ///< per plan: 0 root, i > 0 the i-th candidate loop
  std::vector<int> location_options;        ///< per plan: number of candidate loops
  /// Per plan: 1 when its producer computes whole tiles where they hang over
  /// the tensor's edge (PadTileStep), 0 when it guards them, -1 unset.
  std::vector<int> pad;
  /// Unset decisions sized for `sketch`.
  static SketchDecisions unset(const Sketch& sketch);
  /// "tiles C.i=[4, 8, 2, 16] ...; parallel C=2; unroll C.local=64; location ..."
  std::string to_string(const Sketch& sketch) const;
  /// The choices as JSON (the option counts are derived, so not stored):
  /// {"tiles":[[..],..],"tile_extents":[..],"parallel":[..],"unroll":[..],"location":[..],"pad":[..]}
  /// ("pad" absent: all 0, as programs were before padded tiles).
  /// A record keeps it beside the steps so that a loaded program can mutate.
  std::string to_json() const;
  /// Parses to_json's text; kParseError naming the field when malformed.
  static Result<SketchDecisions> from_json(const std::string& text);
};

/// A complete program of a sketch space: the sketch, the decisions that
/// complete it, and the replayed state. `state.steps()` is the schedule to
/// record; replay(dag, state.steps()) rebuilds it exactly.
struct SketchProgram {
  int sketch = -1;
  SketchDecisions decisions;
  State state;
  SketchProgram(int s, SketchDecisions d, State st) : sketch(s), decisions(std::move(d)), state(std::move(st)) {}
};

/// The index of `ref`'s stage in `state`, or -1.
int resolve_stage(const State& state, const SketchStageRef& ref);

}  // namespace tessera
