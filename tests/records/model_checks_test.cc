// The model checks of schema 9: after a tuning, each kernel's best record
// checked in the model against its fallback; compile passes over a record
// that made the model slower while it is still the workload's best.
#include <cmath>

#include "records/records_schedule_source.h"
#include "records/schema.h"
#include "records/sqlite.h"
#include "records/store.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::key_of;
using testing::kOtherTarget;
using testing::kTarget;
using testing::ok_record;
using testing::TempDir;

ModelCheck model_check(int key, int64_t record_id, bool keeps_fallback, double timestamp) {
  ModelCheck c;
  c.workload_key = key_of(key);
  c.target = kTarget;
  c.record_id = record_id;
  c.record_seconds = 0.612e-3;
  c.fallback_seconds = 0.571e-3;
  c.keeps_fallback = keeps_fallback;
  c.timestamp = timestamp;
  return c;
}

// The id of the best ok record of `key` on kTarget.
int64_t best_id(Store& store, int key) {
  return store.best_k(key_of(key), kTarget, 1).value().front().id;
}

TEST(StoreModelChecks, TheNewestCheckOfAWorkloadOnATargetIsRead) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("m.db")));
  ASSERT_OK_AND_ASSIGN(int64_t session, store.begin_session({}));
  ModelCheck newer = model_check(1, 7, true, 1.8e9);
  newer.session_id = session;
  ModelCheck other_target = model_check(1, 7, false, 1.9e9);
  other_target.target = kOtherTarget;
  ASSERT_OK(store.add_model_check(newer));
  ASSERT_OK(store.add_model_check(model_check(1, 6, false, 1.7e9)));  // stored later, checked earlier
  ASSERT_OK(store.add_model_check(other_target));

  ASSERT_OK_AND_ASSIGN(std::optional<ModelCheck> latest, store.latest_model_check(key_of(1), kTarget));
  ASSERT_TRUE(latest.has_value());
  newer.id = latest->id;
  EXPECT_EQ(*latest, newer);
  EXPECT_FALSE(store.latest_model_check(key_of(2), kTarget).value().has_value());
  EXPECT_FALSE(store.latest_model_check(key_of(1), kOtherTarget).value()->keeps_fallback);
  ASSERT_OK_AND_ASSIGN(std::vector<ModelCheck> all, store.model_checks());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_DOUBLE_EQ(all.front().timestamp, 1.7e9);  // oldest first
  EXPECT_EQ(all.front().session_id, 0);            // none: stored as NULL, read as 0
}

TEST(StoreModelChecks, BadValuesAreRefusedAndNothingIsStored) {
  TempDir dir;
  const std::string path = dir.file("m.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ModelCheck bad_key = model_check(1, 7, true, 0);
    bad_key.workload_key = "fused_matmul";
    ModelCheck no_record = model_check(1, 0, true, 0);
    ModelCheck negative = model_check(1, 7, true, 0);
    negative.record_seconds = -1e-3;
    ModelCheck not_a_number = model_check(1, 7, true, 0);
    not_a_number.fallback_seconds = NAN;
    for (const ModelCheck& c : {bad_key, no_record, negative, not_a_number})
      EXPECT_EQ(store.add_model_check(c).code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(store.model_checks().value().empty());
    ASSERT_OK(store.add_model_check(model_check(1, 7, true, 0)));  // timestamp 0: now
    EXPECT_GT(store.model_checks().value().front().timestamp, 1.7e9);
  }
  OpenOptions read_only;
  read_only.read_only = true;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
  EXPECT_EQ(store.add_model_check(model_check(2, 7, true, 0)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store.model_checks().value().size(), 1u);
}

TEST(StoreModelChecks, AVersion8DatabaseReadsNoneReadOnlyAndMigratesWhenWritten) {
  TempDir dir;
  const std::string path = dir.file("v8.db");
  {
    ASSERT_OK_AND_ASSIGN(sql::Connection conn,
                         sql::Connection::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1000, {}));
    ASSERT_OK(migrate(conn, 8));
  }
  const std::string before = testing::read_bytes(path);
  {
    OpenOptions read_only;
    read_only.read_only = true;
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
    EXPECT_TRUE(store.model_checks().value().empty());
    EXPECT_FALSE(store.latest_model_check(key_of(1), kTarget).value().has_value());
  }
  EXPECT_EQ(testing::read_bytes(path), before);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  ASSERT_OK(store.add_model_check(model_check(1, 7, true, 1.7e9)));
  EXPECT_EQ(store.model_checks().value().size(), 1u);
}

TEST(ModelCheckedSource, ARecordThatMadeTheModelSlowerIsPassedOverWhileItIsTheBest) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("m.db")));
  ASSERT_OK(store.append({ok_record(key_of(1), kTarget, 2e-3, 1), ok_record(key_of(1), kTarget, 1e-3, 2),
                          ok_record(key_of(2), kTarget, 1e-3, 3)}));
  RecordsScheduleSource source(store);
  ASSERT_OK_AND_ASSIGN(int64_t session, store.begin_session({}));
  ModelCheck lost = model_check(1, best_id(store, 1), true, 0);
  lost.session_id = session;
  ASSERT_OK(store.add_model_check(lost));
  ASSERT_OK(store.add_model_check(model_check(2, best_id(store, 2), false, 0)));  // held: kept

  EXPECT_TRUE(source.candidates(key_of(1), kTarget).value().empty());
  EXPECT_EQ(source.passed_over(key_of(1), kTarget).value(),
            "the model ran 0.612 ms with record " + std::to_string(lost.record_id) +
                ", 0.571 ms with the fallback (session " + std::to_string(session) + ")");
  EXPECT_EQ(source.candidates(key_of(2), kTarget).value().size(), 1u);
  EXPECT_EQ(source.passed_over(key_of(2), kTarget).value(), "");
  EXPECT_EQ(source.passed_over(key_of(3), kTarget).value(), "");  // no record at all

  // A newer, better record is no longer the one that lost: it is proposed.
  ASSERT_OK(store.append({ok_record(key_of(1), kTarget, 0.5e-3, 4)}));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleCandidate> now, source.candidates(key_of(1), kTarget));
  ASSERT_FALSE(now.empty());
  EXPECT_NE(now.front().record_id, lost.record_id);
  EXPECT_EQ(source.passed_over(key_of(1), kTarget).value(), "");
}

}  // namespace
}  // namespace tessera::records
