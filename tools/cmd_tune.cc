// `tessera tune`: search schedules of one or more operators on a target,
// measuring on local workers (the default) or on a farm, and keep every
// measurement in the records database.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <set>

#include "base/version.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/model/compile_model.h"
#include "compiler/ops/op_spec.h"
#include "costmodel/xgb_model.h"
#include "records/store.h"
#include "rpc/keys.h"
#include "rpc/runner.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/model_input.h"
#include "compiler/space/generic_schedule.h"
#include "compiler/space/templates.h"
#include "runtime/time_evaluator.h"
#include "tuner/knob_policy.h"
#include "tuner/sketch_policy.h"
#include "tuner/tuner.h"

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

}  // namespace

int run_tune(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) return usage_error(args.status().message());
  const bool has_model = args.is_ok() && args->positional().size() == 1 && is_onnx_path(args->positional()[0]);
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
  // A model's kernels default to `auto`: each conv, dense or pool in its
  // template's knob space (every point a sensible schedule, so a small budget
  // pays), every other kernel in the sketch space.
  std::string space = args->get("space", has_model ? "auto" : "sketch");
  if (space != "sketch" && space != "knob" && space != "auto")
    return usage_error("unknown --space '" + space + "' (sketch, knob, auto)");
  if (space == "auto" && args->has("strategy"))
    return usage_error("--space auto picks xgb for knob spaces and evolutionary for sketch spaces; give --space "
                       "knob or sketch to choose a strategy");
  std::string strategy = args->get("strategy", space == "sketch" ? "evolutionary" : "xgb");
  if (space == "sketch" && strategy != "evolutionary" && strategy != "random")
    return usage_error("--space sketch takes --strategy evolutionary or random, not '" + strategy + "'");
  if (space == "knob" && strategy != "xgb" && strategy != "random" && strategy != "grid" && strategy != "ga")
    return usage_error("--space knob takes --strategy xgb, random, grid or ga, not '" + strategy + "'");
  auto trials = args->get_int("trials", 64);
  auto batch = args->get_int("batch", 16);
  auto seed = args->get_int("seed", 0);
  auto workers = args->get_int("workers", 1);
  // Model by default: timed warm, the layers whose weights outgrow the L2
  // cache looked up to 40% faster than they run in their model, and the
  // search preferred the schedules that suffer most from streaming weights.
  // Cold (everything swept, one call per repeat) made no faster ResNet-18
  // than warm (13.97 ms against 13.8-13.9 after 1,000 trials).
  const std::string cache = args->get("cache", "model");
  if (cache != "model" && cache != "warm" && cache != "cold")
    return usage_error("--cache must be model, warm or cold, not '" + cache + "'");
  const bool cold = cache == "cold";
  if (cold && args->has("min-repeat-ms")) return usage_error("--min-repeat-ms is for --cache model or warm (cold times single calls)");
  auto repeat = args->get_int("repeat", cold ? 8 : 3);
  auto min_repeat_ms = args->get_double("min-repeat-ms", 50);
  auto time_budget = args->get_double("time-budget", 0);
  auto early = args->get_int("early-stopping", 0);
  for (const Status* st : {&trials.status(), &batch.status(), &seed.status(), &workers.status(), &repeat.status(),
                           &min_repeat_ms.status(), &time_budget.status(), &early.status()})
    if (!st->is_ok()) return usage_error(st->message());
  if (*trials <= 0) return usage_error("--trials must be positive");
  if (*batch <= 0) return usage_error("--batch must be positive");
  if (*workers <= 0) return usage_error("--workers must be positive");
  if (*repeat <= 0) return usage_error("--repeat must be positive");
  if (*time_budget < 0) return usage_error("--time-budget must not be negative");
  std::string scheduler = args->get("scheduler", "gradient");
  if (scheduler != "gradient" && scheduler != "round-robin")
    return usage_error("unknown --scheduler '" + scheduler + "' (gradient, round-robin)");
  Target target = host_target();
  if (args->has("target")) {
    auto t = parse_target(args->get("target"));
    if (!t.is_ok()) return usage_error(t.status().message());
    target = *t;
  }
  auto threads = args->get_int("threads", target.num_cores);
  if (!threads.is_ok() || *threads <= 0) return usage_error("--threads must be a positive integer");

  // The tasks: the operators given, or every distinct kernel of the model
  // (exactly the DAGs `tessera compile` will look up).
  std::vector<tuner::Task> tasks;
  std::vector<std::string> op_names;  // per task: the knob template's operator, "" for none
  int64_t model_constant_bytes = 0;
  for (const std::string& spec : args->get_all("op")) {
    auto op = ops::parse_op_spec(spec);
    if (!op.is_ok()) return usage_error(op.status().message());
    tuner::Task task;
    task.name = op->spec;
    task.dag = op->dag;
    tasks.push_back(std::move(task));
    op_names.push_back(op->op);
  }
  if (has_model) {
    auto graph = import_model(args->positional()[0], args->get_all("input-shape"));
    if (!graph.is_ok()) {
      std::fprintf(stderr, "tessera tune: %s\n", graph.status().to_string().c_str());
      return 1;
    }
    // Both kernels of a convolution that can run by Winograd: compile time
    // runs the faster (compiler/model/choose_winograd.h).
    auto plans = model::tuning_plans(*graph);
    if (!plans.is_ok()) {
      std::fprintf(stderr, "tessera tune: %s: %s\n", args->positional()[0].c_str(), plans.status().to_string().c_str());
      return 1;
    }
    std::set<std::string> keys;
    for (const model::ModelPlan& plan : *plans) {
      model_constant_bytes = std::max(model_constant_bytes, plan.constant_bytes);
      for (size_t i = 0; i < plan.tasks.size(); ++i) {
        if (!keys.insert(plan.tasks[i].dag->workload_key()).second) continue;
        tuner::Task task;
        task.name = plan.task_labels[i];
        task.dag = plan.tasks[i].dag;
        task.weight = plan.tasks[i].weight;
        task.constant_args = plan.task_constant_args[i];
        tasks.push_back(std::move(task));
        op_names.push_back(plan.task_ops[i]);
      }
    }
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    tasks[i].target = target;
    tasks[i].group = op_names[i];
    tasks[i].device_key = args->get("key", "local");
    // The fallback (the template's, else the generic schedule) is what
    // compile time uses without records: it is measured first, so that
    // tuning never leaves a kernel slower than that.
    if (const KnobTemplate* t = find_template(op_names[i])) {
      auto knobs = t->define(*tasks[i].dag, target);
      auto config = knobs.is_ok() ? t->fallback(*knobs, *tasks[i].dag, target) : Result<KnobConfig>(knobs.status());
      auto fallback = config.is_ok() ? apply_template(*t, tasks[i].dag, *config, target) : Result<State>(config.status());
      if (fallback.is_ok()) {
        tasks[i].baseline = fallback->steps();
        if (space != "sketch") tasks[i].baseline_knob_config = config->to_json();
      }
    }
    if (tasks[i].baseline.empty()) {
      if (auto generic = generic_schedule(tasks[i].dag, target); generic.is_ok()) tasks[i].baseline = generic->steps();
    }
  }

  std::string db_path = args->get("db", "tessera.db");
  auto store = records::Store::open(db_path);
  if (!store.is_ok()) {
    std::fprintf(stderr, "tessera tune: cannot open the records database %s: %s\n", db_path.c_str(),
                 store.status().to_string().c_str());
    return 1;
  }

  std::vector<std::unique_ptr<tuner::SearchPolicy>> policies;
  auto new_model = [&]() -> std::unique_ptr<costmodel::CostModel> {
    costmodel::XGBOptions xo;
    xo.seed = static_cast<uint64_t>(*seed);
    return std::make_unique<costmodel::XGBModel>(xo);
  };
  // A model's kernels that a space cannot express are left to their fallback
  // (reported); an operator given with --op must be tunable.
  std::vector<tuner::Task> tunable;
  auto skip = [&](size_t i, const std::string& why) {
    std::printf("not tuned: %s: %s\n", tasks[i].name.c_str(), why.c_str());
  };
  for (size_t i = 0; i < tasks.size(); ++i) {
    const uint64_t task_seed = static_cast<uint64_t>(*seed) + i;
    const bool from_model = i >= args->get_all("op").size();
    const KnobTemplate* tmpl = find_template(op_names[i]);
    const bool knob = space == "knob" || (space == "auto" && tmpl && tmpl->define(*tasks[i].dag, target).is_ok());
    const std::string task_strategy = space != "auto" ? strategy : knob ? "xgb" : "evolutionary";
    if (knob) {
      const std::string& op_name = op_names[i];
      if (!tmpl && from_model) {
        skip(i, "no knob template (the sketch space tunes it)");
        continue;
      }
      if (!tmpl) return usage_error("no knob template for '" + op_name + "'; use --space sketch");
      auto knobs = tmpl->define(*tasks[i].dag, target);
      if (!knobs.is_ok() && from_model) {
        skip(i, knobs.status().message());
        continue;
      }
      if (!knobs.is_ok()) {
        std::fprintf(stderr, "tessera tune: %s: %s\n", tasks[i].name.c_str(), knobs.status().to_string().c_str());
        return 1;
      }
      tuner::KnobStrategy ks = task_strategy == "xgb"      ? tuner::KnobStrategy::kXgb
                               : task_strategy == "grid"   ? tuner::KnobStrategy::kGrid
                               : task_strategy == "ga"     ? tuner::KnobStrategy::kGa
                                                           : tuner::KnobStrategy::kRandom;
      policies.push_back(std::make_unique<tuner::KnobPolicy>(*tmpl, tasks[i].dag, target, std::move(*knobs), ks,
                                                             ks == tuner::KnobStrategy::kXgb ? new_model() : nullptr,
                                                             task_seed));
      tunable.push_back(tasks[i]);
      continue;
    }
    auto sketch = SketchSpace::make(tasks[i].dag, target);
    if (!sketch.is_ok() && from_model) {
      skip(i, sketch.status().message());
      continue;
    }
    if (!sketch.is_ok()) {
      std::fprintf(stderr, "tessera tune: %s: %s\n", tasks[i].name.c_str(), sketch.status().to_string().c_str());
      return 1;
    }
    tasks[i].baseline_knob_config.clear();
    policies.push_back(std::make_unique<tuner::SketchPolicy>(std::move(*sketch),
                                                             task_strategy == "evolutionary" ? new_model() : nullptr,
                                                             tuner::EvolutionOptions{}, task_seed));
    tunable.push_back(tasks[i]);
  }
  tasks = std::move(tunable);
  if (tasks.empty()) {
    std::fprintf(stderr, "tessera tune: nothing to tune\n");
    return 1;
  }

  // The runner: local workers over ipc (the same code path as a farm), or a tracker.
  std::unique_ptr<rpc::Runner> runner;
  if (args->has("tracker")) {
    rpc::RpcRunnerOptions ro;
    ro.tracker = args->get("tracker");
    ro.device_key = args->get("key", "");
    if (ro.device_key.empty()) return usage_error("--tracker needs --key, the device key of the workers");
    ro.security.insecure = args->has("insecure");
    if (!ro.security.insecure) {
      if (!args->has("keyfile") || !args->has("tracker-key"))
        return usage_error("--tracker needs --keyfile and --tracker-key (CURVE), or --insecure on ipc/loopback");
      auto keys = rpc::load_keypair(args->get("keyfile"));
      auto server = rpc::load_public_key(args->get("tracker-key"));
      if (!keys.is_ok() || !server.is_ok())
        return usage_error((!keys.is_ok() ? keys.status() : server.status()).to_string());
      ro.security.own = *keys;
      ro.security.server_public_z85 = *server;
    } else if (auto st = rpc::check_insecure_endpoint(ro.tracker); !st.is_ok()) {
      return usage_error(st.message());
    }
    auto r = rpc::RpcRunner::connect(ro);
    if (!r.is_ok()) {
      std::fprintf(stderr, "tessera tune: %s\n", r.status().to_string().c_str());
      return 1;
    }
    runner = std::move(*r);
  } else {
    rpc::LocalRunnerOptions lo;
    lo.num_workers = static_cast<int>(*workers);
    lo.threads_per_worker = static_cast<int>(*threads);
    auto r = rpc::LocalRunner::start(lo);
    if (!r.is_ok()) {
      std::fprintf(stderr, "tessera tune: cannot start local workers: %s\n", r.status().to_string().c_str());
      return 1;
    }
    runner = std::move(*r);
  }
  // Installed after the runner's own handler: the first Ctrl-C lets the
  // current batch finish and be stored; a second one exits at once.
  std::signal(SIGINT, on_sigint);

  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  // The timing mode decides what the costs mean (and the default changed
  // from warm to model): it is always on record.
  if (!args->has("cache")) command_line += " --cache " + cache;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  records::SessionInfo session;
  session.command_line = command_line;
  session.host = host;
  session.tool_version = kToolVersion;
  session.llvm_version = kLlvmVersion;
  session.seed = *seed;
  auto session_id = store->begin_session(session);
  if (!session_id.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", session_id.status().to_string().c_str());
    return 1;
  }
  for (const auto& task : tasks) {
    records::WorkloadInfo w;
    w.key = task.workload_key();
    w.dag_text = task.dag->canonical_text();
    w.op_name = task.name.substr(0, task.name.find_first_of(": "));
    w.shapes = task.name;
    w.flop_count = task.dag->flop_count();
    if (auto st = store->add_workload(w); !st.is_ok()) {
      std::fprintf(stderr, "tessera tune: %s\n", st.to_string().c_str());
      return 1;
    }
  }

  tuner::BuilderPool builder(target);
  tuner::MeasureOptions mo;
  mo.timing.repeat = static_cast<int>(*repeat);
  mo.timing.min_repeat_ms = cold ? 0 : *min_repeat_ms;
  mo.timing.flush_cache = cold;  // with number 1: every timed call starts cold
  // A model whose weights fit in a core's own caches keeps them there from
  // one run to the next (the PP-OCR classifier's 0.55 MB): timed cold, its
  // kernels would be tuned for a memory system they never meet.
  const int64_t private_cache = runtime::private_cache_bytes();
  mo.cold_constants = cache == "model" && model_constant_bytes > private_cache;
  if (cache == "model" && model_constant_bytes > 0)
    std::printf("weights timed %s: the model's %.1f MB of constants %s the %.1f MB of a core's own caches\n",
                mo.cold_constants ? "cold" : "warm", static_cast<double>(model_constant_bytes) / 1e6,
                mo.cold_constants ? "outgrow" : "fit in", static_cast<double>(private_cache) / 1e6);
  mo.check_correctness = args->has("check");
  mo.session_id = *session_id;
  tuner::Measurer measurer(builder, *runner, mo);
  tuner::TuneOptions to;
  to.trials = *trials;
  to.batch_size = static_cast<int>(*batch);
  to.time_budget_s = *time_budget;
  to.early_stopping = *early;
  to.seed = static_cast<uint64_t>(*seed);
  to.scheduler = scheduler == "gradient" ? tuner::SchedulerKind::kGradient : tuner::SchedulerKind::kRoundRobin;
  tuner::Tuner tuner(tasks, std::move(policies), measurer, &*store, to);
  auto resumed = tuner.resume();
  if (!resumed.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", resumed.status().to_string().c_str());
    return 1;
  }
  const std::string search = space == "auto" ? "knob spaces (xgb) where a template fits, sketch spaces (evolutionary) elsewhere"
                                             : space + " space, " + strategy + " search";
  std::printf("tuning %zu task(s) on %s, %lld trials, %s; %lld earlier records%s\n", tasks.size(),
              target.triple.c_str(), static_cast<long long>(*trials), search.c_str(),
              static_cast<long long>(*resumed), *resumed ? " (not measured again)" : "");
  tuner::Progress progress(stdout, isatty(STDOUT_FILENO));
  auto summaries = tuner.run(&progress, &g_stop);
  (void)store->end_session(*session_id);
  if (!summaries.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", summaries.status().to_string().c_str());
    return 1;
  }
  if (g_stop) std::printf("stopped by Ctrl-C; every measurement so far is in %s\n", db_path.c_str());
  std::printf("\n%s", tuner::format_summary(*summaries).c_str());
  return 0;
}

}  // namespace tessera::cli
