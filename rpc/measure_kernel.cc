#include "rpc/measure_kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "rpc/wire.h"
#include "runtime/cold_arguments.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

double to_double(const void* p, DType t, int64_t i) {
  switch (t.code) {
    case TypeCode::kFloat:
      if (t.bits == 64) return static_cast<const double*>(p)[i];
      if (t.bits == 32) return static_cast<const float*>(p)[i];
      if (t.bits == 16) return half_to_float(static_cast<const uint16_t*>(p)[i]);
      break;
    case TypeCode::kBFloat: return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    case TypeCode::kInt:
      switch (t.bits) {
        case 8: return static_cast<const int8_t*>(p)[i];
        case 16: return static_cast<const int16_t*>(p)[i];
        case 32: return static_cast<const int32_t*>(p)[i];
        case 64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
      }
      break;
    case TypeCode::kUInt:
      if (t.bits <= 8) return static_cast<const uint8_t*>(p)[i];
      break;
    default: break;
  }
  return std::nan("");
}

// Empty when `got` matches the reference; otherwise where and by how much it
// differs. Without points every element is compared, with them only those
// (expected_output then holds one element per point).
std::string compare_output(const runtime::NDArray& got, const pb::ReferenceCheck& ref) {
  const DType t = got.dtype();
  const int64_t bytes = t.storage_bytes();
  const std::string& want = ref.expected_output();
  const bool sampled = ref.points_size() > 0;
  const int64_t n = sampled ? ref.points_size() : got.numel();
  if (n == 0) return "";
  auto element = [&](int64_t j) { return sampled ? static_cast<int64_t>(ref.points(static_cast<int>(j))) : j; };
  const char* data = static_cast<const char*>(got.raw_data());
  const bool exact_bytes = std::isnan(to_double(want.data(), t, 0));
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = element(j);
    bool differs;
    if (exact_bytes || t.is_integral()) {
      differs = std::memcmp(data + i * bytes, want.data() + j * bytes, static_cast<size_t>(bytes)) != 0;
    } else {
      const double g = to_double(data, t, i), w = to_double(want.data(), t, j);
      const double err = std::fabs(g - w);
      differs = !(err <= ref.tolerance() * (1 + std::fabs(w)));
      if (differs && !(err <= worst)) worst = err;
    }
    if (differs) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return "";
  std::string text = std::to_string(bad) + " of " + std::to_string(n) + (sampled ? " sampled" : "") +
                     " output elements differ from the reference (first at " + std::to_string(first);
  if (!(exact_bytes || t.is_integral())) text += ", largest error " + std::to_string(worst);
  return text + ")";
}

}  // namespace

pb::Result measure_kernel(const pb::Job& job, const SandboxOptions& options,
                          const std::function<Status()>& seal_threads, const std::function<Status()>& lock_down) {
  auto fail = [&](pb::ErrorKind kind, const std::string& message) {
    return error_result(job, kind, message, options.worker_id);
  };
  runtime::PoolOptions pool_options;
  pool_options.pin_threads = !options.pin_cpus.empty();
  pool_options.cpus = options.pin_cpus;
  runtime::ThreadPool pool(options.threads, pool_options);
  Status sealed = seal_threads();
  if (!sealed.is_ok()) return fail(pb::SANDBOX_ERROR, "the sandbox could not be set up: " + sealed.message());
  auto module = runtime::Module::load_from_bytes(job.library(), options.temp_dir);
  if (!module.is_ok()) return fail(pb::LOAD_ERROR, module.status().message());
  auto kernel = module->get_kernel(job.symbol());
  if (!kernel.is_ok()) return fail(pb::LOAD_ERROR, kernel.status().message());

  std::vector<runtime::NDArray> arrays;
  std::vector<void*> args;
  for (int i = 0; i < job.args_size(); ++i) {
    DType dtype;
    DType::parse(job.args(i).dtype(), &dtype);  // validated by the worker's loop
    std::vector<int64_t> shape(job.args(i).shape().begin(), job.args(i).shape().end());
    auto array = runtime::NDArray::create(shape, dtype);
    if (!array.is_ok())
      return fail(pb::RUNTIME_ERROR, "argument " + std::to_string(i) + ": " + array.status().message());
    array->fill_random(job.input_seed() + static_cast<uint64_t>(i));
    args.push_back(array->raw_data());
    arrays.push_back(std::move(array).value());
  }

  // Read from sysfs now: once locked down, the process opens no file.
  const int64_t cache_bytes = job.timing().flush_cache() ? runtime::last_level_cache_bytes() : 0;
  Status locked = lock_down();
  if (!locked.is_ok()) return fail(pb::SANDBOX_ERROR, "the sandbox could not be set up: " + locked.message());
  double check_seconds = 0;
  if (job.has_reference()) {
    runtime::ParallelScope scope(&pool);
    const int32_t status = (*kernel)(args.data());
    if (status != 0) return fail(pb::RUNTIME_ERROR, "kernel returned status " + std::to_string(status));
    // The call serves as the timing's warm-up (below): the check's own cost
    // is the comparison.
    const auto compare_start = Clock::now();
    std::string diff = compare_output(arrays.back(), job.reference());
    check_seconds = std::chrono::duration<double>(Clock::now() - compare_start).count();
    if (!diff.empty()) {
      pb::Result wrong = fail(pb::WRONG_ANSWER, diff);
      wrong.set_check_seconds(check_seconds);
      return wrong;
    }
  }
  std::vector<int> cold;
  for (int i = 0; i < job.args_size(); ++i)
    if (job.args(i).cold()) cold.push_back(i);
  auto arg_sets = runtime::ColdArguments::make(arrays, cold);
  if (!arg_sets.is_ok()) return fail(pb::RUNTIME_ERROR, "cold arguments: " + arg_sets.status().message());
  runtime::TimingOptions timing;
  timing.number = job.timing().number();
  timing.repeat = job.timing().repeat();
  timing.min_repeat_ms = job.timing().min_repeat_ms();
  timing.cooldown_ms = job.timing().cooldown_ms();
  timing.flush_cache = job.timing().flush_cache();
  timing.stop_above_s = job.timing().stop_above_s();
  timing.last_level_cache_bytes = cache_bytes;
  timing.warm_up = !job.has_reference();  // the checked call just warmed up the kernel, its data and the pool
  // Call i of the timing gets set i: set 0 holds the arrays the checked call
  // just read. Without a warm-up call to take set 0, start at set 1, so the
  // first timed call reads its cold inputs from a copy as cold as ever.
  std::vector<std::vector<void*>> sets = arg_sets->sets();
  if (!timing.warm_up && sets.size() > 1) std::rotate(sets.begin(), sets.begin() + 1, sets.end());
  auto timed = runtime::time_kernel(*kernel, sets, timing, &pool);
  if (!timed.is_ok()) return fail(pb::RUNTIME_ERROR, timed.status().message());
  pb::Result result = fail(pb::OK, "");
  result.set_check_seconds(check_seconds);
  result.set_threads(static_cast<uint32_t>(pool.num_threads()));
  for (double c : timed->costs_s) result.add_costs_s(c);
  return result;
}

}  // namespace tessera::rpc
