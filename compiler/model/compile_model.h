// Compiling a model: from a graph to the package a device runs.
//
//   ModelPlan plan = plan_model(imported).value();        // optimize, fuse, extract tasks
//   RecordsScheduleSource records(store);                  // or null: fallbacks only
//   CompiledModel m = compile_model(plan, target, {&records}).value();
//   runtime::write_package(m.package, "model.tsr");
//
// One kernel per task (distinct fused subgraph), all in one shared library;
// every group calls its task's kernel with its own buffers. The tuner tunes
// exactly the DAGs of plan.tasks, so their records apply here by workload key.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/external/offload.h"
#include "compiler/graph/extract_tasks.h"
#include "compiler/graph/fuse_ops.h"
#include "compiler/ir/stmt.h"
#include "compiler/schedule/schedule_source.h"
#include "compiler/space/choose/apply_best.h"
#include "runtime/package.h"

namespace tessera::model {

/// A model ready to schedule: the optimized graph, its fused groups (in run
/// order) and the distinct kernels they need.
struct ModelPlan {
  graph::Graph graph;                     ///< after optimize_graph, plus a copy node per output that needs one
  std::vector<graph::FusedGroup> groups;  ///< one kernel call each, in order
  std::vector<graph::GraphTask> tasks;    ///< distinct kernels, by workload key
  std::vector<int> task_of_group;         ///< groups[i] calls tasks[task_of_group[i]]; -1 for an external region
  /// Regions an external backend runs (PlanOptions::byoc), in node order;
  /// each is one group, a kExternal node alone.
  std::vector<external::OffloadedRegion> externals;
  std::vector<int> external_of_group;  ///< per group: its index in `externals`, or -1 (Tessera's kernel)
  /// Regions the backend could not generate, now Tessera's: one line each
  /// naming the region and the reason.
  std::vector<std::string> warnings;
  std::vector<std::string> task_ops;     ///< per task: the operator spec name of its anchor ("conv2d"), "" for none
  std::vector<std::string> task_labels;  ///< per task: "fused_conv_add_relu [1, 64, 56, 56]"
  /// Per task: its kernel's arguments that are constants (weights) in every
  /// call, ascending. They may be stored packed, and are timed cold.
  std::vector<std::vector<int>> task_constant_args;
  /// Bytes of the constants the kernels read (each counted once).
  int64_t constant_bytes = 0;
  /// Control flow the device runs (a kIf or kLoop node, one group alone):
  /// each branch or body planned as a model of its own with Tessera's
  /// kernels, its tasks merged into `tasks` (a task two bodies share is one
  /// kernel), laid out between the package's control steps.
  struct Control {
    std::vector<std::shared_ptr<const ModelPlan>> bodies;
    std::vector<std::vector<int>> body_tasks;  ///< per body: its task t is tasks[body_tasks[b][t]]
  };
  std::vector<Control> controls;
  std::vector<int> control_of_group;  ///< per group: its index in `controls`, or -1
};

/// How a model is planned.
struct PlanOptions {
  /// Run plain convolutions in NHWC where it pays (graph::convert_layout_nhwc).
  /// Read by prepare_model: a PreparedModel keeps the layout it has.
  bool nhwc_layout = true;
  /// Which convolutions that can (graph::winograd_eligible) run by Winograd:
  /// none, all, or those named in winograd_convs (choose_winograd.h picks
  /// them from the records).
  enum class Winograd : uint8_t { kNone, kAll, kListed };
  Winograd winograd = Winograd::kNone;
  std::set<std::string> winograd_convs;
  /// An external backend (compiler/external) that takes the regions it
  /// supports, after the graph passes and before fusion; null: none.
  const external::Backend* byoc = nullptr;
  /// The precision of the products by constant weights: float32, bfloat16
  /// accumulated in float32 (graph::convert_bf16, --precision bf16), or
  /// float32 with the weights stored in float16 (graph::
  /// convert_fp16_weights, --precision fp16).
  enum class Precision : uint8_t { kFloat32, kBf16, kFp16Weights };
  Precision precision = Precision::kFloat32;
  /// Int8 products in 2 x 2 tiles for a matrix-multiply instruction
  /// (graph::pair_int8_products); int8_pairs_pay says which targets gain.
  bool int8_pairs = false;
};

/// Whether `target` has an int8 matrix-multiply instruction that
/// PlanOptions::int8_pairs feeds: AArch64 with +i8mm (USMMLA).
bool int8_pairs_pay(const Target& target);

/// A model optimized and laid out: the half of planning that no per-node
/// choice (a convolution by Winograd or direct, a region on Tessera or a
/// backend) changes. Prepared once, it is planned as often as the choices
/// need (plan_model), without folding or permuting its weights again.
struct PreparedModel {
  graph::Graph graph;  ///< after optimize_graph and, with the NHWC layout, convert_layout_nhwc
};

/// Optimizes `g` (constant and BatchNorm folding, dead nodes) and, with
/// `nhwc_layout`, runs its plain convolutions in NHWC where it pays.
/// Errors: the passes'.
Result<PreparedModel> prepare_model(const graph::Graph& g, bool nhwc_layout = true);

/// How many models this process has prepared (prepare_model's calls,
/// control-flow bodies included): a command prepares its model once and
/// plans it as often as its choices need, which a test counts.
int64_t models_prepared();

/// Plans `prepared` with the choices of `options` (all but nhwc_layout,
/// which the preparation applied): window products, Winograd convolutions,
/// precision, fusion, and the tasks extracted. A graph output that is a
/// graph input, a constant or another output's value gets a copy kernel, so
/// that every output is a buffer of its own. Errors: the passes' and
/// build_node's (naming the node). With `options.byoc`, the regions it takes
/// become external groups (a region it cannot generate stays Tessera's, with
/// a warning in ModelPlan::warnings).
Result<ModelPlan> plan_model(const PreparedModel& prepared, const PlanOptions& options = {});

/// prepare_model (with options.nhwc_layout) then plan_model: a model planned
/// once.
Result<ModelPlan> plan_model(const graph::Graph& g, const PlanOptions& options = {});

/// The operator spec name whose knob template schedules `group`, by its
/// anchor ("conv2d", "conv2d_nhwc", "conv2d_winograd_nhwc", "depthwise_conv2d",
/// "depthwise_conv2d_nhwc", "dense", "matmul", "batch_matmul", "max_pool2d",
/// "avg_pool2d", "global_avg_pool2d", "rows"; "attention" for a MatMul that
/// fused its softmax and context product), or "" when none fits.
std::string template_op_for(const graph::Graph& g, const graph::FusedGroup& group);

/// How a compilation runs.
struct CompileOptions {
  ScheduleSource* source = nullptr;  ///< the best records; null: every kernel from its fallback
  int jobs = 0;                      ///< code generation threads; <= 0: one per CPU
};

/// What was compiled for one task.
struct KernelInfo {
  std::string symbol;  ///< its entry point in the library
  std::string label;   ///< ModelPlan::task_labels
  int weight = 0;      ///< groups that call it
  double flops = 0;    ///< of one call
  ScheduleChoice::Source source = ScheduleChoice::Source::kDefault;
  std::string explanation;  ///< ScheduleChoice::explanation
  int64_t record_id = 0;    ///< the record its schedule came from (ScheduleChoice::record); 0: none
};

/// What an external backend runs.
struct ExternalRegionInfo {
  std::string name;     ///< "cblas_region0"
  std::string backend;  ///< "cblas"
  std::string symbol;   ///< its entry point in the library
  int nodes = 0;        ///< operators inside
};

/// A compiled model and how it was made.
struct CompiledModel {
  runtime::PackageContents package;
  CompileReport report;
  std::vector<KernelInfo> kernels;            ///< one per task
  std::vector<ExternalRegionInfo> externals;  ///< one per external region
  std::vector<PrimFunc> lowered;              ///< per kernel (as `kernels`): its lowered function, for dumps
  /// Per group of the plan: the index of its call in the package (a control
  /// group's first step; its bodies' calls follow).
  std::vector<size_t> group_calls;
  double schedule_seconds = 0;  ///< choosing schedules and lowering
  double codegen_seconds = 0;   ///< LLVM, all kernels (wall, in parallel)
  double link_seconds = 0;
};

/// Schedules every task (choose_schedule: records, else the template's
/// fallback, else the default), lowers and compiles them into one library and
/// lays out the package: graph inputs, outputs (by their graph names),
/// constants with their bytes, intermediates, and one call per group. The
/// external regions' C source is compiled by the system C compiler and linked
/// into the same library with the backends' libraries, which the package
/// lists (PackageContents::externals); a graph-payload region's payload goes
/// into the package (PackageContents::payloads) for its backend's module. Errors: a kernel that fails to lower
/// or compile (naming its task or region), a missing C compiler, link
/// errors, validate_package's.
Result<CompiledModel> compile_model(const ModelPlan& plan, const Target& target, const CompileOptions& options = {});

/// `plan` compiled with schedules from `source` (null: fallbacks), as a
/// package in memory to time against another (runtime/package_timing.h);
/// `group_calls` (optional) gets each group's call.
Result<runtime::PackageContents> compile_package(const ModelPlan& plan, const Target& target, ScheduleSource* source,
                                                 std::vector<size_t>* group_calls = nullptr);

/// A table for people: one line per kernel (label, calls, schedule source)
/// and the compile report's summary.
std::string format_compile_summary(const CompiledModel& model);

}  // namespace tessera::model
