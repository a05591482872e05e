#include "driver/tune.h"

#include "driver/after_tuning.h"
#include "driver/compile.h"
#include "driver/model_input.h"
#include "driver/region_times.h"
#include "rpc/runner.h"

namespace tessera::driver {

namespace {

Status usage(const std::string& message) {
  return Status(ErrorCode::kInvalidArgument, message);
}

// The last value of option `name`, or `fallback` when it is not given.
std::string last_value(const tuner::OptionValues& options, const std::string& name, const std::string& fallback) {
  auto it = options.find(name);
  return it == options.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> all_values(const tuner::OptionValues& options, const std::string& name) {
  auto it = options.find(name);
  return it == options.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace

Tuning::~Tuning() = default;

Result<std::unique_ptr<Tuning>> Tuning::check(TuneRequest request) {
  const bool has_model = !request.model.empty();
  if (has_model && !is_onnx_path(request.model)) return usage(request.model + ": expected an .onnx model");
  auto config = tuner::parse_tune_config(request.options, has_model);
  if (!config.is_ok()) return usage(config.status().message());
  const tuner::OptionValues& o = request.options;
  if (o.count("byoc") && !has_model) return usage("--byoc applies to a model's tuning");
  if (o.count("precision") && !has_model) return usage("--precision applies to a model's tuning");
  auto backend = resolve_byoc(last_value(o, "byoc", "auto"), config->target);
  if (!backend.is_ok()) return usage("--byoc: " + backend.status().message());
  auto precision = parse_precision(last_value(o, "precision", "fp32"), config->target);
  if (!precision.is_ok()) return usage(precision.status().message());

  std::unique_ptr<Tuning> t(new Tuning());
  t->model_ = request.model;
  t->input_shapes_ = all_values(o, "input-shape");
  t->input_values_ = all_values(o, "input-value");
  t->config_ = std::move(config).value();
  t->config_.command_line = request.command_line;
  if (!request.worker_binary.empty()) t->config_.worker_binary = request.worker_binary;
  t->backend_ = *backend;
  t->plan_options_.precision = *precision;
  t->plan_options_.int8_pairs = model::int8_pairs_pay(t->config_.target);
  return t;
}

Result<std::vector<std::string>> Tuning::import() {
  if (model_.empty() || prepared_) return std::vector<std::string>{};
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, import_model(model_, input_shapes_, input_values_));
  auto prepared = model::prepare_model(g, plan_options_.nhwc_layout);
  if (!prepared.is_ok()) return Status(prepared.status().code(), model_ + ": " + prepared.status().message());
  TESSERA_ASSIGN_OR_RETURN(tuner::ModelKernels kernels, model_kernels(*prepared, model_, plan_options_));
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> warnings, keep_measurable(&kernels, rpc::WireLimits()));
  prepared_ = std::move(prepared).value();
  kernels_ = std::move(kernels);
  return warnings;
}

Result<tuner::JobSummary> Tuning::run(FILE* log, tuner::Progress* progress, const std::atomic<bool>* stop,
                                      const std::atomic<bool>* cancel) {
  if (!model_.empty() && !prepared_) return Status(ErrorCode::kInternal, "the model was not imported before the run");
  TESSERA_ASSIGN_OR_RETURN(job_, tuner::TuneJob::open(config_, std::move(kernels_), log));
  return job_->run(progress, stop, cancel);
}

void Tuning::after_tuning(FILE* out, bool verbose, const std::atomic<bool>* interrupt) {
  if (prepared_ && job_) after_model_tuning(*prepared_, plan_options_, backend_, *job_, out, verbose, interrupt);
}

std::string format_stopped(const tuner::JobSummary& summary, const std::string& db) {
  return std::string("stopped by Ctrl-C") +
         (summary.cancelled ? " at once (the batch in flight was dropped)" : " after the batch") +
         ": this run stored " + std::to_string(summary.stored) + " record(s), " + std::to_string(summary.stored_ok) +
         " measured ok, in " + db;
}

std::string format_all_failed(const tuner::JobSummary& summary) {
  std::string message = "every trial of this run failed; the first errors:";
  for (const std::string& e : summary.errors) message += "\n  " + e;
  return message;
}

}  // namespace tessera::driver
