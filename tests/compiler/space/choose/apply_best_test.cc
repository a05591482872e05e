// ApplyBest: compile time takes the first candidate that replays and lowers,
// skips (and names) the ones that do not, and falls back to the template's
// configuration, then to the default schedule — the same way every time.
#include "compiler/space/choose/apply_best.h"

#include <gtest/gtest.h>

#include "compiler/ops/op_spec.h"
#include "compiler/space/choose/generic_schedule.h"
#include "compiler/space/knob/templates.h"

namespace tessera {
namespace {

const char* const kIcelake = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -num-cores=2";

Target target(const std::string& text = kIcelake) {
  auto t = Target::parse(text);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return *t;
}

ops::OpInstance op(const std::string& spec) {
  auto inst = ops::parse_op_spec(spec);
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return std::move(inst).value();
}

// A valid schedule of `inst`'s output stage: its first loop split by `factor`.
std::string split_output(const ops::OpInstance& inst, int64_t factor) {
  State s(inst.dag);
  const int out = static_cast<int>(s.stages().size()) - 1;
  EXPECT_TRUE(s.split(out, 0, {factor}).is_ok());
  return steps_to_json(s.steps());
}

// The same, but with a loop index past the stage's loops: parses, no longer replays.
std::string out_of_range_iter(const ops::OpInstance& inst) {
  const int out = static_cast<int>(State(inst.dag).stages().size()) - 1;
  return R"([{"kind":"split","stage":)" + std::to_string(out) + R"(,"iter":42,"factors":[4]}])";
}

ScheduleCandidate record(int64_t id, std::string steps, double cost) {
  ScheduleCandidate c;
  c.record_id = id;
  c.steps_json = std::move(steps);
  c.cost_s = cost;
  c.why = "record " + std::to_string(id) + " of the table";
  return c;
}

struct Fixture {
  ops::OpInstance inst = op("matmul:M=32,N=48,K=16");
  Target t = target();
  FixedScheduleSource source;
  void add(ScheduleCandidate c) { source.add(inst.dag->workload_key(), t.to_string(), std::move(c)); }
  ScheduleChoice choose(ScheduleSource* s) {
    auto choice = choose_schedule(inst.dag, inst.op, t, s);
    EXPECT_TRUE(choice.is_ok()) << choice.status().to_string();
    return std::move(choice).value();
  }
  ScheduleChoice choose() { return choose(&source); }
};

TEST(ChooseSchedule, ExactTargetRecordComesFirst) {
  Fixture f;
  f.add(record(17, split_output(f.inst, 8), 0.002));
  f.add(record(18, split_output(f.inst, 4), 0.003));
  ScheduleChoice c = f.choose();
  EXPECT_EQ(c.source, ScheduleChoice::Source::kRecord);
  ASSERT_TRUE(c.record);
  EXPECT_EQ(c.record->record_id, 17);
  EXPECT_EQ(steps_to_json(c.state.steps()), split_output(f.inst, 8));
  EXPECT_NE(c.explanation.find("record 17"), std::string::npos) << c.explanation;
  EXPECT_NE(c.explanation.find("2.000 ms"), std::string::npos) << c.explanation;
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.candidates_seen, 2);
  EXPECT_EQ(c.candidates_skipped, 0);
}

TEST(ChooseSchedule, RecordThatNoLongerReplaysIsSkippedAndNamed) {
  Fixture f;
  f.add(record(17, out_of_range_iter(f.inst), 0.001));
  f.add(record(18, split_output(f.inst, 4), 0.003));
  ScheduleChoice c = f.choose();
  EXPECT_EQ(c.source, ScheduleChoice::Source::kRecord);
  EXPECT_EQ(c.record->record_id, 18);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("record 17: the step list no longer replays: step 0"), std::string::npos)
      << c.warnings[0];
  EXPECT_NE(c.warnings[0].find("skipped"), std::string::npos) << c.warnings[0];
  EXPECT_EQ(c.candidates_skipped, 1);
}

TEST(ChooseSchedule, StepListThatDoesNotParseIsSkipped) {
  Fixture f;
  f.add(record(5, "{not json", 0.001));
  f.add(record(6, R"([{"kind":"teleport","stage":2}])", 0.001));
  f.add(record(7, split_output(f.inst, 2), 0.004));
  ScheduleChoice c = f.choose();
  EXPECT_EQ(c.record->record_id, 7);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_NE(c.warnings[0].find("record 5: the step list does not parse"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[1].find("record 6: the step list does not parse"), std::string::npos) << c.warnings[1];
}

TEST(ChooseSchedule, StepsOfAnotherWorkloadAreSkipped) {
  Fixture f;
  // A conv2d record's steps filed under the matmul's key: stage 5 is not there.
  ops::OpInstance conv = op("conv2d:N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1");
  f.add(record(3, split_output(conv, 2), 0.001));
  ScheduleChoice c = f.choose();
  EXPECT_EQ(c.source, ScheduleChoice::Source::kTemplateFallback);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("record 3: the step list no longer replays"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.explanation.find("none of the 1 candidate schedules"), std::string::npos) << c.explanation;
}

TEST(ChooseSchedule, NoRecordMeansTheTemplateFallback) {
  Fixture f;
  ScheduleChoice c = f.choose();
  EXPECT_EQ(c.source, ScheduleChoice::Source::kTemplateFallback);
  EXPECT_FALSE(c.record);
  auto expected = apply_fallback(*find_template("matmul"), f.inst.dag, f.t);
  ASSERT_TRUE(expected.is_ok());
  EXPECT_EQ(steps_to_json(c.state.steps()), steps_to_json(expected->steps()));
  EXPECT_NE(c.explanation.find("no record for this workload"), std::string::npos) << c.explanation;
  EXPECT_NE(c.explanation.find("gemm template's fallback"), std::string::npos) << c.explanation;
}

TEST(ChooseSchedule, NoSourceMeansTheTemplateFallback) {
  Fixture f;
  ScheduleChoice c = f.choose(nullptr);
  EXPECT_EQ(c.source, ScheduleChoice::Source::kTemplateFallback);
  EXPECT_NE(c.explanation.find("no schedule source"), std::string::npos) << c.explanation;
}

TEST(ChooseSchedule, NoRecordAndNoTemplateMeansTheGenericSchedule) {
  ops::OpInstance inst = op("softmax:M=8,N=32");
  ASSERT_EQ(find_template(inst.op), nullptr);
  FixedScheduleSource empty;
  auto c = choose_schedule(inst.dag, inst.op, target(), &empty);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->source, ScheduleChoice::Source::kGenericFallback);
  auto expected = generic_schedule(inst.dag, target());
  ASSERT_TRUE(expected.is_ok());
  EXPECT_EQ(steps_to_json(c->state.steps()), steps_to_json(expected->steps()));
  EXPECT_FALSE(c->state.steps().empty());
  EXPECT_NE(c->explanation.find("no template for 'softmax': the generic schedule"), std::string::npos)
      << c->explanation;
}

TEST(ChooseSchedule, CompatibleTargetRecordIsUsedWithAWarning) {
  Fixture f;
  ScheduleCandidate c = record(9, split_output(f.inst, 8), 0.002);
  c.match = TargetMatch::kCompatible;
  c.target = "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids -num-cores=2";
  f.add(c);
  ScheduleChoice choice = f.choose();
  EXPECT_EQ(choice.source, ScheduleChoice::Source::kCompatibleRecord);
  ASSERT_EQ(choice.warnings.size(), 1u);
  EXPECT_NE(choice.warnings[0].find("no usable record on this target; record 9 was measured on"), std::string::npos)
      << choice.warnings[0];
  EXPECT_NE(choice.warnings[0].find("sapphirerapids"), std::string::npos) << choice.warnings[0];
}

TEST(ChooseSchedule, CompatibleCandidateOfAnotherVectorWidthIsSkipped) {
  // The source judged compatibility without LLVM; this build's own reading of
  // the record's target (haswell: 256-bit) overrules it for a 512-bit target.
  Fixture f;
  ScheduleCandidate c = record(9, split_output(f.inst, 8), 0.002);
  c.match = TargetMatch::kCompatible;
  c.target = "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell";
  f.add(c);
  ScheduleChoice choice = f.choose();
  EXPECT_EQ(choice.source, ScheduleChoice::Source::kTemplateFallback);
  ASSERT_EQ(choice.warnings.size(), 1u);
  EXPECT_NE(choice.warnings[0].find("256-bit vectors), which does not match"), std::string::npos) << choice.warnings[0];
}

TEST(ChooseSchedule, FailingSourceIsAWarningNotAFailedBuild) {
  struct Broken final : ScheduleSource {
    Result<std::vector<ScheduleCandidate>> candidates(const std::string&, const std::string&) override {
      return Status(ErrorCode::kUnavailable, "database is locked");
    }
  } broken;
  Fixture f;
  ScheduleChoice c = f.choose(&broken);
  EXPECT_EQ(c.source, ScheduleChoice::Source::kTemplateFallback);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("unavailable: database is locked"), std::string::npos) << c.warnings[0];
}

TEST(ChooseSchedule, TheChoiceIsDeterministic) {
  Fixture f;
  f.add(record(1, out_of_range_iter(f.inst), 0.001));
  f.add(record(2, split_output(f.inst, 16), 0.002));
  f.add(record(3, split_output(f.inst, 8), 0.002));
  ScheduleChoice a = f.choose(), b = f.choose();
  EXPECT_EQ(steps_to_json(a.state.steps()), steps_to_json(b.state.steps()));
  EXPECT_EQ(a.explanation, b.explanation);
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_EQ(a.record->record_id, 2);
}

TEST(CompileReport, ListsEachWorkloadWithoutARecordOnce) {
  Fixture f;
  f.add(record(17, split_output(f.inst, 8), 0.002));
  ops::OpInstance softmax = op("softmax:M=8,N=32");
  ops::OpInstance dense = op("dense:M=4,N=16,K=8");
  FixedScheduleSource empty;
  CompileReport report;
  report.add("matmul", f.inst.dag->workload_key(), f.choose());
  for (int layer = 0; layer < 2; ++layer)  // the same softmax twice: one workload
    report.add("softmax", softmax.dag->workload_key(), choose_schedule(softmax.dag, softmax.op, f.t, &empty).value());
  report.add("dense", dense.dag->workload_key(), choose_schedule(dense.dag, dense.op, f.t, &empty).value());
  EXPECT_EQ(report.kernels, 4);
  EXPECT_EQ(report.from_records, 1);
  ASSERT_EQ(report.without_record.size(), 2u);
  EXPECT_NE(report.without_record[0].find("softmax (workload " + softmax.dag->workload_key().substr(0, 8) +
                                          "): generic-fallback"),
            std::string::npos)
      << report.without_record[0];
  EXPECT_NE(report.without_record[1].find("dense"), std::string::npos);
  EXPECT_NE(report.without_record[1].find("template-fallback"), std::string::npos);
  EXPECT_NE(report.to_string().find("2 workloads compiled without a record"), std::string::npos) << report.to_string();
}

}  // namespace
}  // namespace tessera
