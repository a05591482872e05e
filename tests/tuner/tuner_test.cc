#include "tuner/tuner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/ops/linalg.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/choose/generic_schedule.h"
#include "compiler/space/knob/templates.h"
#include "costmodel/features.h"
#include "costmodel/xgb_model.h"
#include "records/sqlite.h"
#include "records/store.h"
#include "tests/records/test_util.h"
#include "tuner/knob_policy.h"
#include "tuner/sketch_policy.h"

namespace tessera::tuner {
namespace {

std::unique_ptr<SketchPolicy> policy_for(const ops::OpInstance& op, uint64_t seed, bool guided) {
  auto space = SketchSpace::make(op.dag, host_target());
  EXPECT_TRUE(space.is_ok());
  std::unique_ptr<costmodel::CostModel> model;
  if (guided) model = std::make_unique<costmodel::XGBModel>(costmodel::XGBOptions{.seed = seed});
  return std::make_unique<SketchPolicy>(std::move(*space), std::move(model), EvolutionOptions{.population = 32}, seed);
}

// Synthetic measurements: a cost that depends only on the step list, so two
// runs that propose the same candidates see the same measurements.
std::vector<records::Record> synthetic_records(const std::vector<Candidate>& batch) {
  std::vector<records::Record> out;
  for (const Candidate& c : batch) {
    records::Record r;
    r.steps_json = steps_to_json(c.steps());
    r.costs = {1e-3 * static_cast<double>(std::hash<std::string>()(r.steps_json) % 1000 + 1)};
    out.push_back(r);
  }
  return out;
}

std::vector<std::string> run_rounds(const ops::OpInstance& op, uint64_t seed, int rounds) {
  auto policy = policy_for(op, seed, /*guided=*/true);
  std::vector<std::string> proposed;
  for (int r = 0; r < rounds; ++r) {
    auto batch = policy->propose(8);
    EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
    for (const auto& c : *batch) proposed.push_back(steps_to_json(c.steps()));
    EXPECT_TRUE(policy->observe(*batch, synthetic_records(*batch)).is_ok());
  }
  return proposed;
}

TEST(SketchPolicy, TheSameSeedAndMeasurementsGiveTheSameCandidates) {
  auto op = ops::parse_op_spec("matmul:M=64,N=64,K=64").value();
  auto a = run_rounds(op, 11, 3), b = run_rounds(op, 11, 3);
  EXPECT_EQ(a, b);
  auto c = run_rounds(op, 12, 3);
  EXPECT_NE(a, c);
}

TEST(SketchPolicy, NeverProposesAStepListTwice) {
  auto op = ops::parse_op_spec("matmul:M=32,N=32,K=16").value();
  auto proposed = run_rounds(op, 5, 6);
  std::set<std::string> unique(proposed.begin(), proposed.end());
  EXPECT_EQ(unique.size(), proposed.size());
}

TEST(SketchPolicy, ResumedRecordsAreNotProposedAgain) {
  auto op = ops::parse_op_spec("matmul:M=32,N=32,K=16").value();
  auto first = policy_for(op, 3, false);
  auto batch = first->propose(16).value();
  auto second = policy_for(op, 3, false);  // same seed: would propose the same programs
  ASSERT_TRUE(second->observe(batch, synthetic_records(batch)).is_ok());
  auto next = second->propose(16).value();
  std::set<std::string> old;
  for (const auto& c : batch) old.insert(steps_to_json(c.steps()));
  for (const auto& c : next) EXPECT_FALSE(old.count(steps_to_json(c.steps()))) << steps_to_json(c.steps());
}

TEST(SketchPolicy, APretrainedModelRanksTheFirstBatch) {
  auto op = ops::parse_op_spec("matmul:M=32,N=32,K=16").value();
  // Records of another run of the same space (as another workload: group 1).
  auto source = policy_for(op, 4, false);
  auto batch = source->propose(16).value();
  auto measured = synthetic_records(batch);
  auto space = SketchSpace::make(op.dag, host_target()).value();
  std::vector<costmodel::TrainingRecord> records;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto f = costmodel::extract_features(replay(op.dag, batch[i].steps()).value());
    ASSERT_TRUE(f.is_ok());
    records.push_back({*f, normalized_throughput(measured[i], 1e-3), 1});
  }
  auto model = std::make_unique<costmodel::XGBModel>();
  ASSERT_TRUE(model->pretrain(records).is_ok());
  SketchPolicy warm(std::move(space), std::move(model), EvolutionOptions{.population = 32}, 4);
  ASSERT_TRUE(warm.propose(8).is_ok());
  EXPECT_GT(warm.last_model_picks(), 0);
  auto cold = policy_for(op, 4, true);
  ASSERT_TRUE(cold->propose(8).is_ok());
  EXPECT_EQ(cold->last_model_picks(), 0);
}

TEST(Tuner, MedianOverheadIsTheMiddleRound) {
  TaskSummary s;
  EXPECT_EQ(median_overhead_per_trial_s(s), 0);
  s.overhead_per_trial_s = {0.030, 0.002, 0.004};
  EXPECT_DOUBLE_EQ(median_overhead_per_trial_s(s), 0.004);
  s.overhead_per_trial_s.push_back(0.001);
  EXPECT_DOUBLE_EQ(median_overhead_per_trial_s(s), 0.003);
}

// matmul 128^3, alone or with a relu: one knob space, two workloads.
Task matmul_task(bool relu, const std::string& group) {
  Tensor a = placeholder({128, 128}, DType::f32(), "A");
  Tensor b = placeholder({128, 128}, DType::f32(), "B");
  const Tensor product = ops::matmul(a, b).value();
  Tensor c = product;
  if (relu)
    c = compute(
        {128, 128},
        [&](const Vars& i) {
          return max(read(product, {i[0], i[1]}), make_float(0));
        },
        "relu", OpPattern::kElementwise);
  Task t;
  t.name = relu ? "matmul_relu" : "matmul";
  t.dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
  t.target = host_target();
  t.device_key = "local";
  t.group = group;
  return t;
}

// The knob configurations measured for `task` (from the store).
std::set<std::string> measured_configs(records::Store& store, const Task& task) {
  std::set<std::string> configs;
  const std::vector<records::Record> records = store.records_of(task.workload_key(), task.target.to_string()).value();
  for (const auto& r : records)
    if (!r.knob_config_json.empty()) configs.insert(r.knob_config_json);
  return configs;
}

// Tunes the two matmul tasks with random search (different seeds) and
// returns how many configurations both measured.
size_t configs_in_common(const std::string& group_a, const std::string& group_b) {
  auto runner = rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = 1});
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  std::vector<Task> tasks = {matmul_task(false, group_a), matmul_task(true, group_b)};
  const KnobTemplate* tmpl = find_template("matmul");
  std::vector<std::unique_ptr<SearchPolicy>> policies;
  for (size_t i = 0; i < tasks.size(); ++i) {
    KnobSpace space = tmpl->define(*tasks[i].dag, tasks[i].target).value();
    policies.push_back(std::make_unique<KnobPolicy>(*tmpl, tasks[i].dag, tasks[i].target, std::move(space),
                                                    KnobStrategy::kRandom, nullptr, 100 + i));
  }
  records::testing::TempDir dir;  // removed with what SQLite leaves beside the database
  const std::string db = dir.file("t.db");
  auto store = records::Store::open(db);
  EXPECT_TRUE(store.is_ok()) << store.status().to_string();
  BuilderPool builder(host_target(), {.n_parallel = 2});
  Measurer measurer(builder, **runner, {.timing = {.number = 1, .repeat = 1}});
  Tuner tuner(tasks, std::move(policies), measurer, &*store,
              {.trials = 24, .batch_size = 4, .scheduler = SchedulerKind::kRoundRobin, .measure_default = false});
  auto summaries = tuner.run(nullptr, nullptr);
  EXPECT_TRUE(summaries.is_ok()) << summaries.status().to_string();
  const std::set<std::string> a = measured_configs(*store, tasks[0]), b = measured_configs(*store, tasks[1]);
  size_t common = 0;
  for (const std::string& c : a) common += b.count(c);

  return common;
}

TEST(Tuner, ANewBestIsTriedByTheTasksOfItsGroup) {
  // Random draws from a space of thousands rarely meet; shared bests do.
  EXPECT_GE(configs_in_common("matmul", "matmul"), 1u);
  EXPECT_EQ(configs_in_common("matmul", ""), 0u);
}

// Tunes a matmul on one local worker (its default and generic baseline
// first) with a fresh sketch policy: the summaries.
Result<std::vector<TaskSummary>> tune_matmul(const Task& task, records::Store& store, int64_t trials,
                                             int64_t* resumed = nullptr, int64_t* retries = nullptr) {
  auto runner = rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = 1});
  if (!runner.is_ok()) return runner.status();
  BuilderPool builder(host_target(), {.n_parallel = 2});
  Measurer measurer(builder, **runner, {.timing = {.number = 1, .repeat = 2, .min_repeat_ms = 1}});
  std::vector<std::unique_ptr<SearchPolicy>> policies;
  policies.push_back(policy_for(ops::parse_op_spec("matmul:M=128,N=128,K=128").value(), 5, /*guided=*/false));
  Tuner tuner({task}, std::move(policies), measurer, &store, {.trials = trials, .batch_size = 4});
  TESSERA_ASSIGN_OR_RETURN(int64_t found, tuner.resume());
  if (resumed) *resumed = found;
  if (retries) *retries = tuner.pending_retries();
  return tuner.run(nullptr, nullptr);
}

// A database where the default, the baseline and three search candidates
// were lost to the infrastructure (stored as no-worker): a rerun measures
// each of them again, counts only measurements as trials, and never learns
// from the lost records.
TEST(Tuner, AResumedRunMeasuresAgainWhatTheInfrastructureLost) {
  records::testing::TempDir dir;  // removed with what SQLite leaves beside the database
  const std::string db = dir.file("t.db");
  Task task = matmul_task(false, "matmul");
  task.baseline = generic_schedule(task.dag, task.target).value().steps();
  {
    auto store = records::Store::open(db);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto first = tune_matmul(task, *store, 8);
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    // What tuning is measured against: the baseline compile would take.
    ASSERT_TRUE((*first)[0].untuned_compile_s.has_value());
    EXPECT_GT(*(*first)[0].untuned_compile_s, 0);
  }
  {
    auto conn = records::sql::Connection::open(db, SQLITE_OPEN_READWRITE, 1000, {});
    ASSERT_TRUE(conn.is_ok());
    ASSERT_TRUE(conn->exec("UPDATE records SET error_kind = 'no-worker', error_message = 'lost', costs = '[]', "
                           "mean_cost = NULL, infrastructure = 1 WHERE steps = '[]' OR space = 'manual' OR id IN "
                           "(SELECT id FROM records WHERE space = 'sketch' AND steps <> '[]' ORDER BY id LIMIT 3)")
                    .is_ok());
  }
  auto store = records::Store::open(db);
  ASSERT_TRUE(store.is_ok());
  const int64_t before = store->count().value();
  ASSERT_EQ(before, 10);  // the default, the baseline, 8 trials
  int64_t resumed = 0, retries = 0;
  auto second = tune_matmul(task, *store, 3, &resumed, &retries);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(resumed, 5);  // the 5 trials that are facts
  EXPECT_EQ(retries, 3);  // the search's lost candidates; the default and the baseline are measured apart
  EXPECT_EQ((*second)[0].trials, 3);
  EXPECT_EQ((*second)[0].infrastructure_errors, 0);
  EXPECT_TRUE((*second)[0].default_cost_s.has_value());
  EXPECT_TRUE((*second)[0].untuned_compile_s.has_value());  // the lost baseline, measured again
  const std::vector<records::Record> all = store->list({}).value();
  EXPECT_EQ(static_cast<int64_t>(all.size()), before + 5);
  std::set<std::string> facts;
  for (const auto& r : all)
    if (!r.infrastructure) facts.insert(r.steps_json);
  for (const auto& r : all)
    if (r.infrastructure) EXPECT_TRUE(facts.count(r.steps_json)) << "not measured again: " << r.steps_json;
}

// The summary's best is records::best_of over everything measured: the
// untuned default competes too, as in `records best` and compile.
TEST(Tuner, TheSummarysBestIsTheBestRecordDefaultIncluded) {
  records::testing::TempDir dir;  // removed with what SQLite leaves beside the database
  const std::string db = dir.file("t.db");
  Task task = matmul_task(false, "matmul");
  auto store = records::Store::open(db);
  ASSERT_TRUE(store.is_ok());
  auto summary = tune_matmul(task, *store, 4);
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  const std::vector<records::Record> all = store->records_of(task.workload_key(), task.target.to_string()).value();
  const records::Record* best = records::best_of(all);
  ASSERT_NE(best, nullptr);
  EXPECT_DOUBLE_EQ((*summary)[0].best_cost_s, best->mean_cost());
  EXPECT_EQ(store->best_k(task.workload_key(), task.target.to_string(), 1).value()[0].id, best->id);
  // The default is timed like every candidate: as many repeats.
  for (const auto& r : all)
    if (r.ok() && r.steps_json == "[]") EXPECT_EQ(r.costs.size(), 2u);  // repeat = 2 in this measurer
}

// Runs `tessera tune` in a child process; returns its pid.
pid_t start_tune(const std::string& db, int trials) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string t = std::to_string(trials);
    freopen("/dev/null", "w", stdout);
    execl(TESSERA_BINARY, TESSERA_BINARY, "tune", "--op", "matmul:M=64,N=64,K=64", "--trials", t.c_str(), "--db",
          db.c_str(), "--batch", "4", "--repeat", "1", "--min-repeat-ms", "1", "--seed", "9", nullptr);
    _exit(127);
  }
  return pid;
}

int64_t count_records(const std::string& db, std::set<std::string>* steps) {
  auto store = records::Store::open(db);
  EXPECT_TRUE(store.is_ok());
  auto all = store->list({});
  EXPECT_TRUE(all.is_ok());
  for (const auto& r : *all) steps->insert(r.steps_json);
  return static_cast<int64_t>(all->size());
}

TEST(Tune, ResumesAfterKill9WithoutMeasuringAnythingTwice) {
  records::testing::TempDir dir;  // removed with what SQLite leaves beside the database
  const std::string db = dir.file("t.db");
  // Kill the first run once a few batches are stored.
  pid_t first = start_tune(db, 400);
  std::set<std::string> steps;
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::set<std::string> seen;
    if (access(db.c_str(), F_OK) == 0 && count_records(db, &seen) >= 9) break;
  }
  kill(first, SIGKILL);
  int status = 0;
  waitpid(first, &status, 0);
  steps.clear();
  int64_t before = count_records(db, &steps);
  ASSERT_GE(before, 9);
  // The second run adds its trials and measures none of the stored ones again.
  pid_t second = start_tune(db, 8);
  waitpid(second, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::set<std::string> all_steps;
  int64_t after = count_records(db, &all_steps);
  EXPECT_EQ(after, before + 8);  // the untuned default's record is reused too
  EXPECT_EQ(static_cast<int64_t>(all_steps.size()), after);
}

}  // namespace
}  // namespace tessera::tuner
