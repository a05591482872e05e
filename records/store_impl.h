// The inside of a Store, shared by the .cc files that implement its methods
// (store.cc: records; store_catalog.cc: workloads and sessions). Internal.
#pragma once

#include <string>

#include "records/sqlite.h"
#include "records/store.h"

namespace tessera::records {

struct Store::Impl {
  sql::Connection conn;
  std::string path;
  OpenOptions options;

  /// kInvalidArgument when the store was opened read-only.
  Status check_writable() const {
    if (options.read_only)
      return Status(ErrorCode::kInvalidArgument, path + ": the store was opened read-only");
    return Status::ok();
  }
};

}  // namespace tessera::records
