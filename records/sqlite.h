// A thin layer over the SQLite C API for records/: RAII handles, SQLite result
// codes turned into Status values, cached prepared statements, and write
// transactions retried with backoff when another process holds the lock.
// Internal to records/; other folders use records/store.h.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::records::sql {

/// The Status for SQLite result code `rc` on `db` (may be null), prefixed with `context`.
/// BUSY/LOCKED → kUnavailable; FULL, READONLY, CANTOPEN, PERM, IOERR → kIOError;
/// everything else (NOTADB, CORRUPT, MISUSE, ...) → kDatabaseError.
Status status_from(int rc, sqlite3* db, std::string_view context);

/// How hard a write tries before reporting that the database is locked.
struct RetryPolicy {
  int max_retries = 8;         ///< whole-transaction retries after SQLITE_BUSY/LOCKED
  int initial_backoff_ms = 2;  ///< doubled after each retry, with jitter
  int max_backoff_ms = 250;
};

/// A prepared statement. Text bound with bind() is not copied: it must stay alive
/// until the statement is reset.
class Statement {
 public:
  Statement() = default;
  /// Takes ownership of `stmt`, prepared on `db` (used for error messages).
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Statement(Statement&& other) noexcept { *this = std::move(other); }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  /// Binds parameter `index` (1-based).
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
  void bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  }
  void bind_null(int index) { sqlite3_bind_null(stmt_, index); }

  /// Advances: true with a row, false when done, or the error.
  Result<bool> step();
  /// Steps to completion of a statement that returns no rows.
  Status run();
  /// Clears bindings and rewinds, ending any read this statement holds open.
  void reset();

  /// Column `i` (0-based) of the current row.
  int64_t column_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  double column_double(int i) const { return sqlite3_column_double(stmt_, i); }
  bool column_is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  /// Column `i` as text; empty for NULL.
  std::string column_text(int i) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
};

/// A statement borrowed from a Connection's cache; reset when the lease ends so
/// that no read stays open between calls.
class Lease {
 public:
  /// Borrows `stmt`, which must outlive the lease.
  explicit Lease(Statement* stmt) : stmt_(stmt) {}
  Lease(Lease&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    if (stmt_) stmt_->reset();
  }
  Statement* operator->() { return stmt_; }
  Statement& operator*() { return *stmt_; }

 private:
  Statement* stmt_;
};

/// One SQLite connection with its statement cache. Not thread-safe; move-only.
class Connection {
 public:
  /// Opens `path` with sqlite3_open_v2 `flags`; the connection uses extended result codes.
  static Result<Connection> open(const std::string& path, int flags, int busy_timeout_ms, RetryPolicy retry);
  Connection() = default;
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;
  ~Connection();

  /// The raw handle, for sqlite3_changes and friends.
  sqlite3* get() const { return db_; }
  /// Runs SQL that returns no rows (several statements allowed).
  Status exec(const std::string& sql);
  /// The first column of the first row of `sql`, as an integer.
  Result<int64_t> query_int(const std::string& sql);
  /// The first column of the first row of `sql`, as text.
  Result<std::string> query_text(const std::string& sql);
  /// A cached prepared statement for `sql`, prepared on first use.
  Result<Lease> cached(const std::string& sql);
  /// A fresh statement for one-off SQL.
  Result<Statement> prepare(const std::string& sql);

  /// Runs `body` inside BEGIN IMMEDIATE ... COMMIT. Any error rolls back; a
  /// busy or locked database rolls back and retries the whole body with
  /// backoff, so `body` must be safe to run again. Inside a transaction
  /// already (a Store::atomically), `body` runs as part of it: its error
  /// goes to the outer one, which rolls everything back.
  Status write_transaction(const std::function<Status()>& body);
  /// Runs `body` (reads, or a single statement outside a transaction), running it
  /// again with backoff while the database is busy or locked.
  Status retrying(const std::function<Status()>& body);

 private:
  void backoff(int attempt);
  void close();

  sqlite3* db_ = nullptr;
  RetryPolicy retry_;
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> cache_;
  std::minstd_rand jitter_;
};

}  // namespace tessera::records::sql
