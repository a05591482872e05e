// Random annotation: completes a sketch into one program.
//
// Annotation walks a sketch (sketch.h) on a fresh State and emits every
// step: structure steps first, then each plan, consumers before producers.
// Each choice is read from SketchDecisions when set and drawn from the RNG
// when unset or stale (a tile factorization made for another extent, an
// index past the current options):
//   - tile sizes: a random factorization of each extent into the split
//     levels, divisors only (a vectorized innermost level favours lane
//     multiples <= 64; rarely a guarded non-dividing lane multiple);
//   - parallel: how many leading outer spatial loops of a root stage are
//     fused into the parallel loop (drawn among those giving >= num_cores
//     tasks without passing 16 x num_cores before the last fused loop);
//   - vectorize: the innermost spatial loop when its extent is 2..64 and a
//     multiple or divisor of the target's lanes (not a decision);
//   - auto-unroll: a max step for each reduction or tiled stage from the
//     target's set ({0, 16, 64, 512});
//   - compute location: root, or a loop of the consumer, for stages that
//     may move (their vector split is then chosen after infer_bounds).
#pragma once

#include <memory>
#include <vector>

#include "base/target.h"
#include "compiler/space/sketch/sketch.h"
#include "compiler/space/space_rng.h"

namespace tessera {

/// The complete state of `sketch` on `dag` with `decisions`: set decisions
/// are kept, unset or stale ones drawn from `rng` and written back (so the
/// same decisions replay to the same steps without the RNG). Errors are
/// kInvalidSchedule/kLoweringError from the schedule primitives and mean a
/// rule emitted a step that does not apply (a bug, not a user error).
Result<State> annotate_sketch(const std::shared_ptr<const ComputeDAG>& dag, const Sketch& sketch, const Target& target,
                              const SketchOptions& options, SketchDecisions* decisions, SpaceRng& rng);

/// A random factorization of `extent` into var.levels factors, outer to
/// inner, whose product is `extent`, or (tiles that need not divide) inner
/// levels drawn from nondividing_level_sizes and an outer level that covers
/// the extent. `registers`: the target's vector registers.
std::vector<int64_t> sample_tile_factors(int64_t extent, const TileVar& var, int registers,
                                         const SketchOptions& options, SpaceRng& rng);

/// The sizes that suit the target for inner level `level` (>= 1) of `var`
/// when its tiles need not divide `extent` and the other inner levels
/// multiply to `others`: whole vector registers (one to four) for a vector
/// level; for a k block, powers of two from 8 up to kMaxReduceTile and the
/// whole reduction when it fits; the rows of a register tile (innermost
/// level of a 4-level tiling) up to half the `registers`; otherwise powers
/// of two up to 64. Each times `others` stays within the extent.
std::vector<int64_t> nondividing_level_sizes(int64_t extent, const TileVar& var, int level, int64_t others,
                                             int registers);

/// Whether a loop of `extent` is vectorized with `lanes` lanes: 2..64 and a
/// multiple or divisor of the lane count.
bool vector_friendly(int64_t extent, int lanes);

/// The product of a tile variable's factors: the extent it covers (more than
/// the loop's extent when its tiles need not divide).
inline int64_t product_of(const std::vector<int64_t>& factors) {
  int64_t product = 1;
  for (int64_t f : factors) product *= f;
  return product;
}

/// The prime factors of n > 0, smallest first, with multiplicity.
std::vector<int64_t> prime_factors(int64_t n);

}  // namespace tessera
