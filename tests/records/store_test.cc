// The Store's queries and writes: append, best-k, records of a task, measured,
// stats, prune, sessions and workloads.
#include "records/store.h"

#include "records/sqlite.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::error_record;
using testing::key_of;
using testing::kOtherTarget;
using testing::kTarget;
using testing::ok_record;
using testing::TempDir;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = Store::open(dir_.file("tessera.db"));
    ASSERT_TRUE(opened) << opened.status().to_string();
    store_.emplace(std::move(opened).value());
  }
  Store& store() { return *store_; }

  TempDir dir_;
  std::optional<Store> store_;
};

TEST_F(StoreTest, AppendKeepsEveryFieldAndCanonicalizesJson) {
  Record r = ok_record(key_of(1), kTarget, 0.004, 3);
  r.space = SpaceKind::kKnob;
  r.steps_json = R"([ { "kind" : "split", "factors" : [4, 8] } ])";
  r.knob_config_json = R"({"tile_y": 4, "tile_x": 8})";
  r.costs = {0.003, 0.005};
  r.session_id = 0;
  ASSERT_OK(store().append({r}));
  ASSERT_OK_AND_ASSIGN(auto stored, store().records_of(key_of(1), kTarget));
  ASSERT_EQ(stored.size(), 1u);
  Record expected = r;
  expected.id = stored[0].id;
  expected.steps_json = R"([{"factors":[4,8],"kind":"split"}])";
  expected.knob_config_json = R"({"tile_x":8,"tile_y":4})";
  EXPECT_EQ(stored[0], expected);
  EXPECT_DOUBLE_EQ(stored[0].mean_cost(), 0.004);
}

TEST_F(StoreTest, MalformedRecordRejectsTheWholeBatch) {
  std::vector<Record> batch = {ok_record(key_of(1), kTarget, 0.001, 1), ok_record(key_of(1), kTarget, 0.002, 2)};
  batch[1].steps_json = "[{\"kind\": ";  // truncated JSON
  Status st = store().append(batch);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("record 1 of the batch"), std::string::npos) << st.message();
  EXPECT_EQ(store().count().value(), 0);
}

TEST_F(StoreTest, RecordChecksNameTheProblem) {
  auto code_of = [&](Record r) { return store().append({r}).code(); };
  Record bad_key = ok_record("ABC", kTarget, 0.001);
  EXPECT_EQ(code_of(bad_key), ErrorCode::kInvalidArgument);
  Record no_costs = ok_record(key_of(1), kTarget, 0.001);
  no_costs.costs.clear();
  EXPECT_EQ(code_of(no_costs), ErrorCode::kInvalidArgument);
  Record not_array = ok_record(key_of(1), kTarget, 0.001);
  not_array.steps_json = R"({"kind":"split"})";
  EXPECT_EQ(code_of(not_array), ErrorCode::kInvalidArgument);
  Record negative = ok_record(key_of(1), kTarget, -1);
  EXPECT_EQ(code_of(negative), ErrorCode::kInvalidArgument);
  Record no_target = ok_record(key_of(1), "", 0.001);
  EXPECT_EQ(code_of(no_target), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store().count().value(), 0);
}

TEST_F(StoreTest, BestKOrdersByMeanCostAndExcludesErrors) {
  std::vector<Record> batch = {
      ok_record(key_of(1), kTarget, 0.005, 1),
      error_record(key_of(1), kTarget, "crash", 2),
      ok_record(key_of(1), kTarget, 0.001, 3),
      ok_record(key_of(1), kTarget, 0.003, 4),
      error_record(key_of(1), kTarget, "wrong-answer", 5),
      ok_record(key_of(1), kTarget, 0.002, 6),
  };
  batch[4].costs = {0.0001};  // a fast wrong answer must never win
  ASSERT_OK(store().append(batch));
  ASSERT_OK_AND_ASSIGN(auto best, store().best_k(key_of(1), kTarget, 3));
  ASSERT_EQ(best.size(), 3u);
  EXPECT_DOUBLE_EQ(best[0].mean_cost(), 0.001);
  EXPECT_DOUBLE_EQ(best[1].mean_cost(), 0.002);
  EXPECT_DOUBLE_EQ(best[2].mean_cost(), 0.003);
  ASSERT_OK_AND_ASSIGN(auto all, store().best_k(key_of(1), kTarget, 100));
  EXPECT_EQ(all.size(), 4u);
  for (const Record& r : all) EXPECT_TRUE(r.ok());
}

TEST_F(StoreTest, BestKTiesGoToTheEarlierRecord) {
  ASSERT_OK(store().append({ok_record(key_of(1), kTarget, 0.002, 1)}));
  ASSERT_OK(store().append({ok_record(key_of(1), kTarget, 0.002, 2)}));
  ASSERT_OK_AND_ASSIGN(auto best, store().best_k(key_of(1), kTarget, 1));
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].steps_json, store().records_of(key_of(1), kTarget).value()[0].steps_json);
}

TEST_F(StoreTest, BestKKeepsTargetsAndWorkloadsApart) {
  ASSERT_OK(store().append({ok_record(key_of(1), kTarget, 0.004, 1), ok_record(key_of(1), kOtherTarget, 0.001, 2),
                            ok_record(key_of(2), kTarget, 0.0005, 3)}));
  ASSERT_OK_AND_ASSIGN(auto best, store().best_k(key_of(1), kTarget, 5));
  ASSERT_EQ(best.size(), 1u);
  EXPECT_DOUBLE_EQ(best[0].mean_cost(), 0.004);
  EXPECT_TRUE(store().best_k(key_of(3), kTarget, 5).value().empty());
  EXPECT_EQ(store().best_k(key_of(1), kTarget, 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(StoreTest, BestKIsServedByThePartialIndexWithoutSorting) {
  ASSERT_OK_AND_ASSIGN(auto conn, sql::Connection::open(dir_.file("tessera.db"), SQLITE_OPEN_READONLY, 1000, {}));
  ASSERT_OK_AND_ASSIGN(auto plan,
                       conn.prepare("EXPLAIN QUERY PLAN SELECT id FROM records WHERE workload = ?1 AND target = ?2 "
                                    "AND error_kind = 'ok' ORDER BY mean_cost, id LIMIT ?3"));
  std::string details;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(bool row, plan.step());
    if (!row) break;
    details += plan.column_text(3) + "\n";
  }
  EXPECT_NE(details.find("records_best"), std::string::npos) << details;
  EXPECT_EQ(details.find("TEMP B-TREE"), std::string::npos) << details;
}

TEST_F(StoreTest, RecordsOfReturnsEveryOutcomeInTimeOrder) {
  Record late = ok_record(key_of(1), kTarget, 0.001, 30);
  Record early = error_record(key_of(1), kTarget, "build-timeout", 10);
  Record middle = ok_record(key_of(1), kTarget, 0.002, 20);
  ASSERT_OK(store().append({late, early, middle, ok_record(key_of(1), kOtherTarget, 0.001, 5)}));
  ASSERT_OK_AND_ASSIGN(auto records, store().records_of(key_of(1), kTarget));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].error_kind, "build-timeout");
  EXPECT_LT(records[0].timestamp, records[1].timestamp);
  EXPECT_LT(records[1].timestamp, records[2].timestamp);
}

TEST_F(StoreTest, MeasuredFindsAStepListInAnyLayoutAndAnyOutcome) {
  ASSERT_OK(store().append({error_record(key_of(1), kTarget, "invalid-schedule", 4)}));
  const std::string unrelated = R"([ {"vectorize_axis_unused":null} ])";
  EXPECT_TRUE(store().measured(key_of(1), kTarget, testing::steps_of(4)).value());
  // Same steps, other key order and spacing.
  EXPECT_TRUE(store()
                  .measured(key_of(1), kTarget,
                            R"([{"stage":"C","kind":"split","factors":[4,8],"axis":0},
          {"axis":3,"stage":"C","kind":"vectorize"}])")
                  .value());
  EXPECT_FALSE(store().measured(key_of(1), kTarget, testing::steps_of(5)).value());
  EXPECT_FALSE(store().measured(key_of(1), kOtherTarget, testing::steps_of(4)).value());
  EXPECT_FALSE(store().measured(key_of(2), kTarget, testing::steps_of(4)).value());
  EXPECT_FALSE(store().measured(key_of(1), kTarget, unrelated).value());
  EXPECT_EQ(store().measured(key_of(1), kTarget, "[oops").status().code(), ErrorCode::kInvalidArgument);
}

// An infrastructure error says nothing about the steps: they count as not
// measured, so a resumed run measures them.
TEST_F(StoreTest, AnInfrastructureErrorIsNotAMeasurement) {
  Record lost = error_record(key_of(1), kTarget, "no-worker", 4);
  lost.infrastructure = true;
  ASSERT_OK(store().append({lost}));
  EXPECT_FALSE(store().measured(key_of(1), kTarget, testing::steps_of(4)).value());
  ASSERT_OK(store().append({error_record(key_of(1), kTarget, "crash", 4)}));
  EXPECT_TRUE(store().measured(key_of(1), kTarget, testing::steps_of(4)).value());
  RecordFilter infra;
  infra.infrastructure_only = true;
  EXPECT_EQ(store().count(infra).value(), 1);
}

TEST_F(StoreTest, AnOkRecordCannotBeAnInfrastructureError) {
  Record r = ok_record(key_of(1), kTarget, 0.001, 1);
  r.infrastructure = true;
  EXPECT_EQ(store().append({r}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store().count().value(), 0);
}

TEST_F(StoreTest, StatsCountInfrastructureErrorsApartAndPruneDropsThem) {
  Record lost = error_record(key_of(1), kTarget, "no-result", 3);
  lost.infrastructure = true;
  ASSERT_OK(
      store().append({ok_record(key_of(1), kTarget, 0.002, 1), error_record(key_of(1), kTarget, "crash", 2), lost}));
  ASSERT_OK_AND_ASSIGN(auto stats, store().stats());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].count, 3);
  EXPECT_EQ(stats[0].ok_count, 1);
  EXPECT_EQ(stats[0].infrastructure_count, 1);
  PruneOptions keep_all;
  ASSERT_OK_AND_ASSIGN(PruneReport none, store().prune(keep_all));
  EXPECT_EQ(none.dropped_infrastructure, 0);
  PruneOptions options;
  options.drop_infrastructure = true;
  ASSERT_OK_AND_ASSIGN(PruneReport report, store().prune(options));
  EXPECT_EQ(report.dropped_infrastructure, 1);
  EXPECT_EQ(report.dropped_errors, 0);
  EXPECT_EQ(store().count().value(), 2);  // the crash is a fact: kept
}

TEST(BestOf, TheLowestMeanCostOfAnOkRecordWhateverItsSpaceTiesToTheEarlier) {
  std::vector<Record> rs = {error_record(key_of(1), kTarget, "crash", 1), ok_record(key_of(1), kTarget, 0.003, 2),
                            ok_record(key_of(1), kTarget, 0.001, 3), ok_record(key_of(1), kTarget, 0.001, 4)};
  rs[2].space = SpaceKind::kManual;
  rs[2].steps_json = "[]";  // the untuned default competes like any record
  ASSERT_NE(records::best_of(rs), nullptr);
  EXPECT_EQ(records::best_of(rs), &rs[2]);
  rs[2].id = 9;
  rs[3].id = 5;
  EXPECT_EQ(records::best_of(rs), &rs[3]);
  EXPECT_EQ(records::best_of({rs[0]}), nullptr);
}

TEST_F(StoreTest, StatsCountPerWorkloadAndTarget) {
  ASSERT_OK(store().add_workload({key_of(1), "C = A @ B", "matmul", "64x64x64 f32", 2.0 * 64 * 64 * 64}));
  ASSERT_OK(store().append({ok_record(key_of(1), kTarget, 0.002, 1), ok_record(key_of(1), kTarget, 0.001, 9),
                            error_record(key_of(1), kTarget, "crash", 3),
                            error_record(key_of(1), kOtherTarget, "crash", 4), ok_record(key_of(2), kTarget, 0.5, 2)}));
  ASSERT_OK_AND_ASSIGN(auto stats, store().stats());
  ASSERT_EQ(stats.size(), 3u);
  // Ordered by workload, then target ("llvm -mtriple=aarch64..." < "llvm -mtriple=x86_64...").
  EXPECT_EQ(stats[0].target, kOtherTarget);
  EXPECT_EQ(stats[0].count, 1);
  EXPECT_EQ(stats[0].ok_count, 0);
  EXPECT_FALSE(stats[0].best_cost.has_value());
  EXPECT_EQ(stats[1].workload_key, key_of(1));
  EXPECT_EQ(stats[1].target, kTarget);
  EXPECT_EQ(stats[1].op_name, "matmul");
  EXPECT_DOUBLE_EQ(stats[1].flop_count, 2.0 * 64 * 64 * 64);
  EXPECT_EQ(stats[1].count, 3);
  EXPECT_EQ(stats[1].ok_count, 2);
  EXPECT_DOUBLE_EQ(*stats[1].best_cost, 0.001);
  EXPECT_DOUBLE_EQ(stats[1].last_timestamp, 1'700'000'009.0);
  EXPECT_EQ(stats[2].workload_key, key_of(2));
  EXPECT_EQ(stats[2].op_name, "");
}

TEST_F(StoreTest, PruneKeepsTheBestKAndDropsOnlyOldErrors) {
  std::vector<Record> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(ok_record(key_of(1), kTarget, 0.001 * (6 - i), i));
  for (int i = 0; i < 3; ++i) batch.push_back(ok_record(key_of(1), kOtherTarget, 0.001 * (i + 1), 10 + i));
  batch.push_back(error_record(key_of(1), kTarget, "crash", 0));  // t = 1'700'000'000
  Record recent = error_record(key_of(1), kTarget, "run-timeout", 0);
  recent.timestamp = 1'700'086'000;  // 400 s before "now"
  batch.push_back(recent);
  ASSERT_OK(store().append(batch));
  PruneOptions options;
  options.keep_k = 2;
  options.drop_errors_older_than_seconds = 3600;
  options.now = 1'700'086'400;
  ASSERT_OK_AND_ASSIGN(PruneReport report, store().prune(options));
  EXPECT_EQ(report.dropped_ok, 4 + 1);
  EXPECT_EQ(report.dropped_errors, 1);
  ASSERT_OK_AND_ASSIGN(auto best, store().best_k(key_of(1), kTarget, 10));
  ASSERT_EQ(best.size(), 2u);
  EXPECT_DOUBLE_EQ(best[0].mean_cost(), 0.001);
  EXPECT_DOUBLE_EQ(best[1].mean_cost(), 0.002);
  EXPECT_EQ(store().best_k(key_of(1), kOtherTarget, 10).value().size(), 2u);
  EXPECT_EQ(store().count().value(), 2 + 2 + 1);
  options.keep_k = 0;
  EXPECT_EQ(store().prune(options).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(StoreTest, SessionsRecordProvenanceAndEnd) {
  SessionInfo info{0, "tessera tune --op matmul", "farm-01", "0.1.0", "19.1.7", 42, 1'700'000'000, {}};
  ASSERT_OK_AND_ASSIGN(int64_t id, store().begin_session(info));
  Record r = ok_record(key_of(1), kTarget, 0.001);
  r.session_id = id;
  ASSERT_OK(store().append({r}));
  ASSERT_OK(store().end_session(id, 1'700'000'100));
  EXPECT_EQ(store().end_session(id + 1).code(), ErrorCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(auto sessions, store().sessions());
  ASSERT_EQ(sessions.size(), 1u);
  info.id = id;
  info.ended = 1'700'000'100;
  EXPECT_EQ(sessions[0], info);
  EXPECT_EQ(store().records_of(key_of(1), kTarget).value()[0].session_id, id);
  EXPECT_EQ(store().find_or_add_session(info).value(), id);
}

TEST_F(StoreTest, AddingAWorkloadAgainFillsOnlyUnknownFields) {
  ASSERT_OK(store().add_workload({key_of(1), "", "matmul", "", 0}));
  ASSERT_OK(store().add_workload({key_of(1), "C = A @ B", "", "8x8x8", 1024}));
  ASSERT_OK(store().add_workload({key_of(1), "", "", "", 0}));
  ASSERT_OK_AND_ASSIGN(auto w, store().workload(key_of(1)));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(*w, (WorkloadInfo{key_of(1), "C = A @ B", "matmul", "8x8x8", 1024}));
  EXPECT_FALSE(store().workload(key_of(2)).value().has_value());
  EXPECT_EQ(store().add_workload({"not-a-key", "", "", "", 0}).code(), ErrorCode::kInvalidArgument);
}

TEST_F(StoreTest, ListFiltersAndOrdersNewestFirst) {
  ASSERT_OK(store().append({ok_record(key_of(1), kTarget, 0.001, 1), error_record(key_of(1), kTarget, "crash", 3),
                            ok_record(key_of(2), kTarget, 0.001, 2)}));
  RecordFilter filter;
  filter.workload_key = key_of(1);
  filter.newest_first = true;
  ASSERT_OK_AND_ASSIGN(auto records, store().list(filter));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].error_kind, "crash");
  filter.ok_only = true;
  EXPECT_EQ(store().count(filter).value(), 1);
  filter = RecordFilter{};
  filter.limit = 2;
  EXPECT_EQ(store().list(filter).value().size(), 2u);
}

}  // namespace
}  // namespace tessera::records
