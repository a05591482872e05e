// Schedule state: the stages of a ComputeDAG with their loops, and the
// primitives that transform them. Every primitive is a Step; `apply` checks
// it against the state, transforms, and records it, so `steps()` replays to
// the same state on a fresh one (see replay()).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/schedule/layout.h"
#include "compiler/schedule/step.h"
#include "compiler/te/compute_dag.h"

namespace tessera {

/// A loop of a stage, outermost first in Stage::iters.
struct Iter {
  Var var;
  int64_t extent = 1;
  IterKind kind = IterKind::kSpatial;
  IterAnnotation annotation = IterAnnotation::kNone;
};

/// parent = outer * factor + inner; when factor does not divide the parent's
/// extent the lowered loop is guarded by parent < extent.
struct SplitRelation {
  Var parent, outer, inner;
  int64_t factor;
};
/// fused = outer * inner_extent + inner.
struct FuseRelation {
  Var outer, inner, fused;
  int64_t inner_extent;
};
using Relation = std::variant<SplitRelation, FuseRelation>;

enum class ComputeLocation : uint8_t { kRoot, kInline, kAt };

/// One tensor's computation and its loops.
struct Stage {
  Tensor tensor;                     // identity; placeholders have no loops
  std::vector<IterVar> axes;         // root spatial axes (the tensor's dims)
  std::vector<IterVar> reduce_axes;  // root reduce axes
  Expr body;                         // over axes and reduce axes; may be a Reduce
  OpPattern pattern = OpPattern::kInjective;
  std::vector<Iter> iters;          // leaf loops, outermost first
  std::vector<Relation> relations;  // how leaf loops derive from root axes
  ComputeLocation location = ComputeLocation::kRoot;
  int attach_stage = -1;                         // kAt: the consumer stage ...
  Var attach_var;                                // ... and its loop
  MemoryScope scope = MemoryScope::kGlobal;      // cache stages: kLocal
  std::vector<std::pair<Var, int64_t>> pragmas;  // loop -> auto-unroll max step
  std::optional<PackedLayout> layout;            // placeholder arguments: stored packed (layout.h)
  bool pad_tile = false;                         // kAt: computes its whole tile (PadTileStep)
  std::vector<int> storage_order;  // kAt: its buffer's dims, outermost first (StorageOrderStep); empty: as the tensor's

  bool is_placeholder() const { return !body.defined(); }
  const std::string& name() const { return tensor->name; }
  /// Index of the loop with `var` in iters, or -1.
  int iter_index(const Var& var) const;
  /// Index of the loop named `name` ("i", "i.0", "i.0@j.0"), or -1.
  int iter_index(const std::string& name) const;
};

/// The stages of a DAG (producers first) and the steps applied so far.
class State {
 public:
  /// The initial state: one stage per tensor, its loops the tensor's axes.
  explicit State(std::shared_ptr<const ComputeDAG> dag);
  explicit State(const ComputeDAG& dag) : State(std::make_shared<const ComputeDAG>(dag)) {}

  const ComputeDAG& dag() const { return *dag_; }
  const std::shared_ptr<const ComputeDAG>& dag_ptr() const { return dag_; }
  const std::vector<Stage>& stages() const { return stages_; }
  const Stage& stage(int i) const { return stages_[i]; }
  const std::vector<Step>& steps() const { return steps_; }
  /// Index of the stage computing `t`, or -1.
  int stage_index(const Tensor& t) const;
  int stage_index(const std::string& name) const;

  /// Checks `step` against this state and applies it; on error the state is
  /// unchanged and the error names the step.
  Status apply(const Step& step);

  // Conveniences that build, apply and record the step.
  Status split(int stage, int iter, std::vector<int64_t> factors);
  Status split_nparts(int stage, int iter, int64_t nparts);
  Status fuse(int stage, std::vector<int> iters);
  Status reorder(int stage, std::vector<int> order);
  Status annotate(int stage, int iter, IterAnnotation annotation);
  Status parallel(int stage, int iter) { return annotate(stage, iter, IterAnnotation::kParallel); }
  Status vectorize(int stage, int iter) { return annotate(stage, iter, IterAnnotation::kVectorize); }
  Status unroll(int stage, int iter) { return annotate(stage, iter, IterAnnotation::kUnroll); }
  Status compute_at(int stage, int target_stage, int target_iter);
  Status compute_inline(int stage);
  Status compute_root(int stage);
  Status cache_read(int stage, std::vector<int> readers);
  Status cache_write(int stage);
  Status rfactor(int stage, int reduce_axis, int64_t factor);
  Status pragma_auto_unroll(int stage, int iter, int64_t max_step);
  /// Stores placeholder argument `stage` packed on `axis` by `factor` (layout.h).
  Status pack_layout(int stage, int axis, int64_t factor, int inner = 0);
  /// Computes `stage` (computed at another stage's loop) over its whole tile
  /// at the tensor's edge, only the final store guarded (PadTileStep).
  Status pad_tile(int stage);
  /// Stores `stage` (computed at another stage's loop) with its dimensions
  /// in `order`, outermost first (StorageOrderStep).
  Status storage_order(int stage, std::vector<int> order);

  /// split, then reorder so the loops of `iters` come out tiled: for 2-D
  /// tiling `tile(s, {i, j}, {{ti}, {tj}})` gives i.0 j.0 i.1 j.1.
  Status tile(int stage, std::vector<int> iters, std::vector<std::vector<int64_t>> factors);

  /// Replaces the extents of stage `stage`'s loops with those bound inference
  /// found (a stage computed at a consumer's loop covers only the region that
  /// loop needs). Used by infer_bounds(); `extents` has one entry per loop.
  void set_loop_extents(int stage, const std::vector<int64_t>& extents);

  /// Loops of every stage, one line per loop, as the lowering will nest them.
  std::string to_string() const;

 private:
  Status apply_split(const Step& step, const SplitStep& s);
  Status apply_fuse(const Step& step, const FuseStep& s);
  Status apply_reorder(const Step& step, const ReorderStep& s);
  Status apply_annotate(const Step& step, const AnnotateStep& s);
  Status apply_compute_at(const Step& step, const ComputeAtStep& s);
  Status apply_compute_inline(const Step& step, const ComputeInlineStep& s);
  Status apply_compute_root(const Step& step, const ComputeRootStep& s);
  Status apply_cache_read(const Step& step, const CacheReadStep& s);
  Status apply_cache_write(const Step& step, const CacheWriteStep& s);
  Status apply_rfactor(const Step& step, const RfactorStep& s);
  Status apply_pragma(const Step& step, const PragmaStep& s);
  Status apply_pack_layout(const Step& step, const PackLayoutStep& s);
  Status apply_pad_tile(const Step& step, const PadTileStep& s);
  Status apply_storage_order(const Step& step, const StorageOrderStep& s);
  void reindex_after_insert(int position);

  Status check_stage(const Step& s, int stage, bool allow_placeholder = false) const;
  Status check_iter(const Step& s, int stage, int iter) const;
  bool has_attached(int stage, const Var& var) const;
  bool is_untransformed(int stage) const;
  /// True when `stage` is computed (directly or through stages computed at
  /// each other) at loop `loop` or a deeper loop of stage `target`.
  bool runs_inside(int stage, int target, int loop) const;

  std::shared_ptr<const ComputeDAG> dag_;
  std::vector<Stage> stages_;
  std::vector<Step> steps_;
};

/// Replays `steps` on a fresh state of `dag`; the first failing step's error.
Result<State> replay(std::shared_ptr<const ComputeDAG> dag, const std::vector<Step>& steps);

/// Stages that read stage `i`'s tensor.
std::vector<int> consumers_of(const State& state, int i);

}  // namespace tessera
