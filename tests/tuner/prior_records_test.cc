// Transfer through --prior-db: another store's records of a workload,
// measured on other targets, become the cost model's training records, each
// scored within its own target; this target's own records, infrastructure
// errors and steps that do not replay are left out; and a tuning job warmed
// by them stores none of them.
#include "tuner/prior_records.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/step.h"
#include "compiler/space/choose/apply_best.h"
#include "records/store.h"
#include "tests/records/test_util.h"
#include "tuner/job.h"

namespace tessera::tuner {
namespace {

constexpr const char* kZen4 = "llvm -mtriple=x86_64-linux-gnu -mcpu=znver4 -num-cores=2";
constexpr const char* kNeoverse = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -num-cores=4";

records::Record record(const ops::OpInstance& op, const std::string& target, const std::string& steps,
                       std::vector<double> costs) {
  records::Record r;
  r.workload_key = op.dag->workload_key();
  r.target = target;
  r.steps_json = steps;
  r.costs = std::move(costs);
  return r;
}

// A store with matmul 64^3's records: two on Zen 4 (1 and 2 ms), one on a
// Neoverse (4 ms) and a wrong answer there, and what must be left out: one
// of this machine's own, an infrastructure error, steps that do not replay.
void write_prior(const std::string& path, const ops::OpInstance& op) {
  const std::string steps = steps_to_json(choose_schedule(op.dag, op.op, host_target(), nullptr).value().state.steps());
  std::vector<records::Record> batch = {record(op, kZen4, steps, {1e-3}), record(op, kZen4, "[]", {2e-3}),
                                        record(op, kNeoverse, steps, {4e-3}), record(op, kNeoverse, steps, {})};
  batch[3].error_kind = "wrong-answer";
  batch.push_back(record(op, host_target().to_string(), steps, {0.5e-3}));
  records::Record lost = record(op, kZen4, steps, {});
  lost.error_kind = "no-worker";
  lost.infrastructure = true;
  batch.push_back(lost);
  records::Record stale = record(op, kZen4, R"([{"kind":"split","stage":9,"iter":0,"factors":[4]}])", {1e-4});
  batch.push_back(stale);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].timestamp = 1000 + static_cast<double>(i);
  auto store = records::Store::open(path);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ASSERT_TRUE(store->append(batch).is_ok());
}

TEST(PriorRecords, OtherTargetsRecordsAreScoredWithinTheirOwnTarget) {
  records::testing::TempDir dir;
  const ops::OpInstance op = ops::parse_op_spec("matmul:M=64,N=64,K=64").value();
  write_prior(dir.file("prior.db"), op);
  auto prior = read_prior_records(dir.file("prior.db"), {op.dag}, host_target().to_string());
  ASSERT_TRUE(prior.is_ok()) << prior.status().to_string();
  ASSERT_EQ(prior->per_task.size(), 1u);
  const std::vector<costmodel::TrainingRecord>& t = prior->per_task[0];
  // Newest first: the Neoverse's wrong answer and 4 ms, then Zen 4's 2 and 1 ms.
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(prior->records(), 4);
  EXPECT_EQ(prior->workloads(), 1);
  EXPECT_EQ(prior->same_target, 1);
  EXPECT_EQ(prior->targets, (std::set<std::string>{kZen4, kNeoverse}));
  EXPECT_DOUBLE_EQ(t[0].throughput, 0);    // the wrong answer
  EXPECT_DOUBLE_EQ(t[1].throughput, 1);    // the Neoverse's best, by its own scale
  EXPECT_DOUBLE_EQ(t[2].throughput, 0.5);  // Zen 4: 2 ms against its best 1 ms
  EXPECT_DOUBLE_EQ(t[3].throughput, 1);
  EXPECT_EQ(t[0].group, t[1].group);
  EXPECT_EQ(t[2].group, t[3].group);
  EXPECT_NE(t[0].group, t[2].group);
  EXPECT_EQ(t[0].features.size(), t[2].features.size());
  const std::string line = describe_prior(*prior, 1, "prior.db");
  EXPECT_EQ(line.rfind("prior: 4 records of 1 of these 1 workload from prior.db, measured on ", 0), 0u) << line;
  EXPECT_NE(line.find("1 of this target's own left out"), std::string::npos) << line;
}

TEST(PriorRecords, AWorkloadTheStoreDoesNotHoldGetsNothing) {
  records::testing::TempDir dir;
  const ops::OpInstance op = ops::parse_op_spec("matmul:M=64,N=64,K=64").value();
  const ops::OpInstance other = ops::parse_op_spec("matmul:M=32,N=64,K=64").value();
  write_prior(dir.file("prior.db"), op);
  auto prior = read_prior_records(dir.file("prior.db"), {other.dag, op.dag}, host_target().to_string());
  ASSERT_TRUE(prior.is_ok()) << prior.status().to_string();
  EXPECT_TRUE(prior->per_task[0].empty());
  EXPECT_EQ(prior->per_task[1].size(), 4u);
  EXPECT_EQ(prior->workloads(), 1);
  const std::string line = describe_prior(*prior, 2, "p.db");
  EXPECT_EQ(line.rfind("prior: 4 records of 1 of these 2 workloads from p.db, measured on ", 0), 0u) << line;
}

TEST(PriorRecords, AMissingOrForeignFileIsAClearErrorAndNothingIsCreated) {
  records::testing::TempDir dir;
  const ops::OpInstance op = ops::parse_op_spec("matmul:M=64,N=64,K=64").value();
  const std::string missing = dir.file("missing.db");
  auto prior = read_prior_records(missing, {op.dag}, host_target().to_string());
  ASSERT_FALSE(prior.is_ok());
  EXPECT_NE(prior.status().message().find("cannot read the prior records in " + missing), std::string::npos);
  EXPECT_EQ(std::fopen(missing.c_str(), "r"), nullptr);
  const std::string text = dir.file("notes.db");
  FILE* f = std::fopen(text.c_str(), "w");
  std::fputs("not a database\n", f);
  std::fclose(f);
  prior = read_prior_records(text, {op.dag}, host_target().to_string());
  ASSERT_FALSE(prior.is_ok());
  EXPECT_NE(prior.status().message().find(text), std::string::npos);
}

// A job warmed by the prior says so, and its own store holds only what it
// measured on this machine.
TEST(PriorRecords, AJobWarmedByThePriorStoresNoneOfIt) {
  records::testing::TempDir dir;
  const ops::OpInstance op = ops::parse_op_spec("matmul:M=64,N=64,K=64").value();
  write_prior(dir.file("prior.db"), op);
  TuneConfig c = parse_tune_config({{"op", {"matmul:M=64,N=64,K=64"}},
                                    {"trials", {"4"}},
                                    {"batch", {"4"}},
                                    {"repeat", {"1"}},
                                    {"min-repeat-ms", {"1"}},
                                    {"threads", {"1"}},
                                    {"space", {"knob"}},
                                    {"db", {dir.file("own.db")}},
                                    {"prior-db", {dir.file("prior.db")}}},
                                   false)
                     .value();
  c.command_line = "prior_records_test";
  char* text = nullptr;
  size_t size = 0;
  FILE* log = open_memstream(&text, &size);
  auto job = TuneJob::open(c, {}, log);
  std::fflush(log);
  const std::string logged(text, size);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  EXPECT_NE(logged.find("prior: 4 records of 1 of these 1 workload"), std::string::npos) << logged;
  auto summary = (*job)->run(nullptr, nullptr);
  std::fclose(log);
  std::free(text);
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  auto all = (*job)->store().list({});
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all->size(), 6u);  // the 4 trials, the untuned default and the fallback
  for (const records::Record& r : *all) EXPECT_EQ(r.target, host_target().to_string());
}

TEST(PriorRecords, AJobWithAMissingPriorFailsBeforeItsStoreIsCreated) {
  records::testing::TempDir dir;
  TuneConfig c =
      parse_tune_config(
          {{"op", {"matmul:M=64,N=64,K=64"}}, {"db", {dir.file("own.db")}}, {"prior-db", {dir.file("no.db")}}}, false)
          .value();
  auto job = TuneJob::open(c, {}, nullptr);
  ASSERT_FALSE(job.is_ok());
  EXPECT_NE(job.status().message().find(dir.file("no.db")), std::string::npos) << job.status().to_string();
  EXPECT_EQ(std::fopen(dir.file("own.db").c_str(), "r"), nullptr);
  auto empty = parse_tune_config({{"op", {"matmul:M=64,N=64,K=64"}}, {"prior-db", {""}}}, false);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().message(), "--prior-db needs the path of a records database");
}

}  // namespace
}  // namespace tessera::tuner
