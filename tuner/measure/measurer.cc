#include "tuner/measure/measurer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "tuner/measure/plausibility.h"
#include "tuner/measure/reference.h"

namespace tessera::tuner {

Measurer::Measurer(const BuilderPool& builder, rpc::Runner& runner, MeasureOptions options)
    : builder_(builder), runner_(runner), options_(std::move(options)) {}

namespace {

// The seed of the workers' inputs: argument i is filled by fill_random(kInputSeed + i).
constexpr uint64_t kInputSeed = 1;

// A stable seed for a task's check points (FNV-1a of its key): the same
// points in every run, so that a check is reproducible.
uint64_t points_seed(const std::string& key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

// The reference is evaluated from the DAG, not built: it holds for every
// target (remote boards too) and shares nothing with the candidate's lowering.
std::optional<rpc::ReferenceCheck> Measurer::reference_for(const Task& task, const Candidate& candidate) {
  if (!options_.check_correctness) return std::nullopt;
  auto state = candidate.state(task.dag);
  if (!state.is_ok()) return std::nullopt;  // it will not build either
  const std::vector<std::pair<int, PackedLayout>> layouts = packed_arguments(**state);
  std::string signature;
  for (const auto& [arg, layout] : layouts)
    signature += std::to_string(arg) + ":" + std::to_string(layout.axis) + "x" + std::to_string(layout.factor) + ";";
  auto [entry, added] = references_.try_emplace(task.workload_key());
  TaskReferences& refs = entry->second;
  if (added) refs.points = check_points(task.dag->args().back()->shape, points_seed(task.workload_key()));
  if (!refs.unchecked_reason.empty()) return std::nullopt;
  if (auto it = refs.by_layout.find(signature); it != refs.by_layout.end()) return it->second;
  const auto start = std::chrono::steady_clock::now();
  auto check =
      evaluate_reference(*task.dag, layouts, kInputSeed, refs.points, check_tolerance(*task.dag, options_.tolerance));
  last_check_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!check.is_ok()) {
    // Not a fact about any candidate: the task is measured unchecked, and its
    // records say so.
    refs.unchecked_reason = check.status().to_string();
    return std::nullopt;
  }
  refs.by_layout[signature] = *check;
  return std::move(check).value();
}

std::string Measurer::unchecked_reason(const std::string& workload_key) const {
  auto it = references_.find(workload_key);
  return it == references_.end() ? "" : it->second.unchecked_reason;
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
  last_check_seconds_ = 0;

  std::vector<rpc::MeasureInput> jobs;
  std::vector<size_t> job_of;
  for (size_t i = 0; i < built.size(); ++i) {
    if (built[i].error != BuildError::kOk) continue;
    rpc::MeasureInput in;
    in.library = std::move(built[i].library);
    in.symbol = built[i].symbol;
    // Packed arguments are stored in their layout's (possibly padded) shape.
    auto state = candidates[i].state(task.dag);
    in.args = task.arg_specs(state.is_ok() ? packed_arguments(**state) : std::vector<std::pair<int, PackedLayout>>{});
    if (options_.cold_constants)
      for (int arg : task.constant_args)
        if (arg >= 0 && static_cast<size_t>(arg) + 1 < in.args.size()) in.args[static_cast<size_t>(arg)].cold = true;
    in.timing = options_.timing;
    in.timing.stop_above_s = override.stop_above_s;
    in.timeout_ms = options_.timeout_ms;
    if (override.long_timeout) in.timeout_ms = std::max(options_.timeout_ms, 120000);
    in.input_seed = kInputSeed;
    in.reference = reference_for(task, candidates[i]);
    in.avoid_workers = candidates[i].avoid_workers;
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
  const KernelWork work = KernelWork::of(*task.dag);
  for (size_t j = 0; j < results.size(); ++j) {
    records::Record& r = out[job_of[j]];
    r.run_seconds = results[j].run_seconds;
    r.worker = results[j].worker_id;
    r.worker_key = results[j].worker_public_key;
    last_check_seconds_ += results[j].check_seconds;
    // Checked: the output was compared, and matched or not.
    r.checked =
        jobs[j].reference.has_value() && (results[j].ok() || results[j].error == rpc::MeasureErrorKind::kWrongAnswer);
    if (results[j].ok()) {
      // A worker's word is not taken for the impossible (plausibility.h).
      if (auto why = implausible_result(task.target, work, results[j].costs_s, results[j].threads, r.worker)) {
        r.error_kind = kMeasurementError;
        r.error_message = *why;
        r.infrastructure = true;
        r.checked = false;
        continue;
      }
      r.costs = results[j].costs_s;
    } else {
      r.error_kind = rpc::measure_error_kind_name(results[j].error);
      r.error_message = results[j].message;
      r.infrastructure = rpc::is_infrastructure_error(results[j].error);
    }
  }
  return out;
}

}  // namespace tessera::tuner
