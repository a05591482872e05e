#include "driver/model_input.h"

#include <algorithm>
#include <set>

#include "compiler/frontend/onnx_import.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/model/compile_model.h"

namespace tessera::driver {

bool is_onnx_path(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

Result<graph::Graph> import_model(const std::string& path, const std::vector<std::string>& input_shape_specs,
                                  const std::vector<std::string>& input_value_specs) {
  frontend::ImportOptions options;
  TESSERA_ASSIGN_OR_RETURN(options.input_shapes, frontend::parse_input_shapes(input_shape_specs));
  TESSERA_ASSIGN_OR_RETURN(options.input_values, frontend::parse_input_values(input_value_specs));
  return frontend::import_onnx_file(path, options);
}

Result<tuner::ModelKernels> model_kernels(const std::string& path, const std::vector<std::string>& input_shapes,
                                          const std::vector<std::string>& input_values,
                                          const model::PlanOptions& options) {
  auto graph = import_model(path, input_shapes, input_values);
  if (!graph.is_ok()) return Status(graph.status().code(), graph.status().message());
  auto prepared = model::prepare_model(*graph, options.nhwc_layout);
  if (!prepared.is_ok()) return Status(prepared.status().code(), path + ": " + prepared.status().message());
  return model_kernels(*prepared, path, options);
}

Result<tuner::ModelKernels> model_kernels(const model::PreparedModel& model, const std::string& name,
                                          const model::PlanOptions& options) {
  // Both kernels of a convolution that can run by Winograd: compile time
  // runs the faster (compiler/model/choose_winograd.h).
  auto plans = model::tuning_plans(model, options);
  if (!plans.is_ok()) return Status(plans.status().code(), name + ": " + plans.status().message());
  tuner::ModelKernels out;
  std::set<std::string> keys;
  for (const model::ModelPlan& plan : *plans) {
    out.constant_bytes = std::max(out.constant_bytes, plan.constant_bytes);
    for (size_t i = 0; i < plan.tasks.size(); ++i) {
      if (!keys.insert(plan.tasks[i].dag->workload_key()).second) continue;
      out.kernels.push_back({plan.task_labels[i], plan.tasks[i].dag, plan.task_ops[i],
                             static_cast<double>(plan.tasks[i].weight), plan.task_constant_args[i]});
    }
  }
  return out;
}

namespace {

// Why a worker cannot measure kernel `k`, or "".
std::string unmeasurable(const tuner::ModelKernel& k, const rpc::WireLimits& limits) {
  const auto& args = k.dag->args();
  if (static_cast<int>(args.size()) > limits.max_args)
    return "kernel " + k.label + " has " + std::to_string(args.size()) + " arguments; a worker takes at most " +
           std::to_string(limits.max_args);
  for (const auto& t : args) {
    double bytes = static_cast<double>(t->dtype.storage_bytes());
    for (int64_t d : t->shape) bytes *= static_cast<double>(d);
    if (t->ndim() > limits.max_rank || bytes > static_cast<double>(limits.max_arg_bytes))
      return "kernel " + k.label + ": tensor '" + t->name + "' (" + std::to_string(t->ndim()) + "-d, " +
             std::to_string(static_cast<long long>(bytes)) + " bytes) is beyond what a worker measures (" +
             std::to_string(limits.max_rank) + " dimensions, " + std::to_string(limits.max_arg_bytes >> 20) +
             " MiB a tensor)";
  }
  return "";
}

}  // namespace

Result<std::vector<std::string>> keep_measurable(tuner::ModelKernels* model, const rpc::WireLimits& limits) {
  std::vector<std::string> warnings;
  std::vector<tuner::ModelKernel> kept;
  std::string first;
  for (tuner::ModelKernel& k : model->kernels) {
    const std::string why = unmeasurable(k, limits);
    if (why.empty()) {
      kept.push_back(std::move(k));
      continue;
    }
    if (first.empty()) first = why;
    warnings.push_back(why + ": not tuned, it keeps its fallback schedule");
  }
  if (kept.empty() && !first.empty()) return Status(ErrorCode::kInvalidArgument, first);
  model->kernels = std::move(kept);
  return warnings;
}

}  // namespace tessera::driver
