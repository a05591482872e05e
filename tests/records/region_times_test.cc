// The region times of schema 8: regions an external backend can run, timed
// both ways, stored by `tune` and read by `compile --byoc auto`.
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
using testing::TempDir;

RegionTime region_time(int key, double backend_s, double tessera_s, double timestamp, std::string backend = "dnnl") {
  RegionTime t;
  t.region_key = key_of(key);
  t.backend = std::move(backend);
  t.target = kTarget;
  t.operators = "conv1,relu1";
  t.backend_seconds = backend_s;
  t.tessera_seconds = tessera_s;
  t.tessera_basis = key_of(100 + key);
  t.timestamp = timestamp;
  return t;
}

TEST(StoreRegionTimes, TheNewestTimeOfARegionOnATargetAndBackendIsRead) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("r.db")));
  ASSERT_OK_AND_ASSIGN(int64_t session, store.begin_session({}));
  RegionTime old = region_time(1, 2e-3, 1e-3, 1.7e9);
  RegionTime newer = region_time(1, 1e-3, 3e-3, 1.8e9);
  newer.session_id = session;
  newer.on_backend = true;
  RegionTime other_target = region_time(1, 9e-3, 9e-3, 1.9e9);
  other_target.target = kOtherTarget;
  ASSERT_OK(store.add_region_time(newer));
  ASSERT_OK(store.add_region_time(old));  // stored later, measured earlier
  ASSERT_OK(store.add_region_time(other_target));
  ASSERT_OK(store.add_region_time(region_time(1, 5e-3, 5e-3, 2e9, "cblas")));

  ASSERT_OK_AND_ASSIGN(std::optional<RegionTime> latest, store.latest_region_time(key_of(1), kTarget, "dnnl"));
  ASSERT_TRUE(latest.has_value());
  newer.id = latest->id;
  EXPECT_EQ(*latest, newer);
  EXPECT_FALSE(store.latest_region_time(key_of(2), kTarget, "dnnl").value().has_value());
  EXPECT_DOUBLE_EQ(store.latest_region_time(key_of(1), kOtherTarget, "dnnl").value()->backend_seconds, 9e-3);
  ASSERT_OK_AND_ASSIGN(std::vector<RegionTime> all, store.region_times());
  ASSERT_EQ(all.size(), 4u);
  EXPECT_DOUBLE_EQ(all.front().timestamp, 1.7e9);  // oldest first
  EXPECT_EQ(all.front().session_id, 0);            // none: stored as NULL, read as 0

  // The compiler reads them through its schedule source.
  RecordsScheduleSource source(store);
  ASSERT_OK_AND_ASSIGN(std::optional<RegionMeasurement> m, source.region_measurement(key_of(1), kTarget, "dnnl"));
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->backend_s, 1e-3);
  EXPECT_DOUBLE_EQ(m->tessera_s, 3e-3);
  EXPECT_EQ(m->tessera_basis, key_of(101));
  EXPECT_EQ(m->session_id, session);
  EXPECT_TRUE(m->on_backend);
  EXPECT_FALSE(all.front().on_backend);
  EXPECT_FALSE(source.region_measurement(key_of(1), kTarget, "none").value().has_value());
}

TEST(StoreRegionTimes, BadValuesAreRefusedAndNothingIsStored) {
  TempDir dir;
  const std::string path = dir.file("r.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    RegionTime bad_key = region_time(1, 1e-3, 1e-3, 0);
    bad_key.region_key = "dnnl_region0";
    RegionTime no_backend = region_time(1, 1e-3, 1e-3, 0, "");
    RegionTime no_basis = region_time(1, 1e-3, 1e-3, 0);
    no_basis.tessera_basis.clear();
    for (const RegionTime& t : {bad_key, no_backend, no_basis, region_time(1, -1, 1e-3, 0),
                                region_time(1, 1e-3, NAN, 0), region_time(1, INFINITY, 1e-3, 0)})
      EXPECT_EQ(store.add_region_time(t).code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(store.region_times().value().empty());
    ASSERT_OK(store.add_region_time(region_time(1, 1e-3, 1e-3, 0)));  // timestamp 0: now
    EXPECT_GT(store.region_times().value().front().timestamp, 1.7e9);
  }
  OpenOptions read_only;
  read_only.read_only = true;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
  EXPECT_EQ(store.add_region_time(region_time(2, 1e-3, 1e-3, 0)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store.region_times().value().size(), 1u);
}

TEST(StoreRegionTimes, AVersion7DatabaseReadsNoneReadOnlyAndMigratesWhenWritten) {
  TempDir dir;
  const std::string path = dir.file("v7.db");
  {
    ASSERT_OK_AND_ASSIGN(sql::Connection conn,
                         sql::Connection::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1000, {}));
    ASSERT_OK(migrate(conn, 7));
  }
  const std::string before = testing::read_bytes(path);
  {
    OpenOptions read_only;
    read_only.read_only = true;
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
    EXPECT_TRUE(store.region_times().value().empty());
    EXPECT_FALSE(store.latest_region_time(key_of(1), kTarget, "dnnl").value().has_value());
  }
  EXPECT_EQ(testing::read_bytes(path), before);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  ASSERT_OK(store.add_region_time(region_time(1, 1e-3, 2e-3, 1.7e9)));
  EXPECT_EQ(store.region_times().value().size(), 1u);
}

}  // namespace
}  // namespace tessera::records
