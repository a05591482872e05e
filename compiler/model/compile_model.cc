#include "compiler/model/compile_model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/external/c_compiler.h"
#include "compiler/graph/passes.h"
#include "compiler/lower/lower.h"
#include "compiler/model/package_layout.h"

namespace tessera::model {

namespace {

using graph::Graph;
using graph::OpKind;
using graph::ValueId;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every output gets a buffer of its own: an output that is a graph input, a
// constant or an earlier output's value is copied by an identity reshape.
// An empty output (a dimension of 0) has no bytes to copy: it stays the
// value it is, and the package gives it 0 bytes.
void add_output_copies(Graph* g) {
  std::set<ValueId> seen;
  for (size_t i = 0; i < g->outputs().size(); ++i) {
    const ValueId v = g->outputs()[i];
    if (graph::shape_size(g->value(v).shape) == 0) continue;
    const bool needs_copy = g->is_input(v) || g->is_constant(v) || !seen.insert(v).second;
    if (!needs_copy) continue;
    const graph::Value value = g->value(v);
    const std::string name = g->output_name(i);
    const ValueId copy = g->add_op(name + ".copy", OpKind::kReshape, graph::NoAttrs{}, {v}, value.shape, value.dtype);
    g->replace_output(i, copy);
    seen.insert(copy);
  }
}

// "tsr_k3_fused_conv_add_relu": unique by index, readable in a profile.
std::string kernel_symbol(int task, const std::string& group_name) {
  std::string s = "tsr_k" + std::to_string(task) + "_";
  for (char c : group_name) s.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return s.substr(0, 64);
}

// A task of a body, in the plan that holds the body: the one of its
// workload key there (a kernel the model already has), or a new one. An
// argument stays constant (packable) only where every call has a constant.
int merge_task(ModelPlan& plan, const ModelPlan& body, size_t t) {
  const graph::GraphTask& task = body.tasks[t];
  for (size_t k = 0; k < plan.tasks.size(); ++k) {
    if (plan.tasks[k].dag->workload_key() != task.dag->workload_key()) continue;
    plan.tasks[k].weight += task.weight;
    std::vector<int>& constants = plan.task_constant_args[k];
    const std::vector<int>& theirs = body.task_constant_args[t];
    constants.erase(std::remove_if(constants.begin(), constants.end(),
                                   [&](int a) { return std::find(theirs.begin(), theirs.end(), a) == theirs.end(); }),
                    constants.end());
    return static_cast<int>(k);
  }
  plan.tasks.push_back(task);
  plan.task_ops.push_back(body.task_ops[t]);
  plan.task_labels.push_back(body.task_labels[t]);
  plan.task_constant_args.push_back(body.task_constant_args[t]);
  return static_cast<int>(plan.tasks.size()) - 1;
}

// Plans the bodies of every control group (Tessera's kernels alone: an
// external backend's regions are the top level's), merging their tasks.
Status plan_control_bodies(ModelPlan& plan, const PlanOptions& options) {
  PlanOptions inner = options;
  inner.byoc = nullptr;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (plan.control_of_group[i] < 0) continue;
    const graph::Node& node = plan.graph.nodes()[static_cast<size_t>(plan.groups[i].nodes.front())];
    ModelPlan::Control& control = plan.controls[static_cast<size_t>(plan.control_of_group[i])];
    for (const auto& body : std::get<graph::ControlAttrs>(node.attrs).bodies) {
      auto planned = plan_model(*body, inner);
      if (!planned.is_ok())
        return planned.status().with_context(std::string(graph::op_kind_name(node.kind)) + " " + node.name);
      std::vector<int> tasks;
      for (size_t t = 0; t < planned->tasks.size(); ++t) tasks.push_back(merge_task(plan, *planned, t));
      plan.constant_bytes += planned->constant_bytes;
      control.bodies.push_back(std::make_shared<const ModelPlan>(std::move(planned).value()));
      control.body_tasks.push_back(std::move(tasks));
    }
  }
  return Status::ok();
}

}  // namespace

std::string template_op_for(const Graph& g, const graph::FusedGroup& group) {
  const graph::Node& anchor = g.nodes()[static_cast<size_t>(group.nodes.front())];
  const bool attention = std::any_of(group.nodes.begin(), group.nodes.end(),
                                     [&](int i) { return g.nodes()[static_cast<size_t>(i)].kind == OpKind::kSoftmax; });
  if (anchor.kind == OpKind::kMatMul && attention) return "attention";
  switch (anchor.kind) {
    case OpKind::kConv: {
      const auto& a = std::get<graph::ConvAttrs>(anchor.attrs);
      if (a.groups == 1) return a.winograd ? "conv2d_winograd_nhwc" : a.nhwc ? "conv2d_nhwc" : "conv2d";
      // Depthwise convs (any multiplier) have their templates; other
      // grouped convolutions fit the conv templates.
      const auto& in = g.value(anchor.inputs[0]).shape;
      if (in.size() != 4) return "";
      if (!a.nhwc && a.groups == in[1]) return "depthwise_conv2d";
      if (a.nhwc && a.groups == in[3]) return "depthwise_conv2d_nhwc";
      return a.nhwc ? "conv2d_nhwc" : "conv2d";
    }
    case OpKind::kGemm: return std::get<graph::GemmAttrs>(anchor.attrs).trans_b ? "dense" : "matmul";
    case OpKind::kMatMul: return g.value(anchor.outputs[0]).shape.size() == 2 ? "matmul" : "batch_matmul";
    case OpKind::kMatMulU8S8: {
      const auto* attrs = std::get_if<graph::MatMulAttrs>(&anchor.attrs);
      return attrs && attrs->pairs ? "matmul_u8s8_pairs" : "matmul_u8s8";
    }
    case OpKind::kMatMulBf16: return "matmul_bf16";
    case OpKind::kConvBf16: return "conv2d_nhwc_bf16";
    case OpKind::kConvU8S8: {
      // NHWC: the dot-product conv (its weights packed to words), or the
      // depthwise one (int8 weights, one input channel a group).
      const auto& a = std::get<graph::ConvAttrs>(anchor.attrs);
      if (!a.nhwc) return "";
      if (g.value(anchor.inputs[1]).dtype == DType::i8()) return "depthwise_conv2d_nhwc_u8s8";
      return a.pairs ? "conv2d_nhwc_u8s8_pairs" : "conv2d_nhwc_u8s8";
    }
    case OpKind::kMaxPool: return std::get<graph::PoolAttrs>(anchor.attrs).nhwc ? "" : "max_pool2d";
    case OpKind::kAvgPool: return "avg_pool2d";
    case OpKind::kGlobalAvgPool: return "global_avg_pool2d";
    // Row statistics over the trailing axes (the rows template's shape),
    // summed in vectors of partial sums over a row of two vectors or more.
    // Over inner axes (channels-last): the generic schedule, which sums
    // along the outer axis with vectors of the contiguous channels.
    case OpKind::kLayerNorm: {
      const auto& a = std::get<graph::NormAttrs>(anchor.attrs);
      const auto rank = static_cast<int64_t>(g.value(anchor.inputs[0]).shape.size());
      return a.count == 0 || a.axis + a.count == rank ? "rows" : "";
    }
    case OpKind::kSoftmax: {
      // Row statistics over the trailing axis only (the template's shape).
      const auto axis = static_cast<size_t>(std::get<graph::AxisAttrs>(anchor.attrs).axis);
      return axis + 1 == g.value(anchor.inputs[0]).shape.size() ? "rows" : "";
    }
    default: return "";
  }
}

bool int8_pairs_pay(const Target& target) {
  return target.is_aarch64() && llvm_has_feature(target, "i8mm");
}

namespace {
std::atomic<int64_t> prepared_count{0};
}  // namespace

int64_t models_prepared() {
  return prepared_count.load(std::memory_order_relaxed);
}

Result<PreparedModel> prepare_model(const Graph& g, bool nhwc_layout) {
  prepared_count.fetch_add(1, std::memory_order_relaxed);
  PreparedModel prepared;
  TESSERA_ASSIGN_OR_RETURN(graph::Graph optimized, graph::optimize_graph(g));
  if (nhwc_layout) {
    TESSERA_ASSIGN_OR_RETURN(prepared.graph, graph::convert_layout_nhwc(optimized));
  } else {
    prepared.graph = std::move(optimized);
  }
  return prepared;
}

Result<ModelPlan> plan_model(const Graph& g, const PlanOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(PreparedModel prepared, prepare_model(g, options.nhwc_layout));
  return plan_model(prepared, options);
}

Result<ModelPlan> plan_model(const PreparedModel& prepared, const PlanOptions& options) {
  ModelPlan plan;
  plan.graph = prepared.graph;
  // A convolution the external backend takes stays a convolution: the
  // backend runs it (a window product or a Winograd-transformed weight is
  // Tessera's alone).
  const graph::PartitionRules rules = options.byoc ? options.byoc->partition_rules() : graph::PartitionRules{};
  auto tesseras = [&](const graph::Node& n) { return !(rules.supports && rules.supports(plan.graph, n)); };
  TESSERA_ASSIGN_OR_RETURN(plan.graph, graph::convert_window_products(plan.graph, tesseras));
  if (options.winograd != PlanOptions::Winograd::kNone) {
    auto use = [&](const graph::Node& n) {
      if (!tesseras(n)) return false;
      return options.winograd == PlanOptions::Winograd::kAll || options.winograd_convs.count(n.name) > 0;
    };
    TESSERA_ASSIGN_OR_RETURN(plan.graph, graph::convert_winograd(plan.graph, use));
  }
  if (options.precision == PlanOptions::Precision::kBf16) {
    TESSERA_ASSIGN_OR_RETURN(plan.graph, graph::convert_bf16(plan.graph));
  }
  if (options.precision == PlanOptions::Precision::kFp16Weights) {
    TESSERA_ASSIGN_OR_RETURN(plan.graph, graph::convert_fp16_weights(plan.graph));
  }
  if (options.int8_pairs) {
    TESSERA_ASSIGN_OR_RETURN(plan.graph, graph::pair_int8_products(plan.graph));
  }
  add_output_copies(&plan.graph);
  if (options.byoc) {
    TESSERA_ASSIGN_OR_RETURN(external::OffloadResult offload, external::offload_regions(plan.graph, *options.byoc));
    plan.graph = std::move(offload.graph);
    plan.externals = std::move(offload.regions);
    plan.warnings = std::move(offload.warnings);
  }
  plan.groups = graph::fuse_ops(plan.graph);
  // External groups call their backend's code, control flow runs its
  // bodies' kernels; the others become tasks.
  std::vector<graph::FusedGroup> kernel_groups;
  for (const graph::FusedGroup& group : plan.groups) {
    const graph::Node& anchor = plan.graph.nodes()[static_cast<size_t>(group.nodes.front())];
    int external = -1;
    for (size_t r = 0; r < plan.externals.size(); ++r)
      if (anchor.kind == OpKind::kExternal && plan.externals[r].name == anchor.name) external = static_cast<int>(r);
    plan.external_of_group.push_back(external);
    const bool control = anchor.kind == OpKind::kIf || anchor.kind == OpKind::kLoop;
    plan.control_of_group.push_back(control ? static_cast<int>(plan.controls.size()) : -1);
    if (control) plan.controls.emplace_back();
    if (external < 0 && !control) kernel_groups.push_back(group);
  }
  TESSERA_ASSIGN_OR_RETURN(graph::TaskExtraction extraction, graph::extract_tasks(plan.graph, kernel_groups));
  plan.tasks = std::move(extraction.tasks);
  for (size_t i = 0, k = 0; i < plan.groups.size(); ++i)
    plan.task_of_group.push_back(
        plan.external_of_group[i] >= 0 || plan.control_of_group[i] >= 0 ? -1 : extraction.task_of_group[k++]);
  plan.task_ops.resize(plan.tasks.size());
  plan.task_labels.resize(plan.tasks.size());
  std::vector<bool> named(plan.tasks.size(), false);
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (plan.task_of_group[i] < 0) continue;
    const auto t = static_cast<size_t>(plan.task_of_group[i]);
    if (named[t]) continue;
    named[t] = true;
    const graph::FusedGroup& group = plan.groups[i];
    plan.task_ops[t] = template_op_for(plan.graph, group);
    plan.task_labels[t] = group.name + " " + graph::shape_string(plan.graph.value(group.output).shape) +
                          (plan.task_ops[t] == "conv2d_winograd_nhwc" ? " winograd" : "");
  }
  std::set<graph::ValueId> read;
  for (const graph::FusedGroup& group : plan.groups)
    for (graph::ValueId v : group.inputs)
      if (plan.graph.is_constant(v) && read.insert(v).second)
        plan.constant_bytes += static_cast<int64_t>(plan.graph.constant(v).bytes.size());
  plan.task_constant_args.resize(plan.tasks.size());
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    const size_t inputs = plan.tasks[t].dag->args().size() - 1;
    for (size_t arg = 0; arg < inputs; ++arg) {
      bool constant = true;
      for (size_t i = 0; i < plan.groups.size(); ++i)
        if (static_cast<size_t>(plan.task_of_group[i]) == t)
          constant = constant && plan.graph.is_constant(plan.groups[i].inputs[arg]);
      if (constant) plan.task_constant_args[t].push_back(static_cast<int>(arg));
    }
  }
  TESSERA_RETURN_IF_ERROR(plan_control_bodies(plan, options));
  return plan;
}

Result<CompiledModel> compile_model(const ModelPlan& plan, const Target& target, const CompileOptions& options) {
  CompiledModel model;
  const int n = static_cast<int>(plan.tasks.size());
  std::vector<PrimFunc> funcs;
  std::vector<std::string> symbols;
  std::vector<ArgLayouts> task_layouts;
  auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < n; ++t) {
    const graph::GraphTask& task = plan.tasks[static_cast<size_t>(t)];
    const std::string& label = plan.task_labels[static_cast<size_t>(t)];
    auto choice = choose_schedule(task.dag, plan.task_ops[static_cast<size_t>(t)], target, options.source);
    if (!choice.is_ok()) return choice.status().with_context(label);
    model.report.add(label, task.dag->workload_key(), *choice);
    symbols.push_back(kernel_symbol(t, task.name));
    // A packed argument must be a constant in every call of the kernel (the
    // package stores it packed); otherwise the kernel reads it as it is.
    State& state = choice->state;
    const std::vector<int>& constants = plan.task_constant_args[static_cast<size_t>(t)];
    for (const auto& [arg, layout] : packed_arguments(state)) {
      if (std::find(constants.begin(), constants.end(), arg) != constants.end()) continue;
      auto plain = without_packed_layouts(state);
      if (!plain.is_ok()) return plain.status().with_context(label);
      state = std::move(plain).value();
      break;
    }
    task_layouts.push_back(packed_arguments(state));
    auto func = lower(state, symbols.back());
    if (!func.is_ok()) return func.status().with_context("lowering " + label);
    funcs.push_back(std::move(func).value());
    model.lowered.push_back(funcs.back());
    model.kernels.push_back(KernelInfo{symbols.back(), label, task.weight, task.flops, choice->source,
                                       choice->explanation, choice->record ? choice->record->record_id : 0});
  }
  model.schedule_seconds = seconds_since(t0);

  // The external regions' C, by the system C compiler: objects linked with
  // the kernels, and the backends' libraries, which the package lists.
  BuildOptions build_options;
  build_options.jobs = options.jobs;
  auto t1 = std::chrono::steady_clock::now();
  for (const external::OffloadedRegion& region : plan.externals) {
    if (region.kind == external::BackendKind::kGraphPayload) {
      // Carried as a section of the package, run by the backend's module.
      model.package.payloads.push_back(
          runtime::ExternalPayload{region.backend, region.code.version, region.code.symbol, region.code.source});
    } else {
      auto object = external::compile_c_object(region.code.source, target);
      if (!object.is_ok()) return object.status().with_context("compiling external region " + region.name);
      build_options.extra_objects.push_back(std::move(object).value());
    }
    for (const std::string& lib : region.link_libraries)
      if (std::find(build_options.libraries.begin(), build_options.libraries.end(), lib) ==
          build_options.libraries.end())
        build_options.libraries.push_back(lib);
    const runtime::ExternalModule module{region.backend, external::backend_kind_name(region.kind),
                                         region.runtime_library};
    auto& listed = model.package.externals;
    if (std::find(listed.begin(), listed.end(), module) == listed.end()) listed.push_back(module);
    model.externals.push_back(ExternalRegionInfo{region.name, region.backend, region.code.symbol, region.num_nodes});
  }
  const double external_seconds = seconds_since(t1);

  // One object per kernel, generated in parallel, then one link.
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, build(funcs, target, build_options));
  model.package.library = std::move(lib.bytes);
  model.codegen_seconds = lib.codegen_seconds + external_seconds;
  model.link_seconds = lib.link_seconds;

  model.package.target = target.to_string();
  TESSERA_RETURN_IF_ERROR(lay_out_package(plan, task_layouts, symbols, &model.package, &model.group_calls));
  TESSERA_RETURN_IF_ERROR(runtime::validate_package(model.package));
  return model;
}

std::string format_compile_summary(const CompiledModel& model) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-52s %5s %10s  %s\n", "kernel", "calls", "MFLOP", "schedule");
  out += line;
  for (const KernelInfo& k : model.kernels) {
    std::snprintf(line, sizeof line, "%-52s %5d %10.2f  %s\n", k.label.substr(0, 52).c_str(), k.weight, k.flops / 1e6,
                  schedule_source_name(k.source));
    out += line;
  }
  for (const ExternalRegionInfo& r : model.externals) {
    std::snprintf(line, sizeof line, "%-52s %5d %10s  external: %s (%d operator%s)\n", r.name.substr(0, 52).c_str(), 1,
                  "-", r.backend.c_str(), r.nodes, r.nodes == 1 ? "" : "s");
    out += line;
  }
  out += model.report.to_string();
  return out;
}

Result<runtime::PackageContents> compile_package(const ModelPlan& plan, const Target& target, ScheduleSource* source,
                                                 std::vector<size_t>* group_calls) {
  CompileOptions co;
  co.source = source;
  TESSERA_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(plan, target, co));
  if (group_calls) *group_calls = std::move(compiled.group_calls);
  return std::move(compiled.package);
}

}  // namespace tessera::model
