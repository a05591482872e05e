// Mutations of sketch programs for evolutionary search (Ansor's):
//
//   tile size         move a divisor of one level's factor to another level
//                     of the same tile variable (every split that shares the
//                     variable follows);
//   parallel          fuse more or fewer leading loops into a root stage's
//                     parallel loop;
//   auto-unroll       another max step from the target's set for one stage;
//   compute location  move a stage that may move to root or another loop of
//                     its consumer (its vector split follows the new region).
//
// A mutation changes one decision of the program, re-emits the step list
// from the sketch (annotation draws any decision the change made stale),
// replays it on a fresh state and checks that it lowers (check_lowers: the
// schedule-level passes, the only ones that can reject a program). It returns the new
// program only when both succeed and the step list differs; otherwise it
// tries another change, and after a few reports "not applicable" — never an
// invalid program. It works on decisions rather than on raw steps because a tile
// variable drives several coupled splits (a fused consumer and its producer)
// that must change together.
#pragma once

#include <optional>
#include <string>

#include "compiler/space/sketch/sketch.h"
#include "compiler/space/space_rng.h"

namespace tessera {

class SketchSpace;

/// The mutation operators.
enum class MutationKind : uint8_t { kTileSize, kParallel, kUnroll, kComputeLocation };
const char* mutation_kind_name(MutationKind kind);
/// Every kind, in a stable order.
inline constexpr MutationKind kAllMutationKinds[] = {MutationKind::kTileSize, MutationKind::kParallel,
                                                     MutationKind::kUnroll, MutationKind::kComputeLocation};

/// A mutated program, or why the mutation does not apply.
struct MutationResult {
  std::optional<SketchProgram> program;  ///< set when applied: a valid program that differs
  std::string reason;                    ///< when not applicable
  bool applied() const { return program.has_value(); }
};

/// Applies one mutation of `kind` to `program` (a program of `space`).
MutationResult mutate(const SketchSpace& space, const SketchProgram& program, MutationKind kind, SpaceRng& rng);

/// Applies a mutation of a random kind among those with something to change
/// in `program`, trying the other kinds before giving up.
MutationResult mutate(const SketchSpace& space, const SketchProgram& program, SpaceRng& rng);

/// Whether `program` has anything a mutation of `kind` could change.
bool mutation_has_candidates(const SketchSpace& space, const SketchProgram& program, MutationKind kind);

}  // namespace tessera
