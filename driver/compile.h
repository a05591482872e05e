// What `tessera compile` and the Python module's `tessera.compile` share: a
// model file to a compiled package, its kernels scheduled from the records
// (read-only), its convolutions by Winograd where the records say so, and
// the regions of an external backend each run the faster way (--byoc auto).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/target.h"
#include "compiler/model/choose_byoc.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/model/compile_model.h"

namespace tessera::driver {

/// A compilation, as the command line or Python asked for it.
struct ModelCompileArgs {
  std::string model;                      ///< an .onnx file
  std::vector<std::string> input_shapes;  ///< "name:d0,d1,..." bindings
  std::vector<std::string> input_values;  ///< "name=value" bindings of scalar inputs
  std::string db = "tessera.db";          ///< read only; a missing file: fallbacks only
  bool use_records = true;                ///< false: every kernel from its fallback
  std::optional<Target> target;           ///< empty: this machine
  std::string byoc = "auto";              ///< none, cblas, dnnl, or auto (docs/byoc.md)
  int jobs = 0;                           ///< code generation threads; 0: one per CPU
  std::string precision = "fp32";         ///< fp32, bf16 or fp16 (parse_precision)
};

/// A compiled model and how its choices were made.
struct ModelCompile {
  Target target;
  model::ModelPlan plan;
  model::CompiledModel compiled;
  std::vector<model::WinogradChoice> winograd;  ///< each convolution that can run by Winograd
  std::string backend = "none";                 ///< the external backend used
  bool byoc_auto = false;                       ///< regions decided per region (--byoc auto)
  std::vector<model::RegionChoice> regions;     ///< byoc_auto: each region, both ways
  std::string records_note;                     ///< where the schedules came from, for people
};

/// Checks `byoc` names a known backend or "auto". Errors: kInvalidArgument
/// listing the known names.
Status check_byoc(const std::string& byoc);

/// The precision `name` (--precision) names for `target`: "fp32", "bf16"
/// where the target has a bfloat16 dot product (AVX512-BF16 on x86, BF16 on
/// AArch64), or "fp16" where it converts float16 in registers (F16C on x86;
/// every AArch64). Errors: kInvalidArgument naming the values, or the feature
/// `target` lacks.
Result<model::PlanOptions::Precision> parse_precision(const std::string& name, const Target& target);

/// Imports, plans and compiles `args.model`. Errors: the importer's, the
/// database's ("cannot open the records database ..."), the planner's and
/// the compiler's, prefixed with the model's path; the timing of --byoc
/// auto's regions ("--byoc auto: ...").
Result<ModelCompile> compile_model_file(const ModelCompileArgs& args);

/// How far a reduced-precision compilation (`result`, from `args` with
/// --precision bf16 or fp16) is from float32: the same model compiled in float32
/// from the same records, both run on `inputs` seeded random inputs (floats
/// uniform in [-1, 1]); one line for people naming the largest difference,
/// the output and its scale. Nothing is timed: compile never measures (a
/// reduced precision is not faster on every CPU that has its instructions;
/// `tessera run --bench` times the two packages). Errors: the float32
/// compilation's, the runs'.
Result<std::string> difference_from_float32(const ModelCompileArgs& args, const ModelCompile& result, int inputs = 3);

/// What a compilation decided, for people: the regions of --byoc auto and
/// the convolutions by Winograd (the planner's warnings are the plan's).
std::string format_model_choices(const ModelCompile& result);

}  // namespace tessera::driver
