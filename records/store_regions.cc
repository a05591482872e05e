// Store: the times of the regions an external backend can run, both ways
// (schema 8, table region_times).
#include <cmath>

#include "records/sqlite.h"
#include "records/store.h"
#include "records/store_impl.h"

namespace tessera::records {
namespace {

constexpr const char* kColumns =
    "id, region_key, backend, target, operators, backend_seconds, tessera_seconds, tessera_basis, "
    "on_backend, session_id, timestamp";

RegionTime read_row(const sql::Statement& st) {
  RegionTime t;
  t.id = st.column_int(0);
  t.region_key = st.column_text(1);
  t.backend = st.column_text(2);
  t.target = st.column_text(3);
  t.operators = st.column_text(4);
  t.backend_seconds = st.column_double(5);
  t.tessera_seconds = st.column_double(6);
  t.tessera_basis = st.column_text(7);
  t.on_backend = st.column_int(8) != 0;
  t.session_id = st.column_is_null(9) ? 0 : st.column_int(9);
  t.timestamp = st.column_double(10);
  return t;
}

}  // namespace

Status Store::add_region_time(const RegionTime& t) {
  TESSERA_RETURN_IF_ERROR(impl_->check_writable());
  if (!is_valid_workload_key(t.region_key))
    return Status(ErrorCode::kInvalidArgument, "region key '" + t.region_key + "' is not 32 lowercase hex characters");
  if (t.backend.empty()) return Status(ErrorCode::kInvalidArgument, "a region time needs its backend");
  if (t.tessera_basis.empty()) return Status(ErrorCode::kInvalidArgument, "a region time needs its Tessera basis");
  for (double s : {t.backend_seconds, t.tessera_seconds})
    if (!std::isfinite(s) || s < 0)
      return Status(ErrorCode::kInvalidArgument, "region times must be finite and >= 0 seconds");
  return impl_->conn.write_transaction([&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(
        sql::Lease st,
        impl_->conn.cached("INSERT INTO region_times (region_key, backend, target, operators, backend_seconds, "
                           "tessera_seconds, tessera_basis, on_backend, session_id, timestamp) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    st->bind(1, std::string_view(t.region_key));
    st->bind(2, std::string_view(t.backend));
    st->bind(3, std::string_view(t.target));
    st->bind(4, std::string_view(t.operators));
    st->bind(5, t.backend_seconds);
    st->bind(6, t.tessera_seconds);
    st->bind(7, std::string_view(t.tessera_basis));
    st->bind(8, int64_t{t.on_backend ? 1 : 0});
    if (t.session_id > 0) {
      st->bind(9, t.session_id);
    } else {
      st->bind_null(9);
    }
    st->bind(10, t.timestamp == 0 ? unix_now() : t.timestamp);
    return st->run();
  });
}

Result<std::optional<RegionTime>> Store::latest_region_time(const std::string& region_key, const std::string& target,
                                                            const std::string& backend) {
  std::optional<RegionTime> out;
  TESSERA_RETURN_IF_ERROR(impl_->conn.retrying([&]() -> Status {
    out.reset();
    TESSERA_ASSIGN_OR_RETURN(bool table, impl_->has_table("region_times"));
    if (!table) return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(sql::Lease st,
                             impl_->conn.cached(std::string("SELECT ") + kColumns +
                                                " FROM region_times WHERE region_key = ?1 AND target = ?2 AND "
                                                "backend = ?3 ORDER BY timestamp DESC, id DESC LIMIT 1"));
    st->bind(1, std::string_view(region_key));
    st->bind(2, std::string_view(target));
    st->bind(3, std::string_view(backend));
    TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
    if (row) out = read_row(*st);
    return Status::ok();
  }));
  return out;
}

Result<std::vector<RegionTime>> Store::region_times() {
  return impl_->rows_of<RegionTime>(
      "region_times", std::string("SELECT ") + kColumns + " FROM region_times ORDER BY timestamp, id", read_row);
}

}  // namespace tessera::records
