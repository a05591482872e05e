// The Store's catalog tables: workloads (what was tuned) and sessions (which
// run measured it). Records live in store.cc.
#include <cmath>

#include "records/sqlite.h"
#include "records/store.h"
#include "records/store_impl.h"

namespace tessera::records {

namespace {

constexpr const char* kSessionColumns = "id, command_line, host, tool_version, llvm_version, seed, started, ended";

SessionInfo read_session(const sql::Statement& row) {
  SessionInfo s;
  s.id = row.column_int(0);
  s.command_line = row.column_text(1);
  s.host = row.column_text(2);
  s.tool_version = row.column_text(3);
  s.llvm_version = row.column_text(4);
  s.seed = row.column_int(5);
  s.started = row.column_double(6);
  if (!row.column_is_null(7)) s.ended = row.column_double(7);
  return s;
}

WorkloadInfo read_workload(const sql::Statement& row) {
  return WorkloadInfo{row.column_text(0), row.column_text(1), row.column_text(2), row.column_text(3),
                      row.column_double(4)};
}

}  // namespace

Status Store::add_workload(const WorkloadInfo& w) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  if (!is_valid_workload_key(w.key))
    return Status(ErrorCode::kInvalidArgument, "workload key '" + w.key + "' is not 32 lowercase hex characters");
  if (!std::isfinite(w.flop_count) || w.flop_count < 0)
    return Status(ErrorCode::kInvalidArgument, "workload " + w.key + ": flop count must be >= 0");
  return impl_->conn.write_transaction([&]() -> Status {
    // Registering a workload again only fills in what was unknown.
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st,
        impl_->conn.cached("INSERT INTO workloads (key, dag_text, op_name, shapes, flop_count) "
                           "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO UPDATE SET "
                           "dag_text = iif(excluded.dag_text <> '', excluded.dag_text, dag_text), "
                           "op_name = iif(excluded.op_name <> '', excluded.op_name, op_name), "
                           "shapes = iif(excluded.shapes <> '', excluded.shapes, shapes), "
                           "flop_count = iif(excluded.flop_count > 0, excluded.flop_count, flop_count)"));
    st->bind(1, std::string_view(w.key));
    st->bind(2, std::string_view(w.dag_text));
    st->bind(3, std::string_view(w.op_name));
    st->bind(4, std::string_view(w.shapes));
    st->bind(5, w.flop_count);
    return st->run();
  });
}

Result<std::optional<WorkloadInfo>> Store::workload(const std::string& key) {
  std::optional<WorkloadInfo> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached("SELECT key, dag_text, op_name, shapes, flop_count "
                                                               "FROM workloads WHERE key = ?1"));
    st->bind(1, std::string_view(key));
    TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
    out.reset();
    if (row) out = read_workload(*st);
    return Status::ok();
  }));
  return out;
}

Result<std::vector<WorkloadInfo>> Store::workloads() {
  std::vector<WorkloadInfo> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    out.clear();
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached("SELECT key, dag_text, op_name, shapes, flop_count "
                                                               "FROM workloads ORDER BY key"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
      if (!row) return Status::ok();
      out.push_back(read_workload(*st));
    }
  }));
  return out;
}

Result<int64_t> Store::begin_session(const SessionInfo& info) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  int64_t id = 0;
  TESSERA_RETURN_IF_ERROR(impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st,
                             impl_->conn.cached("INSERT INTO sessions (command_line, host, tool_version, llvm_version, "
                                                "seed, started, ended) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    st->bind(1, std::string_view(info.command_line));
    st->bind(2, std::string_view(info.host));
    st->bind(3, std::string_view(info.tool_version));
    st->bind(4, std::string_view(info.llvm_version));
    st->bind(5, info.seed);
    st->bind(6, info.started == 0 ? unix_now() : info.started);
    if (info.ended) {
      st->bind(7, *info.ended);
    } else {
      st->bind_null(7);
    }
    TESSERA_RETURN_IF_ERROR(st->run());
    id = sqlite3_last_insert_rowid(impl_->conn.get());
    return Status::ok();
  }));
  return id;
}

Status Store::end_session(int64_t id, double ended) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  return impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached("UPDATE sessions SET ended = ?2 WHERE id = ?1"));
    st->bind(1, id);
    st->bind(2, ended == 0 ? unix_now() : ended);
    TESSERA_RETURN_IF_ERROR(st->run());
    if (sqlite3_changes(impl_->conn.get()) == 0)
      return Status(ErrorCode::kNotFound, "no session " + std::to_string(id));
    return Status::ok();
  });
}

Result<std::vector<SessionInfo>> Store::sessions() {
  std::vector<SessionInfo> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    out.clear();
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st, impl_->conn.cached(std::string("SELECT ") + kSessionColumns + " FROM sessions ORDER BY id"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
      if (!row) return Status::ok();
      out.push_back(read_session(*st));
    }
  }));
  return out;
}

Result<int64_t> Store::find_or_add_session(const SessionInfo& info) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  int64_t id = 0;
  TESSERA_RETURN_IF_ERROR(impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(sql::Lease find,
                             impl_->conn.cached("SELECT id FROM sessions WHERE command_line = ?1 AND host = ?2 AND "
                                                "tool_version = ?3 AND llvm_version = ?4 AND seed = ?5 AND "
                                                "started = ?6 ORDER BY id LIMIT 1"));
    find->bind(1, std::string_view(info.command_line));
    find->bind(2, std::string_view(info.host));
    find->bind(3, std::string_view(info.tool_version));
    find->bind(4, std::string_view(info.llvm_version));
    find->bind(5, info.seed);
    find->bind(6, info.started);
    TESSERA_ASSIGN_OR_RETURN(bool found, find->step());
    if (found) {
      id = find->column_int(0);
      if (!info.ended) return Status::ok();
      // A later export may know when the session ended.
      TESSERA_ASSIGN_OR_RETURN(sql::Lease end,
                               impl_->conn.cached("UPDATE sessions SET ended = ?2 WHERE id = ?1 AND ended IS NULL"));
      end->bind(1, id);
      end->bind(2, *info.ended);
      return end->run();
    }
    TESSERA_ASSIGN_OR_RETURN(sql::Lease add,
                             impl_->conn.cached("INSERT INTO sessions (command_line, host, tool_version, llvm_version, "
                                                "seed, started, ended) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    add->bind(1, std::string_view(info.command_line));
    add->bind(2, std::string_view(info.host));
    add->bind(3, std::string_view(info.tool_version));
    add->bind(4, std::string_view(info.llvm_version));
    add->bind(5, info.seed);
    add->bind(6, info.started);
    if (info.ended) {
      add->bind(7, *info.ended);
    } else {
      add->bind_null(7);
    }
    TESSERA_RETURN_IF_ERROR(add->run());
    id = sqlite3_last_insert_rowid(impl_->conn.get());
    return Status::ok();
  }));
  return id;
}

}  // namespace tessera::records

namespace tessera::records {

namespace {

// What every stored phase time must be: a workload key, a session, finite
// non-negative seconds.
Status check_phase_times(const PhaseTimes& t) {
  if (!is_valid_workload_key(t.workload_key))
    return Status(ErrorCode::kInvalidArgument,
                  "workload key '" + t.workload_key + "' is not 32 lowercase hex characters");
  if (t.session_id <= 0) return Status(ErrorCode::kInvalidArgument, "phase times need a session");
  for (double s : {t.search_seconds, t.build_seconds, t.measure_seconds, t.store_seconds})
    if (!std::isfinite(s) || s < 0)
      return Status(ErrorCode::kInvalidArgument, "phase times must be finite and >= 0 seconds");
  return Status::ok();
}

// Binds ?1..?7 of a phase_times insert: the row's key and its four times.
void bind_phase_times(sql::Statement& st, const PhaseTimes& t) {
  st.bind(1, t.session_id);
  st.bind(2, std::string_view(t.workload_key));
  st.bind(3, std::string_view(t.target));
  st.bind(4, t.search_seconds);
  st.bind(5, t.build_seconds);
  st.bind(6, t.measure_seconds);
  st.bind(7, t.store_seconds);
}

}  // namespace

Status Store::add_phase_times(const PhaseTimes& t) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  TESSERA_RETURN_IF_ERROR(check_phase_times(t));
  return impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st,
        impl_->conn.cached("INSERT INTO phase_times (session_id, workload, target, search_seconds, build_seconds, "
                           "measure_seconds, store_seconds, batches) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1) "
                           "ON CONFLICT (session_id, workload, target) DO UPDATE SET "
                           "search_seconds = search_seconds + excluded.search_seconds, "
                           "build_seconds = build_seconds + excluded.build_seconds, "
                           "measure_seconds = measure_seconds + excluded.measure_seconds, "
                           "store_seconds = store_seconds + excluded.store_seconds, batches = batches + 1"));
    bind_phase_times(*st, t);
    return st->run();
  });
}

Result<std::vector<PhaseTimes>> Store::phase_times() {
  std::vector<PhaseTimes> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    out.clear();
    // A version 6 database opened read-only has no such table: nothing is known.
    TESSERA_ASSIGN_OR_RETURN(bool table, impl_->has_table("phase_times"));
    if (!table) return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st,
                             impl_->conn.cached("SELECT session_id, workload, target, search_seconds, build_seconds, "
                                                "measure_seconds, store_seconds, batches FROM phase_times "
                                                "ORDER BY session_id, workload, target"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
      if (!row) return Status::ok();
      out.push_back({st->column_int(0), st->column_text(1), st->column_text(2), st->column_double(3),
                     st->column_double(4), st->column_double(5), st->column_double(6), st->column_int(7)});
    }
  }));
  return out;
}

}  // namespace tessera::records

// Import of phase times: a stored row is replaced only by one of more batches,
// a later snapshot of the same session, so that an import is idempotent.
namespace tessera::records {

namespace {

Status check_imported_phase_times(const PhaseTimes& t) {
  TESSERA_RETURN_IF_ERROR(check_phase_times(t));
  if (t.batches < 1) return Status(ErrorCode::kInvalidArgument, "phase times must add up at least one batch");
  return Status::ok();
}

}  // namespace

Status Store::merge_phase_times(const PhaseTimes& t) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  TESSERA_RETURN_IF_ERROR(check_imported_phase_times(t));
  return impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st,
        impl_->conn.cached("INSERT INTO phase_times (session_id, workload, target, search_seconds, build_seconds, "
                           "measure_seconds, store_seconds, batches) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                           "ON CONFLICT (session_id, workload, target) DO UPDATE SET "
                           "search_seconds = excluded.search_seconds, build_seconds = excluded.build_seconds, "
                           "measure_seconds = excluded.measure_seconds, store_seconds = excluded.store_seconds, "
                           "batches = excluded.batches WHERE excluded.batches > phase_times.batches"));
    bind_phase_times(*st, t);
    st->bind(8, t.batches);
    return st->run();
  });
}

}  // namespace tessera::records
