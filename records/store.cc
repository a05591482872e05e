#include "records/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "records/schema.h"
#include "records/sqlite.h"
#include "records/store_impl.h"

namespace tessera::records {

namespace {

constexpr const char* kRecordColumns =
    "id, workload, target, device_key, space, steps, knob_config, costs, error_kind, "
    "error_message, build_seconds, run_seconds, timestamp, session_id, checked, infrastructure, worker, worker_key";

constexpr const char* kInsertRecord =
    "INSERT INTO records (workload, target, device_key, space, steps, knob_config, costs, "
    "mean_cost, error_kind, error_message, build_seconds, run_seconds, timestamp, session_id, "
    "steps_hash, checked, infrastructure, worker, worker_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
    "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

// The literal error_kind = 'ok' (not a parameter) lets SQLite use the partial
// index records_best; its rows are already in (mean_cost, id) order.
constexpr const char* kBestK =
    "SELECT id, workload, target, device_key, space, steps, knob_config, costs, error_kind, "
    "error_message, build_seconds, run_seconds, timestamp, session_id, checked, infrastructure, worker, worker_key "
    "FROM records "
    "WHERE workload = ?1 AND target = ?2 AND error_kind = 'ok' ORDER BY mean_cost, id LIMIT ?3";

constexpr const char* kRecordsOf =
    "SELECT id, workload, target, device_key, space, steps, knob_config, costs, error_kind, "
    "error_message, build_seconds, run_seconds, timestamp, session_id, checked, infrastructure, worker, worker_key "
    "FROM records "
    "WHERE workload = ?1 AND target = ?2 ORDER BY timestamp, id";

// An infrastructure error is not a measurement of the steps.
constexpr const char* kMeasured =
    "SELECT 1 FROM records WHERE workload = ?1 AND target = ?2 AND steps_hash = ?3 AND steps = ?4 "
    "AND infrastructure = 0 LIMIT 1";

constexpr const char* kDuplicate =
    "SELECT 1 FROM records WHERE workload = ?1 AND target = ?2 AND steps_hash = ?3 AND steps = ?4 "
    "AND costs = ?5 AND timestamp = ?6 LIMIT 1";

std::string costs_json(const std::vector<double>& costs) {
  return nlohmann::json(costs).dump();
}

Result<Record> read_record(const sql::Statement& row) {
  Record r;
  r.id = row.column_int(0);
  r.workload_key = row.column_text(1);
  r.target = row.column_text(2);
  r.device_key = row.column_text(3);
  auto space = parse_space_kind(row.column_text(4));
  if (!space)
    return Status(ErrorCode::kDatabaseError, "record " + std::to_string(r.id) + ": " + space.status().message());
  r.space = *space;
  r.steps_json = row.column_text(5);
  r.knob_config_json = row.column_text(6);
  auto costs = nlohmann::json::parse(row.column_text(7), nullptr, false);
  if (costs.is_discarded() || !costs.is_array())
    return Status(ErrorCode::kDatabaseError, "record " + std::to_string(r.id) + ": costs are not a JSON array");
  for (const auto& c : costs) {
    if (!c.is_number())
      return Status(ErrorCode::kDatabaseError, "record " + std::to_string(r.id) + ": a cost is not a number");
    r.costs.push_back(c.get<double>());
  }
  r.error_kind = row.column_text(8);
  r.error_message = row.column_text(9);
  r.build_seconds = row.column_double(10);
  r.run_seconds = row.column_double(11);
  r.timestamp = row.column_double(12);
  r.session_id = row.column_is_null(13) ? 0 : row.column_int(13);
  r.checked = row.column_int(14) != 0;
  r.infrastructure = row.column_int(15) != 0;
  r.worker = row.column_text(16);
  r.worker_key = row.column_text(17);
  return r;
}

// Collects every row of `stmt` as a Record.
Status collect_records(sql::Statement& stmt, std::vector<Record>& out) {
  out.clear();
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(Record r, read_record(stmt));
    out.push_back(std::move(r));
  }
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// "file:" URI of `path` with immutable=1, escaping what URIs reserve.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?immutable=1";
}

Result<sql::Connection> open_connection(const std::string& path, const OpenOptions& options, bool immutable) {
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0);
  if (immutable) flags |= SQLITE_OPEN_URI;
  sql::RetryPolicy retry;
  retry.max_retries = options.max_retries;
  return sql::Connection::open(immutable ? immutable_uri(path) : path, flags, options.busy_timeout_ms, retry);
}

// Inserts one normalized record inside the caller's transaction.
Status insert_record(sql::Connection& conn, const Record& r, const std::string& costs) {
  TESSERA_ASSIGN_OR_RETURN(sql::Lease st, conn.cached(kInsertRecord));
  st->bind(1, std::string_view(r.workload_key));
  st->bind(2, std::string_view(r.target));
  st->bind(3, std::string_view(r.device_key));
  st->bind(4, std::string_view(space_kind_name(r.space)));
  st->bind(5, std::string_view(r.steps_json));
  if (r.knob_config_json.empty()) {
    st->bind_null(6);
  } else {
    st->bind(6, std::string_view(r.knob_config_json));
  }
  st->bind(7, std::string_view(costs));
  if (r.costs.empty()) {
    st->bind_null(8);
  } else {
    st->bind(8, r.mean_cost());
  }
  st->bind(9, std::string_view(r.error_kind));
  st->bind(10, std::string_view(r.error_message));
  st->bind(11, r.build_seconds);
  st->bind(12, r.run_seconds);
  st->bind(13, r.timestamp);
  if (r.session_id == 0) {
    st->bind_null(14);
  } else {
    st->bind(14, r.session_id);
  }
  st->bind(15, steps_hash(r.steps_json));
  st->bind(16, static_cast<int64_t>(r.checked ? 1 : 0));
  st->bind(17, static_cast<int64_t>(r.infrastructure ? 1 : 0));
  st->bind(18, std::string_view(r.worker));
  st->bind(19, std::string_view(r.worker_key));
  return st->run();
}

Result<bool> is_duplicate(sql::Connection& conn, const Record& r, const std::string& costs) {
  TESSERA_ASSIGN_OR_RETURN(sql::Lease st, conn.cached(kDuplicate));
  st->bind(1, std::string_view(r.workload_key));
  st->bind(2, std::string_view(r.target));
  st->bind(3, steps_hash(r.steps_json));
  st->bind(4, std::string_view(r.steps_json));
  st->bind(5, std::string_view(costs));
  st->bind(6, r.timestamp);
  return st->step();
}

// Validates a whole batch before any of it is written.
Result<std::vector<Record>> normalize_batch(const std::vector<Record>& batch) {
  std::vector<Record> out;
  out.reserve(batch.size());
  const double now = unix_now();
  for (size_t i = 0; i < batch.size(); ++i) {
    auto r = normalize_record(batch[i], now);
    if (!r) return r.status().with_context("record " + std::to_string(i) + " of the batch");
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const {
  return impl_->path;
}

Result<Store> Store::open(const std::string& path, const OpenOptions& options) {
  const bool exists = file_exists(path);
  if (!exists && (options.read_only || !options.create))
    return Status(ErrorCode::kNotFound, path + ": no such database");
  if (exists && !options.read_only && ::access(path.c_str(), R_OK | W_OK) != 0)
    return Status(ErrorCode::kIOError,
                  path + ": cannot write the database (" + std::strerror(errno) + "); open it read-only to query it");
  TESSERA_ASSIGN_OR_RETURN(sql::Connection conn, open_connection(path, options, false));
  // SQLite falls back to read-only when the OS refuses writes (root passes
  // access() even on a 0444 file, so ask SQLite too).
  if (!options.read_only && sqlite3_db_readonly(conn.get(), "main") == 1)
    return Status(ErrorCode::kIOError, path + ": the database file is read-only; open it read-only to query it");
  Status schema = prepare_schema(conn, options.read_only, path);
  if (!schema && options.read_only && schema.code() == ErrorCode::kIOError && !file_exists(path + "-wal")) {
    // Reading a WAL database needs its -shm file, which cannot be created in a
    // directory we may not write (a database shipped read-only). With no -wal
    // file no write is in progress, so read the file as an immutable snapshot.
    TESSERA_ASSIGN_OR_RETURN(conn, open_connection(path, options, true));
    schema = prepare_schema(conn, options.read_only, path);
  }
  TESSERA_RETURN_IF_ERROR(schema);
  if (options.max_size_bytes > 0) {
    TESSERA_ASSIGN_OR_RETURN(int64_t page_size, conn.query_int("PRAGMA page_size"));
    int64_t pages = std::max<int64_t>(1, options.max_size_bytes / page_size);
    TESSERA_RETURN_IF_ERROR(conn.exec("PRAGMA max_page_count = " + std::to_string(pages)));
  }
  auto impl = std::make_unique<Impl>();
  impl->conn = std::move(conn);
  impl->path = path;
  impl->options = options;
  return Store(std::move(impl));
}

Status Store::atomically(const std::function<Status()>& body) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  return impl_->conn.write_transaction(body);
}

Status Store::append(const std::vector<Record>& batch) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  TESSERA_ASSIGN_OR_RETURN(std::vector<Record> records, normalize_batch(batch));
  std::vector<std::string> costs;
  costs.reserve(records.size());
  for (const Record& r : records) costs.push_back(costs_json(r.costs));
  return impl_->conn.write_transaction([&]() -> Status {
    for (size_t i = 0; i < records.size(); ++i)
      TESSERA_RETURN_IF_ERROR(insert_record(impl_->conn, records[i], costs[i]));
    return Status::ok();
  });
}

Result<AppendReport> Store::append_unique(const std::vector<Record>& batch) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  TESSERA_ASSIGN_OR_RETURN(std::vector<Record> records, normalize_batch(batch));
  AppendReport report;
  TESSERA_RETURN_IF_ERROR(impl_->conn.write_transaction([&]() -> Status {
    report = AppendReport{};
    for (const Record& r : records) {
      std::string costs = costs_json(r.costs);
      TESSERA_ASSIGN_OR_RETURN(bool duplicate, is_duplicate(impl_->conn, r, costs));
      if (duplicate) {
        ++report.duplicates;
        continue;
      }
      TESSERA_RETURN_IF_ERROR(insert_record(impl_->conn, r, costs));
      ++report.added;
    }
    return Status::ok();
  }));
  return report;
}

Result<std::vector<Record>> Store::best_k(const std::string& workload_key, const std::string& target, int64_t k) {
  if (k < 1) return Status(ErrorCode::kInvalidArgument, "best_k needs k >= 1");
  std::vector<Record> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached(kBestK));
    st->bind(1, std::string_view(workload_key));
    st->bind(2, std::string_view(target));
    st->bind(3, k);
    return collect_records(*st, out);
  }));
  return out;
}

Result<std::vector<Record>> Store::records_of(const std::string& workload_key, const std::string& target) {
  std::vector<Record> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached(kRecordsOf));
    st->bind(1, std::string_view(workload_key));
    st->bind(2, std::string_view(target));
    return collect_records(*st, out);
  }));
  return out;
}

Result<bool> Store::measured(const std::string& workload_key, const std::string& target,
                             const std::string& steps_json) {
  TESSERA_ASSIGN_OR_RETURN(std::string steps, canonical_json(steps_json, "step list"));
  bool found = false;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached(kMeasured));
    st->bind(1, std::string_view(workload_key));
    st->bind(2, std::string_view(target));
    st->bind(3, steps_hash(steps));
    st->bind(4, std::string_view(steps));
    TESSERA_ASSIGN_OR_RETURN(found, st->step());
    return Status::ok();
  }));
  return found;
}

Result<std::vector<WorkloadStats>> Store::stats() {
  std::vector<WorkloadStats> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    out.clear();
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st,
        impl_->conn.cached("SELECT r.workload, r.target, coalesce(w.op_name, ''), coalesce(w.flop_count, 0), "
                           "count(*), sum(r.error_kind = 'ok'), min(iif(r.error_kind = 'ok', r.mean_cost, NULL)), "
                           "max(r.timestamp), sum(r.infrastructure), coalesce(w.shapes, '') FROM records r LEFT JOIN "
                           "workloads w ON w.key = r.workload "
                           "GROUP BY r.workload, r.target ORDER BY r.workload, r.target"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
      if (!row) return Status::ok();
      WorkloadStats s;
      s.workload_key = st->column_text(0);
      s.target = st->column_text(1);
      s.op_name = st->column_text(2);
      s.flop_count = st->column_double(3);
      s.count = st->column_int(4);
      s.ok_count = st->column_int(5);
      if (!st->column_is_null(6)) s.best_cost = st->column_double(6);
      s.last_timestamp = st->column_double(7);
      s.infrastructure_count = st->column_int(8);
      s.shapes = st->column_text(9);
      out.push_back(std::move(s));
    }
  }));
  return out;
}

namespace {

// WHERE clause and its bound texts for a RecordFilter.
std::string filter_sql(const RecordFilter& f) {
  std::string where = " WHERE 1";
  if (!f.workload_key.empty()) where += " AND workload = ?1";
  if (!f.target.empty()) where += " AND target = ?2";
  if (f.ok_only) where += " AND error_kind = 'ok'";
  if (f.infrastructure_only) where += " AND infrastructure = 1";
  if (!f.worker.empty()) where += " AND worker = ?3";
  return where;
}

void bind_filter(sql::Statement& st, const RecordFilter& f) {
  if (!f.workload_key.empty()) st.bind(1, std::string_view(f.workload_key));
  if (!f.target.empty()) st.bind(2, std::string_view(f.target));
  if (!f.worker.empty()) st.bind(3, std::string_view(f.worker));
}

}  // namespace

Result<int64_t> Store::count(const RecordFilter& filter) {
  int64_t n = 0;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached("SELECT count(*) FROM records" + filter_sql(filter)));
    bind_filter(*st, filter);
    TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
    n = row ? st->column_int(0) : 0;
    return Status::ok();
  }));
  return n;
}

Status Store::for_each(const RecordFilter& filter, const std::function<Status(const Record&)>& visit) {
  std::string sql = std::string("SELECT ") + kRecordColumns + " FROM records" + filter_sql(filter) +
                    (filter.newest_first ? " ORDER BY timestamp DESC, id DESC" : " ORDER BY id");
  if (filter.limit > 0) sql += " LIMIT " + std::to_string(filter.limit);
  bool visited = false;
  Status st = impl_->conn.retrying([&]() -> Status {
    // Retrying after a record was visited would visit it twice.
    if (visited) return Status(ErrorCode::kDatabaseError, "the database became busy mid-read");
    TESSERA_ASSIGN_OR_RETURN(sql::Statement stmt, impl_->conn.prepare(sql));
    bind_filter(stmt, filter);
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, stmt.step());
      if (!row) return Status::ok();
      TESSERA_ASSIGN_OR_RETURN(Record r, read_record(stmt));
      visited = true;
      TESSERA_RETURN_IF_ERROR(visit(r));
    }
  });
  return st;
}

Result<std::vector<Record>> Store::list(const RecordFilter& filter) {
  std::vector<Record> out;
  TESSERA_RETURN_IF_ERROR(for_each(filter, [&](const Record& r) {
    out.push_back(r);
    return Status::ok();
  }));
  return out;
}

Result<PruneReport> Store::prune(const PruneOptions& options) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  if (options.keep_k < 1) return Status(ErrorCode::kInvalidArgument, "prune needs keep_k >= 1");
  PruneReport report;
  const double now = options.now == 0 ? unix_now() : options.now;
  auto drop = [&]() -> Status {
    report = PruneReport{};
    // A worker's records go first, so that the best k are counted without them.
    if (!options.drop_worker.empty()) {
      TESSERA_ASSIGN_OR_RETURN(sql::Statement drop, impl_->conn.prepare("DELETE FROM records WHERE worker = ?1"));
      drop.bind(1, std::string_view(options.drop_worker));
      TESSERA_RETURN_IF_ERROR(drop.run());
      report.dropped_worker = sqlite3_changes(impl_->conn.get());
    }
    TESSERA_ASSIGN_OR_RETURN(sql::Statement ok,
                             impl_->conn.prepare("DELETE FROM records WHERE id IN (SELECT id FROM (SELECT id, "
                                                 "row_number() OVER (PARTITION BY workload, target ORDER BY mean_cost, "
                                                 "id) AS rank FROM records WHERE error_kind = 'ok') WHERE rank > ?1)"));
    ok.bind(1, options.keep_k);
    TESSERA_RETURN_IF_ERROR(ok.run());
    report.dropped_ok = sqlite3_changes(impl_->conn.get());
    if (options.drop_infrastructure) {
      TESSERA_RETURN_IF_ERROR(impl_->conn.exec("DELETE FROM records WHERE infrastructure = 1"));
      report.dropped_infrastructure = sqlite3_changes(impl_->conn.get());
    }
    if (!options.drop_errors_older_than_seconds) return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(sql::Statement errors,
                             impl_->conn.prepare("DELETE FROM records WHERE error_kind <> 'ok' AND timestamp < ?1"));
    errors.bind(1, now - *options.drop_errors_older_than_seconds);
    TESSERA_RETURN_IF_ERROR(errors.run());
    report.dropped_errors = sqlite3_changes(impl_->conn.get());
    return Status::ok();
  };
  // A dry run deletes inside the transaction and then fails it on purpose,
  // so that the counts are the real ones and nothing is written.
  const Status kDryRun(ErrorCode::kInternal, "records prune: dry run");
  Status done = impl_->conn.write_transaction([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(drop());
    return options.dry_run ? kDryRun : Status::ok();
  });
  if (options.dry_run && done.code() == kDryRun.code() && done.message() == kDryRun.message()) return report;
  TESSERA_RETURN_IF_ERROR(done);
  return report;
}

}  // namespace tessera::records
