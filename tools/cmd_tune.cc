// `tessera tune`: search schedules of one or more operators on a target,
// measuring on local workers (the default) or on a farm, and keep every
// measurement in the records database.
//
// This file reads the command line and prints; the job itself (tasks,
// spaces, runner, session) is tuner/job.h's.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <set>

#include "compiler/model/choose_winograd.h"
#include "compiler/model/compile_model.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/model_input.h"
#include "tuner/job.h"

namespace tessera::cli {
namespace {

std::atomic<bool> g_stop{false};  // set by SIGINT; read by the tuning loop between batches

void on_sigint(int) {
  if (g_stop.exchange(true)) _exit(130);  // a second Ctrl-C does not wait
}

const std::vector<OptionSpec> kOptions = {
    {"op", true, "operator to tune, e.g. matmul:M=1024,N=1024,K=1024 (repeatable)"},
    {"input-shape", true, "with a model: bind a dynamic input, name:d0,d1,... (repeatable)"},
    {"target", true, "target string (default: this machine)"},
    {"trials", true, "measurements in this run over all tasks (default 64)"},
    {"space", true, "sketch (template-free; default for --op), knob (templates) or auto (knob where a template fits; default for a model)"},
    {"strategy", true, "sketch: evolutionary (default), random; knob: xgb (default), random, grid, ga"},
    {"db", true, "records database (default tessera.db)"},
    {"tracker", true, "measure on a farm: the tracker's endpoint, e.g. tcp://farm:9190"},
    {"key", true, "device key of the farm's workers (with --tracker)"},
    {"keyfile", true, "this client's CURVE keypair (with --tracker)"},
    {"tracker-key", true, "the tracker's CURVE public key (with --tracker)"},
    {"insecure", false, "plaintext to an ipc/loopback tracker"},
    {"workers", true, "local workers when no tracker is given (default 1)"},
    {"threads", true, "threads per measurement (default: the target's cores)"},
    {"batch", true, "candidates per round (default 16)"},
    {"seed", true, "seed of the search (default 0)"},
    {"time-budget", true, "stop after this many seconds"},
    {"early-stopping", true, "stop a task after N trials without improvement"},
    {"scheduler", true, "gradient (default) or round-robin, for several tasks"},
    {"cache", true, "model (default): calls back to back, each reading the model's weights afresh from beyond "
                     "a core's own caches when they outgrow them, as the model does; warm: everything stays "
                     "cached; cold: each repeat times one call after the caches are swept"},
    {"repeat", true, "timing repeats per candidate (default 8 cold, else 3)"},
    {"min-repeat-ms", true, "shortest timed repeat in ms, model and warm (default 50)"},
    {"check", false, "compare every candidate's output with the default schedule's"},
    {"help", false, "this message"},
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tessera tune: %s\n", message.c_str());
  return 2;
}

// The distinct kernels of the model at `path` (those of every tuning plan,
// by workload key): exactly the DAGs `tessera compile` will look up.
Result<tuner::ModelKernels> model_kernels(const std::string& path, const std::vector<std::string>& input_shapes) {
  auto graph = import_model(path, input_shapes);
  if (!graph.is_ok()) return Status(graph.status().code(), graph.status().to_string());
  // Both kernels of a convolution that can run by Winograd: compile time
  // runs the faster (compiler/model/choose_winograd.h).
  auto plans = model::tuning_plans(*graph);
  if (!plans.is_ok()) return Status(plans.status().code(), path + ": " + plans.status().to_string());
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

// The options as the tuner reads them: every value of each, in order.
tuner::OptionValues option_values(const Args& args) {
  tuner::OptionValues values;
  for (const OptionSpec& spec : kOptions)
    if (args.has(spec.name)) values[spec.name] = args.get_all(spec.name);
  return values;
}

// The command line recorded with the session. The timing mode decides what
// the costs mean (and the default changed from warm to model): it is always
// on record.
std::string session_command_line(int argc, char** argv, const Args& args) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  if (!args.has("cache")) command_line += " --cache model";
  return command_line;
}

}  // namespace

int run_tune(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) return usage_error(args.status().message());
  const bool has_model = args->positional().size() == 1 && is_onnx_path(args->positional()[0]);
  if (args->has("help") || (args->get_all("op").empty() && !has_model) || args->positional().size() > 1 ||
      (args->positional().size() == 1 && !has_model)) {
    std::fprintf(args->has("help") ? stdout : stderr,
                 "usage: tessera tune --op SPEC [--op SPEC ...] [--target T] [--trials N] [--space sketch|knob]\n"
                 "                    [--strategy S] [--db FILE] [--tracker URL --key KEY]\n"
                 "       tessera tune MODEL.onnx [--input-shape NAME:D,...] [same options]\n\n%s",
                 format_options(kOptions).c_str());
    return args->has("help") ? 0 : 2;
  }

  // Everything a user can get wrong is checked before any work starts.
  auto config = tuner::parse_tune_config(option_values(*args), has_model);
  if (!config.is_ok()) return usage_error(config.status().message());
  config->command_line = session_command_line(argc, argv, *args);
  tuner::ModelKernels model;
  if (has_model) {
    auto kernels = model_kernels(args->positional()[0], args->get_all("input-shape"));
    if (!kernels.is_ok()) {
      std::fprintf(stderr, "tessera tune: %s\n", kernels.status().message().c_str());
      return 1;
    }
    model = std::move(*kernels);
  }
  auto job = tuner::TuneJob::open(std::move(*config), std::move(model), stdout);
  if (!job.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", job.status().message().c_str());
    return 1;
  }
  // Installed after the runner's own handler: the first Ctrl-C lets the
  // current batch finish and be stored; a second one exits at once.
  std::signal(SIGINT, on_sigint);
  tuner::Progress progress(stdout, isatty(STDOUT_FILENO));
  auto summary = (*job)->run(&progress, &g_stop);
  if (!summary.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", summary.status().message().c_str());
    return 1;
  }
  if (summary->stopped) std::printf("stopped by Ctrl-C; every measurement so far is in %s\n",
                                     (*job)->config().db_path.c_str());
  std::printf("\n%s", tuner::format_summary(summary->tasks).c_str());
  return 0;
}

}  // namespace tessera::cli
