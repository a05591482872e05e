// The inside of a Store, shared by the .cc files that implement its methods
// (store.cc: records; store_catalog.cc: workloads and sessions;
// store_regions.cc, store_checks.cc: region times, model checks). Internal.
#pragma once

#include <string>
#include <vector>

#include "records/sqlite.h"
#include "records/store.h"

namespace tessera::records {

struct Store::Impl {
  sql::Connection conn;
  std::string path;
  OpenOptions options;

  /// kInvalidArgument when the store was opened read-only.
  Status check_writable() const {
    if (options.read_only) return Status(ErrorCode::kInvalidArgument, path + ": the store was opened read-only");
    return Status::ok();
  }

  /// Whether table `name` exists: a database of an older schema opened
  /// read-only lacks the tables later versions add (they read as empty).
  Result<bool> has_table(const std::string& name) {
    TESSERA_ASSIGN_OR_RETURN(sql::Statement st,
                             conn.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1"));
    st.bind(1, std::string_view(name));
    TESSERA_ASSIGN_OR_RETURN(bool row, st.step());
    return row && st.column_int(0) > 0;
  }

  /// Every row `select` (a query of table `table`) returns, each read by
  /// `read_row(statement)`; none when the table does not exist (has_table).
  template <typename T, typename ReadRow>
  Result<std::vector<T>> rows_of(const std::string& table, const std::string& select, ReadRow read_row) {
    std::vector<T> out;
    TESSERA_RETURN_IF_ERROR(conn.retrying([&]() -> Status {
      out.clear();
      TESSERA_ASSIGN_OR_RETURN(bool exists, has_table(table));
      if (!exists) return Status::ok();
      TESSERA_ASSIGN_OR_RETURN(sql::Lease st, conn.cached(select));
      for (;;) {
        TESSERA_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) return Status::ok();
        out.push_back(read_row(*st));
      }
    }));
    return out;
  }
};

}  // namespace tessera::records
