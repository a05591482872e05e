// `tessera compile`: an ONNX model, with the best records of every kernel
// (a fallback where there is none, reported), into one package file.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/graph/fused_graph_dot.h"
#include "compiler/model/compile_model.h"
#include "compiler/model/dump_model.h"
#include "driver/compile.h"
#include "driver/model_input.h"
#include "runtime/memory_plan.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"output", true, "the package to write (default: the model's name with .tsr)", 'o'},
    {"target", true, "target string (default: this machine)"},
    {"db", true, "records database (default tessera.db); none there: fallbacks only"},
    {"no-records", false, "ignore the records: every kernel from its fallback (the untuned model)"},
    {"input-shape", true, "bind a dynamic input, name:d0,d1,... (repeatable)"},
    {"input-value", true,
     "bind a scalar input to a value, name=value (repeatable): a constant from then on, so that what depends on "
     "it folds (an If on a sample rate becomes its branch); the package no longer takes that input"},
    {"jobs", true, "code generation threads (default: one per CPU)"},
    {"precision", true,
     "fp32 (the default), bf16: products by constant weights in bfloat16, accumulated in float32, where the "
     "target has a bfloat16 dot product, or fp16: their weights stored in float16 (half the bytes), widened "
     "to float32 as read; prints the largest difference from float32 on random inputs"},
    {"byoc", true,
     "external backend for the regions it takes: none, cblas, dnnl (every region it takes), or auto (the "
     "default: dnnl where its module is installed and the target is this machine, each region the faster way, "
     "as tune timed it; a region without a stored time is Tessera's, since compile times nothing; docs/byoc.md)"},
    {"dump", true,
     "write graph=FILE.dot (the fused graph), ir=DIR, ll=DIR or asm=DIR (each kernel); repeatable; "
     "FILE.dot alone is graph=FILE.dot",
     0, "KIND=PATH"},
    {"verbose", false,
     "also list each backend region with both its times, each Winograd choice and each kernel with where its "
     "schedule came from, and the whole target string"},
    {"list-ops", false, "print the ONNX operators the importer accepts, one a line, and exit"},
    {"markdown", false, "with --list-ops: print them as docs/operators.md"},
    {"help", false, "this message"},
};

// What compile chose, in a line or two; --verbose has the tables.
std::string summarize_model_choices(const driver::ModelCompile& result) {
  std::string text;
  if (!result.regions.empty()) {
    const auto count = [&](auto pred) { return std::count_if(result.regions.begin(), result.regions.end(), pred); };
    const auto on_backend = count([](const auto& r) { return r.backend; });
    const auto untimed = count([](const auto& r) { return r.untimed; });
    const size_t regions = result.regions.size();
    const auto& first = result.regions.front();
    const bool one_session = untimed == 0 && count([&](const auto& r) { return r.session_id == first.session_id; }) ==
                                                 static_cast<long>(regions);
    const std::string when =
        one_session ? "times from tuning session " + std::to_string(first.session_id) : "times from the records";
    if (untimed == static_cast<long>(regions)) {
      text += (regions == 1 ? "the region " + result.backend + " can run is"
                            : "the " + std::to_string(regions) + " regions " + result.backend + " can run are") +
              " Tessera's: compile times nothing, and no stored times hold (`tessera tune` times them)\n";
    } else {
      text += on_backend ? std::to_string(on_backend) + " of " + std::to_string(regions) + " regions run on " +
                               result.backend + ", the faster way each (" + when
                         : "every region " + result.backend + " can run is faster as Tessera's kernels (" +
                               std::to_string(regions) + ", " + when;
      if (untimed > 0) text += "; " + std::to_string(untimed) + " without a stored time are Tessera's";
      text += "; --verbose lists them)\n";
    }
  }
  const auto winograd =
      std::count_if(result.winograd.begin(), result.winograd.end(), [](const auto& c) { return c.winograd; });
  if (winograd > 0)
    text += std::to_string(winograd) + " of " + std::to_string(result.winograd.size()) +
            " convolutions by Winograd (--verbose lists them)\n";
  return text;
}

// The kernels in two lines: how many came from records, and what to run
// when some did not.
std::string summarize_kernels(const CompileReport& report, const std::string& model_path) {
  std::string text =
      std::to_string(report.kernels) + " kernels, " + std::to_string(report.from_records) + " scheduled from records\n";
  const size_t unrecorded = report.without_record.size() - report.kept_fallback.size();
  if (unrecorded > 0)
    text += "  " + std::to_string(unrecorded) + " on fallbacks, without a record: `tessera tune " + model_path +
            "` searches them; --verbose lists them\n";
  if (!report.kept_fallback.empty())
    text += "  " + std::to_string(report.kept_fallback.size()) +
            " on fallbacks kept by tune's check (their records made the model slower; `records why` says more)\n";
  for (const auto& w : report.warnings) text += "warning: " + w + "\n";
  return text;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tessera compile: %s\n", message.c_str());
  return 2;
}

int failure(const std::string& message) {
  std::fprintf(stderr, "tessera compile: %s\n", message.c_str());
  return 1;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string default_output(const std::string& model) {
  const size_t slash = model.find_last_of('/');
  std::string base = slash == std::string::npos ? model : model.substr(slash + 1);
  if (driver::is_onnx_path(base)) base.resize(base.size() - 5);
  return base + ".tsr";
}

// What --dump asks for: at most one fused graph file and one directory per
// kernel form.
struct DumpRequest {
  std::string graph_file;
  std::vector<std::pair<model::DumpKind, std::string>> kernel_dirs;
};

// Parses every --dump KIND=PATH (or FILE.dot) and checks that each path can
// be written before anything is compiled. Errors: a message for the user.
Result<DumpRequest> parse_dumps(const std::vector<std::string>& specs) {
  DumpRequest request;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    std::string kind = eq == std::string::npos ? "" : spec.substr(0, eq);
    const std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
    if (eq == std::string::npos && path.size() > 4 && path.compare(path.size() - 4, 4, ".dot") == 0) kind = "graph";
    if (path.empty() || (kind != "graph" && kind != "ir" && kind != "ll" && kind != "asm"))
      return Status(ErrorCode::kInvalidArgument,
                    "--dump '" + spec + "': expected graph=FILE.dot, ir=DIR, ll=DIR, asm=DIR or FILE.dot");
    if (kind == "graph") {
      if (!request.graph_file.empty()) return Status(ErrorCode::kInvalidArgument, "--dump graph is given twice");
      const bool existed = file_exists(path);
      std::ofstream probe(path, std::ios::app);
      if (!probe)
        return Status(ErrorCode::kIOError, "cannot write the graph dump " + path + ": " + std::strerror(errno));
      probe.close();
      if (!existed) std::remove(path.c_str());
      request.graph_file = path;
      continue;
    }
    const model::DumpKind k = kind == "ir"   ? model::DumpKind::kIr
                              : kind == "ll" ? model::DumpKind::kLlvmIr
                                             : model::DumpKind::kAssembly;
    for (const auto& [other, dir] : request.kernel_dirs)
      if (other == k) return Status(ErrorCode::kInvalidArgument, "--dump " + kind + " is given twice");
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec || !std::filesystem::is_directory(path) || ::access(path.c_str(), W_OK) != 0)
      return Status(ErrorCode::kIOError, "cannot write the " + kind + " dump directory " + path + ": " +
                                             (ec ? ec.message() : std::strerror(errno)));
    request.kernel_dirs.emplace_back(k, path);
  }
  return request;
}

// The fused graph, before compiling (a user may look at it while LLVM works).
Status write_graph_dump(const DumpRequest& dumps, const model::ModelPlan& plan) {
  if (dumps.graph_file.empty()) return Status::ok();
  std::ofstream dot(dumps.graph_file, std::ios::trunc);
  dot << graph::fused_graph_dot(plan.graph, plan.groups);
  dot.flush();
  if (!dot) return Status(ErrorCode::kIOError, "cannot write the graph dump " + dumps.graph_file);
  std::printf("fused graph: %s (%zu kernel calls)\n", dumps.graph_file.c_str(), plan.groups.size());
  return Status::ok();
}

Status write_kernel_dumps(const DumpRequest& dumps, const model::CompiledModel& compiled, const Target& target) {
  for (const auto& [kind, dir] : dumps.kernel_dirs) {
    TESSERA_RETURN_IF_ERROR(model::dump_kernels(compiled, target, kind, dir));
    std::printf("%s of %zu kernels: %s (index.tsv lists them)\n", model::dump_kind_name(kind), compiled.kernels.size(),
                dir.c_str());
  }
  return Status::ok();
}

}  // namespace

int run_compile(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) return usage_error(args.status().message());
  if (args->has("list-ops")) {
    if (args->has("markdown"))
      std::fputs(frontend::supported_onnx_ops_markdown().c_str(), stdout);
    else
      for (const std::string& op : frontend::supported_onnx_ops()) std::printf("%s\n", op.c_str());
    return 0;
  }
  if (args->has("markdown")) return usage_error("--markdown goes with --list-ops");
  if (args->has("help") || args->positional().size() != 1) {
    std::fprintf(
        args->has("help") ? stdout : stderr,
        "usage: tessera compile MODEL.onnx [-o MODEL.tsr] [--target TARGET] [--db DB] [--input-shape NAME:D,...]\n"
        "                       [--input-value NAME=VALUE ...] [--precision fp32|bf16|fp16]\n"
        "                       [--byoc none|cblas|dnnl|auto] [--dump graph=FILE.dot|ir=DIR|ll=DIR|asm=DIR ...]\n"
        "       tessera compile --list-ops [--markdown]\n\n%s",
        format_options(kOptions).c_str());
    return args->has("help") ? 0 : 2;
  }
  const std::string model_path = args->positional()[0];
  if (!driver::is_onnx_path(model_path)) return usage_error(model_path + ": expected an .onnx model");
  Target target = host_target();
  if (args->has("target")) {
    auto t = parse_target(args->get("target"));
    if (!t.is_ok()) return usage_error(t.status().message());
    target = *t;
  }
  auto jobs = args->get_int("jobs", 0);
  if (!jobs.is_ok() || *jobs < 0) return usage_error("--jobs must be a non-negative integer");
  const std::string output = args->get("output", default_output(model_path));
  if (Status st = driver::check_byoc(args->get("byoc", "auto")); !st.is_ok())
    return usage_error("--byoc: " + st.message());
  const std::string precision = args->get("precision", "fp32");
  if (auto p = driver::parse_precision(precision, target); !p.is_ok()) return usage_error(p.status().message());
  auto dumps = parse_dumps(args->get_all("dump"));
  if (!dumps.is_ok())
    return dumps.status().code() == ErrorCode::kIOError ? failure(dumps.status().message())
                                                        : usage_error(dumps.status().message());

  auto start = std::chrono::steady_clock::now();
  driver::ModelCompileArgs request;
  request.model = model_path;
  request.input_shapes = args->get_all("input-shape");
  request.input_values = args->get_all("input-value");
  request.db = args->get("db", "tessera.db");
  request.use_records = !args->has("no-records");
  request.target = target;
  request.byoc = args->get("byoc", "auto");
  request.jobs = static_cast<int>(*jobs);
  request.precision = precision;
  auto result = driver::compile_model_file(request);
  if (!result.is_ok()) return failure(result.status().message());
  const model::CompiledModel* compiled = &result->compiled;
  if (!result->records_note.empty()) std::printf("%s\n", result->records_note.c_str());
  for (const std::string& warning : result->plan.warnings)
    std::fprintf(stderr, "tessera compile: warning: %s\n", warning.c_str());
  const bool verbose = args->has("verbose");
  std::printf("%s", verbose ? driver::format_model_choices(*result).c_str() : summarize_model_choices(*result).c_str());
  if (precision != "fp32") {
    // What the reduced precision costs, seen before the package is used.
    auto difference = driver::difference_from_float32(request, *result);
    if (!difference.is_ok()) return failure("comparing with float32: " + difference.status().message());
    std::printf("%s", difference->c_str());
  }
  if (auto st = write_graph_dump(*dumps, result->plan); !st.is_ok()) return failure(st.message());
  if (auto st = runtime::write_package(compiled->package, output); !st.is_ok()) return failure(st.message());
  if (auto st = write_kernel_dumps(*dumps, *compiled, target); !st.is_ok()) return failure(st.message());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("%s", verbose ? model::format_compile_summary(*compiled).c_str()
                            : summarize_kernels(compiled->report, model_path).c_str());
  auto memory = runtime::plan_graph_memory(compiled->package);
  const auto& calls = compiled->package.calls;
  const auto steps = std::count_if(calls.begin(), calls.end(),
                                   [](const runtime::KernelCall& c) { return c.kind != runtime::CallKind::kKernel; });
  const std::string control = steps ? " (and " + std::to_string(steps) + " control steps)" : "";
  std::printf("wrote %s: %zu kernel calls%s, %zu kernels, library %.1f KiB, parameters %.1f MiB\n", output.c_str(),
              calls.size() - static_cast<size_t>(steps), control.c_str(), compiled->kernels.size(),
              compiled->package.library.size() / 1024.0, [&] {
                double bytes = 0;
                for (const auto& v : compiled->package.values) bytes += static_cast<double>(v.data.size());
                return bytes / (1024.0 * 1024.0);
              }());
  if (memory.is_ok())
    std::printf("intermediates: %.2f MiB planned (%.2f MiB without reuse)\n", memory->arena_bytes / 1048576.0,
                memory->total_bytes / 1048576.0);
  std::printf("compiled in %.2f s (schedules %.2f s, code generation %.2f s, link %.2f s) for %s\n", seconds,
              compiled->schedule_seconds, compiled->codegen_seconds, compiled->link_seconds,
              (verbose ? target.to_string() : target.short_name()).c_str());
  return 0;
}

}  // namespace tessera::cli
