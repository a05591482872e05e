// Opening databases: creation, migrations, and the files the store must refuse
// or survive (not SQLite, newer schema, another program's, read-only, locked, full).
#include "records/schema.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <cmath>
#include <csignal>

#include "compiler/te/workload_key.h"
#include "records/sqlite.h"
#include "records/store.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::ok_record;
using testing::TempDir;

Result<sql::Connection> raw(const std::string& path) {
  return sql::Connection::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1000, {});
}

int64_t user_version(const std::string& path) {
  auto conn = raw(path);
  return conn ? conn->query_int("PRAGMA user_version").value() : -1;
}

std::vector<Record> batch_of(int n, int first = 0) {
  std::vector<Record> batch;
  for (int i = 0; i < n; ++i)
    batch.push_back(ok_record(testing::key_of(1), testing::kTarget, 1e-3 * (i + 1), first + i));
  return batch;
}

TEST(StoreOpen, NewFileIsCreatedAtTheCurrentVersionInWalMode) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  { ASSERT_OK_AND_ASSIGN(Store store, Store::open(path)); }
  ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
  EXPECT_EQ(conn.query_int("PRAGMA user_version").value(), kSchemaVersion);
  EXPECT_EQ(conn.query_int("PRAGMA application_id").value(), kApplicationId);
  EXPECT_EQ(conn.query_text("PRAGMA journal_mode").value(), "wal");
}

TEST(StoreOpen, EmptyFileIsVersionZeroAndMigrated) {
  TempDir dir;
  const std::string path = dir.file("empty.db");
  testing::write_bytes(path, "");
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  ASSERT_OK(store.append(batch_of(1)));
  EXPECT_EQ(user_version(path), kSchemaVersion);
}

TEST(StoreOpen, Version1DatabaseIsMigratedAndKeepsItsRecords) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  const std::string key = testing::key_of(7);
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(migrate(conn, 1));
    // Version 1 had no steps_hash; its step text may have any layout.
    ASSERT_OK(
        conn.exec("INSERT INTO records (workload, target, space, steps, costs, mean_cost, error_kind, "
                  "build_seconds, run_seconds, timestamp) VALUES ('" +
                  key + "', '" + testing::kTarget +
                  "', 'knob', '[ {\"stage\": \"C\", \"kind\": \"split\"} ]', '[0.002]', 0.002, 'ok', 1, 1, "
                  "1700000000)"));
  }
  ASSERT_EQ(user_version(path), 1);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(user_version(path), kSchemaVersion);
  ASSERT_OK_AND_ASSIGN(auto best, store.best_k(key, testing::kTarget, 5));
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].steps_json, R"([{"kind":"split","stage":"C"}])");
  EXPECT_EQ(best[0].space, SpaceKind::kKnob);
  EXPECT_TRUE(store.measured(key, testing::kTarget, R"([{"kind":"split","stage":"C"}])").value());
}

// Version 2 had no `checked`: its records survive the migration as they
// were, marked not checked, and new ones keep what the tuner says.
TEST(StoreOpen, Version2DatabaseIsMigratedAndItsRecordsAreNotChecked) {
  TempDir dir;
  const std::string path = dir.file("v2.db");
  const std::string key = testing::key_of(7);
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(migrate(conn, 2));
    ASSERT_OK(conn.exec(
        "INSERT INTO records (workload, target, space, steps, costs, mean_cost, error_kind, "
        "build_seconds, run_seconds, timestamp, steps_hash) VALUES ('" +
        key + "', '" + testing::kTarget + "', 'sketch', '[]', '[0.002]', 0.002, 'ok', 1, 1, 1700000000, 0), ('" + key +
        "', '" + testing::kTarget +
        "', 'sketch', '[{\"kind\":\"x\"}]', '[]', NULL, 'wrong-answer', 1, 1, 1700000001, 0)"));
  }
  ASSERT_EQ(user_version(path), 2);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(user_version(path), kSchemaVersion);
  ASSERT_OK_AND_ASSIGN(auto old_rows, store.list({}));
  ASSERT_EQ(old_rows.size(), 2u);
  EXPECT_EQ(old_rows[0].costs, std::vector<double>{0.002});
  EXPECT_EQ(old_rows[1].error_kind, "wrong-answer");
  for (const Record& r : old_rows) EXPECT_FALSE(r.checked) << r.id;
  Record fresh = ok_record(key, testing::kTarget, 0.001, 3);
  fresh.checked = true;
  ASSERT_OK(store.append({fresh}));
  ASSERT_OK_AND_ASSIGN(auto best, store.best_k(key, testing::kTarget, 1));
  ASSERT_EQ(best.size(), 1u);
  EXPECT_TRUE(best[0].checked);
}

// Version 3 had no `infrastructure`: its no-worker and protocol-error rows,
// and the timeouts that were the runner's deadline, become infrastructure
// errors (measured again on resume); a kernel that hung stays a fact.
TEST(StoreOpen, Version3DatabaseIsMigratedAndItsInfrastructureErrorsAreClassified) {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  const std::string key = testing::key_of(7);
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(migrate(conn, 3));
    std::string values;
    const char* rows[][2] = {{"ok", ""},
                             {"no-worker", "no worker serves device key x"},
                             {"protocol-error", "the queue is full"},
                             {"timeout", "no result from the farm within the deadline (queue wait included)"},
                             {"timeout", "killed after 10000 ms"},
                             {"crash", "SIGSEGV"}};
    for (int i = 0; i < 6; ++i)
      values += std::string(i ? ", " : "") + "('" + key + "', '" + testing::kTarget + "', 'sketch', '[" +
                std::to_string(i) + "]', '" + (i == 0 ? "[0.002]" : "[]") + "', " + (i == 0 ? "0.002" : "NULL") +
                ", '" + rows[i][0] + "', '" + rows[i][1] + "', 1, 1, " + std::to_string(1700000000 + i) + ", 0)";
    ASSERT_OK(
        conn.exec("INSERT INTO records (workload, target, space, steps, costs, mean_cost, error_kind, "
                  "error_message, build_seconds, run_seconds, timestamp, steps_hash) VALUES " +
                  values));
  }
  ASSERT_EQ(user_version(path), 3);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(user_version(path), kSchemaVersion);
  ASSERT_OK_AND_ASSIGN(auto rows, store.list({}));
  ASSERT_EQ(rows.size(), 6u);
  const std::vector<bool> want = {false, true, true, true, false, false};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].infrastructure, want[i]) << rows[i].error_kind;
  ASSERT_OK_AND_ASSIGN(auto stats, store.stats());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].infrastructure_count, 3);
}

// The canonical text of a matmul + relu, as compiler/te prints it.
const char kMatmulText[] =
    "t0 = placeholder[64,16] float32\n"
    "t1 = placeholder[16,32] float32\n"
    "t2 = compute[64,32] float32 reduction (v0 v1 ) sum((t0[v0, v2]*t1[v2, v1]), axes=[v2:16])\n"
    "t3 = compute[64,32] float32 injective (v3 v4 ) max(t2[v3, v4], 0.0f)\n"
    "args: t0 t1 t3";

// A database made by the builds before XXH3 (schema version 4, keys by the
// legacy hash): its workload and records move to the XXH3-128 key; a key
// that is not the legacy hash of its text (unknown origin) stays.
TEST(StoreOpen, Version4DatabaseGetsXxh3WorkloadKeysWithItsRecords) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  const std::string old_key = legacy_workload_key_of(kMatmulText), new_key = workload_key_of(kMatmulText);
  ASSERT_EQ(old_key, "2ab79eb1737b956f4ce92de4b900df2f");  // what the builds before XXH3 stored
  const std::string other = testing::key_of(9);
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(migrate(conn, 4));
    ASSERT_OK(conn.exec("INSERT INTO workloads (key, dag_text, op_name, shapes, flop_count) VALUES ('" + old_key +
                        "', '" + kMatmulText + "', 'matmul', '64x16 16x32', 65536), ('" + other +
                        "', 'not a dag', 'x', '', 0)"));
    std::string values;
    for (int i = 0; i < 3; ++i)
      values += std::string(i ? ", " : "") + "('" + (i < 2 ? old_key : other) + "', '" + testing::kTarget +
                "', 'sketch', '[" + std::to_string(i) + "]', '[0.002]', 0.002, 'ok', 1, 1, " +
                std::to_string(1700000000 + i) + ", 0)";
    ASSERT_OK(
        conn.exec("INSERT INTO records (workload, target, space, steps, costs, mean_cost, error_kind, "
                  "build_seconds, run_seconds, timestamp, steps_hash) VALUES " +
                  values));
  }
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(user_version(path), kSchemaVersion);
  ASSERT_OK_AND_ASSIGN(auto moved, store.workload(new_key));
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->op_name, "matmul");
  EXPECT_FALSE(store.workload(old_key).value().has_value());
  EXPECT_EQ(store.best_k(new_key, testing::kTarget, 5).value().size(), 2u);
  EXPECT_TRUE(store.best_k(old_key, testing::kTarget, 5).value().empty());
  EXPECT_TRUE(store.workload(other).value().has_value());
  EXPECT_EQ(store.best_k(other, testing::kTarget, 5).value().size(), 1u);
}

TEST(StoreOpen, ReadOnlyOpenOfAnOlderSchemaIsRefusedAndLeftUntouched) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(migrate(conn, 1));
  }
  const std::string before = testing::read_bytes(path);
  OpenOptions read_only;
  read_only.read_only = true;
  auto store = Store::open(path, read_only);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), ErrorCode::kDatabaseError);
  EXPECT_NE(store.status().message().find("migrate"), std::string::npos) << store.status().message();
  EXPECT_EQ(testing::read_bytes(path), before);
  EXPECT_EQ(user_version(path), 1);
}

TEST(StoreOpen, NewerSchemaIsRefusedAndLeftUntouched) {
  TempDir dir;
  const std::string path = dir.file("future.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK(store.append(batch_of(3)));
  }
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(conn.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1)));
  }
  const std::string before = testing::read_bytes(path);
  auto store = Store::open(path);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), ErrorCode::kDatabaseError);
  EXPECT_NE(store.status().message().find("newer"), std::string::npos) << store.status().message();
  EXPECT_EQ(testing::read_bytes(path), before);
  EXPECT_EQ(user_version(path), kSchemaVersion + 1);
}

// A version no build ever wrote (a negative one indexed the migrations at
// -1 and crashed every writing open): refused, read-only or not, untouched.
TEST(StoreOpen, NegativeSchemaVersionIsRefusedAndLeftUntouched) {
  TempDir dir;
  const std::string path = dir.file("negative.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK(store.append(batch_of(3)));
  }
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(conn.exec("PRAGMA user_version = -1"));
  }
  const std::string before = testing::read_bytes(path);
  for (bool read_only : {false, true}) {
    OpenOptions options;
    options.read_only = read_only;
    auto store = Store::open(path, options);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.status().code(), ErrorCode::kDatabaseError);
    EXPECT_NE(store.status().message().find("no version Tessera ever wrote"), std::string::npos)
        << store.status().message();
  }
  EXPECT_EQ(testing::read_bytes(path), before);
  EXPECT_EQ(user_version(path), -1);
}

TEST(StoreOpen, FileThatIsNotADatabaseIsRefusedAndUnchanged) {
  TempDir dir;
  const std::string path = dir.file("notes.db");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "this is a text file, not a database\n";
  testing::write_bytes(path, text);
  auto store = Store::open(path);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), ErrorCode::kDatabaseError);
  EXPECT_NE(store.status().message().find("not a SQLite database"), std::string::npos) << store.status().message();
  EXPECT_EQ(testing::read_bytes(path), text);
  EXPECT_FALSE(testing::exists(path + "-wal"));
  EXPECT_FALSE(testing::exists(path + "-journal"));
}

TEST(StoreOpen, AnotherProgramsDatabaseIsRefusedAndUnchanged) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(conn.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)"));
  }
  const std::string before = testing::read_bytes(path);
  auto store = Store::open(path);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), ErrorCode::kDatabaseError);
  EXPECT_EQ(testing::read_bytes(path), before);
}

TEST(StoreOpen, MissingFileWithoutCreateIsNotFound) {
  TempDir dir;
  const std::string path = dir.file("absent.db");
  OpenOptions no_create;
  no_create.create = false;
  EXPECT_EQ(Store::open(path, no_create).status().code(), ErrorCode::kNotFound);
  OpenOptions read_only;
  read_only.read_only = true;
  EXPECT_EQ(Store::open(path, read_only).status().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(testing::exists(path));
}

TEST(StoreOpen, WriteProtectedFileIsAnIOErrorAndStillReadable) {
  TempDir dir;
  const std::string path = dir.file("shipped.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK(store.append(batch_of(3)));
  }
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  const std::string before = testing::read_bytes(path);
  // root writes through 0444, so the check runs as an unprivileged user.
  int code = testing::run_in_child([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 10;
    auto writable = Store::open(path);
    if (writable || writable.status().code() != ErrorCode::kIOError) return 1;
    OpenOptions read_only;
    read_only.read_only = true;
    auto store = Store::open(path, read_only);
    if (!store) {
      std::fprintf(stderr, "%s\n", store.status().to_string().c_str());
      return 2;
    }
    if (store->count().value() != 3) return 3;
    if (store->best_k(testing::key_of(1), testing::kTarget, 1)->size() != 1) return 4;
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(testing::read_bytes(path), before);
}

TEST(StoreOpen, ReadOnlyStoreRefusesWrites) {
  TempDir dir;
  const std::string path = dir.file("ro.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK(store.append(batch_of(2)));
  }
  OpenOptions read_only;
  read_only.read_only = true;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
  EXPECT_EQ(store.append(batch_of(1, 10)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store.count().value(), 2);
}

TEST(StoreAppend, LockedDatabaseIsUnavailableAndLosesNothing) {
  TempDir dir;
  const std::string path = dir.file("locked.db");
  OpenOptions impatient;
  impatient.busy_timeout_ms = 20;
  impatient.max_retries = 2;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, impatient));
  ASSERT_OK(store.append(batch_of(10)));
  ASSERT_OK_AND_ASSIGN(auto other, raw(path));
  ASSERT_OK(other.exec("BEGIN IMMEDIATE"));
  Status st = store.append(batch_of(5, 100));
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_NE(st.message().find("locked"), std::string::npos) << st.message();
  EXPECT_EQ(store.count().value(), 10);  // readers are not blocked by a writer in WAL mode
  ASSERT_OK(other.exec("ROLLBACK"));
  ASSERT_OK(store.append(batch_of(5, 100)));
  EXPECT_EQ(store.count().value(), 15);
}

TEST(StoreAppend, FullDatabaseIsAnIOErrorAndTheBatchIsNotPartlyStored) {
  TempDir dir;
  const std::string path = dir.file("quota.db");
  OpenOptions quota;
  quota.max_size_bytes = 256 * 1024;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, quota));
  Status st;
  int64_t stored = 0;
  for (int batch = 0; batch < 1000 && st.is_ok(); ++batch) {
    st = store.append(batch_of(100, batch * 100));
    if (st) stored += 100;
  }
  ASSERT_FALSE(st.is_ok()) << "the quota never filled";
  EXPECT_EQ(st.code(), ErrorCode::kIOError);
  EXPECT_NE(st.message().find("full"), std::string::npos) << st.message();
  EXPECT_EQ(store.count().value(), stored);
  ASSERT_OK_AND_ASSIGN(Store unlimited, Store::open(path));
  EXPECT_EQ(unlimited.count().value(), stored);
  EXPECT_OK(unlimited.append(batch_of(100, 1'000'000)));
}

TEST(StoreAppend, FileSizeLimitFailsCleanlyAndKeepsCommittedBatches) {
  TempDir dir;
  const std::string path = dir.file("fsize.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK(store.append(batch_of(100)));
  }
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  // The child writes until the OS refuses to grow a file (as on a full disk)
  // and reports how many records it committed.
  int code = testing::run_in_child([&] {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {512 * 1024, 512 * 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    auto store = Store::open(path);
    if (!store) return 11;
    int64_t committed = 100;
    Status st;
    for (int batch = 1; batch < 10000 && st.is_ok(); ++batch) {
      st = store->append(batch_of(100, batch * 100));
      if (st) committed += 100;
    }
    if (::write(pipe_fds[1], &committed, sizeof committed) != sizeof committed) return 12;
    std::fprintf(stderr, "child stopped with: %s\n", st.to_string().c_str());
    return st.code() == ErrorCode::kIOError ? 0 : 1;
  });
  int64_t committed = -1;
  ASSERT_EQ(::read(pipe_fds[0], &committed, sizeof committed), static_cast<ssize_t>(sizeof committed));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_EQ(code, 0);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(store.count().value(), committed);
  EXPECT_OK(store.append(batch_of(100, 5'000'000)));
}

}  // namespace
}  // namespace tessera::records

namespace tessera::records {
namespace {

// Version 7 only adds phase_times: a version 6 file still opens read-only
// (nothing known of its phases), and a writing open migrates it.
TEST(StoreOpen, Version6DatabaseReadsWithoutPhaseTimesAndMigratesTo7) {
  TempDir dir;
  const std::string path = dir.file("v6.db");
  {
    ASSERT_OK_AND_ASSIGN(auto conn, raw(path));
    ASSERT_OK(migrate(conn, 6));
    ASSERT_OK(
        conn.exec("INSERT INTO sessions (id, command_line, host, tool_version, llvm_version, seed, started) "
                  "VALUES (1, 'tessera tune', 'h', 'v', '19', 0, 1.7e9);"
                  "INSERT INTO records (workload, target, space, steps, costs, mean_cost, error_kind, "
                  "build_seconds, run_seconds, timestamp, session_id) VALUES ('" +
                  testing::key_of(1) + "', '" + testing::kTarget +
                  "', 'sketch', '[]', '[0.001]', 0.001, 'ok', 0.1, 0.2, 1.7e9, 1)"));
  }
  const std::string before = testing::read_bytes(path);
  {
    OpenOptions read_only;
    read_only.read_only = true;
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
    EXPECT_EQ(store.count().value(), 1);
    EXPECT_TRUE(store.phase_times().value().empty());
  }
  EXPECT_EQ(testing::read_bytes(path), before);
  EXPECT_EQ(user_version(path), 6);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(user_version(path), kSchemaVersion);
  EXPECT_EQ(store.count().value(), 1);
  ASSERT_OK(store.add_phase_times({1, testing::key_of(1), testing::kTarget, 1, 2, 3, 0.5, 0}));
  ASSERT_OK(store.add_phase_times({1, testing::key_of(1), testing::kTarget, 1, 1, 1, 0.25, 0}));
  const std::vector<PhaseTimes> phases = store.phase_times().value();
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases[0], (PhaseTimes{1, testing::key_of(1), testing::kTarget, 2, 3, 4, 0.75, 2}));
}

TEST(StorePhaseTimes, BadValuesAndReadOnlyStoresAreRefused) {
  TempDir dir;
  const std::string path = dir.file("p.db");
  {
    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK_AND_ASSIGN(int64_t session, store.begin_session({}));
    const std::string key = testing::key_of(1);
    EXPECT_EQ(store.add_phase_times({session, key, testing::kTarget, -1, 0, 0, 0, 0}).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(store.add_phase_times({session, key, testing::kTarget, 0, NAN, 0, 0, 0}).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(store.add_phase_times({0, key, testing::kTarget, 0, 0, 0, 0, 0}).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(store.add_phase_times({session, "nokey", testing::kTarget, 0, 0, 0, 0, 0}).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_TRUE(store.phase_times().value().empty());
  }
  OpenOptions read_only;
  read_only.read_only = true;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path, read_only));
  EXPECT_EQ(store.add_phase_times({1, testing::key_of(1), testing::kTarget, 0, 0, 0, 0, 0}).code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::records
