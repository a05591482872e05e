// Timing a kernel the way TVM's time_evaluator does: a warm-up call, then
// `repeat` measurements, each the mean over `number` back-to-back calls.
#pragma once

#include <vector>

#include "base/status.h"
#include "runtime/c_abi.h"
#include "runtime/thread_pool.h"

namespace tessera::runtime {

/// How to time a kernel.
struct TimingOptions {
  /// Calls per measurement; grown when a measurement is shorter than min_repeat_ms.
  int number = 1;
  /// Measurements (entries of TimingResult::costs_s).
  int repeat = 3;
  /// A measurement shorter than this is redone with a larger `number`
  /// (kept for the following measurements).
  double min_repeat_ms = 0;
  /// Sleep between measurements, so a throttled CPU can cool down.
  double cooldown_ms = 0;
  /// Before each measurement (and outside it), read and write a buffer twice
  /// the last-level cache (at most 256 MiB), on every thread of the pool, so
  /// that the kernel starts with cold caches.
  bool flush_cache = false;
  /// The last-level cache the flush sizes its buffer from; 0: ask sysfs
  /// (last_level_cache_bytes). A caller that may not open files while timing
  /// (the measuring sandbox) reads it beforehand.
  int64_t last_level_cache_bytes = 0;
  /// Make the untimed warm-up call first. False when the caller has just
  /// called the kernel on the same arguments and pool (a correctness check),
  /// which warmed up the same.
  bool warm_up = true;
  /// A measurement above this many seconds a call ends the timing there
  /// (fewer entries than `repeat`): a candidate clearly worse than the best
  /// known needs no more repeats to be ranked. 0: every repeat is taken.
  double stop_above_s = 0;
};

/// The measurements, in seconds per call.
struct TimingResult {
  std::vector<double> costs_s;  ///< one per repeat, in order
  double median_s = 0;
  double mean_s = 0;
  double min_s = 0;
};

/// Times `kernel(args)` on the monotonic clock, with `pool` installed for its
/// parallel launches (nullptr: they run serially). Errors: kInvalidArgument
/// (no kernel, number or repeat < 1, negative times), kRuntimeError (the kernel
/// returned a non-zero status; the message gives it).
Result<TimingResult> time_kernel(TesseraKernelFn kernel, void** args, const TimingOptions& options, ThreadPool* pool);

/// The same, where call i (the warm-up included) gets `arg_sets[i % size]`:
/// argument lists that differ in which copy of some inputs they point to
/// (ColdArguments). kInvalidArgument also when `arg_sets` is empty.
Result<TimingResult> time_kernel(TesseraKernelFn kernel, const std::vector<std::vector<void*>>& arg_sets,
                                 const TimingOptions& options, ThreadPool* pool);

/// Bytes of the largest data or unified cache this machine reports (sysfs),
/// or `fallback` when it reports none.
int64_t last_level_cache_bytes(int64_t fallback = 32 << 20);

/// Bytes of the largest data or unified cache of level 1 or 2 (a core's own,
/// on the machines we know), or `fallback` when sysfs reports none.
int64_t private_cache_bytes(int64_t fallback = 1 << 20);

}  // namespace tessera::runtime
