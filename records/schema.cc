#include "records/schema.h"

#include <tuple>
#include <vector>

#include "compiler/te/workload_key.h"
#include "records/record.h"

namespace tessera::records {
namespace {

// Version 1: the three tables and the time-order index.
Status migrate_to_1(sql::Connection& conn) {
  return conn.exec(R"sql(
    PRAGMA application_id = )sql" +
                   std::to_string(kApplicationId) + R"sql(;
    CREATE TABLE workloads (
      key        TEXT PRIMARY KEY NOT NULL,
      dag_text   TEXT NOT NULL DEFAULT '',
      op_name    TEXT NOT NULL DEFAULT '',
      shapes     TEXT NOT NULL DEFAULT '',
      flop_count REAL NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    CREATE TABLE sessions (
      id           INTEGER PRIMARY KEY,
      command_line TEXT NOT NULL,
      host         TEXT NOT NULL,
      tool_version TEXT NOT NULL,
      llvm_version TEXT NOT NULL,
      seed         INTEGER NOT NULL,
      started      REAL NOT NULL,
      ended        REAL
    );
    CREATE TABLE records (
      id            INTEGER PRIMARY KEY,
      workload      TEXT NOT NULL,
      target        TEXT NOT NULL,
      device_key    TEXT NOT NULL DEFAULT '',
      space         TEXT NOT NULL CHECK (space IN ('knob', 'sketch', 'manual')),
      steps         TEXT NOT NULL,
      knob_config   TEXT,
      costs         TEXT NOT NULL,
      mean_cost     REAL,
      error_kind    TEXT NOT NULL,
      error_message TEXT NOT NULL DEFAULT '',
      build_seconds REAL NOT NULL,
      run_seconds   REAL NOT NULL,
      timestamp     REAL NOT NULL,
      session_id    INTEGER REFERENCES sessions(id)
    );
    CREATE INDEX records_by_time ON records(workload, target, timestamp);
  )sql");
}

// Version 2: a hash of the step list for "was this measured?" lookups and
// import de-duplication, and a partial index that serves best-k from the index
// alone. Rows of version 1 get their hash computed here.
Status migrate_to_2(sql::Connection& conn) {
  TESSERA_RETURN_IF_ERROR(conn.exec(R"sql(
    ALTER TABLE records ADD COLUMN steps_hash INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX records_best ON records(workload, target, mean_cost) WHERE error_kind = 'ok';
    CREATE INDEX records_measured ON records(workload, target, steps_hash);
  )sql"));
  std::vector<std::tuple<int64_t, std::string>> rows;
  {
    TESSERA_ASSIGN_OR_RETURN(sql::Statement select, conn.prepare("SELECT id, steps FROM records"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, select.step());
      if (!row) break;
      rows.emplace_back(select.column_int(0), select.column_text(1));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(sql::Statement update,
                           conn.prepare("UPDATE records SET steps = ?, steps_hash = ? WHERE id = ?"));
  for (auto& [id, steps] : rows) {
    // Keep an unparsable step list as it is: a migration must not drop data.
    auto canonical = canonical_json(steps, "step list");
    std::string text = canonical ? std::move(canonical).value() : steps;
    update.bind(1, std::string_view(text));
    update.bind(2, steps_hash(text));
    update.bind(3, id);
    TESSERA_RETURN_IF_ERROR(update.run());
    update.reset();
  }
  return Status::ok();
}

// Version 3: whether the kernel's output was checked against a reference
// before it was timed. Rows of earlier versions were not (as far as anyone
// can tell now): they get 0.
Status migrate_to_3(sql::Connection& conn) {
  return conn.exec("ALTER TABLE records ADD COLUMN checked INTEGER NOT NULL DEFAULT 0 CHECK (checked IN (0, 1))");
}

// Version 4: infrastructure errors (no worker, no result by the deadline,
// protocol errors) as a class of their own: never counted as measured, so a
// resumed run measures them again. Earlier rows are classified by their kind;
// a "timeout" whose message says no result came from the farm was the
// runner's deadline, not a kernel that hung.
Status migrate_to_4(sql::Connection& conn) {
  return conn.exec(R"sql(
    ALTER TABLE records ADD COLUMN infrastructure INTEGER NOT NULL DEFAULT 0 CHECK (infrastructure IN (0, 1));
    UPDATE records SET infrastructure = 1
      WHERE error_kind IN ('no-worker', 'protocol-error', 'no-result')
         OR (error_kind = 'timeout' AND error_message LIKE 'no result from the farm%');
  )sql");
}

// Version 5: workload keys are XXH3-128 of the canonical DAG text
// (compiler/te/workload_key.h) instead of the old FNV-1a lanes. Every
// workload whose key is the old hash of its stored text is rewritten, with
// its records; a workload known under both keys (imported from a newer
// database) keeps one row. Records of unregistered workloads and keys of
// unknown origin cannot be recomputed and stay as they are.
Status migrate_to_5(sql::Connection& conn) {
  std::vector<std::pair<std::string, std::string>> rekey;  // old -> new
  {
    TESSERA_ASSIGN_OR_RETURN(sql::Statement select, conn.prepare("SELECT key, dag_text FROM workloads"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, select.step());
      if (!row) break;
      const std::string key = select.column_text(0), text = select.column_text(1);
      if (!text.empty() && key == legacy_workload_key_of(text)) rekey.emplace_back(key, workload_key_of(text));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(sql::Statement records,
                           conn.prepare("UPDATE records SET workload = ?2 WHERE workload = ?1"));
  TESSERA_ASSIGN_OR_RETURN(sql::Statement move, conn.prepare("UPDATE OR IGNORE workloads SET key = ?2 WHERE key = ?1"));
  TESSERA_ASSIGN_OR_RETURN(sql::Statement drop, conn.prepare("DELETE FROM workloads WHERE key = ?1"));
  for (const auto& [old_key, new_key] : rekey) {
    for (sql::Statement* st : {&records, &move}) {
      st->bind(1, std::string_view(old_key));
      st->bind(2, std::string_view(new_key));
      TESSERA_RETURN_IF_ERROR(st->run());
      st->reset();
    }
    drop.bind(1, std::string_view(old_key));  // left only when the new key was there already
    TESSERA_RETURN_IF_ERROR(drop.run());
    drop.reset();
  }
  return Status::ok();
}

// Version 6: which worker measured a record (its id and CURVE public key), so
// that what one misbehaving worker measured can be found and removed. Rows of
// earlier versions do not know: ''.
Status migrate_to_6(sql::Connection& conn) {
  return conn.exec(R"sql(
    ALTER TABLE records ADD COLUMN worker TEXT NOT NULL DEFAULT '';
    ALTER TABLE records ADD COLUMN worker_key TEXT NOT NULL DEFAULT '';
    CREATE INDEX records_by_worker ON records(worker) WHERE worker != '';
  )sql");
}

// Version 7: where each session's time went per (workload, target), as the
// tuner clocks it: search, build, measure, store. Sessions of earlier
// versions have no rows: their split is unknown.
Status migrate_to_7(sql::Connection& conn) {
  return conn.exec(R"sql(
    CREATE TABLE phase_times (
      session_id      INTEGER NOT NULL REFERENCES sessions(id),
      workload        TEXT NOT NULL,
      target          TEXT NOT NULL,
      search_seconds  REAL NOT NULL DEFAULT 0,
      build_seconds   REAL NOT NULL DEFAULT 0,
      measure_seconds REAL NOT NULL DEFAULT 0,
      store_seconds   REAL NOT NULL DEFAULT 0,
      batches         INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (session_id, workload, target)
    ) WITHOUT ROWID;
  )sql");
}

// Version 8: regions an external backend can run, timed both ways (the
// backend's code, Tessera's kernels), which `compile --byoc auto` reads.
// Databases of earlier versions have none: compile measures them itself.
Status migrate_to_8(sql::Connection& conn) {
  return conn.exec(R"sql(
    CREATE TABLE region_times (
      id              INTEGER PRIMARY KEY,
      region_key      TEXT NOT NULL,
      backend         TEXT NOT NULL,
      target          TEXT NOT NULL,
      operators       TEXT NOT NULL DEFAULT '',
      backend_seconds REAL NOT NULL,
      tessera_seconds REAL NOT NULL,
      tessera_basis   TEXT NOT NULL,
      on_backend      INTEGER NOT NULL CHECK (on_backend IN (0, 1)),
      session_id      INTEGER REFERENCES sessions(id),
      timestamp       REAL NOT NULL
    );
    CREATE INDEX region_times_by_key ON region_times(region_key, target, backend, timestamp);
  )sql");
}

// Version 9: each workload's best record checked in its model after the
// tuning, against the untuned compile's schedule (ModelCheck), which
// compile reads. Databases of earlier versions have none: compile takes
// the best record.
Status migrate_to_9(sql::Connection& conn) {
  return conn.exec(R"sql(
    CREATE TABLE model_checks (
      id               INTEGER PRIMARY KEY,
      workload         TEXT NOT NULL,
      target           TEXT NOT NULL,
      record_id        INTEGER NOT NULL,
      record_seconds   REAL NOT NULL,
      fallback_seconds REAL NOT NULL,
      keeps_fallback   INTEGER NOT NULL CHECK (keeps_fallback IN (0, 1)),
      session_id       INTEGER REFERENCES sessions(id),
      timestamp        REAL NOT NULL
    );
    CREATE INDEX model_checks_by_workload ON model_checks(workload, target, timestamp);
  )sql");
}

using Migration = Status (*)(sql::Connection&);

// kMigrations[v] takes a database from version v to v + 1. Append only: a
// released migration never changes, since databases in the field ran it.
constexpr Migration kMigrations[] = {migrate_to_1, migrate_to_2, migrate_to_3, migrate_to_4, migrate_to_5,
                                     migrate_to_6, migrate_to_7, migrate_to_8, migrate_to_9};
static_assert(std::size(kMigrations) == kSchemaVersion);

Result<int64_t> read_version(sql::Connection& conn) {
  return conn.query_int("PRAGMA user_version");
}

}  // namespace

Status migrate(sql::Connection& conn, int version) {
  if (version < 0 || version > kSchemaVersion)
    return Status(ErrorCode::kInvalidArgument, "no schema version " + std::to_string(version));
  return conn.write_transaction([&]() -> Status {
    // Read again under the write lock: another process may have migrated first.
    TESSERA_ASSIGN_OR_RETURN(int64_t current, read_version(conn));
    if (current < 0)
      return Status(ErrorCode::kDatabaseError,
                    "schema version " + std::to_string(current) + " is no version Tessera ever wrote");
    if (current >= version) return Status::ok();
    if (current == 0) {
      TESSERA_ASSIGN_OR_RETURN(int64_t objects, conn.query_int("SELECT count(*) FROM sqlite_master"));
      if (objects > 0)
        return Status(ErrorCode::kDatabaseError,
                      "the database has tables but no Tessera schema version; refusing to modify it");
    }
    for (int64_t v = current; v < version; ++v) {
      Status st = kMigrations[v](conn);
      if (!st) return st.with_context("migrating schema to version " + std::to_string(v + 1));
    }
    return conn.exec("PRAGMA user_version = " + std::to_string(version));
  });
}

Status prepare_schema(sql::Connection& conn, bool read_only, const std::string& path) {
  int64_t version = 0, app_id = 0, objects = 0;
  Status read = conn.retrying([&]() -> Status {
    // One statement, so one snapshot: a process creating the schema at this
    // moment must not be seen half-done (tables but version 0).
    TESSERA_ASSIGN_OR_RETURN(sql::Statement st, conn.prepare("SELECT (SELECT user_version FROM pragma_user_version), "
                                                             "(SELECT application_id FROM pragma_application_id), "
                                                             "(SELECT count(*) FROM sqlite_master)"));
    TESSERA_ASSIGN_OR_RETURN(bool row, st.step());
    if (!row) return Status(ErrorCode::kDatabaseError, "reading the schema version returned nothing");
    version = st.column_int(0);
    app_id = st.column_int(1);
    objects = st.column_int(2);
    return Status::ok();
  });
  if (!read && (sqlite3_extended_errcode(conn.get()) & 0xff) == SQLITE_NOTADB)
    return Status(ErrorCode::kDatabaseError, path + ": not a SQLite database; left untouched");
  if (!read) return read.with_context(path);
  if (version == 0 && objects > 0)
    return Status(ErrorCode::kDatabaseError,
                  path + ": a SQLite database without a Tessera schema version; refusing to use it");
  if (app_id != 0 && app_id != kApplicationId)
    return Status(ErrorCode::kDatabaseError, path + ": a SQLite database of another program (application id " +
                                                 std::to_string(app_id) + "); refusing to use it");
  if (version < 0)
    return Status(ErrorCode::kDatabaseError, path + ": schema version " + std::to_string(version) +
                                                 " is no version Tessera ever wrote; the database was left untouched");
  if (version > kSchemaVersion)
    return Status(ErrorCode::kDatabaseError,
                  path + ": schema version " + std::to_string(version) + " is newer than this build supports (" +
                      std::to_string(kSchemaVersion) + "); use a newer tessera, the database was left untouched");
  if (read_only) {
    if (version < kOldestReadOnlyVersion)
      return Status(ErrorCode::kDatabaseError,
                    path + ": schema version " + std::to_string(version) + " is older than " +
                        std::to_string(kSchemaVersion) +
                        (version == 0 ? "; it is not a Tessera records database"
                                      : "; a read-only open cannot migrate it, any writing open does"));
    return Status::ok();
  }
  // WAL lets readers work while a tuner writes. A committed transaction survives
  // a crash of the writer; synchronous=FULL makes it survive power loss too.
  // Switching needs an exclusive lock and SQLite reports BUSY at once instead of
  // waiting (processes opening a new database together meet here), so retry.
  std::string mode;
  Status wal = conn.retrying([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(mode, conn.query_text("PRAGMA journal_mode = WAL"));
    return Status::ok();
  });
  if (!wal) return wal.with_context(path + ": switching to WAL");
  if (mode != "wal") return Status(ErrorCode::kDatabaseError, path + ": cannot use WAL mode (got " + mode + ")");
  TESSERA_RETURN_IF_ERROR(conn.exec("PRAGMA synchronous = FULL"));
  if (version < kSchemaVersion) {
    Status st = migrate(conn, kSchemaVersion);
    if (!st) return st.with_context(path);
  }
  return Status::ok();
}

}  // namespace tessera::records
