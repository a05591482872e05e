// The records database schema: its version (PRAGMA user_version), the forward
// migrations that bring an older database up to date, and the checks that
// refuse files this build must not touch. See docs/records.md for the tables.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "records/sqlite.h"

namespace tessera::records {

/// The schema version this build reads and writes.
inline constexpr int kSchemaVersion = 9;

/// The oldest version a read-only open accepts: 7, 8 and 9 only add tables
/// (phase_times, region_times, model_checks), which read as empty in a
/// version 6 database.
inline constexpr int kOldestReadOnlyVersion = 6;

/// PRAGMA application_id of a Tessera records database ("TSRD"); a database with
/// another non-zero id belongs to another program and is refused.
inline constexpr int32_t kApplicationId = 0x54535244;

/// Checks that the database behind `conn` is one this build may use, then (when
/// writable) switches it to WAL mode and migrates an older schema forward in one
/// transaction. A newer schema, another program's database or a file that is not
/// SQLite is refused with kDatabaseError before anything is written. `path` is for
/// messages only.
Status prepare_schema(sql::Connection& conn, bool read_only, const std::string& path);

/// Applies the migrations that take the database from its current version to
/// `version` (<= kSchemaVersion) in one write transaction. Exposed so that tests
/// can build databases of older versions.
Status migrate(sql::Connection& conn, int version);

}  // namespace tessera::records
