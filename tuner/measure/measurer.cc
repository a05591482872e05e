#include "tuner/measure/measurer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"

namespace tessera::tuner {

Measurer::Measurer(const BuilderPool& builder, rpc::Runner& runner, MeasureOptions options)
    : builder_(builder), runner_(runner), options_(std::move(options)) {}

// The default schedule's output for the inputs the workers will generate.
// Workers fill every argument with the same random bytes whatever its
// layout; a candidate storing an argument packed (compiler/schedule/layout.h)
// reads those bytes in packed order, so the reference reads them unpacked.
Result<std::optional<rpc::ReferenceCheck>> Measurer::reference_for(const Task& task, const Candidate& candidate) {
  if (!options_.check_correctness) return std::optional<rpc::ReferenceCheck>();
  Target host = host_target();
  if (host.triple != task.target.triple) return std::optional<rpc::ReferenceCheck>();
  auto state = candidate.state(task.dag);
  if (!state.is_ok()) return std::optional<rpc::ReferenceCheck>();  // it will not build either
  const std::vector<std::pair<int, PackedLayout>> layouts = packed_arguments(**state);
  std::string signature;
  for (const auto& [arg, layout] : layouts)
    signature += std::to_string(arg) + ":" + std::to_string(layout.axis) + "x" + std::to_string(layout.factor) + ";";
  if (reference_key_ != task.workload_key()) {
    references_.clear();
    reference_key_ = task.workload_key();
  }
  if (auto it = references_.find(signature); it != references_.end()) return std::optional(it->second);

  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, tessera::build(State(task.dag), host, "reference"));
  TESSERA_ASSIGN_OR_RETURN(runtime::Module mod, runtime::Module::load_from_bytes(lib.bytes, "/tmp"));
  TESSERA_ASSIGN_OR_RETURN(TesseraKernelFn fn, mod.get_kernel("reference"));
  std::vector<runtime::NDArray> arrays;
  std::vector<void*> args;
  uint64_t seed = 1;
  for (const auto& spec : task.arg_specs()) {
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray a, runtime::NDArray::create(spec.shape, spec.dtype));
    a.fill_random(seed++);
    arrays.push_back(std::move(a));
  }
  for (const auto& [arg, layout] : layouts) {
    runtime::NDArray& a = arrays[static_cast<size_t>(arg)];
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray logical, runtime::NDArray::create(a.shape(), a.dtype()));
    unpack_elements(a.raw_data(), logical.raw_data(), a.shape(), a.dtype().storage_bytes(), layout);
    a = std::move(logical);
  }
  for (auto& a : arrays) args.push_back(a.raw_data());
  runtime::ThreadPool pool(task.target.num_cores);
  {
    runtime::ParallelScope scope(&pool);
    int32_t status = fn(args.data());
    if (status != 0) return Status(ErrorCode::kRuntimeError, "the reference kernel returned " + std::to_string(status));
  }
  const runtime::NDArray& out = arrays.back();
  rpc::ReferenceCheck check;
  check.expected_output.assign(static_cast<const char*>(out.raw_data()), out.nbytes());
  check.tolerance = options_.tolerance;
  references_[signature] = check;
  return std::optional(check);
}

Result<std::vector<records::Record>> Measurer::measure(const Task& task, const std::vector<Candidate>& candidates,
                                                       MeasureOverride override) {
  using Clock = std::chrono::steady_clock;
  std::vector<BuildInput> inputs;
  for (const Candidate& c : candidates) inputs.push_back({task.dag, c});
  auto build_start = Clock::now();
  std::vector<BuildResult> built = builder_.build(inputs);
  last_build_seconds_ = std::chrono::duration<double>(Clock::now() - build_start).count();
  last_run_seconds_ = 0;

  std::vector<rpc::MeasureInput> jobs;
  std::vector<size_t> job_of;
  for (size_t i = 0; i < built.size(); ++i) {
    if (built[i].error != BuildError::kOk) continue;
    rpc::MeasureInput in;
    in.library = std::move(built[i].library);
    in.symbol = built[i].symbol;
    in.args = task.arg_specs();
    if (options_.cold_constants)
      for (int arg : task.constant_args)
        if (arg >= 0 && static_cast<size_t>(arg) + 1 < in.args.size()) in.args[static_cast<size_t>(arg)].cold = true;
    in.timing = options_.timing;
    in.timeout_ms = options_.timeout_ms;
    if (override.single_call) {
      in.timing = runtime::TimingOptions{.number = 1, .repeat = 1, .min_repeat_ms = 0};
      in.timeout_ms = std::max(options_.timeout_ms, 120000);
    }
    in.input_seed = 1;
    TESSERA_ASSIGN_OR_RETURN(in.reference, reference_for(task, candidates[i]));
    jobs.push_back(std::move(in));
    job_of.push_back(i);
  }
  std::vector<rpc::MeasureResult> results;
  if (!jobs.empty()) {
    auto run_start = Clock::now();
    TESSERA_ASSIGN_OR_RETURN(results, runner_.run(jobs));
    last_run_seconds_ = std::chrono::duration<double>(Clock::now() - run_start).count();
    if (results.size() != jobs.size())
      return Status(ErrorCode::kInternal, "the runner returned " + std::to_string(results.size()) + " results for " +
                                              std::to_string(jobs.size()) + " jobs");
  }

  std::vector<records::Record> out(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    records::Record& r = out[i];
    r.workload_key = task.workload_key();
    r.target = task.target.to_string();
    r.device_key = task.device_key;
    r.space = candidates[i].space;
    r.steps_json = steps_to_json(candidates[i].steps());
    r.knob_config_json = candidates[i].knob_config_json;
    r.build_seconds = built[i].seconds;
    r.session_id = options_.session_id;
    if (built[i].error != BuildError::kOk) {
      r.error_kind = build_error_name(built[i].error);
      r.error_message = built[i].message;
    }
  }
  for (size_t j = 0; j < results.size(); ++j) {
    records::Record& r = out[job_of[j]];
    r.run_seconds = results[j].run_seconds;
    if (results[j].ok()) {
      r.costs = results[j].costs_s;
    } else {
      r.error_kind = rpc::measure_error_kind_name(results[j].error);
      r.error_message = results[j].message;
    }
  }
  return out;
}

}  // namespace tessera::tuner
