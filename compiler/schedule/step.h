// Schedule steps: the serializable record of one schedule primitive.
//
// A schedule is an ordered list of steps; replaying it on a fresh State of
// the same ComputeDAG reproduces the same kernel exactly. Steps address
// stages and loops by index in the state they apply to.
//
// A Step is one of the per-kind structs below (a std::variant); each struct
// holds exactly the arguments of its primitive. Equality and hashing are
// structural, so a step list is its own identity (JSON is for storage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/status.h"

namespace tessera {

/// The kinds of step, in the order of Step's alternatives.
enum class StepKind : uint8_t {
  kSplit,
  kFuse,
  kReorder,
  kAnnotate,
  kComputeAt,
  kComputeInline,
  kComputeRoot,
  kCacheRead,
  kCacheWrite,
  kRfactor,
  kPragma,
  kPackLayout,
  kPadTile,
  kStorageOrder,
};
/// "split", "compute_at", ...: the spelling of the JSON "kind" field.
const char* step_kind_name(StepKind kind);

/// How a loop runs once lowered.
/// kTensorize: the loop and the loops inside it, down to one accumulating
/// store, are one product of tiles on the target's matrix unit (x86 AMX); see
/// LoopKind::kTensorized.
enum class IterAnnotation : uint8_t { kNone, kParallel, kVectorize, kUnroll, kTensorize };
const char* annotation_name(IterAnnotation a);

/// Splits loop `iter` into loops of the given inner extents (outer to inner),
/// or, when `nparts` is nonzero, into `nparts` outer iterations (then
/// `factors` is empty in a recorded step).
struct SplitStep {
  int stage = 0;
  int iter = 0;
  std::vector<int64_t> factors;
  int64_t nparts = 0;
  bool operator==(const SplitStep&) const = default;
};
/// Fuses consecutive loops `iters` (outer to inner) into one.
struct FuseStep {
  int stage = 0;
  std::vector<int> iters;
  bool operator==(const FuseStep&) const = default;
};
/// Reorders the stage's loops: `order` is a permutation of all of them.
struct ReorderStep {
  int stage = 0;
  std::vector<int> order;
  bool operator==(const ReorderStep&) const = default;
};
/// Marks loop `iter` parallel, vectorized or unrolled.
struct AnnotateStep {
  int stage = 0;
  int iter = 0;
  IterAnnotation annotation = IterAnnotation::kNone;
  bool operator==(const AnnotateStep&) const = default;
};
/// Computes `stage` inside loop `target_iter` of stage `target_stage`.
struct ComputeAtStep {
  int stage = 0;
  int target_stage = 0;
  int target_iter = 0;
  bool operator==(const ComputeAtStep&) const = default;
};
/// Inlines `stage` into its consumers.
struct ComputeInlineStep {
  int stage = 0;
  bool operator==(const ComputeInlineStep&) const = default;
};
/// Computes `stage` at the root again.
struct ComputeRootStep {
  int stage = 0;
  bool operator==(const ComputeRootStep&) const = default;
};
/// Reads tensor `stage` through a local copy in stages `readers`.
struct CacheReadStep {
  int stage = 0;
  std::vector<int> readers;
  bool operator==(const CacheReadStep&) const = default;
};
/// Computes `stage` into a local buffer (before any loop transform).
struct CacheWriteStep {
  int stage = 0;
  bool operator==(const CacheWriteStep&) const = default;
};
/// Factors reduce axis `axis` of `stage` by `factor` (before any loop transform).
struct RfactorStep {
  int stage = 0;
  int axis = 0;
  int64_t factor = 0;
  bool operator==(const RfactorStep&) const = default;
};
/// Auto-unroll hint on loop `iter`: unroll the loops inside up to this many steps.
struct PragmaStep {
  int stage = 0;
  int iter = 0;
  int64_t auto_unroll_max_step = 0;
  bool operator==(const PragmaStep&) const = default;
};
/// Stores placeholder argument `stage` packed on `axis` by `factor`, its last
/// `inner` dimensions innermost after the factor (layout.h).
struct PackLayoutStep {
  int stage = 0;
  int axis = 0;
  int64_t factor = 0;
  int inner = 0;
  bool operator==(const PackLayoutStep&) const = default;
};
/// Computes `stage`, which is computed at a loop of another stage, over its
/// whole tile where the tile hangs over the tensor's edge: its buffer is
/// padded to the tile and only the final store is guarded (Halide's "round
/// up" tail). Its reads of whole tensors past their edge are clamped, or
/// masked along a vectorized loop; the values it computes there are never
/// stored.
struct PadTileStep {
  int stage = 0;
  bool operator==(const PadTileStep&) const = default;
};
/// Stores `stage`, a local copy computed at another stage's loop, with its
/// dimensions in `order` (outermost first; a permutation of the tensor's
/// dimensions): a panel read along a dimension other than the tensor's last
/// (the columns of a transposed operand) is then contiguous along it.
struct StorageOrderStep {
  int stage = 0;
  std::vector<int> order;
  bool operator==(const StorageOrderStep&) const = default;
};

/// One primitive with its arguments: one of the structs above. The order of
/// the alternatives is StepKind's.
class Step {
 public:
  using Variant = std::variant<SplitStep, FuseStep, ReorderStep, AnnotateStep, ComputeAtStep, ComputeInlineStep,
                               ComputeRootStep, CacheReadStep, CacheWriteStep, RfactorStep, PragmaStep, PackLayoutStep,
                               PadTileStep, StorageOrderStep>;

  /// A step of the kind of `s` (implicit: `Step step = SplitStep{...}`).
  template <typename KindStep, typename = std::enable_if_t<std::is_constructible_v<Variant, KindStep&&>>>
  Step(KindStep&& s) : v_(std::forward<KindStep>(s)) {}  // NOLINT(google-explicit-constructor)

  StepKind kind() const { return static_cast<StepKind>(v_.index()); }
  /// The stage the step applies to (every kind has one).
  int stage() const;
  /// The kind's struct, or null when the step is of another kind.
  template <typename KindStep>
  const KindStep* as() const {
    return std::get_if<KindStep>(&v_);
  }
  const Variant& variant() const { return v_; }

  bool operator==(const Step& o) const { return v_ == o.v_; }
  /// "split(stage=1, iter=0, factors=[32, 4])"
  std::string to_string() const;

 private:
  Variant v_;
};

static_assert(std::variant_size_v<Step::Variant> == static_cast<size_t>(StepKind::kStorageOrder) + 1,
              "one alternative per StepKind");

/// `step` in the form it is recorded: a split with `nparts` keeps no factors,
/// so that equal steps compare equal and survive a JSON round trip.
Step canonical_step(const Step& step);

/// Structural hash of a step (equal steps hash equally).
uint64_t hash_step(const Step& step);
/// Structural hash of a step list, in order.
uint64_t hash_steps(const std::vector<Step>& steps);

/// Hasher for step lists as keys of unordered containers.
struct StepListHash {
  size_t operator()(const std::vector<Step>& steps) const { return static_cast<size_t>(hash_steps(steps)); }
};

/// JSON text of a step list: `[{"kind":"split","stage":1,...}, ...]`.
std::string steps_to_json(const std::vector<Step>& steps);
/// Parses steps_to_json's output; a malformed list is a kParseError naming
/// the step.
Result<std::vector<Step>> steps_from_json(const std::string& text);

}  // namespace tessera
