#include "records/sqlite.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace tessera::records::sql {

Status status_from(int rc, sqlite3* db, std::string_view context) {
  ErrorCode code = ErrorCode::kDatabaseError;
  std::string what;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = ErrorCode::kUnavailable;
      what = "database is locked by another connection";
      break;
    case SQLITE_FULL:
      code = ErrorCode::kIOError;
      what = "database or disk is full";
      break;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR: code = ErrorCode::kIOError; break;
    case SQLITE_NOTADB: what = "file is not a SQLite database"; break;
    default: break;
  }
  // sqlite3_errmsg describes the most recent failure on `db`, which is `rc`'s
  // when the caller asks straight away; fall back to the generic text.
  std::string detail = db && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (what.empty() || what == detail) {
    what = detail;
  } else {
    what += " (" + detail + ")";
  }
  return Status(code, std::string(context) + ": " + what);
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    db_ = other.db_;
    other.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return status_from(rc, db_, sqlite3_sql(stmt_));
}

Status Statement::run() {
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(bool row, step());
    if (!row) return Status::ok();
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::column_text(int i) const {
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

Result<Connection> Connection::open(const std::string& path, int flags, int busy_timeout_ms, RetryPolicy retry) {
  Connection conn;
  conn.retry_ = retry;
  conn.jitter_.seed(static_cast<unsigned>(::getpid()) ^
                    static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  int rc = sqlite3_open_v2(path.c_str(), &conn.db_, flags, nullptr);
  if (rc != SQLITE_OK) return status_from(rc, conn.db_, "cannot open " + path);
  sqlite3_extended_result_codes(conn.db_, 1);
  sqlite3_busy_timeout(conn.db_, busy_timeout_ms);
  return conn;
}

Connection::Connection(Connection&& other) noexcept {
  *this = std::move(other);
}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    db_ = other.db_;
    retry_ = other.retry_;
    cache_ = std::move(other.cache_);
    jitter_ = other.jitter_;
    other.db_ = nullptr;
  }
  return *this;
}

Connection::~Connection() {
  close();
}

void Connection::close() {
  cache_.clear();  // statements are finalized before their connection closes
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Status Connection::exec(const std::string& sql) {
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return status_from(rc, db_, sql);
  return Status::ok();
}

Result<int64_t> Connection::query_int(const std::string& sql) {
  TESSERA_ASSIGN_OR_RETURN(Statement stmt, prepare(sql));
  TESSERA_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return Status(ErrorCode::kDatabaseError, sql + ": returned no row");
  return stmt.column_int(0);
}

Result<std::string> Connection::query_text(const std::string& sql) {
  TESSERA_ASSIGN_OR_RETURN(Statement stmt, prepare(sql));
  TESSERA_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return Status(ErrorCode::kDatabaseError, sql + ": returned no row");
  return stmt.column_text(0);
}

Result<Statement> Connection::prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc =
      sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return status_from(rc, db_, "preparing " + sql);
  return Statement(stmt, db_);
}

Result<Lease> Connection::cached(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    TESSERA_ASSIGN_OR_RETURN(Statement stmt, prepare(sql));
    it = cache_.emplace(sql, std::make_unique<Statement>(std::move(stmt))).first;
  }
  return Lease(it->second.get());
}

void Connection::backoff(int attempt) {
  int ceiling = std::min(retry_.max_backoff_ms, retry_.initial_backoff_ms << std::min(attempt, 16));
  // Jitter spreads writers that collided so they do not collide again.
  int ms = ceiling / 2 + static_cast<int>(jitter_() % static_cast<unsigned>(ceiling / 2 + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

Status Connection::write_transaction(const std::function<Status()>& body) {
  if (!sqlite3_get_autocommit(db_)) return body();  // part of an enclosing transaction
  Status last;
  for (int attempt = 0; attempt <= retry_.max_retries; ++attempt) {
    if (attempt > 0) backoff(attempt - 1);
    last = exec("BEGIN IMMEDIATE");
    if (last.code() == ErrorCode::kUnavailable) continue;
    TESSERA_RETURN_IF_ERROR(last);
    last = body();
    if (last.is_ok()) last = exec("COMMIT");
    if (last.is_ok()) return last;
    // A failed statement may already have rolled the transaction back.
    if (!sqlite3_get_autocommit(db_)) (void)exec("ROLLBACK");
    if (last.code() != ErrorCode::kUnavailable) return last;
  }
  return last.with_context("gave up after " + std::to_string(retry_.max_retries) + " retries");
}

Status Connection::retrying(const std::function<Status()>& body) {
  Status last;
  for (int attempt = 0; attempt <= retry_.max_retries; ++attempt) {
    if (attempt > 0) backoff(attempt - 1);
    last = body();
    if (last.code() != ErrorCode::kUnavailable) return last;
  }
  return last.with_context("gave up after " + std::to_string(retry_.max_retries) + " retries");
}

}  // namespace tessera::records::sql
