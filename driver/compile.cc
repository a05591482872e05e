#include "driver/compile.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/backend.h"
#include "driver/model_input.h"
#include "records/records_schedule_source.h"
#include "records/store.h"
#include "runtime/graph_executor.h"

namespace tessera::driver {
namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

Status check_byoc(const std::string& byoc) {
  if (byoc == "auto") return Status::ok();
  return external::make_backend(byoc).status();
}

Result<model::PlanOptions::Precision> parse_precision(const std::string& name, const Target& target) {
  using Precision = model::PlanOptions::Precision;
  if (name == "fp32") return Precision::kFloat32;
  if (name == "fp16") {
    // Weights in float16, widened in registers: F16C's vcvtph2ps on x86
    // (every AVX2 CPU), NEON's fcvtl on AArch64.
    if (target.is_x86() && !llvm_has_feature(target, "f16c"))
      return Status(ErrorCode::kInvalidArgument,
                    "--precision fp16 needs float16 conversions in registers, which the target lacks (F16C): " +
                        target.to_string());
    if (!target.is_x86() && !target.is_aarch64())
      return Status(ErrorCode::kInvalidArgument,
                    "--precision fp16 is for x86-64 and AArch64 targets: " + target.to_string());
    return Precision::kFp16Weights;
  }
  if (name != "bf16")
    return Status(ErrorCode::kInvalidArgument, "--precision '" + name + "': expected fp32, bf16 or fp16");
  const bool has = target.is_x86() ? llvm_has_feature(target, "avx512bf16")
                                   : target.is_aarch64() && llvm_has_feature(target, "bf16");
  if (!has)
    return Status(ErrorCode::kInvalidArgument,
                  "--precision bf16 needs a bfloat16 dot product, which the target lacks (" +
                      std::string(target.is_x86() ? "AVX512-BF16" : "the Arm BF16 extension") +
                      "): " + target.to_string());
  return Precision::kBf16;
}

Result<ModelCompile> compile_model_file(const ModelCompileArgs& args) {
  ModelCompile out;
  out.target = args.target ? *args.target : host_target();
  TESSERA_ASSIGN_OR_RETURN(const model::PlanOptions::Precision precision, parse_precision(args.precision, out.target));
  out.byoc_auto = args.byoc == "auto";
  out.backend = out.byoc_auto ? model::auto_backend_name(out.target) : args.byoc;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<external::Backend> backend, external::make_backend(out.backend));
  auto graph = import_model(args.model, args.input_shapes, args.input_values);
  if (!graph.is_ok()) return Status(graph.status().code(), graph.status().message());
  // Optimized and laid out once; every plan below starts from it.
  auto prepared = model::prepare_model(*graph);
  if (!prepared.is_ok()) return Status(prepared.status().code(), args.model + ": " + prepared.status().message());

  // The records, read-only: compiling never changes the database. A missing
  // database is not an error: the model compiles from fallbacks, as noted.
  std::optional<records::Store> store;
  std::optional<records::RecordsScheduleSource> source;
  if (!args.use_records) {
    out.records_note = "ignoring the records (--no-records): every kernel from its fallback";
  } else if (!file_exists(args.db)) {
    out.records_note = "no records database at " + args.db + ": every kernel from its fallback";
  } else {
    records::OpenOptions oo;
    oo.read_only = true;
    auto opened = records::Store::open(args.db, oo);
    if (!opened.is_ok())
      return Status(opened.status().code(),
                    "cannot open the records database " + args.db + ": " + opened.status().message());
    store.emplace(std::move(opened).value());
    source.emplace(*store);
  }
  ScheduleSource* schedules = source ? &*source : nullptr;

  model::PlanOptions plan_options;
  plan_options.byoc = backend.get();
  plan_options.precision = precision;
  plan_options.int8_pairs = model::int8_pairs_pay(out.target);
  // --byoc auto: each region the faster way as tune timed it; compile times
  // nothing, so a region without a stored time is Tessera's.
  std::unique_ptr<external::Backend> chosen;
  if (out.byoc_auto && backend) {
    auto regions = model::stored_region_choices(*prepared, out.target, schedules, *backend, plan_options);
    if (!regions.is_ok()) return Status(regions.status().code(), "--byoc auto: " + regions.status().message());
    out.regions = std::move(regions).value();
    chosen = model::restrict_backend(*backend, out.regions);
    plan_options.byoc = chosen.get();
  }
  // Each convolution that can run by Winograd does when its records say it
  // is faster (compiler/model/choose_winograd.h).
  auto plan = model::plan_model_from_records(*prepared, out.target, schedules, &out.winograd, plan_options);
  if (!plan.is_ok()) return Status(plan.status().code(), args.model + ": " + plan.status().message());
  out.plan = std::move(plan).value();

  model::CompileOptions co;
  co.source = schedules;
  co.jobs = args.jobs;
  auto compiled = model::compile_model(out.plan, out.target, co);
  if (!compiled.is_ok()) return Status(compiled.status().code(), args.model + ": " + compiled.status().message());
  out.compiled = std::move(compiled).value();
  return out;
}

Result<std::string> difference_from_float32(const ModelCompileArgs& args, const ModelCompile& result, int inputs) {
  ModelCompileArgs reference_args = args;
  reference_args.precision = "fp32";
  TESSERA_ASSIGN_OR_RETURN(ModelCompile reference, compile_model_file(reference_args));
  runtime::ExecutorOptions options;
  TESSERA_ASSIGN_OR_RETURN(auto reduced, runtime::GraphExecutor::load(result.compiled.package, options));
  TESSERA_ASSIGN_OR_RETURN(auto full, runtime::GraphExecutor::load(reference.compiled.package, options));
  double worst = 0, scale = 0;
  std::string worst_output;
  for (int seed = 0; seed < inputs; ++seed) {
    for (const runtime::TensorInfo& in : full->input_info()) {
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray x, runtime::NDArray::create(in.shape, in.dtype));
      x.fill_random(static_cast<uint64_t>(seed) * 7919 + in.name.size());
      TESSERA_RETURN_IF_ERROR(full->set_input(in.name, x));
      TESSERA_RETURN_IF_ERROR(reduced->set_input(in.name, x));
    }
    TESSERA_RETURN_IF_ERROR(full->run());
    TESSERA_RETURN_IF_ERROR(reduced->run());
    for (const std::string& name : full->output_names()) {
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray want, full->get_output(name));
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray got, reduced->get_output(name));
      const std::vector<float> w = want.to_float32(), g = got.to_float32();
      for (size_t i = 0; i < w.size() && i < g.size(); ++i) {
        scale = std::max(scale, static_cast<double>(std::fabs(w[i])));
        const double d = std::fabs(static_cast<double>(g[i]) - w[i]);
        if (!(d <= worst)) {
          worst = std::isnan(d) ? INFINITY : d;
          worst_output = name;
        }
      }
    }
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "--precision %s against float32 on %d random inputs: largest difference %.3g (output '%s', %.2g%% of "
                "its largest magnitude, %.3g)\n",
                args.precision.c_str(), inputs, worst, worst_output.c_str(), scale > 0 ? 100 * worst / scale : 0.0,
                scale);
  return std::string(line);
}

std::string format_model_choices(const ModelCompile& result) {
  std::string text;
  if (!result.regions.empty())
    text += "regions " + result.backend + " can run, each the faster way (--byoc auto):\n" +
            model::format_region_choices(result.backend, result.regions);
  const auto winograd =
      std::count_if(result.winograd.begin(), result.winograd.end(), [](const auto& c) { return c.winograd; });
  if (winograd > 0)
    text += "convolutions by Winograd (" + std::to_string(winograd) + " of " + std::to_string(result.winograd.size()) +
            "; by the faster record, without records by channel count):\n" +
            model::format_winograd_choices(result.winograd);
  return text;
}

}  // namespace tessera::driver
