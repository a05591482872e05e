#include "tuner/job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "compiler/ops/op_spec.h"
#include "compiler/schedule/step.h"
#include "compiler/space/choose/apply_best.h"

namespace tessera::tuner {
namespace {

// The error parse_tune_config gives for `options` (an --op job), "" when it parses.
std::string config_error(const OptionValues& options) {
  Result<TuneConfig> config = parse_tune_config(options, /*with_model=*/false);
  if (config.is_ok()) return "";
  EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument) << config.status().to_string();
  return config.status().message();
}

// `options` with one matmul to tune.
OptionValues with_op(OptionValues options) {
  options["op"] = {"matmul:M=64,N=64,K=64"};
  return options;
}

TEST(ParseTuneConfig, DefaultsDependOnWhetherAModelIsGiven) {
  TuneConfig ops = parse_tune_config(with_op({}), false).value();
  EXPECT_EQ(ops.space, SpaceChoice::kSketch);
  EXPECT_TRUE(ops.sketch_guided);
  ASSERT_EQ(ops.ops.size(), 1u);
  EXPECT_EQ(ops.ops[0].op, "matmul");
  EXPECT_EQ(ops.trials, 64);
  EXPECT_EQ(ops.batch, 16);
  EXPECT_EQ(ops.threads, ops.target.num_cores);
  EXPECT_EQ(ops.cache, CacheMode::kModel);
  EXPECT_EQ(ops.repeat, 3);
  EXPECT_EQ(ops.db_path, "tessera.db");
  EXPECT_FALSE(ops.tracker.has_value());
  EXPECT_EQ(parse_tune_config({}, /*with_model=*/true).value().space, SpaceChoice::kAuto);
  // Cold timing repeats single calls, so more of them.
  EXPECT_EQ(parse_tune_config(with_op({{"cache", {"cold"}}}), false).value().repeat, 8);
}

TEST(ParseTuneConfig, TheLastValueOfAnOptionCounts) {
  TuneConfig c = parse_tune_config(with_op({{"trials", {"8", "12"}}, {"check", {""}}}), false).value();
  EXPECT_EQ(c.trials, 12);
  EXPECT_TRUE(c.check);
}

TEST(ParseTuneConfig, CheckingIsOnByDefaultAndNoCheckTurnsItOff) {
  EXPECT_TRUE(parse_tune_config(with_op({}), false).value().check);
  EXPECT_TRUE(TuneConfig{}.check);
  EXPECT_FALSE(parse_tune_config(with_op({{"no-check", {""}}}), false).value().check);
  EXPECT_EQ(config_error(with_op({{"check", {""}}, {"no-check", {""}}})),
            "--check and --no-check contradict each other (checking is the default)");
}

TEST(ParseTuneConfig, TheStrategyIsParsedForItsSpace) {
  TuneConfig ga = parse_tune_config(with_op({{"space", {"knob"}}, {"strategy", {"ga"}}}), false).value();
  EXPECT_EQ(ga.knob_strategy, KnobStrategy::kGa);
  TuneConfig random = parse_tune_config(with_op({{"strategy", {"random"}}}), false).value();
  EXPECT_FALSE(random.sketch_guided);
  EXPECT_EQ(describe_search(ga), "knob space, ga search");
  EXPECT_EQ(describe_search(random), "sketch space, random search");
  EXPECT_EQ(config_error(with_op({{"space", {"tree"}}})), "unknown --space 'tree' (sketch, knob, auto)");
  EXPECT_EQ(config_error(with_op({{"space", {"knob"}}, {"strategy", {"evolutionary"}}})),
            "--space knob takes --strategy xgb, random, grid or ga, not 'evolutionary'");
  EXPECT_EQ(config_error(with_op({{"strategy", {"grid"}}})),
            "--space sketch takes --strategy evolutionary or random, not 'grid'");
  EXPECT_NE(config_error(with_op({{"space", {"auto"}}, {"strategy", {"xgb"}}})).find("--space auto picks xgb"),
            std::string::npos);
}

TEST(ParseTuneConfig, NumbersAreRangeChecked) {
  const struct {
    const char* option;
    const char* value;
    const char* error;
  } kCases[] = {
      {"trials", "many", "option --trials expects an integer, got 'many'"},
      {"trials", "0", "--trials must be positive"},
      {"batch", "-4", "--batch must be positive"},
      {"batch", "4294967296", "--batch must be at most 2147483647"},
      {"workers", "0", "--workers must be positive"},
      {"repeat", "0", "--repeat must be positive"},
      {"min-repeat-ms", "fast", "option --min-repeat-ms expects a number, got 'fast'"},
      {"min-repeat-ms", "-1", "--min-repeat-ms must not be negative"},
      {"time-budget", "-5", "--time-budget must not be negative"},
      {"early-stopping", "-1", "--early-stopping must not be negative"},
      {"threads", "0", "--threads must be a positive integer"},
      {"threads", "two", "--threads must be a positive integer"},
      {"seed", "1.5", "option --seed expects an integer, got '1.5'"},
  };
  for (const auto& c : kCases) EXPECT_EQ(config_error(with_op({{c.option, {c.value}}})), c.error) << c.option;
}

// A task's baseline is the schedule compile takes without records (the
// template's fallback, else the generic schedule), step for step, so that
// "untuned" in tune's figures is an untuned compile; in a knob space the
// fallback's configuration comes with it.
TEST(UntunedBaseline, IsTheScheduleCompileTakesWithoutRecords) {
  const Target target = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512").value();
  for (const char* spec : {"matmul:M=64,N=64,K=64", "conv2d_nhwc:N=1,C=16,H=14,W=14,K=32,R=3,S=3,pad=1",
                           "depthwise_conv2d_nhwc:N=1,C=32,H=14,W=14,R=3,S=3,pad=1", "softmax:M=8,N=100"}) {
    const ops::OpInstance inst = ops::parse_op_spec(spec).value();
    Task task;
    task.dag = inst.dag;
    set_untuned_baseline(target, inst.op, /*knob_space=*/true, &task);
    auto compiled = choose_schedule(inst.dag, inst.op, target, nullptr);
    ASSERT_TRUE(compiled.is_ok()) << spec;
    EXPECT_EQ(steps_to_json(task.baseline), steps_to_json(compiled->state.steps())) << spec;
    const bool templated = compiled->source == ScheduleChoice::Source::kTemplateFallback;
    EXPECT_EQ(!task.baseline_knob_config.empty(), templated) << spec;
    Task sketch;
    sketch.dag = inst.dag;
    set_untuned_baseline(target, inst.op, /*knob_space=*/false, &sketch);
    EXPECT_EQ(steps_to_json(sketch.baseline), steps_to_json(task.baseline)) << spec;
    EXPECT_TRUE(sketch.baseline_knob_config.empty()) << spec;
  }
}

TEST(ParseTuneConfig, TimeTakesAUnit) {
  auto minutes = parse_tune_config(with_op({{"time", {"2m"}}}), false);
  ASSERT_TRUE(minutes.is_ok()) << minutes.status().to_string();
  EXPECT_EQ(minutes->time_budget_s, 120);
  auto seconds = parse_tune_config(with_op({{"time", {"90"}}}), false);
  ASSERT_TRUE(seconds.is_ok()) << seconds.status().to_string();
  EXPECT_EQ(seconds->time_budget_s, 90);
  EXPECT_EQ(config_error(with_op({{"time", {"soon"}}})),
            "--time: 'soon' is not a duration (examples: 90, 45s, 2m, 12h, 7d)");
  EXPECT_EQ(config_error(with_op({{"time", {"0s"}}})), "--time must be positive");
  EXPECT_EQ(config_error(with_op({{"time", {"1m"}}, {"time-budget", {"60"}}})),
            "give --time or --time-budget, not both");
}

TEST(ParseTuneConfig, TimingSchedulerTargetAndOperatorsAreChecked) {
  EXPECT_EQ(config_error(with_op({{"cache", {"lukewarm"}}})), "--cache must be model, warm or cold, not 'lukewarm'");
  EXPECT_EQ(config_error(with_op({{"cache", {"cold"}}, {"min-repeat-ms", {"5"}}})),
            "--min-repeat-ms is for --cache model or warm (cold times single calls)");
  EXPECT_EQ(config_error(with_op({{"scheduler", {"fifo"}}})), "unknown --scheduler 'fifo' (gradient, round-robin)");
  EXPECT_NE(config_error(with_op({{"target", {"llvm -mtriple=sparc-sun-solaris"}}})), "");
  EXPECT_NE(config_error({{"op", {"matmul:M=64,N=64"}}}).find("matmul"), std::string::npos);
  EXPECT_EQ(config_error({{"op", {"softmax:M=64,N=256"}}, {"space", {"knob"}}}),
            "no knob template for 'softmax'; use --space sketch");
}

TEST(ParseTuneConfig, AFarmNeedsAKeyAndCredentials) {
  EXPECT_EQ(config_error(with_op({{"tracker", {"tcp://farm:9190"}}})),
            "--tracker needs --key, the device key of the workers");
  EXPECT_EQ(config_error(with_op({{"tracker", {"tcp://farm:9190"}}, {"key", {"x86"}}})),
            "--tracker needs --keyfile and --tracker-key (CURVE), or --insecure on ipc/loopback");
  EXPECT_NE(config_error(with_op({{"tracker", {"tcp://8.8.8.8:9190"}}, {"key", {"x86"}}, {"insecure", {""}}})), "");
  TuneConfig c =
      parse_tune_config(with_op({{"tracker", {"ipc:///tmp/t"}}, {"key", {"x86"}}, {"insecure", {""}}}), false).value();
  ASSERT_TRUE(c.tracker.has_value());
  EXPECT_EQ(c.tracker->device_key, "x86");
  EXPECT_EQ(c.device_key, "x86");
}

// A records database of its own for each test, removed at the end.
class TuneJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = "/tmp/tessera-job-test-" + std::to_string(getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    remove_db();
  }
  void TearDown() override { remove_db(); }
  void remove_db() const {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db_ + suffix).c_str());
  }
  // A small matmul job on one local worker, measured quickly.
  TuneConfig small_job(int64_t trials) const {
    TuneConfig c = parse_tune_config(with_op({{"trials", {std::to_string(trials)}},
                                              {"batch", {"4"}},
                                              {"repeat", {"1"}},
                                              {"min-repeat-ms", {"1"}},
                                              {"threads", {"1"}},
                                              {"seed", {"7"}},
                                              {"db", {db_}}}),
                                     false)
                       .value();
    c.command_line = "job_test";
    return c;
  }
  std::string db_;
};

TEST_F(TuneJobTest, ASmallJobOnLocalWorkersStoresItsRecords) {
  auto job = TuneJob::open(small_job(8), {}, nullptr);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  ASSERT_EQ((*job)->tasks().size(), 1u);
  EXPECT_FALSE((*job)->tasks()[0].baseline.empty());  // the template's fallback competes
  auto summary = (*job)->run(nullptr, nullptr);
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  EXPECT_FALSE(summary->stopped);
  EXPECT_EQ(summary->resumed, 0);
  ASSERT_EQ(summary->tasks.size(), 1u);
  EXPECT_EQ(summary->tasks[0].trials, 8);
  EXPECT_GT(summary->tasks[0].best_cost_s, 0);
  const Task& task = (*job)->tasks()[0];
  auto records = (*job)->store().records_of(task.workload_key(), task.target.to_string());
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  // The search's 8, the untuned default and the fallback, all in this job's session.
  EXPECT_EQ(records->size(), 10u);
  auto sessions = (*job)->store().sessions();
  ASSERT_TRUE(sessions.is_ok());
  ASSERT_EQ(sessions->size(), 1u);
  // The timing mode is always on record: a line that does not name it gets it.
  EXPECT_EQ((*sessions)[0].command_line, "job_test --cache model");
  EXPECT_TRUE((*sessions)[0].ended.has_value());
  for (const records::Record& r : *records) EXPECT_EQ(r.session_id, (*sessions)[0].id);
}

// A log that sets `stop` once it has been written `lines` lines.
struct StopAfterLines {
  std::atomic<bool>* stop;
  int lines;
};

ssize_t count_lines(void* cookie, const char* data, size_t size) {
  auto* s = static_cast<StopAfterLines*>(cookie);
  for (size_t i = 0; i < size; ++i)
    if (data[i] == '\n' && --s->lines == 0) s->stop->store(true);
  return static_cast<ssize_t>(size);
}

TEST_F(TuneJobTest, TheStopFlagEndsTheRunBetweenBatches) {
  auto job = TuneJob::open(small_job(64), {}, nullptr);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  // The progress log writes one line per measured batch: stop after the first.
  std::atomic<bool> stop{false};
  StopAfterLines state{&stop, 1};
  FILE* log = fopencookie(&state, "w", cookie_io_functions_t{nullptr, count_lines, nullptr, nullptr});
  ASSERT_NE(log, nullptr);
  Progress progress(log, /*interactive=*/false);
  auto summary = (*job)->run(&progress, &stop);
  std::fclose(log);
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  EXPECT_TRUE(summary->stopped);
  EXPECT_EQ(summary->tasks[0].trials, 4);  // one batch of 4, not the budget of 64
  const Task& task = (*job)->tasks()[0];
  EXPECT_EQ((*job)->store().records_of(task.workload_key(), task.target.to_string()).value().size(), 6u);
}

TEST_F(TuneJobTest, AModelKernelNoSpaceExpressesIsReportedAndSkipped) {
  // A softmax has no knob template: in the knob space it is left to its fallback.
  ops::OpInstance softmax = ops::parse_op_spec("softmax:M=64,N=256").value();
  TuneConfig c;
  c.space = SpaceChoice::kKnob;
  c.db_path = db_;
  ModelKernels model;
  model.kernels.push_back({"fused_softmax [64, 256]", softmax.dag, "", 1, {}});
  char* text = nullptr;
  size_t size = 0;
  FILE* log = open_memstream(&text, &size);
  auto job = TuneJob::open(c, model, log);
  std::fclose(log);
  const std::string logged(text, size);
  std::free(text);
  ASSERT_FALSE(job.is_ok());
  EXPECT_EQ(job.status().message(), "nothing to tune");
  EXPECT_EQ(logged, "not tuned: fused_softmax [64, 256]: no knob template (the sketch space tunes it)\n");
}

}  // namespace
}  // namespace tessera::tuner
