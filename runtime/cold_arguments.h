// Argument lists that read some inputs from beyond the private caches on every
// call: how a model's weights reach a kernel, since the other layers' weights
// pass through the caches between two calls of one layer. Timed warm, a
// layer whose weights outgrow the L2 cache looks faster than it runs in its
// model, and the tuner picks schedules that degrade the most when they stream
// from L3 (a 7x7x512 conv: 0.74 ms warm, 1.02 ms with cold weights, 1.09 ms in
// the model; another schedule 0.76 / 0.81 / 0.82).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

/// The copies of the cold arguments add up to at least this many bytes: far
/// past any core's private caches, so each call finds its copy evicted.
inline constexpr int64_t kColdArgumentBytes = int64_t{64} << 20;
/// The most argument lists made, however small the cold arguments.
inline constexpr int kMaxColdArgumentSets = 256;

/// Argument lists for time_kernel's cycling form: list 0 points at `arrays`;
/// the others point at the same arrays except at the cold indices, where each
/// has a copy of its own (same bytes).
class ColdArguments {
 public:
  /// Copies the arguments at `cold` until all lists' cold arguments together
  /// reach `min_bytes` (at most kMaxColdArgumentSets lists; one when `cold`
  /// is empty). `arrays` must outlive the result. Errors: kInvalidArgument (an
  /// index out of range or repeated), kIOError (out of memory).
  static Result<ColdArguments> make(std::vector<NDArray>& arrays, const std::vector<int>& cold,
                                    int64_t min_bytes = kColdArgumentBytes);

  const std::vector<std::vector<void*>>& sets() const { return sets_; }

 private:
  std::vector<NDArray> copies_;
  std::vector<std::vector<void*>> sets_;
};

}  // namespace tessera::runtime
