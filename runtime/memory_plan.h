// Memory planning for the graph executor: every intermediate value gets an
// offset in one arena, and values whose lifetimes do not overlap share bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "runtime/package.h"

namespace tessera::runtime {

/// Byte alignment of every offset in the arena (and of the arena itself).
inline constexpr int64_t kArenaAlignment = 64;

/// A buffer to place: `nbytes` bytes live from call `first` to call `last`,
/// both inclusive (a kernel reads its inputs while it writes its outputs, so
/// a value last read by call i and one first written by call i conflict).
struct LiveInterval {
  int64_t nbytes = 0;
  int32_t first = 0;
  int32_t last = 0;
};

/// Where each buffer lives in the arena.
struct MemoryPlan {
  /// Offset of each buffer (index = the request's index, or the value id for
  /// plan_graph_memory); a multiple of kArenaAlignment; -1 for a buffer that
  /// is not in the arena.
  std::vector<int64_t> offsets;
  /// Bytes the arena needs: the peak over all placements.
  int64_t arena_bytes = 0;
  /// Sum of the placed buffers' sizes (unaligned), what an arena without
  /// reuse would need at least.
  int64_t total_bytes = 0;
};

/// Places `buffers` greedily by size (largest first; ties by earlier first
/// use, then index): each goes into the smallest gap left between the
/// already placed buffers whose intervals intersect its own, or above them
/// all. Sizes are rounded up to kArenaAlignment (an empty buffer takes one
/// unit, so every buffer has a distinct address while live). Two buffers
/// whose intervals intersect never share a byte.
MemoryPlan plan_intervals(const std::vector<LiveInterval>& buffers);

/// Plans the intermediate values of a validated package: each lives from the
/// first to the last call that names it. Inputs, outputs and constants are not
/// in the arena (offset -1), nor are intermediates no call names.
/// Errors: kInvalidArgument when a value's size is invalid (validate first).
Result<MemoryPlan> plan_graph_memory(const PackageContents& contents);

}  // namespace tessera::runtime
