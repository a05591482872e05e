// Schedule steps: the serializable record of one schedule primitive.
//
// A schedule is an ordered list of steps; replaying it on a fresh State of
// the same ComputeDAG reproduces the same kernel exactly. Steps address
// stages and loops by index in the state they apply to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace tessera {

enum class StepKind : uint8_t {
  kSplit,          ///< stage, iter, factors (inner extents) or nparts
  kFuse,           ///< stage, iters (consecutive, outer to inner)
  kReorder,        ///< stage, order (a permutation of all loops)
  kAnnotate,       ///< stage, iter, annotation
  kComputeAt,      ///< stage, target stage, target iter
  kComputeInline,  ///< stage
  kComputeRoot,    ///< stage
  kCacheRead,      ///< stage (the tensor read), readers
  kCacheWrite,     ///< stage (before any loop transform)
  kRfactor,        ///< stage, reduce axis, factor (before any loop transform)
  kPragma,         ///< stage, iter, auto-unroll max step
  kPackLayout,     ///< stage (a placeholder argument), axis, factor: its storage order (layout.h)
};
const char* step_kind_name(StepKind kind);

/// How a loop runs once lowered.
enum class IterAnnotation : uint8_t { kNone, kParallel, kVectorize, kUnroll };
const char* annotation_name(IterAnnotation a);

/// One primitive with its arguments; fields a kind does not use stay default.
struct Step {
  StepKind kind = StepKind::kSplit;
  int stage = 0;
  int iter = 0;
  std::vector<int64_t> factors;   // split: inner extents, outer to inner
  int64_t nparts = 0;             // split: the outer extent instead of factors
  std::vector<int> iters;         // fuse: loops; reorder: the new order; cache_read: reader stages
  IterAnnotation annotation = IterAnnotation::kNone;
  int target_stage = 0;           // compute_at
  int target_iter = 0;            // compute_at
  int64_t value = 0;              // rfactor, pack_layout: factor; pragma: max step
  int axis = 0;                   // rfactor: which reduce axis; pack_layout: which dimension

  bool operator==(const Step& o) const;
  /// "split(stage=1, iter=0, factors=[32, 4])"
  std::string to_string() const;
};

/// `step` with the fields its kind does not use reset to their defaults, so
/// that equal steps compare equal and survive a JSON round trip.
Step canonical_step(const Step& step);

/// JSON text of a step list: `[{"kind":"split","stage":1,...}, ...]`.
std::string steps_to_json(const std::vector<Step>& steps);
/// Parses steps_to_json's output; a malformed list is a kParseError naming
/// the step.
Result<std::vector<Step>> steps_from_json(const std::string& text);

}  // namespace tessera
