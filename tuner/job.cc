#include "tuner/job.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <string>

#include "base/duration.h"
#include "base/version.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/space/choose/apply_best.h"
#include "compiler/space/choose/generic_schedule.h"
#include "compiler/space/knob/templates.h"
#include "compiler/space/sketch/sketch_space.h"
#include "costmodel/xgb_model.h"
#include "rpc/keys.h"
#include "rpc/wire.h"
#include "runtime/time_evaluator.h"
#include "tuner/machine_load.h"
#include "tuner/measure/measurer.h"
#include "tuner/prior_records.h"

namespace tessera::tuner {
namespace {

Status usage(const std::string& message) {
  return Status(ErrorCode::kInvalidArgument, message);
}

// A user-facing line for a failure of `cause` ("what: message"); the code
// stays the status's, not in its words (messages carry no status names).
Status failure(const Status& cause, const std::string& what = "") {
  return Status(cause.code(), what.empty() ? cause.message() : what + ": " + cause.message());
}

// Reads OptionValues as the command line's parser does: the last value of
// an option counts, numbers must parse whole.
class OptionReader {
 public:
  explicit OptionReader(const OptionValues& values) : values_(values) {}

  bool has(const std::string& name) const { return values_.count(name) > 0 && !values_.at(name).empty(); }
  std::string get(const std::string& name, const std::string& fallback = "") const {
    return has(name) ? values_.at(name).back() : fallback;
  }
  std::vector<std::string> all(const std::string& name) const {
    return values_.count(name) ? values_.at(name) : std::vector<std::string>{};
  }
  Result<long long> get_int(const std::string& name, long long fallback) const {
    if (!has(name)) return fallback;
    const std::string text = get(name);
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0') return usage("option --" + name + " expects an integer, got '" + text + "'");
    return v;
  }
  Result<double> get_double(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    const std::string text = get(name);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') return usage("option --" + name + " expects a number, got '" + text + "'");
    return v;
  }

 private:
  const OptionValues& values_;
};

// --space and --strategy.
Status parse_search(const OptionReader& o, bool with_model, TuneConfig* c) {
  // A model's kernels default to `auto`: each conv, dense or pool in its
  // template's knob space (every point a sensible schedule, so a small
  // budget pays), every other kernel in the sketch space.
  const std::string space = o.get("space", with_model ? "auto" : "sketch");
  if (space == "sketch") {
    c->space = SpaceChoice::kSketch;
  } else if (space == "knob") {
    c->space = SpaceChoice::kKnob;
  } else if (space == "auto") {
    c->space = SpaceChoice::kAuto;
  } else {
    return usage("unknown --space '" + space + "' (sketch, knob, auto)");
  }
  if (c->space == SpaceChoice::kAuto && o.has("strategy"))
    return usage(
        "--space auto picks xgb for knob spaces and evolutionary for sketch spaces; give --space "
        "knob or sketch to choose a strategy");
  const std::string strategy = o.get("strategy", space == "sketch" ? "evolutionary" : "xgb");
  if (c->space == SpaceChoice::kSketch) {
    if (strategy != "evolutionary" && strategy != "random")
      return usage("--space sketch takes --strategy evolutionary or random, not '" + strategy + "'");
    c->sketch_guided = strategy == "evolutionary";
  } else if (c->space == SpaceChoice::kKnob) {
    Result<KnobStrategy> knob = parse_knob_strategy(strategy);
    if (!knob.is_ok()) return usage("--space knob takes --strategy xgb, random, grid or ga, not '" + strategy + "'");
    c->knob_strategy = *knob;
  }
  return Status::ok();
}

// `value` as an int for option `name`, which must be positive.
Status positive_int(long long value, const char* name, int* out) {
  if (value <= 0) return usage(std::string("--") + name + " must be positive");
  if (value > INT_MAX) return usage(std::string("--") + name + " must be at most " + std::to_string(INT_MAX));
  *out = static_cast<int>(value);
  return Status::ok();
}

// The budget, the timing and the scheduler.
Status parse_budget(const OptionReader& o, TuneConfig* c) {
  auto trials = o.get_int("trials", 64);
  auto batch = o.get_int("batch", 16);
  auto seed = o.get_int("seed", 0);
  auto workers = o.get_int("workers", 1);
  // Model by default: timed warm, the layers whose weights outgrow the L2
  // cache looked up to 40% faster than they run in their model, and the
  // search preferred the schedules that suffer most from streaming weights.
  // Cold (everything swept, one call per repeat) made no faster ResNet-18
  // than warm (13.97 ms against 13.8-13.9 after 1,000 trials).
  const std::string cache = o.get("cache", "model");
  if (cache != "model" && cache != "warm" && cache != "cold")
    return usage("--cache must be model, warm or cold, not '" + cache + "'");
  c->cache = cache == "model" ? CacheMode::kModel : cache == "warm" ? CacheMode::kWarm : CacheMode::kCold;
  const bool cold = c->cache == CacheMode::kCold;
  if (cold && o.has("min-repeat-ms"))
    return usage("--min-repeat-ms is for --cache model or warm (cold times single calls)");
  auto repeat = o.get_int("repeat", cold ? 8 : 3);
  auto min_repeat_ms = o.get_double("min-repeat-ms", 50);
  auto time_budget = o.get_double("time-budget", 0);
  // --time takes a unit (2m, 90s, 1h); --time-budget, seconds.
  if (o.has("time")) {
    if (o.has("time-budget")) return usage("give --time or --time-budget, not both");
    time_budget = parse_duration(o.get("time", ""));
    if (!time_budget.is_ok()) return usage("--time: " + time_budget.status().message());
    if (*time_budget <= 0) return usage("--time must be positive");
  }
  auto timeout = o.get_double("timeout", c->timeout_ms / 1000.0);
  auto early = o.get_int("early-stopping", 0);
  auto worker_wait = o.get_double("worker-wait", c->worker_wait_s);
  for (const Status* st :
       {&trials.status(), &batch.status(), &seed.status(), &workers.status(), &repeat.status(), &min_repeat_ms.status(),
        &time_budget.status(), &early.status(), &timeout.status(), &worker_wait.status()})
    if (!st->is_ok()) return *st;
  if (*trials <= 0) return usage("--trials must be positive");
  TESSERA_RETURN_IF_ERROR(positive_int(*batch, "batch", &c->batch));
  TESSERA_RETURN_IF_ERROR(positive_int(*workers, "workers", &c->workers));
  TESSERA_RETURN_IF_ERROR(positive_int(*repeat, "repeat", &c->repeat));
  if (*time_budget < 0) return usage("--time-budget must not be negative");
  if (*min_repeat_ms < 0) return usage("--min-repeat-ms must not be negative");
  if (*early < 0) return usage("--early-stopping must not be negative");
  // A measurement's limit: a worker kills a kernel that runs past it.
  if (!(*timeout >= 0.001 && *timeout <= 3600)) return usage("--timeout must be 0.001-3600 seconds");
  c->timeout_ms = static_cast<int>(*timeout * 1000 + 0.5);
  if (!(*worker_wait >= 0 && *worker_wait <= 86400)) return usage("--worker-wait must be 0-86400 seconds");
  c->worker_wait_s = *worker_wait;
  const std::string scheduler = o.get("scheduler", "gradient");
  if (scheduler != "gradient" && scheduler != "round-robin")
    return usage("unknown --scheduler '" + scheduler + "' (gradient, round-robin)");
  c->trials = *trials;
  c->seed = static_cast<uint64_t>(*seed);
  c->min_repeat_ms = *min_repeat_ms;
  c->time_budget_s = *time_budget;
  c->early_stopping = *early;
  c->scheduler = scheduler == "gradient" ? SchedulerKind::kGradient : SchedulerKind::kRoundRobin;
  return Status::ok();
}

// The target, the threads per measurement and the operators.
Status parse_target_and_ops(const OptionReader& o, TuneConfig* c) {
  if (o.has("target")) {
    Result<Target> target = parse_target(o.get("target"));
    if (!target.is_ok()) return usage(target.status().message());
    c->target = *target;
  }
  auto threads = o.get_int("threads", c->target.num_cores);
  if (!threads.is_ok() || *threads <= 0 || *threads > INT_MAX) return usage("--threads must be a positive integer");
  c->threads = static_cast<int>(*threads);
  for (const std::string& spec : o.all("op")) {
    Result<ops::OpInstance> op = ops::parse_op_spec(spec);
    if (!op.is_ok()) return usage(op.status().message());
    if (c->space == SpaceChoice::kKnob && !find_template(op->op))
      return usage("no knob template for '" + op->op + "'; use --space sketch");
    c->ops.push_back(std::move(*op));
  }
  return Status::ok();
}

// --tracker and its credentials; without it, local workers.
Status parse_runner(const OptionReader& o, TuneConfig* c) {
  c->device_key = o.get("key", "local");
  if (!o.has("tracker")) return Status::ok();
  rpc::RpcRunnerOptions ro;
  ro.tracker = o.get("tracker");
  ro.device_key = o.get("key", "");
  if (ro.device_key.empty()) return usage("--tracker needs --key, the device key of the workers");
  ro.security.insecure = o.has("insecure");
  if (ro.security.insecure) rpc::warn_insecure("tessera tune", ro.tracker);
  if (!ro.security.insecure) {
    if (!o.has("keyfile") || !o.has("tracker-key"))
      return usage("--tracker needs --keyfile and --tracker-key (CURVE), or --insecure on ipc/loopback");
    auto keys = rpc::load_keypair(o.get("keyfile"));
    auto server = rpc::load_public_key(o.get("tracker-key"));
    if (!keys.is_ok() || !server.is_ok()) return usage((!keys.is_ok() ? keys.status() : server.status()).message());
    ro.security.own = *keys;
    ro.security.server_public_z85 = *server;
  } else if (Status st = rpc::check_insecure_endpoint(ro.tracker); !st.is_ok()) {
    return usage(st.message());
  }
  c->tracker = std::move(ro);
  return Status::ok();
}

// A task before its space is chosen: where it came from and its template's operator.
struct PlannedTask {
  Task task;
  std::string op;                                // the knob template's operator, "" for none
  bool from_model = false;                       // a model's kernel (skipped when no space expresses it)
  std::vector<costmodel::TrainingRecord> prior;  // its workload on other targets (--prior-db)
};

}  // namespace

// The schedule compile takes without records (choose_schedule with no
// source: the template's fallback, else the generic schedule), so that the
// untuned figure tune reports is an untuned compile's, and tuning never
// leaves a kernel slower than that.
void set_untuned_baseline(const Target& target, const std::string& op, bool knob_space, Task* task) {
  auto choice = choose_schedule(task->dag, op, target, nullptr);
  if (!choice.is_ok() || choice->source == ScheduleChoice::Source::kDefault) return;
  task->baseline = choice->state.steps();
  const KnobTemplate* t = find_template(op);
  if (!knob_space || !t || choice->source != ScheduleChoice::Source::kTemplateFallback) return;
  // The fallback's configuration, so that the knob policy learns from it.
  auto knobs = t->define(*task->dag, target);
  auto config = knobs.is_ok() ? t->fallback(*knobs, *task->dag, target) : Result<KnobConfig>(knobs.status());
  if (config.is_ok()) task->baseline_knob_config = config->to_json();
}

namespace {

// The operators given, then every distinct kernel of the model (exactly the
// DAGs `tessera compile` will look up), with their baselines.
std::vector<PlannedTask> plan_tasks(const TuneConfig& c, const ModelKernels& model) {
  std::vector<PlannedTask> planned;
  for (const ops::OpInstance& op : c.ops) {
    PlannedTask p;
    p.task.name = op.spec;
    p.task.dag = op.dag;
    p.op = op.op;
    planned.push_back(std::move(p));
  }
  for (const ModelKernel& k : model.kernels) {
    PlannedTask p;
    p.task.name = k.label;
    p.task.dag = k.dag;
    p.task.weight = k.weight;
    p.task.constant_args = k.constant_args;
    p.op = k.op;
    p.from_model = true;
    planned.push_back(std::move(p));
  }
  for (PlannedTask& p : planned) {
    p.task.target = c.target;
    p.task.group = p.op;
    p.task.device_key = c.device_key;
    if (c.measure_baselines) set_untuned_baseline(c.target, p.op, c.space != SpaceChoice::kSketch, &p.task);
  }
  return planned;
}

Result<std::unique_ptr<costmodel::CostModel>> new_cost_model(const TuneConfig& c, const PlannedTask& p) {
  costmodel::XGBOptions xo;
  xo.seed = c.seed;
  xo.keep_pretrain_data = c.keep_pretrain_data;
  auto model = std::make_unique<costmodel::XGBModel>(xo);
  std::vector<costmodel::TrainingRecord> pretrain = c.pretrain;
  pretrain.insert(pretrain.end(), p.prior.begin(), p.prior.end());
  if (!pretrain.empty()) TESSERA_RETURN_IF_ERROR(model->pretrain(pretrain));
  return std::unique_ptr<costmodel::CostModel>(std::move(model));
}

// A task's policy, or why no space expresses it (`skip`: a model's kernel
// left to its fallback, not an error).
struct PolicyChoice {
  std::unique_ptr<SearchPolicy> policy;
  std::string skip;
};

Result<PolicyChoice> knob_policy_for(const TuneConfig& c, const PlannedTask& p, const KnobTemplate* tmpl,
                                     KnobStrategy strategy, uint64_t seed) {
  if (!tmpl && p.from_model) return PolicyChoice{nullptr, "no knob template (the sketch space tunes it)"};
  if (!tmpl) return usage("no knob template for '" + p.op + "'; use --space sketch");
  Result<KnobSpace> knobs = tmpl->define(*p.task.dag, c.target);
  if (!knobs.is_ok() && p.from_model) return PolicyChoice{nullptr, knobs.status().message()};
  if (!knobs.is_ok()) return failure(knobs.status(), p.task.name);
  std::unique_ptr<costmodel::CostModel> model;
  if (strategy == KnobStrategy::kXgb) {
    TESSERA_ASSIGN_OR_RETURN(model, new_cost_model(c, p));
  }
  return PolicyChoice{
      std::make_unique<KnobPolicy>(*tmpl, p.task.dag, c.target, std::move(*knobs), strategy, std::move(model), seed),
      ""};
}

Result<PolicyChoice> sketch_policy_for(const TuneConfig& c, const PlannedTask& p, bool guided, uint64_t seed) {
  Result<SketchSpace> sketch = SketchSpace::make(p.task.dag, c.target);
  if (!sketch.is_ok() && p.from_model) return PolicyChoice{nullptr, sketch.status().message()};
  if (!sketch.is_ok()) return failure(sketch.status(), p.task.name);
  std::unique_ptr<costmodel::CostModel> model;
  if (guided) {
    TESSERA_ASSIGN_OR_RETURN(model, new_cost_model(c, p));
  }
  return PolicyChoice{std::make_unique<SketchPolicy>(std::move(*sketch), std::move(model), c.evolution, seed), ""};
}

// The tunable tasks with their policies; the others are reported to `log`.
struct Tunable {
  std::vector<Task> tasks;
  std::vector<std::unique_ptr<SearchPolicy>> policies;
};

Result<Tunable> make_policies(const TuneConfig& c, std::vector<PlannedTask> planned, FILE* log) {
  Tunable out;
  for (size_t i = 0; i < planned.size(); ++i) {
    PlannedTask& p = planned[i];
    const uint64_t seed = c.seed + i;
    const KnobTemplate* tmpl = find_template(p.op);
    const bool knob = c.space == SpaceChoice::kKnob ||
                      (c.space == SpaceChoice::kAuto && tmpl && tmpl->define(*p.task.dag, c.target).is_ok());
    Result<PolicyChoice> choice =
        knob ? knob_policy_for(c, p, tmpl, c.space == SpaceChoice::kAuto ? KnobStrategy::kXgb : c.knob_strategy, seed)
             : sketch_policy_for(c, p, c.space == SpaceChoice::kAuto || c.sketch_guided, seed);
    if (!choice.is_ok()) return choice.status();
    if (!choice->policy) {
      if (log) std::fprintf(log, "not tuned: %s: %s\n", p.task.name.c_str(), choice->skip.c_str());
      continue;
    }
    if (!knob) p.task.baseline_knob_config.clear();
    out.tasks.push_back(std::move(p.task));
    out.policies.push_back(std::move(choice->policy));
  }
  if (out.tasks.empty()) return usage("nothing to tune");
  return out;
}

// Local workers over ipc (the same code path as a farm), or the farm's tracker.
Result<std::unique_ptr<rpc::Runner>> start_runner(const TuneConfig& c) {
  if (c.tracker) {
    auto runner = rpc::RpcRunner::connect(*c.tracker);
    if (!runner.is_ok()) return failure(runner.status());
    // Before anything is measured: a tracker that does not answer, or no
    // worker of the key, would otherwise burn the budget as failed records.
    if (Status st = (*runner)->check_workers(); !st.is_ok()) return failure(st, "cannot measure on the farm");
    return std::unique_ptr<rpc::Runner>(std::move(*runner));
  }
  rpc::LocalRunnerOptions lo;
  lo.num_workers = c.workers;
  lo.worker_binary = c.worker_binary;
  lo.threads_per_worker = c.threads;
  auto runner = rpc::LocalRunner::start(lo);
  if (!runner.is_ok()) return failure(runner.status(), "cannot start local workers");
  return std::unique_ptr<rpc::Runner>(std::move(*runner));
}

// Local workers measure on this machine: other work running on it slows the
// candidates by its share of the cores and the search picks among noise (a
// detector tuned beside a build ran 41 ms, tuned on the idle machine 26.5).
void warn_if_busy(std::FILE* log, int cores) {
  const int others = other_runnable_threads();
  if (others < 1) return;
  std::fprintf(log,
               "warning: %d other thread%s running on this machine (%d core%s): local measurements will be "
               "noisy and may pick slower kernels; tune on an idle machine, or on a farm (--tracker)\n",
               others, others == 1 ? " is" : "s are", cores, cores == 1 ? "" : "s");
}

// "64x16 16x32 -> 64x32 float32": the kernel's argument shapes, the inputs
// then the outputs, and the outputs' type (what a records table shows).
std::string shapes_of(const ComputeDAG& dag) {
  std::string in, out, dtype;
  for (const Tensor& t : dag.args()) {
    std::string shape;
    for (size_t i = 0; i < t->shape.size(); ++i) shape += (i ? "x" : "") + std::to_string(t->shape[i]);
    if (t->shape.empty()) shape = "scalar";
    std::string& side = dag.is_output(t) ? out : in;
    side += (side.empty() ? "" : " ") + shape;
    if (dag.is_output(t)) dtype = t->dtype.to_string();
  }
  return in + " -> " + out + " " + dtype;
}

// The command line recorded with the session. The timing mode decides what
// the costs mean (and the default changed from warm to model): a line that
// does not name it gets it appended.
std::string recorded_command_line(const TuneConfig& c) {
  if (c.command_line.empty()) return c.command_line;
  std::istringstream words(c.command_line);
  for (std::string w; words >> w;)
    if (w.rfind("--cache", 0) == 0) return c.command_line;
  const char* mode = c.cache == CacheMode::kModel ? "model" : c.cache == CacheMode::kWarm ? "warm" : "cold";
  return c.command_line + " --cache " + mode;
}

// Begins the session (its provenance) and registers the tasks' workloads.
Result<int64_t> begin_session(records::Store& store, const TuneConfig& c, const std::vector<Task>& tasks) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  records::SessionInfo session;
  session.command_line = recorded_command_line(c);
  session.host = host;
  session.tool_version = kToolVersion;
  session.llvm_version = kLlvmVersion;
  session.seed = static_cast<int64_t>(c.seed);
  auto id = store.begin_session(session);
  if (!id.is_ok()) return failure(id.status());
  for (const Task& task : tasks) {
    records::WorkloadInfo w;
    w.key = task.workload_key();
    w.dag_text = task.dag->canonical_text();
    w.op_name = task.name.substr(0, task.name.find_first_of(": "));
    w.shapes = shapes_of(*task.dag);
    w.flop_count = task.dag->flop_count();
    if (Status st = store.add_workload(w); !st.is_ok()) return failure(st);
  }
  return *id;
}

MeasureOptions measure_options(const TuneConfig& c, int64_t model_constant_bytes, int64_t session_id, FILE* log) {
  const bool cold = c.cache == CacheMode::kCold;
  MeasureOptions mo;
  mo.timing.number = c.number;
  mo.timing.repeat = c.repeat;
  mo.timing.min_repeat_ms = cold ? 0 : c.min_repeat_ms;
  mo.timing.flush_cache = cold;  // with number 1: every timed call starts cold
  // A model whose weights fit in a core's own caches keeps them there from
  // one run to the next (the PP-OCR classifier's 0.55 MB): timed cold, its
  // kernels would be tuned for a memory system they never meet.
  const int64_t private_cache = runtime::private_cache_bytes();
  mo.cold_constants = c.cache == CacheMode::kModel && model_constant_bytes > private_cache;
  if (log && c.cache == CacheMode::kModel && model_constant_bytes > 0)
    std::fprintf(log, "weights timed %s: the model's %.1f MB of constants %s the %.1f MB of a core's own caches\n",
                 mo.cold_constants ? "cold" : "warm", static_cast<double>(model_constant_bytes) / 1e6,
                 mo.cold_constants ? "outgrow" : "fit in", static_cast<double>(private_cache) / 1e6);
  mo.check_correctness = c.check;
  mo.timeout_ms = c.timeout_ms;
  mo.session_id = session_id;
  return mo;
}

// Each task's workload as measured on other targets, from --prior-db.
Status read_prior(const TuneConfig& c, std::vector<PlannedTask>* planned, FILE* log) {
  std::vector<std::shared_ptr<const ComputeDAG>> dags;
  for (const PlannedTask& p : *planned) dags.push_back(p.task.dag);
  auto prior = read_prior_records(c.prior_db, dags, c.target.to_string());
  if (!prior.is_ok()) return failure(prior.status());
  if (log) std::fprintf(log, "%s\n", describe_prior(*prior, planned->size(), c.prior_db).c_str());
  for (size_t i = 0; i < planned->size(); ++i) (*planned)[i].prior = std::move(prior->per_task[i]);
  return Status::ok();
}

}  // namespace

Result<TuneConfig> parse_tune_config(const OptionValues& options, bool with_model) {
  const OptionReader o(options);
  TuneConfig c;
  TESSERA_RETURN_IF_ERROR(parse_search(o, with_model, &c));
  TESSERA_RETURN_IF_ERROR(parse_budget(o, &c));
  TESSERA_RETURN_IF_ERROR(parse_target_and_ops(o, &c));
  TESSERA_RETURN_IF_ERROR(parse_runner(o, &c));
  c.db_path = o.get("db", "tessera.db");
  c.prior_db = o.get("prior-db", "");
  if (o.has("prior-db") && c.prior_db.empty())
    return Status(ErrorCode::kInvalidArgument, "--prior-db needs the path of a records database");
  if (o.has("check") && o.has("no-check"))
    return Status(ErrorCode::kInvalidArgument,
                  "--check and --no-check contradict each other (checking is the default)");
  c.check = !o.has("no-check");
  return c;
}

std::string describe_search(const TuneConfig& c) {
  switch (c.space) {
    case SpaceChoice::kAuto: return "knob spaces (xgb) where a template fits, sketch spaces (evolutionary) elsewhere";
    case SpaceChoice::kKnob: return std::string("knob space, ") + knob_strategy_name(c.knob_strategy) + " search";
    case SpaceChoice::kSketch: break;
  }
  return std::string("sketch space, ") + (c.sketch_guided ? "evolutionary" : "random") + " search";
}

TuneJob::TuneJob(TuneConfig config, FILE* log) : config_(std::move(config)), log_(log) {}

TuneJob::~TuneJob() {
  if (session_open_) (void)store_->end_session(session_id_);
}

Result<std::unique_ptr<TuneJob>> TuneJob::open(TuneConfig config, ModelKernels model, FILE* log) {
  std::unique_ptr<TuneJob> job(new TuneJob(std::move(config), log));
  const TuneConfig& c = job->config_;
  // A farm is asked first: a typo in --tracker or --key is known in seconds,
  // before a model's spaces are made and before the database is touched.
  if (c.tracker) {
    TESSERA_ASSIGN_OR_RETURN(job->runner_, start_runner(c));
  }
  std::vector<PlannedTask> planned = plan_tasks(c, model);
  if (!c.prior_db.empty()) TESSERA_RETURN_IF_ERROR(read_prior(c, &planned, log));
  auto store = records::Store::open(c.db_path);
  if (!store.is_ok()) return failure(store.status(), "cannot open the records database " + c.db_path);
  job->store_ = std::make_unique<records::Store>(std::move(*store));
  TESSERA_ASSIGN_OR_RETURN(Tunable tunable, make_policies(c, std::move(planned), log));
  job->tasks_ = tunable.tasks;
  if (!job->runner_) {
    TESSERA_ASSIGN_OR_RETURN(job->runner_, start_runner(c));
  }
  TESSERA_ASSIGN_OR_RETURN(job->session_id_, begin_session(*job->store_, c, job->tasks_));
  job->session_open_ = true;
  job->builder_ = std::make_unique<BuilderPool>(c.target);
  job->measurer_ = std::make_unique<Measurer>(*job->builder_, *job->runner_,
                                              measure_options(c, model.constant_bytes, job->session_id_, log));
  TuneOptions to;
  to.trials = c.trials;
  to.batch_size = c.batch;
  to.time_budget_s = c.time_budget_s;
  to.early_stopping = c.early_stopping;
  to.seed = c.seed;
  to.scheduler = c.scheduler;
  to.measure_default = c.measure_default;
  to.worker_wait_s = c.worker_wait_s;
  if (log) {
    to.on_wait = [log](const std::string& line) {
      std::fprintf(log, "%s\n", line.c_str());
      std::fflush(log);
    };
  }
  job->tuner_ = std::make_unique<Tuner>(std::move(tunable.tasks), std::move(tunable.policies), *job->measurer_,
                                        job->store_.get(), to);
  return job;
}

Result<JobSummary> TuneJob::run(Progress* progress, const std::atomic<bool>* stop, const std::atomic<bool>* cancel) {
  JobSummary summary;
  auto resumed = tuner_->resume();
  if (!resumed.is_ok()) return failure(resumed.status());
  summary.resumed = *resumed;
  summary.retried = tuner_->pending_retries();
  if (log_) {
    const std::string retried =
        summary.retried ? ", " + std::to_string(summary.retried) + " lost to the infrastructure (measured again)" : "";
    std::fprintf(log_, "tuning %zu task(s) on %s, %lld trials, %s, %s; %lld earlier records%s%s\n", tasks_.size(),
                 config_.target.triple.c_str(), static_cast<long long>(config_.trials),
                 describe_search(config_).c_str(),
                 config_.check ? "outputs checked" : "outputs not checked (--no-check)",
                 static_cast<long long>(*resumed), *resumed ? " (not measured again)" : "", retried.c_str());
    // Each task's first round takes warm_up trials, the largest share of the
    // model's time first: a budget short of every task says so up front. (A
    // resumed run's tuned tasks are warm already: nothing is said then.)
    const int warm_up = warm_up_batch(config_.trials, tasks_.size(), config_.batch);
    const int64_t reached = config_.trials / std::max(warm_up, 1);
    if (*resumed == 0 && tasks_.size() > 1 && reached < static_cast<int64_t>(tasks_.size()))
      std::fprintf(log_,
                   "%lld trials give a first round (%d each) to %lld of the %zu tasks, the largest share of "
                   "the model's time first\n",
                   static_cast<long long>(config_.trials), warm_up, static_cast<long long>(reached), tasks_.size());
    if (!config_.tracker) warn_if_busy(log_, config_.target.num_cores);
    std::fflush(log_);
  }
  runner_->set_cancel(cancel);
  auto tasks = tuner_->run(progress, stop);
  runner_->set_cancel(nullptr);
  (void)store_->end_session(session_id_);
  session_open_ = false;
  if (!tasks.is_ok() && !(cancel && cancel->load())) return failure(tasks.status());
  if (tasks.is_ok()) summary.tasks = std::move(*tasks);
  summary.cancelled = !tasks.is_ok();
  summary.stopped = stop && stop->load();
  summary.out_of_time = tuner_->ran_out_of_time();
  summary.trials_run = tuner_->trials_at_end();
  if (log_ && summary.out_of_time)
    std::fprintf(log_, "the time budget (%.0f s) ran out after %lld of %lld trials; run again to go on\n",
                 config_.time_budget_s, static_cast<long long>(summary.trials_run),
                 static_cast<long long>(config_.trials));
  TESSERA_RETURN_IF_ERROR(summarize_records(&summary));
  if (log_ && summary.stored_infrastructure > 0) {
    std::fprintf(log_,
                 "%lld infrastructure error(s) stored (no worker, no result, protocol): not trials, "
                 "their candidates are measured again (in this run, or by the next)\n",
                 static_cast<long long>(summary.stored_infrastructure));
    std::fflush(log_);
  }
  return summary;
}

Status TuneJob::summarize_records(JobSummary* summary) {
  std::vector<records::Record> failed;
  for (const Task& task : tasks_) {
    auto records = store_->records_of(task.workload_key(), task.target.to_string());
    if (!records.is_ok()) return failure(records.status());
    for (records::Record& r : *records) {
      if (r.session_id != session_id_) continue;
      ++summary->stored;
      if (r.ok()) ++summary->stored_ok;
      if (r.infrastructure)
        ++summary->stored_infrastructure;
      else
        failed.push_back(std::move(r));
    }
  }
  int64_t trials = 0, errors = 0;
  for (const TaskSummary& t : summary->tasks) {
    trials += t.trials;
    errors += t.errors;
  }
  summary->all_failed = trials > 0 ? errors == trials : summary->stored > 0 && summary->stored_ok == 0;
  for (const records::Record& r : failed) {
    if (summary->errors.size() >= 3) break;
    // The message's first line, cut: a compiler's diagnostics can run long.
    std::string line = r.error_kind + (r.error_message.empty() ? "" : ": " + r.error_message);
    line = line.substr(0, std::min<size_t>(line.find('\n'), 240));
    if (std::find(summary->errors.begin(), summary->errors.end(), line) == summary->errors.end())
      summary->errors.push_back(line);
  }
  return Status::ok();
}

}  // namespace tessera::tuner
