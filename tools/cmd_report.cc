// `tessera report`: one self-contained HTML page on how tuning went, from a
// records database and, optionally, the model whose kernels were tuned
// (report/report.h renders it; this file reads the command line and the model).
#include <cstdio>

#include "driver/model_input.h"
#include "report/report.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"db", true, "the records database to report on (default: tessera.db)"},
    {"output", true, "the HTML file to write (required)", 'o', "FILE"},
    {"input-shape", true, "bind a dynamic input of MODEL.onnx, name:d0,d1,... (repeatable)"},
    {"target", true, "only records of this target, spelled as stored (`tessera records stats` lists them)"},
    {"ort-ms", true, "ONNX Runtime's latency of the model in ms: a line on the model's plots", 0, "MS"},
    {"peak-gflops", true, "the machine's FMA peak in GFLOP/s, for % of peak (default: peak unknown)", 0, "GFLOP/S"},
    {"max-dots", true, "at most this many dots per plot; beyond, an even sample (default 2000)", 0, "N"},
    {"title", true, "the page's title", 0, "TEXT"},
    {"help", false, "this help", 'h'},
};

constexpr const char* kUsage =
    "usage: tessera report [MODEL.onnx [--input-shape NAME:D,...]] [--db DB] -o report.html\n"
    "                      [--target TARGET] [--ort-ms MS] [--peak-gflops GFLOP/S] [--max-dots N]\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tessera report: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int failure(const std::string& message) {
  std::fprintf(stderr, "tessera report: %s\n", message.c_str());
  return 1;
}

// The distinct kernels of every tuning plan, as `tessera tune MODEL.onnx` tunes them.
Result<report::ModelInfo> report_model(const std::string& path, const std::vector<std::string>& input_shapes) {
  TESSERA_ASSIGN_OR_RETURN(tuner::ModelKernels kernels, driver::model_kernels(path, input_shapes));
  report::ModelInfo info{path, {}};
  for (const tuner::ModelKernel& k : kernels.kernels)
    info.kernels.push_back({k.dag->workload_key(), k.label, k.weight, k.dag->flop_count()});
  return info;
}

}  // namespace

int run_report(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) return usage_error(args.status().message());
  if (args->has("help")) {
    std::printf("%swrite a self-contained HTML report of how tuning went\n\n%s", kUsage,
                format_options(kOptions).c_str());
    return 0;
  }
  if (args->positional().size() > 1) return usage_error("unexpected argument '" + args->positional()[1] + "'");
  if (!args->has("output")) return usage_error("-o report.html is required");
  report::ReportOptions options;
  options.db_label = args->get("db", "tessera.db");
  options.target = args->get("target");
  if (args->has("title")) options.title = args->get("title");
  if (args->has("ort-ms")) {
    auto ms = args->get_double("ort-ms", 0);
    if (!ms.is_ok() || !(*ms > 0)) return usage_error("--ort-ms must be a positive number of milliseconds");
    options.ort_ms = *ms;
  }
  if (args->has("peak-gflops")) {
    auto peak = args->get_double("peak-gflops", 0);
    if (!peak.is_ok() || !(*peak > 0)) return usage_error("--peak-gflops must be a positive number");
    options.peak_gflops = *peak;
  }
  auto max_dots = args->get_int("max-dots", options.max_dots);
  if (!max_dots.is_ok() || *max_dots < 1 || *max_dots > 1000000)
    return usage_error("--max-dots must be an integer from 1 to 1000000");
  options.max_dots = static_cast<int>(*max_dots);
  if (args->positional().size() == 1) {
    const std::string& model = args->positional()[0];
    if (!driver::is_onnx_path(model)) return usage_error(model + ": expected an .onnx model");
    auto info = report_model(model, args->get_all("input-shape"));
    if (!info.is_ok()) return failure(info.status().message());
    options.model = std::move(*info);
  } else if (args->has("input-shape")) {
    return usage_error("--input-shape goes with a model, MODEL.onnx");
  }
  const std::string output = args->get("output");
  Status st = report::write_report(options.db_label, options, output);
  if (!st) return failure(st.message());
  std::printf("wrote %s\n", output.c_str());
  return 0;
}

}  // namespace tessera::cli
