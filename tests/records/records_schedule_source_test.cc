// RecordsScheduleSource: the best records of the exact target, else of a
// compatible one (same triple and vector width), never of an incompatible
// one. (Target strings are read by base/target.h: tests/base/target_test.cc.)
#include "records/records_schedule_source.h"

#include "test_util.h"

namespace tessera::records {
namespace {

using testing::key_of;
using testing::ok_record;
using testing::TempDir;

const std::string kIcelake = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -num-cores=2";
const std::string kSapphire = "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids -num-cores=2";
const std::string kCascade = "llvm -mtriple=x86_64-linux-gnu -mcpu=cascadelake -num-cores=2";
const std::string kHaswell = "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -num-cores=2";
const std::string kNeon = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=4";

// A store in a temp directory with records appended through Store::append.
struct Db {
  TempDir dir;
  Store store = Store::open(dir.file("tessera.db")).value();
  int next = 0;
  int64_t add(const std::string& key, const std::string& target, double cost) {
    EXPECT_TRUE(store.append({ok_record(key, target, cost, ++next)}).is_ok());
    return store.count().value();  // ids are insertion order, from 1
  }
};

TEST(RecordsScheduleSource, ExactTargetBestFirst) {
  Db db;
  const int64_t slow = db.add(key_of(1), kIcelake, 0.004);
  const int64_t fast = db.add(key_of(1), kIcelake, 0.002);
  const int64_t mid = db.add(key_of(1), kIcelake, 0.003);
  ASSERT_OK(db.store.append({testing::error_record(key_of(1), kIcelake, "crash", 99)}));
  db.add(key_of(1), kSapphire, 0.001);  // faster, but another target: not asked for
  db.add(key_of(2), kIcelake, 0.0005);  // another workload
  RecordsScheduleSource source(db.store);
  ASSERT_OK_AND_ASSIGN(auto c, source.candidates(key_of(1), kIcelake));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].record_id, fast);
  EXPECT_EQ(c[1].record_id, mid);
  EXPECT_EQ(c[2].record_id, slow);
  EXPECT_DOUBLE_EQ(c[0].cost_s, 0.002);
  EXPECT_EQ(c[0].match, TargetMatch::kExact);
  EXPECT_EQ(c[0].target, kIcelake);
  EXPECT_EQ(c[0].why, "best of 3 records on this target");
  EXPECT_EQ(c[1].why, "#2 of 3 records on this target");
  EXPECT_EQ(c[0].considered, 3);
  EXPECT_EQ(c[0].device_key, "x86-icelake");
  EXPECT_EQ(c[0].steps_json, canonical_json(testing::steps_of(2), "steps").value());  // as stored
}

TEST(RecordsScheduleSource, KBoundsTheCandidates) {
  Db db;
  for (int i = 0; i < 8; ++i) db.add(key_of(1), kIcelake, 0.001 * (8 - i));
  RecordsScheduleSource source(db.store, 2);
  ASSERT_OK_AND_ASSIGN(auto c, source.candidates(key_of(1), kIcelake));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c[0].cost_s, 0.001);
  EXPECT_EQ(c[0].why, "best of 8 records on this target");
}

TEST(RecordsScheduleSource, CompatibleTargetWhenTheExactOneHasNone) {
  Db db;
  const int64_t icelake = db.add(key_of(1), kIcelake, 0.002);
  const int64_t cascade = db.add(key_of(1), kCascade, 0.003);
  db.add(key_of(1), kHaswell, 0.0001);  // 256-bit: never, however fast
  db.add(key_of(1), kNeon, 0.0001);     // another triple: never
  RecordsScheduleSource source(db.store);
  ASSERT_OK_AND_ASSIGN(auto c, source.candidates(key_of(1), kSapphire));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].record_id, icelake);
  EXPECT_EQ(c[1].record_id, cascade);
  EXPECT_EQ(c[0].match, TargetMatch::kCompatible);
  EXPECT_EQ(c[0].target, kIcelake);
  EXPECT_EQ(c[0].why,
            "best of 1 record on a compatible target (same x86_64-linux-gnu triple and 512-bit vectors; "
            "CPU icelake-server, not sapphirerapids): '" +
                kIcelake + "'");
}

TEST(RecordsScheduleSource, IncompatibleTargetsAreNotUsed) {
  Db db;
  db.add(key_of(1), kHaswell, 0.001);                                           // other vector width
  db.add(key_of(1), kNeon, 0.001);                                              // other triple
  db.add(key_of(1), "llvm -mtriple=x86_64-linux-gnu -mcpu=futurelake", 0.001);  // unknown CPU: does not parse
  RecordsScheduleSource source(db.store);
  ASSERT_OK_AND_ASSIGN(auto c, source.candidates(key_of(1), kIcelake));
  EXPECT_TRUE(c.empty());
  ASSERT_OK_AND_ASSIGN(auto none, source.candidates(key_of(7), kIcelake));
  EXPECT_TRUE(none.empty());
}

// A record of a machine with AMX whose schedule runs on its tiles is no
// candidate for a target without them; its other records are.
TEST(RecordsScheduleSource, SchedulesOnAmxTilesOnlyForTargetsWithThem) {
  Db db;
  Record tiles = ok_record(key_of(1), kSapphire, 0.001, 1);
  tiles.steps_json = R"([{"kind":"annotate","stage":2,"iter":3,"ann":"tensorize"}])";
  ASSERT_OK(db.store.append({tiles, ok_record(key_of(1), kSapphire, 0.002, 2)}));
  RecordsScheduleSource source(db.store);
  ASSERT_OK_AND_ASSIGN(auto icelake, source.candidates(key_of(1), kIcelake));
  ASSERT_EQ(icelake.size(), 1u);
  EXPECT_DOUBLE_EQ(icelake[0].cost_s, 0.002);
  ASSERT_OK_AND_ASSIGN(auto emerald,
                       source.candidates(key_of(1), "llvm -mtriple=x86_64-linux-gnu -mcpu=emeraldrapids -num-cores=2"));
  ASSERT_EQ(emerald.size(), 2u);
  EXPECT_DOUBLE_EQ(emerald[0].cost_s, 0.001);
}

TEST(RecordsScheduleSource, ErrorRecordsAreNeverCandidates) {
  Db db;
  ASSERT_OK(db.store.append({testing::error_record(key_of(1), kIcelake, "wrong-answer", 1),
                             testing::error_record(key_of(1), kCascade, "crash", 2)}));
  RecordsScheduleSource source(db.store);
  ASSERT_OK_AND_ASSIGN(auto c, source.candidates(key_of(1), kIcelake));
  EXPECT_TRUE(c.empty());
}

TEST(RecordsScheduleSource, CompatibleOrderIsDeterministic) {
  // Equal costs on two compatible targets: ordered by target string, then id,
  // whatever the insertion order.
  for (bool reversed : {false, true}) {
    Db db;
    const std::string first = reversed ? kIcelake : kCascade, second = reversed ? kCascade : kIcelake;
    db.add(key_of(1), first, 0.002);
    db.add(key_of(1), second, 0.002);
    RecordsScheduleSource source(db.store);
    ASSERT_OK_AND_ASSIGN(auto c, source.candidates(key_of(1), kSapphire));
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].target, kCascade) << "reversed " << reversed;
    EXPECT_EQ(c[1].target, kIcelake) << "reversed " << reversed;
  }
}

TEST(RecordsScheduleSource, MalformedKeyIsAUserError) {
  Db db;
  RecordsScheduleSource source(db.store);
  auto c = source.candidates("matmul", kIcelake);
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::records
