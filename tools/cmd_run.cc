// `tessera run` (and the device's `tessera-run`, the same code without ONNX):
// load a package, feed its inputs from files (or random data), run it, write
// the outputs and optionally time it.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "base/half.h"
#include "runtime/graph_executor.h"
#include "runtime/trace.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/tensor_file.h"

namespace tessera::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"input", true, "an input, name=FILE.npy or name=FILE.pb (repeatable)", 'i'},
    {"random-inputs", true, "fill the inputs not given with random data from this seed"},
    {"output-dir", true, "write every output there as NAME.npy"},
    {"bench", true, "time N runs after the warm-up and print the median latency"},
    {"warmup", true, "untimed runs before --bench (default 3)"},
    {"threads", true, "threads of the executor (default: one per CPU)"},
    {"profile", true, "time each kernel call over N runs and list them with their model nodes, slowest first"},
    {"trace", true, "write one run (after the warm-up) as a Chrome/Perfetto trace to this JSON file", 0, "FILE.json"},
    {"help", false, "this message"},
};

// "tessera run", or "tessera-run" when the device's runner is called directly
// (run_main.cc passes first == 1): messages name the command the user typed.
const char* program = "tessera run";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
  return 2;
}

int failure(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
  return 1;
}

std::string describe(const runtime::TensorInfo& t) {
  std::string s = t.name + ": " + t.dtype.to_string() + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

// Uniform in [-1, 1) for floats, [0, 10) for integers, 0/1 for booleans.
Result<runtime::NDArray> random_array(const runtime::TensorInfo& t, std::mt19937_64& rng) {
  TESSERA_ASSIGN_OR_RETURN(runtime::NDArray a, runtime::NDArray::create(t.shape, t.dtype));
  auto* bytes = static_cast<uint8_t*>(a.raw_data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double u = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    if (t.dtype == DType::f32())
      reinterpret_cast<float*>(bytes)[i] = static_cast<float>(u);
    else if (t.dtype == DType::f64())
      reinterpret_cast<double*>(bytes)[i] = u;
    else if (t.dtype == DType::f16())
      reinterpret_cast<uint16_t*>(bytes)[i] = float_to_half(static_cast<float>(u));
    else if (t.dtype == DType::bf16())
      reinterpret_cast<uint16_t*>(bytes)[i] = float_to_bfloat16(static_cast<float>(u));
    else if (t.dtype == DType::i64())
      reinterpret_cast<int64_t*>(bytes)[i] = static_cast<int64_t>((u + 1) * 5);
    else if (t.dtype == DType::i32())
      reinterpret_cast<int32_t*>(bytes)[i] = static_cast<int32_t>((u + 1) * 5);
    else if (t.dtype.storage_bytes() == 1)
      bytes[i] = u > 0;
    else
      return Status(ErrorCode::kInvalidArgument, "no random data for " + describe(t) + "; give it with --input");
  }
  return a;
}

// A short look at an output: shape, and for floats the range and a few values.
std::string summary(const runtime::NDArray& a) {
  std::string s = a.dtype().to_string() + "[";
  for (size_t i = 0; i < a.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape()[i]);
  s += "]";
  const std::vector<float> v = a.to_float32();
  if (v.empty()) return s;
  double lo = v[0], hi = v[0], sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    lo = std::fmin(lo, v[i]);
    hi = std::fmax(hi, v[i]);
    sum += v[i];
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, " min %.4g max %.4g mean %.4g", lo, hi, sum / static_cast<double>(a.numel()));
  return s + buf;
}

// The --profile table: each call's median, share, GFLOP/s, output shape,
// kernel, workload key and model nodes, slowest first. A package without
// call metadata prints "-" where the metadata would be.
int print_profile(runtime::GraphExecutor& ex, int runs) {
  auto calls = ex.profile(runs);
  if (!calls.is_ok()) return failure(calls.status().message());
  const std::vector<runtime::CallDescription>& about = ex.call_descriptions();
  double total = 0;
  for (const auto& c : *calls) total += c.median_s;
  std::vector<size_t> order(calls->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return (*calls)[a].median_s > (*calls)[b].median_s; });
  std::printf("%5s %10s %7s %9s  %-18s %-40s %-32s  %s\n", "call", "ms", "share", "GFLOP/s", "output", "kernel",
              "workload key", "nodes");
  const runtime::CallDescription unknown;
  for (size_t i : order) {
    const runtime::CallDescription& d = i < about.size() ? about[i] : unknown;
    const double seconds = (*calls)[i].median_s;
    char gflops[32] = "-";
    if (d.info && d.info->flops > 0 && seconds > 0)
      std::snprintf(gflops, sizeof gflops, "%.2f", d.info->flops / seconds / 1e9);
    const std::string output = d.info ? runtime::shapes_text(d.output_shapes) : "-";
    const std::string key = d.info && !d.info->workload_key.empty() ? d.info->workload_key : "-";
    const std::string nodes = d.info ? runtime::call_display_name(d) : "-";
    std::printf("%5zu %10.3f %6.1f%% %9s  %-18s %-40s %-32s  %s\n", i, seconds * 1e3,
                total > 0 ? 100 * seconds / total : 0.0, gflops, output.c_str(), (*calls)[i].symbol.c_str(),
                key.c_str(), nodes.c_str());
  }
  std::printf("%5s %10.3f (sum of medians over %d runs)\n", "all", total * 1e3, runs);
  return 0;
}

// Which run --trace traced, for the user: never one of the timed ones.
std::string traced_run_name(int64_t bench, int64_t profile_runs, int64_t warmup) {
  if (bench > 0) return "one run after the " + std::to_string(bench) + " --bench runs (not one of them)";
  if (profile_runs > 0) return "one run after the --profile runs (not one of them)";
  return "one run after " + std::to_string(1 + warmup) + " warm-up runs";
}

// Whether `path` can be written, without leaving a file behind: "" or why not.
std::string unwritable_reason(const std::string& path) {
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  std::ofstream probe(path, std::ios::app);
  if (!probe) return std::strerror(errno);
  probe.close();
  if (!existed) std::remove(path.c_str());
  return "";
}

// One traced run of `ex`, written to `path` as a Chrome/Perfetto trace. After
// --bench's runs (its warm-up included) or --profile's the executor is warm;
// otherwise --warmup untimed runs come first.
int trace_one_run(runtime::GraphExecutor& ex, const std::string& model, const std::string& path, int64_t bench,
                  int64_t profile_runs, int64_t warmup) {
  const bool warm = bench > 0 || profile_runs > 0;
  for (int64_t i = 0; !warm && i < warmup; ++i)
    if (auto st = ex.run(); !st.is_ok()) return failure(st.message());
  auto spans = ex.run_traced();
  if (!spans.is_ok()) return failure(spans.status().message());
  runtime::TraceProcess who;
  who.pid = ::getpid();
  who.tid = static_cast<int64_t>(::syscall(SYS_gettid));
  who.process_name = std::string(program) + " " + model;
  who.thread_name = "executor (kernels; " + std::to_string(ex.num_threads()) + "-thread pool)";
  if (auto st = runtime::write_chrome_trace(path, ex.call_descriptions(), *spans, who); !st.is_ok())
    return failure(st.message());
  std::printf("trace: %s, %s\n", path.c_str(), traced_run_name(bench, profile_runs, warmup).c_str());
  return 0;
}

}  // namespace

int run_run(int argc, char** argv, int first) {
  if (first == 1) program = "tessera-run";
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) return usage_error(args.status().message());
  if (args->has("help") || args->positional().size() != 1) {
    std::fprintf(args->has("help") ? stdout : stderr,
                 "usage: %s MODEL.tsr [--input NAME=FILE ...] [--random-inputs SEED] [--output-dir DIR] [--bench N]\n"
                 "       [--profile N] [--trace FILE.json]\n\n%s",
                 program, format_options(kOptions).c_str());
    return args->has("help") ? 0 : 2;
  }
  auto bench = args->get_int("bench", 0);
  auto warmup = args->get_int("warmup", 3);
  auto threads = args->get_int("threads", 0);
  auto seed = args->get_int("random-inputs", 0);
  auto profile_runs = args->get_int("profile", 0);
  for (const Status* st :
       {&bench.status(), &warmup.status(), &threads.status(), &seed.status(), &profile_runs.status()})
    if (!st->is_ok()) return usage_error(st->message());
  if (*bench < 0 || *warmup < 0 || *threads < 0)
    return usage_error("--bench, --warmup and --threads must not be negative");
  std::map<std::string, std::string> files;
  for (const std::string& spec : args->get_all("input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return usage_error("--input '" + spec + "': expected NAME=FILE.npy or NAME=FILE.pb");
    if (!files.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
      return usage_error("input '" + spec.substr(0, eq) + "' is given twice");
  }

  // An unwritable trace path fails now, not after the runs.
  const std::string trace_path = args->get("trace");
  if (args->has("trace")) {
    if (trace_path.empty()) return usage_error("--trace needs a file name");
    if (std::string why = unwritable_reason(trace_path); !why.empty())
      return failure("cannot write the trace " + trace_path + ": " + why);
  }

  runtime::ExecutorOptions eo;
  eo.num_threads = static_cast<int>(*threads);
  auto exec = runtime::GraphExecutor::load_file(args->positional()[0], eo);
  if (!exec.is_ok()) return failure(exec.status().message());
  runtime::GraphExecutor& ex = **exec;

  // Every input named on the command line must exist, and every input must be fed.
  std::string inputs_list;
  for (const auto& in : ex.input_info()) inputs_list += "\n  " + describe(in);
  for (const auto& [name, file] : files) {
    bool known = false;
    for (const auto& in : ex.input_info()) known |= in.name == name;
    if (!known) return failure("the model has no input '" + name + "'; its inputs:" + inputs_list);
  }
  std::mt19937_64 rng(static_cast<uint64_t>(*seed));
  for (const auto& in : ex.input_info()) {
    auto it = files.find(in.name);
    Result<runtime::NDArray> array = Status(ErrorCode::kInvalidArgument, "");
    if (it != files.end()) {
      array = read_tensor_file(it->second);
    } else if (args->has("random-inputs")) {
      array = random_array(in, rng);
    } else {
      return failure("input '" + in.name + "' is not given (--input " + in.name +
                     "=FILE.npy, or --random-inputs SEED); the model's inputs:" + inputs_list);
    }
    if (!array.is_ok()) return failure(array.status().message());
    if (auto st = ex.set_input(in.name, *array); !st.is_ok()) return failure(st.message());
  }

  if (auto st = ex.run(); !st.is_ok()) return failure(st.message());
  const std::string dir = args->get("output-dir");
  if (!dir.empty() && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return failure("cannot create " + dir + ": " + std::strerror(errno));
  for (const std::string& name : ex.output_names()) {
    auto y = ex.get_output(name);
    if (!y.is_ok()) return failure(y.status().message());
    std::string where;
    if (!dir.empty()) {
      where = dir + "/" + file_safe_name(name) + ".npy";
      if (auto st = runtime::save_npy(*y, where); !st.is_ok()) return failure(st.message());
      where = " -> " + where;
    }
    std::printf("%s: %s%s\n", name.c_str(), summary(*y).c_str(), where.c_str());
  }

  if (*bench > 0) {
    auto timing = ex.benchmark(static_cast<int>(*warmup), static_cast<int>(*bench));
    if (!timing.is_ok()) return failure(timing.status().message());
    std::printf("latency: median %.3f ms, min %.3f ms, mean %.3f ms over %lld runs (%lld warm-up), %d threads\n",
                timing->median_s * 1e3, timing->min_s * 1e3, timing->mean_s * 1e3, static_cast<long long>(*bench),
                static_cast<long long>(*warmup), ex.num_threads());
    std::printf("memory: intermediates %.2f MiB planned, %.2f MiB without reuse\n", ex.peak_memory_bytes() / 1048576.0,
                ex.intermediate_bytes_total() / 1048576.0);
  }
  if (*profile_runs > 0) {
    if (int code = print_profile(ex, static_cast<int>(*profile_runs)); code != 0) return code;
  }
  if (!trace_path.empty()) return trace_one_run(ex, args->positional()[0], trace_path, *bench, *profile_runs, *warmup);
  return 0;
}

}  // namespace tessera::cli
