// Store: each workload's best record checked in its model against the
// untuned compile's schedule (schema 9, table model_checks).
#include <cmath>

#include "records/sqlite.h"
#include "records/store.h"
#include "records/store_impl.h"

namespace tessera::records {
namespace {

constexpr const char* kColumns =
    "id, workload, target, record_id, record_seconds, fallback_seconds, keeps_fallback, "
    "session_id, timestamp";

ModelCheck read_row(const sql::Statement& st) {
  ModelCheck c;
  c.id = st.column_int(0);
  c.workload_key = st.column_text(1);
  c.target = st.column_text(2);
  c.record_id = st.column_int(3);
  c.record_seconds = st.column_double(4);
  c.fallback_seconds = st.column_double(5);
  c.keeps_fallback = st.column_int(6) != 0;
  c.session_id = st.column_is_null(7) ? 0 : st.column_int(7);
  c.timestamp = st.column_double(8);
  return c;
}

}  // namespace

Status Store::add_model_check(const ModelCheck& c) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  if (!is_valid_workload_key(c.workload_key))
    return Status(ErrorCode::kInvalidArgument,
                  "workload key '" + c.workload_key + "' is not 32 lowercase hex characters");
  if (c.record_id <= 0) return Status(ErrorCode::kInvalidArgument, "a model check names the record it checked");
  for (double s : {c.record_seconds, c.fallback_seconds})
    if (!std::isfinite(s) || s < 0)
      return Status(ErrorCode::kInvalidArgument, "model check times must be finite and >= 0 seconds");
  return impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st, impl_->conn.cached("INSERT INTO model_checks (workload, target, record_id, record_seconds, "
                                          "fallback_seconds, keeps_fallback, session_id, timestamp) "
                                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    st->bind(1, std::string_view(c.workload_key));
    st->bind(2, std::string_view(c.target));
    st->bind(3, c.record_id);
    st->bind(4, c.record_seconds);
    st->bind(5, c.fallback_seconds);
    st->bind(6, int64_t{c.keeps_fallback ? 1 : 0});
    if (c.session_id > 0) {
      st->bind(7, c.session_id);
    } else {
      st->bind_null(7);
    }
    st->bind(8, c.timestamp == 0 ? unix_now() : c.timestamp);
    return st->run();
  });
}

Result<std::optional<ModelCheck>> Store::latest_model_check(const std::string& workload_key,
                                                            const std::string& target) {
  std::optional<ModelCheck> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    out.reset();
    TESSERA_ASSIGN_OR_RETURN(bool table, impl_->has_table("model_checks"));
    if (!table) return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st, impl_->conn.cached(std::string("SELECT ") + kColumns +
                                                               " FROM model_checks WHERE workload = ?1 AND target = ?2 "
                                                               "ORDER BY timestamp DESC, id DESC LIMIT 1"));
    st->bind(1, std::string_view(workload_key));
    st->bind(2, std::string_view(target));
    TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
    if (row) out = read_row(*st);
    return Status::ok();
  }));
  return out;
}

Result<std::vector<ModelCheck>> Store::model_checks() {
  return impl_->rows_of<ModelCheck>(
      "model_checks", std::string("SELECT ") + kColumns + " FROM model_checks ORDER BY timestamp, id", read_row);
}

}  // namespace tessera::records
