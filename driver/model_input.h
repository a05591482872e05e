// What the model commands (`compile`, `tune MODEL.onnx`) and the Python
// module share: reading a model with its --input-shape bindings, and the
// kernels a model's tuning measures.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"
#include "compiler/model/compile_model.h"
#include "rpc/runner.h"
#include "tuner/job.h"

namespace tessera::driver {

/// True when `path` names an ONNX model (ends in ".onnx").
bool is_onnx_path(const std::string& path);

/// Imports the ONNX model at `path` with `input_shape_specs` ("name:d0,d1,..."
/// bindings of dynamic input dimensions) and `input_value_specs` ("name=value"
/// bindings of scalar inputs to constants). Errors: the parsers' and the
/// importer's (one line per offending node).
Result<graph::Graph> import_model(const std::string& path, const std::vector<std::string>& input_shape_specs,
                                  const std::vector<std::string>& input_value_specs = {});

/// The distinct kernels of `model`, the model `name` prepared (those of every
/// tuning plan, by workload key): exactly the DAGs `tessera compile` will
/// look up. Both kernels of a convolution that can run by Winograd are
/// included. Errors: the planner's (prefixed with `name`).
Result<tuner::ModelKernels> model_kernels(const model::PreparedModel& model, const std::string& name,
                                          const model::PlanOptions& options = {});
/// model_kernels of the model at `path`, imported with its bindings and
/// prepared (with options.nhwc_layout). Errors: import_model's and
/// model::prepare_model's too.
Result<tuner::ModelKernels> model_kernels(const std::string& path, const std::vector<std::string>& input_shapes,
                                          const std::vector<std::string>& input_values = {},
                                          const model::PlanOptions& options = {});

/// Drops the kernels of `model` with more arguments, or a larger one, than a
/// worker takes (their jobs would come back as protocol errors, measured
/// again and never a trial): they keep their fallback schedules. One
/// warning each, naming the kernel and the limit; kInvalidArgument with the
/// first reason when no kernel is left to tune.
Result<std::vector<std::string>> keep_measurable(tuner::ModelKernels* model, const rpc::WireLimits& limits);

}  // namespace tessera::driver
