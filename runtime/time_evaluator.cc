#include "runtime/time_evaluator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <thread>

#include "runtime/ndarray.h"

namespace tessera::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps a measurement's `number` finite however fast the kernel is.
constexpr int64_t kMaxNumber = int64_t{1} << 31;

Status kernel_failed(int32_t status, const std::string& when) {
  return Status(ErrorCode::kRuntimeError, "kernel returned status " + std::to_string(status) + " " + when);
}

// Evicts the kernel's data: every cache line of a buffer larger than the
// last-level cache is read and written, in parallel when there is a pool so
// that each worker's private caches are cleared too.
class CacheFlusher {
 public:
  /// The buffer to sweep: twice the last-level cache, within [8 MiB, 256 MiB].
  /// The cap is for VMs that report the host's whole L3 (480 MiB on ours): a
  /// gigabyte swept per repeat would cost more than most kernels being timed.
  static Result<NDArray> make_buffer(int64_t cache_bytes) {
    if (cache_bytes <= 0) cache_bytes = last_level_cache_bytes();
    const int64_t bytes = std::clamp<int64_t>(2 * cache_bytes, int64_t{8} << 20, int64_t{256} << 20);
    return NDArray::create({bytes / 8}, DType::i64());
  }
  explicit CacheFlusher(NDArray buffer) : buffer_(std::move(buffer)) {}

  void flush(ThreadPool* pool) {
    ++salt_;
    if (pool != nullptr) {
      pool->run(&CacheFlusher::flush_task, this, 0);
    } else {
      flush_task(0, 1, this);
    }
  }

 private:
  static int32_t flush_task(int32_t task, int32_t num_tasks, void* closure) {
    auto* self = static_cast<CacheFlusher*>(closure);
    const int64_t words = self->buffer_.numel();
    const int64_t begin = words * task / num_tasks, end = words * (task + 1) / num_tasks;
    int64_t* data = self->buffer_.data<int64_t>();
    int64_t sum = 0;
    for (int64_t i = begin; i < end; i += 8) {  // one word per 64-byte line
      data[i] += self->salt_;
      sum += data[i];
    }
    // Publishing the sum keeps the compiler from dropping the loop.
    self->sink_.fetch_add(sum, std::memory_order_relaxed);
    return 0;
  }

  NDArray buffer_;
  int64_t salt_ = 0;
  std::atomic<int64_t> sink_{0};
};

// The argument lists, taken in turn, one per call.
class ArgCycle {
 public:
  explicit ArgCycle(void** args) : single_(args) {}
  explicit ArgCycle(const std::vector<std::vector<void*>>* sets) : sets_(sets) {}
  void** next() {
    if (sets_ == nullptr) return single_;
    void** args = const_cast<void**>((*sets_)[next_].data());
    next_ = next_ + 1 == sets_->size() ? 0 : next_ + 1;
    return args;
  }

 private:
  void** single_ = nullptr;
  const std::vector<std::vector<void*>>* sets_ = nullptr;
  size_t next_ = 0;
};

// Seconds for `number` back-to-back calls, or the kernel's error.
Result<double> run_calls(TesseraKernelFn kernel, ArgCycle& args, int64_t number, int repeat_index) {
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < number; ++i) {
    const int32_t status = kernel(args.next());
    if (status != 0) return kernel_failed(status, "in repeat " + std::to_string(repeat_index));
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// TVM's rule: aim straight at min_repeat_ms, and grow by at least the golden ratio.
int64_t grown_number(int64_t number, double duration_ms, double min_repeat_ms) {
  double next = std::ceil(static_cast<double>(number) * 1.618);
  if (duration_ms > 0) {
    next = std::max(next, min_repeat_ms / (duration_ms / static_cast<double>(number)) + 1);
  }
  return std::clamp(static_cast<int64_t>(std::min(next, static_cast<double>(kMaxNumber))), number + 1, kMaxNumber);
}

Status check_options(TesseraKernelFn kernel, const TimingOptions& options) {
  if (kernel == nullptr) return Status(ErrorCode::kInvalidArgument, "time_kernel: no kernel");
  if (options.number < 1 || options.repeat < 1) {
    return Status(ErrorCode::kInvalidArgument,
                  "time_kernel: number and repeat must be at least 1 (got number=" + std::to_string(options.number) +
                      ", repeat=" + std::to_string(options.repeat) + ")");
  }
  if (!(options.min_repeat_ms >= 0) || !(options.cooldown_ms >= 0) || !(options.stop_above_s >= 0)) {
    return Status(ErrorCode::kInvalidArgument,
                  "time_kernel: min_repeat_ms, cooldown_ms and stop_above_s must be non-negative");
  }
  return Status::ok();
}

TimingResult summarize(std::vector<double> costs) {
  TimingResult result;
  std::vector<double> sorted = costs;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  result.min_s = sorted.front();
  result.median_s = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  double sum = 0;
  for (double c : sorted) sum += c;
  result.mean_s = sum / static_cast<double>(n);
  result.costs_s = std::move(costs);
  return result;
}

// "48K", "1024K", "8M" as sysfs prints cache sizes.
int64_t parse_cache_size(const std::string& text) {
  char* end = nullptr;
  const int64_t value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || value <= 0) return 0;
  const char unit = *end;
  if (unit == 'K') return value << 10;
  if (unit == 'M') return value << 20;
  if (unit == 'G') return value << 30;
  return value;
}

// The warm-up call, then the repeats (time_kernel's contract).
Result<TimingResult> time_calls(TesseraKernelFn kernel, ArgCycle& args, const TimingOptions& options,
                                ThreadPool* pool) {
  TESSERA_RETURN_IF_ERROR(check_options(kernel, options));
  ParallelScope scope(pool);
  if (options.warm_up)
    if (const int32_t status = kernel(args.next()); status != 0) return kernel_failed(status, "on the warm-up call");
  std::optional<CacheFlusher> flusher;
  if (options.flush_cache) {
    TESSERA_ASSIGN_OR_RETURN(NDArray buffer, CacheFlusher::make_buffer(options.last_level_cache_bytes));
    flusher.emplace(std::move(buffer));
  }

  std::vector<double> costs;
  int64_t number = options.number;
  for (int r = 0; r < options.repeat; ++r) {
    if (r > 0 && options.cooldown_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options.cooldown_ms));
    }
    for (;;) {
      if (flusher) flusher->flush(pool);
      TESSERA_ASSIGN_OR_RETURN(const double seconds, run_calls(kernel, args, number, r));
      const double ms = seconds * 1e3;
      if (ms >= options.min_repeat_ms || number >= kMaxNumber) {
        costs.push_back(seconds / static_cast<double>(number));
        break;
      }
      number = grown_number(number, ms, options.min_repeat_ms);
    }
    if (options.stop_above_s > 0 && costs.back() > options.stop_above_s) break;  // clearly worse: ranked already
  }
  return summarize(std::move(costs));
}

// The largest data or unified cache of cpu0 at `max_level` or below, 0 when
// sysfs reports none.
int64_t largest_cache_bytes(int max_level) {
  int64_t largest = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream type_file(dir + "/type"), size_file(dir + "/size"), level_file(dir + "/level");
    std::string type, size;
    int level = 0;
    if (!(type_file >> type) || !(size_file >> size) || !(level_file >> level)) continue;
    if (type == "Instruction" || level > max_level) continue;
    largest = std::max(largest, parse_cache_size(size));
  }
  return largest;
}

}  // namespace

int64_t last_level_cache_bytes(int64_t fallback) {
  const int64_t bytes = largest_cache_bytes(std::numeric_limits<int>::max());
  return bytes > 0 ? bytes : fallback;
}

int64_t private_cache_bytes(int64_t fallback) {
  const int64_t bytes = largest_cache_bytes(2);
  return bytes > 0 ? bytes : fallback;
}

Result<TimingResult> time_kernel(TesseraKernelFn kernel, void** args, const TimingOptions& options, ThreadPool* pool) {
  ArgCycle cycle(args);
  return time_calls(kernel, cycle, options, pool);
}

Result<TimingResult> time_kernel(TesseraKernelFn kernel, const std::vector<std::vector<void*>>& arg_sets,
                                 const TimingOptions& options, ThreadPool* pool) {
  if (arg_sets.empty()) return Status(ErrorCode::kInvalidArgument, "time_kernel: no argument lists");
  ArgCycle cycle(&arg_sets);
  return time_calls(kernel, cycle, options, pool);
}

}  // namespace tessera::runtime
